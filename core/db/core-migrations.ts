import type { Migration } from '../../sdk/plugin.js';
import { usernameKey } from '../auth/accounts.js';

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
  {
    // Usernames used to be compared trimmed and lower-cased; now in one normalised form
    // (usernameKey: NFKC, trimmed, case-folded). Two users whose names become the same key
    // (`bob` and full-width `ｂｏｂ`, `strasse` and `STRAßE`) cannot both keep theirs: the server
    // refuses to start, naming them, rather than pick one to rename or to lock out.
    name: '003_username_keys',
    async up(knex) {
      const users: { id: number; username: string; username_key: string }[] = await knex('users').select('id', 'username', 'username_key').orderBy('id');
      const byKey = new Map<string, typeof users>();
      for (const u of users) byKey.set(usernameKey(u.username), [...(byKey.get(usernameKey(u.username)) ?? []), u]);
      const clashes = [...byKey.values()].filter((same) => same.length > 1);
      if (clashes.length) {
        const names = clashes.map((same) => same.map((u) => `${JSON.stringify(u.username)} (id ${u.id})`).join(' and ')).join('; ');
        const [keep, other] = clashes[0]!;
        throw new Error(
          `usernames are now compared ignoring case, width and surrounding spaces, and these users' names become the same: ${names}. ` +
          `Rename all but one of each in the database, for example: UPDATE users SET username = '${other!.username.replace(/'/g, "''")}-${other!.id}', username_key = '${usernameKey(other!.username).replace(/'/g, "''")}-${other!.id}' WHERE id = ${other!.id}; ` +
          `(keeping ${JSON.stringify(keep!.username)}), then start Antenna again.`,
        );
      }
      // Changed keys are set in two steps, so that no intermediate state repeats one (the column is unique).
      const changed = users.filter((u) => usernameKey(u.username) !== u.username_key);
      for (const u of changed) await knex('users').where({ id: u.id }).update({ username_key: `#${u.id}` });
      for (const u of changed) await knex('users').where({ id: u.id }).update({ username_key: usernameKey(u.username) });
    },
  },
  {
    // Keys for the clients that cannot sign in (core/auth/access-keys.ts). The key itself is not
    // stored: it is derived from the server's secret, the id and the salt.
    name: '004_access_keys',
    async up(knex) {
      await knex.schema.createTable('access_keys', (t) => {
        t.increments('id').primary();
        t.string('name', 64).notNullable();
        t.string('salt', 64).notNullable();
        t.bigInteger('created_at').notNullable();
        t.bigInteger('revoked_at').nullable();
        t.index(['name']);
      });
    },
  },
  {
    // Avatars in the database, so that every node of a cluster serves them. Those a server kept in
    // its data dir before (avatars/<user id>) move in when first asked for (core/auth/routes.ts).
    name: '005_avatars',
    async up(knex) {
      await knex.schema.createTable('user_avatars', (t) => {
        t.integer('user_id').primary();
        t.binary('data').notNullable();
      });
    },
  },
];
