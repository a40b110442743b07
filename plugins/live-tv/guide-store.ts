import crypto from 'node:crypto';
import type { Database, GuideLoadResult, GuideProgramme, GuideSource, Logger } from 'antenna/sdk';
import { insertRows, insertValues } from 'antenna/sdk';
import type { Channel } from './channel-store.js';
import { fold } from './text.js';

export interface Program {
  id: number;
  title: string;
  start: string;
  stop: string;
  sub_title?: string;
  description?: string;
  categories?: string[];
  episode_num?: string;
  icon?: string;
}

export interface StoredProgram { id: number; channelId: number; title: string; start: number; stop: number }

/** Stable across refreshes: the same source, guide channel and start give the same id. 52 bits fit a JSON number. */
export function programId(sourceId: string, guideId: string, start: number): number {
  return Number.parseInt(sha1Hex(`${sourceId}\n${guideId}\n${start}`).slice(0, 13), 16);
}

// crypto.hash (Node >= 20.12) is the one-shot form: no Hash object per programme.
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;
const sha1Hex: (text: string) => string = oneShot
  ? (text) => oneShot('sha1', text, 'hex')
  : (text) => crypto.createHash('sha1').update(text).digest('hex');

const PROGRAM_COLUMNS = ['id', 'source_id', 'generation', 'guide_id', 'start', 'stop', 'title', 'sub_title', 'description', 'categories', 'episode_num', 'icon'];

const DELETE_CHUNK = 20_000;
const MAX_WARNINGS_LOGGED = 20;

/**
 * Guide data. Each import writes a new generation of rows beside the current
 * one and switches over in one small transaction, so readers never wait on an
 * import and a failed import leaves the previous guide exactly as it was.
 */
export class GuideStore {
  constructor(private readonly knex: Database, private readonly log: Logger) {}

  /** Rows of imports that never finished (the server stopped mid-import). */
  async removeUnfinished(): Promise<void> {
    for (const s of await this.knex('livetv_guide_sources').select('id', 'generation')) {
      await this.deleteGenerations(s.id, (q) => q.where('generation', '>', s.generation));
    }
  }

  async import(source: GuideSource, signal: AbortSignal, progress: (fraction: number, message?: string) => void): Promise<GuideLoadResult> {
    const knex = this.knex;
    await knex('livetv_guide_sources').insert({ id: source.id, generation: 0 }).onConflict('id').ignore();
    const current = Number((await knex('livetv_guide_sources').where({ id: source.id }).first('generation')).generation);
    const generation = current + 1;
    await this.deleteGenerations(source.id, (q) => q.where('generation', '>', current));

    const channels = new Map<string, { names: string[]; icon?: string }>();
    let warnings = 0;
    // One batch is stored (SQLite works in libuv's pool) while the source reads the next one
    // (on the main thread): import time is about max(read, store), not their sum. At most two
    // batches are held; a failed insert surfaces at the next batch or at the end.
    let storing: Promise<void> | undefined;
    const write = async (batch: GuideProgramme[]) => {
      const rows = batch.map((p) => {
        if (!channels.has(p.channel)) channels.set(p.channel, { names: [] });
        return [ // PROGRAM_COLUMNS
          programId(source.id, p.channel, p.start), source.id, generation, p.channel,
          p.start, p.stop, p.title, p.subTitle ?? null, p.description ?? null,
          p.categories?.length ? JSON.stringify(p.categories) : null, p.episodeNum ?? null, p.icon ?? null,
        ];
      });
      if (storing) await storing;
      storing = insertValues(knex, 'livetv_programs', PROGRAM_COLUMNS, rows);
      storing.catch(() => {}); // awaited later; not an unhandled rejection meanwhile
    };
    const stored = async () => {
      const last = storing;
      storing = undefined;
      if (last) await last;
    };

    let result: GuideLoadResult;
    try {
      result = await source.load({
        signal,
        sink: {
          channel: (c) => {
            const known = channels.get(c.id);
            if (known) {
              for (const n of c.displayNames) if (!known.names.includes(n)) known.names.push(n);
              known.icon ??= c.icon;
            } else {
              channels.set(c.id, { names: [...c.displayNames], icon: c.icon });
            }
          },
          programmes: write,
          warning: (message) => {
            if (++warnings <= MAX_WARNINGS_LOGGED) this.log.warn({ source: source.id, warning: message }, 'guide warning');
          },
          progress,
        },
      });
      await stored();
      signal.throwIfAborted();
      await insertRows(knex, 'livetv_guide_channels', [...channels].map(([guideId, c]) => ({
        source_id: source.id, generation, guide_id: guideId, names: JSON.stringify(c.names), icon: c.icon ?? null,
      })));
    } catch (err) {
      await stored().catch(() => {});
      await this.deleteGenerations(source.id, (q) => q.where('generation', generation));
      throw err;
    }
    await knex('livetv_guide_sources').where({ id: source.id }).update({
      generation, updated_at: Date.now(), stats: JSON.stringify({ ...result, warnings: Math.max(result.warnings, warnings) }),
    });
    await this.deleteGenerations(source.id, (q) => q.where('generation', '<', generation));
    return { ...result, warnings: Math.max(result.warnings, warnings) };
  }

