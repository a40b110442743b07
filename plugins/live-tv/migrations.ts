import type { Knex } from 'knex';
import type { Migration } from 'antenna/sdk';
import { NEXT_ID_KEY } from './channel-store.js';

/** 005's pages: a JSON array of up to 400 entries, a listed channel or a hidden one. */
const PAGE_SIZE = 400;
type ListedEntry = [id: number, key: string, name: string, given: string | null, assigned: string | null,
  tvgId: string | null, tvgName: string | null, logo: string | null, groups: string, extra: string, data: string];
type HiddenEntry = [id: number, key: string, assigned: string | null, hiddenAt: number];

export const migrations: Migration[] = [
  {
    name: '001_channels',
    async up(knex) {
      await knex.schema.createTable('livetv_channels', (t) => {
        t.increments('id').primary();
        t.string('tuner_id', 191).notNullable();
        t.string('key', 2048).notNullable();          // stable within the tuner: tvg-id, else stream URL
        t.string('name', 512).notNullable();
        t.string('number', 32).nullable();             // as given by the tuner
        t.string('assigned_number', 32).nullable();    // ours, when the tuner gave none (kept across refreshes)
        t.string('tvg_id', 255).nullable();
        t.string('tvg_name', 512).nullable();
        t.string('logo', 2048).nullable();
        t.text('groups').notNullable().defaultTo('[]');
        t.text('extra').notNullable().defaultTo('{}');
        t.text('data').notNullable().defaultTo('{}');
        t.boolean('present').notNullable().defaultTo(true); // false once a refresh no longer lists it; the id is kept
        t.integer('position').notNullable().defaultTo(0);   // order within the tuner's list
        t.bigInteger('updated_at').notNullable();
        t.unique(['tuner_id', 'key']);
      });
      await knex.schema.createTable('livetv_favorites', (t) => {
        t.integer('user_id').notNullable().references('users.id').onDelete('CASCADE');
        t.integer('channel_id').notNullable().references('livetv_channels.id').onDelete('CASCADE');
        t.primary(['user_id', 'channel_id']);
      });
      // Bumped by every import, so every process (server, CLI) knows when its cache is stale.
      await knex.schema.createTable('livetv_state', (t) => {
        t.string('key', 64).primary();
        t.bigInteger('value').notNullable();
      });
      await knex('livetv_state').insert({ key: 'version', value: 1 });
    },
  },
  {
    name: '002_guide',
    async up(knex) {
      // One row per guide source; `generation` names the rows that are current. An import writes
      // a new generation next to the old one and switches over in one small transaction.
      await knex.schema.createTable('livetv_guide_sources', (t) => {
        t.string('id', 191).primary();
        t.integer('generation').notNullable().defaultTo(0);
        t.bigInteger('updated_at').nullable();
        t.text('stats').nullable();
      });
      await knex.schema.createTable('livetv_guide_channels', (t) => {
        t.string('source_id', 191).notNullable();
        t.integer('generation').notNullable();
        t.string('guide_id', 255).notNullable();
        t.text('names').notNullable();
        t.string('icon', 2048).nullable();
        t.index(['source_id', 'generation']);
      });
      await knex.schema.createTable('livetv_programs', (t) => {
        t.bigInteger('id').notNullable();              // stable: derived from source, guide channel and start
        t.string('source_id', 191).notNullable();
        t.integer('generation').notNullable();
        t.string('guide_id', 255).notNullable();
        t.bigInteger('start').notNullable();
        t.bigInteger('stop').notNullable();
        t.text('title').notNullable();
        t.text('sub_title').nullable();
        t.text('description').nullable();
        t.text('categories').nullable();
        t.string('episode_num', 255).nullable();
        t.string('icon', 2048).nullable();
        t.index(['source_id', 'generation', 'guide_id', 'start'], 'livetv_programs_lookup');
        t.index(['id'], 'livetv_programs_id');
      });
      // Which guide channel feeds which playlist channel; recomputed after every import.
      await knex.schema.createTable('livetv_channel_guide', (t) => {
        t.integer('channel_id').notNullable().references('livetv_channels.id').onDelete('CASCADE');
        t.string('source_id', 191).notNullable();
        t.string('guide_id', 255).notNullable();
        t.primary(['channel_id', 'source_id', 'guide_id']);
      });
    },
  },
  {
    name: '003_programs_no_id_index',
    async up(knex) {
      // Programme ids are hashes: an index of them takes random inserts at every import and random
      // deletes at every switch-over. Lookups by id always name the channel too (GuideStore
      // .program), which livetv_programs_lookup serves: one channel's rows, a few hundred.
      await knex.schema.alterTable('livetv_programs', (t) => {
        t.dropIndex(['id'], 'livetv_programs_id');
      });
    },
  },
  {
    name: '004_channels_by_tuner',
    async up(knex) {
      // The unique index on (tuner_id, key) goes: an import matches listed channels to rows by key
      // itself (the snapshot holds every row), so an index of URLs would only be kept up to date.
      // SQLite serialises imports (a writer whose reads predate another's commit fails); on
      // PostgreSQL an import locks the version row.
      await knex.schema.alterTable('livetv_channels', (t) => {
        t.dropUnique(['tuner_id', 'key']);
        t.index(['tuner_id', 'present'], 'livetv_channels_tuner');
      });
    },
  },
  {
    name: '005_channel_pages',
    async up(knex) {
      // Each tuner's list becomes pages of JSON (006 makes them rows again). Channel ids stay: the
      // next one is kept in livetv_state, and favorites and guide mappings keep theirs, without a
      // foreign key now that there is no row to point at.
      await knex.schema.createTable('livetv_channel_pages', (t) => {
        t.string('tuner_id', 191).notNullable();
        t.integer('page').notNullable();
        t.text('channels').notNullable(); // a JSON array of ListedEntry and HiddenEntry
        t.bigInteger('updated_at').notNullable();
        t.primary(['tuner_id', 'page']);
      });
      const tuners = (await knex('livetv_channels').distinct('tuner_id').orderBy('tuner_id')).map((r) => r.tuner_id as string);
      for (const tunerId of tuners) {
        const rows = await knex('livetv_channels').where({ tuner_id: tunerId })
          .orderBy([{ column: 'present', order: 'desc' }, { column: 'position' }, { column: 'id' }]);
        const entries: (ListedEntry | HiddenEntry)[] = rows.map((r) => (r.present
          ? [r.id, r.key, r.name, r.number, r.assigned_number, r.tvg_id, r.tvg_name, r.logo, r.groups, r.extra, r.data]
          : [r.id, r.key, r.assigned_number, Date.now()]));
        for (let i = 0; i < entries.length; i += PAGE_SIZE) {
          await knex('livetv_channel_pages').insert({ tuner_id: tunerId, page: i / PAGE_SIZE, channels: JSON.stringify(entries.slice(i, i + PAGE_SIZE)), updated_at: Date.now() });
        }
      }
      const max = Number((await knex('livetv_channels').max({ m: 'id' }).first())?.m ?? 0);
      await knex('livetv_state').insert({ key: NEXT_ID_KEY, value: max + 1 });
      await withoutChannelForeignKey(knex, 'livetv_favorites', (t) => {
        t.integer('user_id').notNullable().references('users.id').onDelete('CASCADE');
        t.integer('channel_id').notNullable();
        t.primary(['user_id', 'channel_id']);
      }, ['user_id', 'channel_id']);
      await withoutChannelForeignKey(knex, 'livetv_channel_guide', (t) => {
        t.integer('channel_id').notNullable();
        t.string('source_id', 191).notNullable();
        t.string('guide_id', 255).notNullable();
        t.primary(['channel_id', 'source_id', 'guide_id']);
      }, ['channel_id', 'source_id', 'guide_id']);
      await knex.schema.dropTable('livetv_channels');
    },
  },
  {
    name: '006_channel_rows',
    async up(knex) {
      // A row per channel again, in a table of its own: an import writes the rows that changed.
      // Ids are given by the import (livetv_state's next_channel_id), never reused.
      await knex.schema.createTable('livetv_tuner_channels', (t) => {
        t.integer('id').primary();
        t.string('tuner_id', 191).notNullable();
        t.text('key').notNullable();                   // stable within the tuner: tvg-id, else stream URL
        t.text('name').notNullable();
        t.string('number', 32).nullable();             // as given by the tuner
        t.string('assigned_number', 32).nullable();    // ours, when the tuner gives none (kept across refreshes)
        t.text('tvg_id').nullable();
        t.text('tvg_name').nullable();
        t.text('logo').nullable();
        t.text('groups').notNullable();                // JSON texts
        t.text('extra').notNullable();
        t.text('data').notNullable();
        t.bigInteger('hidden_at').nullable();          // when the tuner stopped listing it; null while listed
        t.bigInteger('updated_at').notNullable();
      });
      const now = Date.now();
      let rows: Record<string, unknown>[] = [];
      const flush = async () => {
        for (let i = 0; i < rows.length; i += 400) await knex('livetv_tuner_channels').insert(rows.slice(i, i + 400));
        rows = [];
      };
      // A page at a time: 100,000 channels are tens of MB of JSON.
      const pages = await knex('livetv_channel_pages').orderBy([{ column: 'tuner_id' }, { column: 'page' }]).select('tuner_id', 'page');
      for (const { tuner_id: tunerId, page } of pages) {
        const { channels } = await knex('livetv_channel_pages').where({ tuner_id: tunerId, page }).first('channels');
        for (const e of JSON.parse(channels) as (ListedEntry | HiddenEntry)[]) {
          if (e.length === 4) {
            const [id, key, assigned, hiddenAt] = e;
            rows.push({ id, tuner_id: tunerId, key, name: '', number: null, assigned_number: assigned, tvg_id: null, tvg_name: null, logo: null,
              groups: '[]', extra: '{}', data: '{}', hidden_at: hiddenAt, updated_at: now });
          } else {
            const [id, key, name, number, assigned, tvgId, tvgName, logo, groups, extra, data] = e;
            rows.push({ id, tuner_id: tunerId, key, name, number, assigned_number: assigned, tvg_id: tvgId, tvg_name: tvgName, logo,
              groups, extra, data, hidden_at: null, updated_at: now });
          }
        }
        if (rows.length >= 5000) await flush();
      }
      await flush();
      await knex.schema.dropTable('livetv_channel_pages');
    },
  },
  {
    name: '007_channel_edits',
    async up(knex) {
      // What an administrator changed on a channel, by channel id: an import never writes here,
      // so a refresh never undoes an edit. Null columns are not edited (the playlist's value shows).
      await knex.schema.createTable('livetv_channel_edits', (t) => {
        t.integer('channel_id').primary();
        t.text('name').nullable();
        t.string('number', 32).nullable();
        t.text('logo').nullable();
        t.text('categories').nullable();               // a JSON array
        t.boolean('hidden').notNullable().defaultTo(false);
        t.string('guide_id', 255).nullable();          // a manual guide mapping: the first source's channel of this id
        t.bigInteger('updated_at').notNullable();
      });
      // Streams an administrator attached to a channel, in the order they are tried (a tuner entry's id each).
      await knex.schema.createTable('livetv_channel_streams', (t) => {
        t.integer('stream_id').primary();
        t.integer('channel_id').notNullable();
        t.integer('position').notNullable();
        t.index(['channel_id']);
      });
      // How each mapping was found, and the shift (tvg-shift) applied to its programmes.
      await knex.schema.alterTable('livetv_channel_guide', (t) => {
        t.string('method', 16).notNullable().defaultTo('tvg_id');
        t.float('score').notNullable().defaultTo(1);
        t.bigInteger('shift_ms').notNullable().defaultTo(0);
      });
    },
  },
  {
    name: '008_programme_episodes',
    async up(knex) {
      // What the guide says about a programme as an episode (episode.ts). The raw elements are kept
      // (episode_nums, marks, previously_shown); the rest is derived at import, for /programs and
      // the DVR's rules: title_key and series_key are what rules match, episode_key what tells
      // repeats apart. Earlier imports have none of it until the next one.
      await knex.schema.alterTable('livetv_programs', (t) => {
        t.text('episode_nums').nullable();          // JSON [[system, value], …]
        t.integer('marks').notNullable().defaultTo(0); // 1 new, 2 premiere, 4 previously-shown, 8 live
        t.bigInteger('previously_shown').nullable();  // its start, when given
        t.integer('season').nullable();
        t.integer('episode').nullable();
        t.integer('airing').notNullable().defaultTo(0); // 1 new, 2 repeat, 4 live
        t.text('title_key').nullable();
        t.text('series_key').nullable();
        t.string('episode_key', 32).nullable();
      });
    },
  },
];

/** `table` made again as `define` says, with its rows (SQLite cannot drop a foreign key in place). */
async function withoutChannelForeignKey(knex: Knex, table: string, define: (t: Knex.CreateTableBuilder) => void, columns: string[]): Promise<void> {
  const next = `${table}_next`;
  await knex.schema.createTable(next, define);
  await knex(next).insert(knex(table).select(columns)); // the same columns, in the same order
  await knex.schema.dropTable(table);
  await knex.schema.renameTable(next, table);
}
