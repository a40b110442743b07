import type { Migration } from 'antenna/sdk';

export const migrations: Migration[] = [
  {
    name: '001_entries',
    async up(knex) {
      // One row per user and video. Watched entries stay (they are the user's watched state);
      // the list shows the others. library_id, content_type and title are copied from the
      // catalog so the list is served from memory without a lookup per entry.
      await knex.schema.createTable('continue_watching', (t) => {
        t.integer('user_id').notNullable().references('users.id').onDelete('CASCADE');
        t.string('video_id', 64).notNullable();
        t.integer('library_id').notNullable();
        t.string('content_type', 16).notNullable();     // movie | episode | recording
        t.string('title', 512).notNullable();
        t.double('position').notNullable();             // seconds
        t.double('duration').notNullable();             // seconds; 0 = unknown
        t.boolean('watched').notNullable();
        t.bigInteger('updated_at').notNullable();       // ms since epoch
        t.primary(['user_id', 'video_id']);
      });
    },
  },
];
