import type { Database, GuideLoadResult, GuideProgramme, GuideSource, Logger } from 'antenna/sdk';
import { insertRows, isSqlite, RowInserter } from 'antenna/sdk';
import type { Channel } from './channel-store.js';
import { ProgramIds } from './program-id.js';
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

const PROGRAM_COLUMNS = ['id', 'source_id', 'generation', 'guide_id', 'start', 'stop', 'title', 'sub_title', 'description', 'categories', 'episode_num', 'icon'];

// = new Date(ms).toISOString() for years 0000-9999 (checked on 400,000 values); cheaper than strftime.
const isoTime = (column: string) => `replace(datetime(${column} / 1000.0, 'unixepoch', 'subsec'), ' ', 'T') || 'Z'`;
const optionalKey = (key: string, value: string) => `CASE WHEN p.${key} <> '' THEN ',"${key}":' || ${value} ELSE '' END`;
/** SQL for one programme (table alias p) as the JSON the API's Program schema serializes to. */
const PROGRAM_JSON_SQL = `'{"id":' || p.id || ',"title":' || json_quote(p.title) || ',"start":"' || ${isoTime('p.start')} || '","stop":"' || ${isoTime('p.stop')} || '"'` +
  ` || ${optionalKey('sub_title', 'json_quote(p.sub_title)')} || ${optionalKey('description', 'json_quote(p.description)')}` +
  ` || ${optionalKey('categories', 'json(p.categories)')} || ${optionalKey('episode_num', 'json_quote(p.episode_num)')}` +
  ` || ${optionalKey('icon', 'json_quote(p.icon)')} || '}'`;

/**
 * The guide grid asks, again and again, for the same few hours ("now to +6 h") of the same
 * channels: programmes are cached as JSON per guide channel and BUCKET_MS slice of time (a
 * slice holds every programme overlapping it), so a page is served from memory. Keys carry the
 * source's generation; an import or a remap in this process clears the cache, one in another
 * process (the CLI) is noticed within STATE_CHECK_MS, as the channel snapshot is.
 */
const BUCKET_MS = 6 * 3600_000;
const MAX_CACHED_WINDOW_MS = 2 * 86400_000;
const CACHE_MAX_BYTES = 32 * 2 ** 20;
const STATE_CHECK_MS = 1000;
const IN_CHUNK = 500;

interface CachedProgram { rowid: number; start: number; stop: number; json: string }
interface GuideState {
  /** Channel version and every source's generation: when it changes, mapping and cache are stale. */
  key: string;
  checkedAt: number;
  /** channel id → the guide channels feeding it, with their source's current generation. */
  mapping: Map<number, { sourceId: string; guideId: string; generation: number }[]>;
  /** channel id → the icon of the guide channel feeding it, when that is a web URL. */
  icons: Map<number, string>;
}

/** Guide channel icons used as channel logos: web URLs only (some guides give bare file names). */
const WEB_URL = /^https?:\/\/\S+$/i;

/** Guide channels whose programmes one DELETE removes (~30,000 programmes for a 14-day guide). */
const DELETE_CHANNELS = 100;
/** Programmes per INSERT (~1 MB of JSON). Each is a commit, which writes the pages it changed to the WAL: few, large ones cost SQLite less. */
const PROGRAMS_PER_STATEMENT = 2000;
const MAX_WARNINGS_LOGGED = 20;

/**
 * Guide data. Each import writes a new generation of rows beside the current
 * one and switches over in one small transaction, so readers never wait on an
 * import and a failed import leaves the previous guide exactly as it was.
 */
export class GuideStore {
  private state?: GuideState;
  private stateLoading?: Promise<GuideState>;
  /** `${sourceId}\n${generation}\n${guideId}\n${bucket}` → programmes overlapping the bucket, by start; LRU by insertion order. */
  private readonly buckets = new Map<string, CachedProgram[]>();
  private bucketBytes = 0;
  /** Bumped by invalidate(): a state read before it is not kept. */
  private epoch = 0;

  constructor(private readonly knex: Database, private readonly log: Logger) {}

