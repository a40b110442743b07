import type { Migration } from '../../sdk/plugin.js';

/** The core's own tables: accounts, device sessions, library grants, persisted timers. */
export const coreMigrations: Migration[] = [
  {
    name: '001_accounts',
    async up(knex) {
      await knex.schema.createTable('users', (t) => {
        t.increments('id').primary();
        t.string('username', 64).notNullable();
        t.string('username_key', 64).notNullable().unique(); // lower-cased for case-insensitive login
        t.string('password_hash', 255).notNullable();
        t.boolean('active').notNullable().defaultTo(true);
        t.boolean('admin').notNullable().defaultTo(false);
        t.boolean('all_libraries_access').notNullable().defaultTo(true);
        t.string('avatar_type', 32).nullable();
        t.bigInteger('created_at').notNullable();
        t.bigInteger('updated_at').notNullable();
      });
      await knex.schema.createTable('sessions', (t) => {
        t.string('id', 40).primary();
        t.integer('user_id').notNullable().references('users.id').onDelete('CASCADE');
        t.string('device_id', 128).notNullable();
        t.string('device_os', 128).nullable();
        t.string('user_agent', 512).nullable();
        t.bigInteger('created_at').notNullable();
        t.bigInteger('last_seen_at').notNullable();
        t.bigInteger('revoked_at').nullable();
        t.index(['user_id', 'device_id']);
      });
      await knex.schema.createTable('user_libraries', (t) => {
        t.integer('user_id').notNullable().references('users.id').onDelete('CASCADE');
        t.string('library_id', 64).notNullable();
        t.primary(['user_id', 'library_id']);
      });
    },
  },
  {
    name: '002_scheduled_tasks',
    async up(knex) {
      await knex.schema.createTable('scheduled_tasks', (t) => {
        t.string('id', 191).primary();
        t.string('kind', 64).notNullable();
        t.bigInteger('at').notNullable();
        t.bigInteger('every_ms').nullable();
        t.text('payload').nullable();
        t.index(['kind']);
      });
    },
  },
];
