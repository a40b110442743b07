import type { Migration } from 'antenna/sdk';

export const migrations: Migration[] = [
  {
    name: '001_libraries',
    async up(knex) {
      // Libraries are matched to the config by name, so their integer ids (and users' grants) survive restarts.
      await knex.schema.createTable('vod_libraries', (t) => {
        t.increments('id').primary();
        t.string('name', 255).notNullable().unique();
        t.string('type', 16).notNullable();
        t.text('paths').notNullable().defaultTo('[]');
        t.boolean('configured').notNullable().defaultTo(true); // false once the config no longer lists it
      });
      await knex.schema.createTable('vod_items', (t) => {
        t.string('id', 32).primary();
        t.integer('library_id').notNullable().references('vod_libraries.id').onDelete('CASCADE');
        t.string('type', 16).notNullable();               // movie | series | season | episode
        t.string('parent_id', 32).nullable();
        t.string('title', 512).notNullable();
        t.string('sort_title', 512).notNullable();        // folded, leading articles dropped
        t.integer('year').nullable();
        t.integer('season').nullable();
        t.integer('episode').nullable();
        t.bigInteger('added_at').notNullable();
        t.index(['library_id', 'parent_id']);
        t.index(['parent_id']);
      });
      await knex.schema.createTable('vod_files', (t) => {
        t.string('id', 32).primary();
        t.string('item_id', 32).notNullable();
        t.integer('library_id').notNullable().references('vod_libraries.id').onDelete('CASCADE');
        t.text('path').notNullable();
        t.bigInteger('size').notNullable();
        t.bigInteger('mtime_ms').notNullable();
        t.string('label', 255).nullable();
        t.text('info').nullable();                        // MediaInfo JSON; null when unreadable
        t.text('error').nullable();
        t.bigInteger('scanned_at').notNullable();
        t.index(['item_id']);
        t.index(['library_id']);
      });
      // Keyframe times of a file (seconds), read once for copy-mode segmenting; stale when size/mtime change.
      await knex.schema.createTable('vod_keyframes', (t) => {
        t.string('file_id', 32).primary();
        t.bigInteger('size').notNullable();
        t.bigInteger('mtime_ms').notNullable();
        t.text('times').notNullable();
      });
    },
  },
  {
    name: '002_metadata',
    async up(knex) {
      // What the metadata providers said of each item (metadata/refresh.ts), read with the item.
      await knex.schema.createTable('vod_metadata', (t) => {
        t.string('item_id', 32).primary();
        t.integer('library_id').notNullable().references('vod_libraries.id').onDelete('CASCADE');
        t.string('fingerprint', 64).notNullable();      // of what it was read from; '' = read again at the next scan
        t.string('title', 512).nullable();              // shown instead of the name's
        t.string('sort_title', 512).nullable();
        t.string('search_title', 1024).nullable();      // folded title and original title
        t.integer('year').nullable();
        t.float('rating').nullable();
        t.integer('runtime').nullable();                // seconds: the provider's, else the default version's
        t.text('details').notNullable().defaultTo('{}'); // plot, cast, genres… (JSON)
        t.text('poster').nullable();                    // where the picture is (JSON), see artwork.ts
        t.text('backdrop').nullable();
        t.bigInteger('updated_at').notNullable();
        t.index(['library_id']);
      });
      await knex.schema.createTable('vod_genres', (t) => {
        t.string('item_id', 32).notNullable();
        t.integer('library_id').notNullable().references('vod_libraries.id').onDelete('CASCADE');
        t.string('genre', 128).notNullable();
        t.primary(['item_id', 'genre']);
        t.index(['library_id', 'genre']);
      });
    },
  },
];