  /** After anything that changes which programmes a channel shows (switch-over, remap). */
  private invalidate(): void {
    this.epoch++;
    this.state = undefined;
    this.buckets.clear();
    this.bucketBytes = 0;
  }

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
    // Programmes are stored (SQLite works in libuv's pool) while the source reads the next ones
    // (on the main thread): import time is about max(read, store), not their sum. A failed
    // insert surfaces at a later batch or at the end.
    const programmes = new RowInserter(knex, 'livetv_programs', PROGRAM_COLUMNS, { rowsPerStatement: PROGRAMS_PER_STATEMENT });
    const ids = new ProgramIds(source.id);
    const write = async (batch: GuideProgramme[]) => {
      const rows = batch.map((p) => {
        if (!channels.has(p.channel)) channels.set(p.channel, { names: [] });
        return [ // PROGRAM_COLUMNS
          ids.id(p.channel, p.start), source.id, generation, p.channel,
          p.start, p.stop, p.title, p.subTitle ?? null, p.description ?? null,
          p.categories?.length ? JSON.stringify(p.categories) : null, p.episodeNum ?? null, p.icon ?? null,
        ];
      });
      await programmes.add(rows);
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
      await programmes.flush();
      signal.throwIfAborted();
      await insertRows(knex, 'livetv_guide_channels', [...channels].map(([guideId, c]) => ({
        source_id: source.id, generation, guide_id: guideId, names: JSON.stringify(c.names), icon: c.icon ?? null,
      })));
    } catch (err) {
      await programmes.flush().catch(() => {});
      await this.deleteGenerations(source.id, (q) => q.where('generation', generation));
      throw err;
    }
    await knex('livetv_guide_sources').where({ id: source.id }).update({
      generation, updated_at: Date.now(), stats: JSON.stringify({ ...result, warnings: Math.max(result.warnings, warnings) }),
    });
    this.invalidate();
    await this.deleteGenerations(source.id, (q) => q.where('generation', '<', generation));
    return { ...result, warnings: Math.max(result.warnings, warnings) };
  }

  /**
   * Deletes a source's programmes and guide channels of the generations `which` picks: a range
   * (`<`, `>`, `=`), as every generation from the lowest to the highest it picks goes.
   * SQLite: a generation at a time, the programmes of DELETE_CHANNELS guide channels per
   * statement (a few tens of ms each), so other queries get the connection in between; each
   * statement seeks the lookup index by (source_id, generation, guide_id). Chunks picked by a
   * rowid subquery, as before, scanned that index range again each time: 650,000 programmes
   * took 2.2-2.6 s to delete that way, 1.4-1.5 s this way (one single DELETE: 1.3-1.5 s).
   */
  private async deleteGenerations(sourceId: string, which: (q: any) => any): Promise<void> {
    const knex = this.knex;
    if (!isSqlite(knex)) { // PostgreSQL readers are not blocked by a large delete
      for (const table of ['livetv_programs', 'livetv_guide_channels']) await which(knex(table).where({ source_id: sourceId })).delete();
      return;
    }
    // The generations to delete, from the index's two ends (a DISTINCT would read every entry).
    const bound = async (fn: 'min' | 'max') =>
      (await which(knex('livetv_programs').where({ source_id: sourceId }))[fn]({ g: 'generation' }).first())?.g as number | null | undefined;
    const low = await bound('min');
    const high = (await bound('max')) ?? -1; // none: no generation to go through
    for (let generation = low ?? 0; generation <= high; generation++) {
      const at = { source_id: sourceId, generation };
      const guideIds = (await knex('livetv_guide_channels').where(at).select('guide_id')).map((r) => r.guide_id as string);
      for (let i = 0; i < guideIds.length; i += DELETE_CHANNELS) {
        await knex('livetv_programs').where(at).whereIn('guide_id', guideIds.slice(i, i + DELETE_CHANNELS)).delete();
      }
      // Programmes of channels it has no row for: an import stopped before it stored its channels.
      await knex('livetv_programs').where(at).delete();
    }
    await which(knex('livetv_guide_channels').where({ source_id: sourceId })).delete();
  }

  /**
   * Which guide channel feeds each playlist channel: the first source (in
   * config order) whose channel id equals the tvg-id, else whose display name
   * equals the channel's name or tvg-name (case- and accent-insensitive).
   */
  async remap(channels: Channel[], sourceOrder: string[]): Promise<number> {
    // Only the guide sources there are now: a source removed from the config maps nothing.
    const rows = (await this.knex('livetv_guide_channels as g')
      .join('livetv_guide_sources as s', function () { this.on('s.id', 'g.source_id').andOn('s.generation', 'g.generation'); })
      .select('g.source_id', 'g.guide_id', 'g.names')).filter((r) => sourceOrder.includes(r.source_id));
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
    this.invalidate();
    return mapping.length;
  }

  /**
   * channel id → the icon of the guide channel it is mapped to, as of the last second or so: the
   * logo of a channel whose playlist gives none (many playlists have no tvg-logo, while their
   * guide names an icon for every channel). The same map until the guide or the mapping changes.
   */
  async channelIcons(): Promise<ReadonlyMap<number, string>> {
    return (await this.guideState()).icons;
  }

  private async iconsOf(mapping: GuideState['mapping']): Promise<Map<number, string>> {
    const icons = new Map<number, string>();
    if (!mapping.size) return icons;
    // Every current guide channel with an icon, matched here: one pass, whatever the database plans for a join.
    const rows = await this.knex('livetv_guide_channels as g')
      .join('livetv_guide_sources as s', function () { this.on('s.id', 'g.source_id').andOn('s.generation', 'g.generation'); })
      .whereNotNull('g.icon').select('g.source_id', 'g.guide_id', 'g.icon') as { source_id: string; guide_id: string; icon: string }[];
    const iconOf = new Map<string, string>();
    for (const r of rows) if (WEB_URL.test(r.icon)) iconOf.set(`${r.source_id}\n${r.guide_id}`, r.icon);
    for (const [channelId, refs] of mapping) {
      const icon = refs.map((r) => iconOf.get(`${r.sourceId}\n${r.guideId}`)).find((i) => i !== undefined);
      if (icon) icons.set(channelId, icon);
    }
    return icons;
  }

  /** Which channels have guide data (are mapped to a guide channel), as of the last second or so. */
  async guided(): Promise<{ has(channelId: number): boolean }> {
    return (await this.guideState()).mapping;
  }

  /** Programmes of these channels overlapping [from, to), per channel, by start time. */
  async programsFor(channelIds: number[], from?: number, to?: number): Promise<Map<number, Program[]>> {
    const q = this.knex('livetv_channel_guide as m')
      .join('livetv_guide_sources as s', 's.id', 'm.source_id')
      .join('livetv_programs as p', function () {
        this.on('p.source_id', 'm.source_id').andOn('p.generation', 's.generation').andOn('p.guide_id', 'm.guide_id');
      })
      .select('m.channel_id', 'p.id', 'p.title', 'p.start', 'p.stop', 'p.sub_title', 'p.description', 'p.categories', 'p.episode_num', 'p.icon')
      .orderBy([{ column: 'm.channel_id' }, { column: 'p.start' }]);
    q.whereIn('m.channel_id', channelIds);
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
  async programsJsonFor(channelIds: number[], from?: number, to?: number): Promise<Map<number, string>> {
    const out = new Map<number, string>();
    if (!isSqlite(this.knex)) {
      for (const [channelId, list] of await this.programsFor(channelIds, from, to)) out.set(channelId, list.map((p) => JSON.stringify(p)).join(','));
      return out;
    }
    if (from !== undefined && to !== undefined && to > from && to - from <= MAX_CACHED_WINDOW_MS) {
      const cached = await this.cachedProgramsJson(channelIds, from, to);
      if (cached) return cached;
    }
    const item = PROGRAM_JSON_SQL;
    const q = this.knex('livetv_channel_guide as m')
      .join('livetv_guide_sources as s', 's.id', 'm.source_id')
      .join('livetv_programs as p', function () {
        this.on('p.source_id', 'm.source_id').andOn('p.generation', 's.generation').andOn('p.guide_id', 'm.guide_id');
      })
      .select('m.channel_id', this.knex.raw(`group_concat(${item}, ',' ORDER BY p.start) as programs`))
      .groupBy('m.channel_id');
    q.whereIn('m.channel_id', channelIds);
    if (from !== undefined) q.where('p.stop', '>', from);
    if (to !== undefined) q.where('p.start', '<', to);
    for (const r of await q) out.set(r.channel_id, r.programs);
    return out;
  }

  private async guideState(): Promise<GuideState> {
    const state = this.state;
    if (state && Date.now() - state.checkedAt < STATE_CHECK_MS) return state;
    if (!this.stateLoading) {
      const epoch = this.epoch;
      this.stateLoading = (async () => {
        const key = await this.changeKey();
        if (this.state?.key === key && epoch === this.epoch) {
          this.state.checkedAt = Date.now();
          return this.state;
        }
        const mapping: GuideState['mapping'] = new Map();
        const rows = await this.knex('livetv_channel_guide as m').join('livetv_guide_sources as s', 's.id', 'm.source_id')
          .select('m.channel_id', 'm.source_id', 'm.guide_id', 's.generation');
        for (const r of rows) {
          let refs = mapping.get(r.channel_id);
          if (!refs) mapping.set(r.channel_id, (refs = []));
          refs.push({ sourceId: r.source_id, guideId: r.guide_id, generation: Number(r.generation) });
        }
        const fresh: GuideState = { key, checkedAt: Date.now(), mapping, icons: await this.iconsOf(mapping) };
        if (epoch !== this.epoch) return { ...fresh, checkedAt: 0 }; // invalidated meanwhile: use once, keep nothing
        this.buckets.clear();
        this.bucketBytes = 0;
        return (this.state = fresh);
      })().finally(() => { this.stateLoading = undefined; });
    }
    return this.stateLoading;
  }

  /** programsJsonFor from the bucket cache, loading missing buckets; undefined when the state moved meanwhile (the caller asks SQL). */
  private async cachedProgramsJson(channelIds: number[], from: number, to: number): Promise<Map<number, string> | undefined> {
    const state = await this.guideState();
    const first = Math.floor(from / BUCKET_MS);
    const last = Math.ceil(to / BUCKET_MS) - 1;
    const bucketKey = (r: { sourceId: string; guideId: string; generation: number }, b: number) => `${r.sourceId}\n${r.generation}\n${r.guideId}\n${b}`;
    // Missing buckets, per source, generation and bucket: one query each.
    const missing = new Map<string, { sourceId: string; generation: number; bucket: number; guideIds: Set<string> }>();
    for (const id of channelIds) {
      for (const ref of state.mapping.get(id) ?? []) {
        for (let b = first; b <= last; b++) {
          if (this.buckets.has(bucketKey(ref, b))) continue;
          const k = `${ref.sourceId}\n${ref.generation}\n${b}`;
          let m = missing.get(k);
          if (!m) missing.set(k, (m = { sourceId: ref.sourceId, generation: ref.generation, bucket: b, guideIds: new Set() }));
          m.guideIds.add(ref.guideId);
        }
      }
    }
    const loaded = new Map<string, CachedProgram[]>();
    for (const m of missing.values()) {
      const guideIds = [...m.guideIds];
      for (let i = 0; i < guideIds.length; i += IN_CHUNK) {
        const chunk = guideIds.slice(i, i + IN_CHUNK);
        // The generation comes from the same statement: rows of a generation switched away from
        // meanwhile are never cached (nor served).
        const rows = await this.knex.raw(
          `SELECT s.generation AS generation, p.guide_id AS guide_id, p.rowid AS rowid, p.start AS start, p.stop AS stop, ${PROGRAM_JSON_SQL} AS json ` +
          `FROM livetv_guide_sources AS s LEFT JOIN livetv_programs AS p ON p.source_id = s.id AND p.generation = s.generation ` +
          `AND p.guide_id IN (${chunk.map(() => '?').join(', ')}) AND p.stop > ? AND p.start < ? WHERE s.id = ? ORDER BY p.guide_id, p.start, p.rowid`,
          [...chunk, m.bucket * BUCKET_MS, (m.bucket + 1) * BUCKET_MS, m.sourceId],
        ) as { generation: number; guide_id: string | null; rowid: number; start: number; stop: number; json: string }[];
        if (!rows.length || Number(rows[0].generation) !== m.generation || this.state !== state) {
          if (this.state === state) state.checkedAt = 0; // another process imported: look again
          return undefined;
        }
        const byGuide = new Map<string, CachedProgram[]>(chunk.map((g) => [g, []]));
        for (const r of rows) {
          if (r.guide_id !== null) byGuide.get(r.guide_id)?.push({ rowid: r.rowid, start: Number(r.start), stop: Number(r.stop), json: r.json });
        }
        for (const [guideId, list] of byGuide) {
          const key = bucketKey({ sourceId: m.sourceId, guideId, generation: m.generation }, m.bucket);
          loaded.set(key, list);
          this.buckets.set(key, list);
          for (const p of list) this.bucketBytes += p.json.length + 64;
        }
      }
    }
    const out = new Map<number, string>();
    for (const id of channelIds) {
      const refs = state.mapping.get(id);
      if (!refs) continue;
      let found: CachedProgram[] = [];
      for (const ref of refs) {
        for (let b = first; b <= last; b++) {
          const key = bucketKey(ref, b);
          const list = loaded.get(key) ?? this.buckets.get(key);
          if (!list) return undefined; // evicted meanwhile: let SQL answer
          if (!loaded.has(key)) { this.buckets.delete(key); this.buckets.set(key, list); } // recently used
          for (const p of list) if (p.stop > from && p.start < to) found.push(p);
        }
      }
      if (!found.length) continue;
      if (last > first || refs.length > 1) {
        const seen = new Set<number>();
        found = found.filter((p) => !seen.has(p.rowid) && seen.add(p.rowid) !== undefined);
        found.sort((a, b) => a.start - b.start || a.rowid - b.rowid);
      }
      out.set(id, found.map((p) => p.json).join(','));
    }
    for (const [key, list] of this.buckets) { // least recently used first
      if (this.bucketBytes <= CACHE_MAX_BYTES) break;
      this.buckets.delete(key);
      for (const p of list) this.bucketBytes -= p.json.length + 64;
    }
    return out;
  }

  /** When each source was last imported, with its counts. */
  async sources(): Promise<Map<string, { last_import: string | null; stats: unknown }>> {
    const rows = await this.knex('livetv_guide_sources').select('id', 'updated_at', 'stats');
    return new Map(rows.map((r) => [r.id, { last_import: r.updated_at ? new Date(Number(r.updated_at)).toISOString() : null, stats: r.stats ? JSON.parse(r.stats) : null }]));
  }

  /**
   * Changes whenever channels (their mapping) or any guide source change, in this process or
   * another: the channel version and every source's generation, what a cached mapping or
   * listing depends on. (Two plain queries: SQLite's group_concat is string_agg on PostgreSQL.)
   */
  async changeKey(): Promise<string> {
    const [version, sources] = await Promise.all([
      this.knex('livetv_state').where({ key: 'version' }).first('value'),
      this.knex('livetv_guide_sources').orderBy('id').select('id', 'generation'),
    ]);
    return `${version?.value ?? ''}|${sources.map((s: { id: string; generation: unknown }) => `${s.id}:${s.generation}`).join(',')}`;
  }

  /** One channel's programmes overlapping [from, to), by start (what the DVR follows when times change). */
  async programmesOf(channelId: number, from: number, to: number): Promise<StoredProgram[]> {
    const rows = await this.knex('livetv_channel_guide as m')
      .join('livetv_guide_sources as s', 's.id', 'm.source_id')
      .join('livetv_programs as p', function () {
        this.on('p.source_id', 'm.source_id').andOn('p.generation', 's.generation').andOn('p.guide_id', 'm.guide_id');
      })
      .where('m.channel_id', channelId).where('p.stop', '>', from).where('p.start', '<', to)
      .orderBy('p.start')
      .select('p.id', 'p.title', 'p.start', 'p.stop');
    return rows.map((r) => ({ id: Number(r.id), channelId, title: r.title, start: Number(r.start), stop: Number(r.stop) }));
  }

  /**
   * Programmes still to end after `from` whose title contains `text` (case aside), by start: what
   * a search finds. `start` bounds the index range (programmes longer than a day are not looked for).
   */
  async searchTitles(text: string, from: number, limit: number): Promise<(StoredProgram & { subTitle: string | null })[]> {
    const like = `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    const rows = await this.knex('livetv_channel_guide as m')
      .join('livetv_guide_sources as s', 's.id', 'm.source_id')
      .join('livetv_programs as p', function () {
        this.on('p.source_id', 'm.source_id').andOn('p.generation', 's.generation').andOn('p.guide_id', 'm.guide_id');
      })
      .where('p.start', '>', from - 86_400_000).where('p.stop', '>', from)
      .whereRaw(`p.title ${isSqlite(this.knex) ? 'LIKE' : 'ILIKE'} ? ESCAPE '\\'`, [like])
      .orderBy([{ column: 'p.start' }, { column: 'm.channel_id' }])
      .limit(limit)
      .select('m.channel_id', 'p.id', 'p.title', 'p.sub_title', 'p.start', 'p.stop');
    return rows.map((r) => ({ id: Number(r.id), channelId: r.channel_id, title: r.title, subTitle: r.sub_title || null, start: Number(r.start), stop: Number(r.stop) }));
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
