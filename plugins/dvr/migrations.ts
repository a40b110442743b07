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
  {
    name: '002_series',
    async up(knex) {
      // Series rules (rules.ts), and what a recording needs to follow one: its rule, the episode it
      // is (to record each once), its paddings, whether anyone watched it (keep limits delete those first).
      await knex.schema.createTable('dvr_rules', (t) => {
        t.increments('id').primary();
        t.text('spec').notNullable();                     // the rule's JSON (RuleSpec)
        t.integer('created_by').nullable();
        t.bigInteger('created_at').notNullable();
      });
      await knex.schema.alterTable('dvr_recordings', (t) => {
        t.integer('rule_id').nullable();                  // null: a one-off
        t.string('episode_key', 64).nullable();           // the guide's episode identity (live-tv episode.ts)
        t.text('series_key').nullable();
        t.integer('season').nullable();
        t.integer('episode').nullable();
        t.text('episode_title').nullable();
        t.integer('pre_padding').nullable();              // seconds; null: the configured ones
        t.integer('post_padding').nullable();
        t.bigInteger('watched_at').nullable();            // first played
        t.index(['rule_id']);
      });
    },
  },
];