  /** Deletes in chunks so other queries get the connection in between. */
  private async deleteGenerations(sourceId: string, where: (q: any) => any): Promise<void> {
    const sqlite = String(this.knex.client.config.client).startsWith('sqlite');
    for (const table of ['livetv_programs', 'livetv_guide_channels']) {
      if (!sqlite) { // PostgreSQL readers are not blocked by a large delete
        await where(this.knex(table).where({ source_id: sourceId })).delete();
        continue;
      }
      for (;;) {
        const sub = where(this.knex(table).select('rowid').where({ source_id: sourceId })).limit(DELETE_CHUNK);
        const n = await this.knex(table).whereIn('rowid', sub).delete();
        if (n < DELETE_CHUNK) break;
      }
    }
  }

  /**
   * Which guide channel feeds each playlist channel: the first source (in
   * config order) whose channel id equals the tvg-id, else whose display name
   * equals the channel's name or tvg-name (case- and accent-insensitive).
   */
  async remap(channels: Channel[], sourceOrder: string[]): Promise<number> {
    const rows = await this.knex('livetv_guide_channels as g')
      .join('livetv_guide_sources as s', function () { this.on('s.id', 'g.source_id').andOn('s.generation', 'g.generation'); })
      .select('g.source_id', 'g.guide_id', 'g.names');
    const rank = (id: string) => { const i = sourceOrder.indexOf(id); return i < 0 ? sourceOrder.length : i; };
    rows.sort((a, b) => rank(a.source_id) - rank(b.source_id));
    const byId = new Map<string, { source_id: string; guide_id: string }>();
    const byIdFolded = new Map<string, { source_id: string; guide_id: string }>();
    const byName = new Map<string, { source_id: string; guide_id: string }>();
    for (const r of rows) {
      const ref = { source_id: r.source_id, guide_id: r.guide_id };
      if (!byId.has(r.guide_id)) byId.set(r.guide_id, ref);
      const f = fold(r.guide_id);
      if (!byIdFolded.has(f)) byIdFolded.set(f, ref);
      for (const name of JSON.parse(r.names) as string[]) {
        const key = fold(name);
        if (key && !byName.has(key)) byName.set(key, ref);
      }
    }
    const mapping: { channel_id: number; source_id: string; guide_id: string }[] = [];
    // fold() (NFKD + regexes) is the cost on big playlists: skipped when nothing could match.
    const folded = (text: string, map: Map<string, unknown>) => (map.size ? fold(text) : '');
    if (rows.length) {
      for (const c of channels) {
        const ref = (c.tvgId && (byId.get(c.tvgId) ?? byIdFolded.get(folded(c.tvgId, byIdFolded))))
          || byName.get(folded(c.name, byName)) || (c.tvgName ? byName.get(folded(c.tvgName, byName)) : undefined);
        if (ref) mapping.push({ channel_id: c.id, ...ref });
      }
    }
    await this.knex.transaction(async (trx) => {
      await trx('livetv_channel_guide').delete();
      await insertRows(trx, 'livetv_channel_guide', mapping);
    });
    return mapping.length;
  }

  /** Programmes of these channels overlapping [from, to), per channel, by start time. */
  async programsFor(channelIds: number[] | 'all', from?: number, to?: number): Promise<Map<number, Program[]>> {
    const q = this.knex('livetv_channel_guide as m')
      .join('livetv_guide_sources as s', 's.id', 'm.source_id')
      .join('livetv_programs as p', function () {
        this.on('p.source_id', 'm.source_id').andOn('p.generation', 's.generation').andOn('p.guide_id', 'm.guide_id');
      })
      .select('m.channel_id', 'p.id', 'p.title', 'p.start', 'p.stop', 'p.sub_title', 'p.description', 'p.categories', 'p.episode_num', 'p.icon')
      .orderBy([{ column: 'm.channel_id' }, { column: 'p.start' }]);
    if (channelIds !== 'all') q.whereIn('m.channel_id', channelIds);
    if (from !== undefined) q.where('p.stop', '>', from);
    if (to !== undefined) q.where('p.start', '<', to);
    const out = new Map<number, Program[]>();
    for (const r of await q) {
      const program: Program = { id: Number(r.id), title: r.title, start: new Date(Number(r.start)).toISOString(), stop: new Date(Number(r.stop)).toISOString() };
      if (r.sub_title) program.sub_title = r.sub_title;
      if (r.description) program.description = r.description;
      if (r.categories) program.categories = JSON.parse(r.categories);
      if (r.episode_num) program.episode_num = r.episode_num;
      if (r.icon) program.icon = r.icon;
      let list = out.get(r.channel_id);
      if (!list) out.set(r.channel_id, (list = []));
      list.push(program);
    }
    return out;
  }

