import type { Migration } from 'antenna/sdk';

export const migrations: Migration[] = [
  {
    name: '001_recordings',
    async up(knex) {
      // One row per recording. The media lives in `dir` (parts of segmented fMP4 with their
      // own index files); the row keeps what listings need without reading the disk.
      await knex.schema.createTable('dvr_recordings', (t) => {
        t.increments('id').primary();
        t.integer('channel_id').notNullable();           // no foreign key: a recording outlives its channel
        t.bigInteger('program_id').notNullable();        // the guide's id; follows the programme when its times change
        t.string('tuner_id', 191).notNullable();         // for the slot check of later recordings
        t.string('title', 512).notNullable();
        t.bigInteger('start').notNullable();             // programme times, ms since epoch (padding is added when recording)
        t.bigInteger('stop').notNullable();
        t.string('status', 16).notNullable();            // scheduled | recording | completed | failed | cancelled
        t.text('error').nullable();
        t.bigInteger('size_bytes').notNullable().defaultTo(0);
        t.double('duration').notNullable().defaultTo(0); // seconds of media recorded
        t.text('gaps').notNullable().defaultTo('[]');    // [{start, stop}] ms: nothing recorded between parts
        t.text('dir').notNullable();
        t.integer('created_by').nullable();
        t.bigInteger('created_at').notNullable();
        t.index(['status']);
        t.index(['channel_id', 'program_id']);
      });
    },
  },
];