  /**
   * programsFor as JSON: per channel, its programmes as the items of the API's `programs`
   * array (comma-separated, no brackets), byte for byte what serializing programsFor's
   * Program objects gives. SQLite writes the JSON itself (json_quote escapes as
   * JSON.stringify does; datetime(…, 'subsec') formats as toISOString for years 0000-9999), so a page
   * of 50 channels crosses from SQLite to JavaScript as 50 strings instead of 350 rows of 10
   * values, and is not serialized again.
   */
  async programsJsonFor(channelIds: number[] | 'all', from?: number, to?: number): Promise<Map<number, string>> {
    const out = new Map<number, string>();
    if (!String(this.knex.client.config.client).startsWith('sqlite')) {
      for (const [channelId, list] of await this.programsFor(channelIds, from, to)) out.set(channelId, list.map((p) => JSON.stringify(p)).join(','));
      return out;
    }
    // = new Date(ms).toISOString() for years 0000-9999 (checked on 400,000 values); cheaper than strftime.
    const time = (column: string) => `replace(datetime(${column} / 1000.0, 'unixepoch', 'subsec'), ' ', 'T') || 'Z'`;
    const optional = (key: string, value: string) => `CASE WHEN p.${key} <> '' THEN ',"${key}":' || ${value} ELSE '' END`;
    const item = `'{"id":' || p.id || ',"title":' || json_quote(p.title) || ',"start":"' || ${time('p.start')} || '","stop":"' || ${time('p.stop')} || '"'` +
      ` || ${optional('sub_title', 'json_quote(p.sub_title)')} || ${optional('description', 'json_quote(p.description)')}` +
      ` || ${optional('categories', 'json(p.categories)')} || ${optional('episode_num', 'json_quote(p.episode_num)')}` +
      ` || ${optional('icon', 'json_quote(p.icon)')} || '}'`;
    const q = this.knex('livetv_channel_guide as m')
      .join('livetv_guide_sources as s', 's.id', 'm.source_id')
      .join('livetv_programs as p', function () {
        this.on('p.source_id', 'm.source_id').andOn('p.generation', 's.generation').andOn('p.guide_id', 'm.guide_id');
      })
      .select('m.channel_id', this.knex.raw(`group_concat(${item}, ',' ORDER BY p.start) as programs`))
      .groupBy('m.channel_id');
    if (channelIds !== 'all') q.whereIn('m.channel_id', channelIds);
    if (from !== undefined) q.where('p.stop', '>', from);
    if (to !== undefined) q.where('p.start', '<', to);
    for (const r of await q) out.set(r.channel_id, r.programs);
    return out;
  }

  /** When each source was last imported, with its counts. */
  async sources(): Promise<Map<string, { last_import: string | null; stats: unknown }>> {
    const rows = await this.knex('livetv_guide_sources').select('id', 'updated_at', 'stats');
    return new Map(rows.map((r) => [r.id, { last_import: r.updated_at ? new Date(Number(r.updated_at)).toISOString() : null, stats: r.stats ? JSON.parse(r.stats) : null }]));
  }

  /** One programme on one channel (what the DVR records). */
  async program(channelId: number, id: number): Promise<StoredProgram | undefined> {
    const r = await this.knex('livetv_channel_guide as m')
      .join('livetv_guide_sources as s', 's.id', 'm.source_id')
      .join('livetv_programs as p', function () {
        this.on('p.source_id', 'm.source_id').andOn('p.generation', 's.generation').andOn('p.guide_id', 'm.guide_id');
      })
      .where({ 'm.channel_id': channelId, 'p.id': id })
      .first('p.id', 'p.title', 'p.start', 'p.stop');
    return r ? { id: Number(r.id), channelId, title: r.title, start: Number(r.start), stop: Number(r.stop) } : undefined;
  }
}
