import type { AiringMatch, Database, GuideLoadResult, GuideProgramme, GuideSource, LiveGuideProgramme, LiveProgramme, Logger, MatchedAiring } from 'antenna/sdk';
import type { Channel } from './channel-store.js';
import { AIRING_LIVE, AIRING_NEW, AIRING_REPEAT, episodeInfo, MARK_LIVE, MARK_NEW, MARK_PREMIERE, MARK_PREVIOUSLY_SHOWN, TitleFolder } from './episode.js';
import { CONFIDENT_SCORE, GuideMatcher, type Candidate, type GuideEntry, type GuideMatch, type MatchMethod } from './guide-match.js';
import { programId } from './program-id.js';
import { fold } from './text.js';
import { insertRows, isSqlite } from './sql.js';

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
  season: number | null;
  episode: number | null;
  episode_title: string | null;
  is_new: boolean;
  is_repeat: boolean;
  is_live: boolean;
  series_key: string | null;
}

export type StoredProgram = LiveProgramme;

/** A guide generation's distinct titles and episode titles. */
interface GuideTexts { titles: string[]; subTitles: string[] }

const PROGRAM_COLUMNS = ['id', 'source_id', 'generation', 'guide_id', 'start', 'stop', 'title', 'sub_title', 'description', 'categories', 'episode_num', 'icon',
  'episode_nums', 'marks', 'previously_shown', 'season', 'episode', 'airing', 'title_key', 'series_key', 'episode_key'];
/** The columns programsFor reads. */
const PROGRAM_SELECT = ['p.id', 'p.title', 'p.start', 'p.stop', 'p.sub_title', 'p.description', 'p.categories', 'p.episode_num', 'p.icon', 'p.season', 'p.episode', 'p.airing', 'p.series_key'];

// = new Date(ms).toISOString() for years 0000-9999 (checked on 400,000 values); cheaper than strftime.
const isoTime = (column: string) => `replace(datetime(${column} / 1000.0, 'unixepoch', 'subsec'), ' ', 'T') || 'Z'`;
const flag = (bit: number) => `CASE WHEN (p.airing & ${bit}) <> 0 THEN 'true' ELSE 'false' END`;
const optionalKey = (key: string, value: string) => `CASE WHEN p.${key} <> '' THEN ',"${key}":' || ${value} ELSE '' END`;
/** SQL for one programme (table alias p) as the JSON the API's Program schema serializes to, its times moved by the SQL `shift` (ms). */
const programJsonSql = (shift = '') => `'{"id":' || p.id || ',"title":' || json_quote(p.title) || ',"start":"' || ${isoTime(`(p.start${shift})`)} || '","stop":"' || ${isoTime(`(p.stop${shift})`)} || '"'` +
  ` || ${optionalKey('sub_title', 'json_quote(p.sub_title)')} || ${optionalKey('description', 'json_quote(p.description)')}` +
  ` || ${optionalKey('categories', 'json(p.categories)')} || ${optionalKey('episode_num', 'json_quote(p.episode_num)')}` +
  ` || ${optionalKey('icon', 'json_quote(p.icon)')}` +
  ` || ',"season":' || coalesce(p.season, 'null') || ',"episode":' || coalesce(p.episode, 'null')` +
  ` || ',"episode_title":' || CASE WHEN p.sub_title <> '' THEN json_quote(p.sub_title) ELSE 'null' END` +
  ` || ',"is_new":' || ${flag(AIRING_NEW)} || ',"is_repeat":' || ${flag(AIRING_REPEAT)} || ',"is_live":' || ${flag(AIRING_LIVE)}` +
  ` || ',"series_key":' || CASE WHEN p.series_key IS NULL THEN 'null' ELSE json_quote(p.series_key) END || '}'`;
const PROGRAM_JSON_SQL = programJsonSql();

/**
 * Programmes (alias p) of a mapping (alias m) ending after / starting before a time, once moved
 * by the mapping's shift; with the unmoved bound widened by the largest shift (a day), so that
 * the lookup index still narrows by start.
 */
const MAX_SHIFT_MS = 86_400_000;
const shiftedAfter = (q: any, at: number) => q.where('p.stop', '>', at - MAX_SHIFT_MS).whereRaw('p.stop + m.shift_ms > ?', [at]);
const shiftedBefore = (q: any, at: number) => q.where('p.start', '<', at + MAX_SHIFT_MS).whereRaw('p.start + m.shift_ms < ?', [at]);

/** How a channel's guide was found: the guide channel (`source_id`, `guide_id`), the method and its score. */
export interface ChannelGuide { sourceId: string; guideId: string; method: MatchMethod; score: number }
/** A channel with no guide, or with one found with low confidence, and the guide channels closest to it. */
export interface UnmatchedChannel { channel: Channel; match: GuideMatch | undefined; candidates: Candidate[] }

/** What LiveProgramme carries of a programme row (with m.channel_id). */
const AIRING_SELECT = ['m.shift_ms', 'p.id', 'p.title', 'p.start', 'p.stop', 'p.sub_title', 'p.season', 'p.episode', 'p.airing', 'p.series_key', 'p.episode_key'];

/** Rows carry their mapping's shift (m.shift_ms, the channel's tvg-shift): times come out moved. */
function airingOf(r: any): LiveProgramme {
  const airing = Number(r.airing);
  const shift = Number(r.shift_ms ?? 0);
  return {
    id: Number(r.id), channelId: Number(r.channel_id), title: r.title, start: Number(r.start) + shift, stop: Number(r.stop) + shift,
    episodeTitle: r.sub_title || null, season: r.season === null ? null : Number(r.season), episode: r.episode === null ? null : Number(r.episode),
    isNew: (airing & AIRING_NEW) !== 0, isRepeat: (airing & AIRING_REPEAT) !== 0, isLive: (airing & AIRING_LIVE) !== 0,
    seriesKey: r.series_key ?? null, episodeKey: r.episode_key ?? null,
  };
}

/** A programme row as the API's Program (programsFor; PROGRAM_JSON_SQL writes the same JSON). */
function programOf(r: any): Program {
  const airing = Number(r.airing);
  const shift = Number(r.shift_ms ?? 0);
  return {
    id: Number(r.id), title: r.title, start: new Date(Number(r.start) + shift).toISOString(), stop: new Date(Number(r.stop) + shift).toISOString(),
    ...(r.sub_title ? { sub_title: r.sub_title } : {}),
    ...(r.description ? { description: r.description } : {}),
    ...(r.categories ? { categories: JSON.parse(r.categories) } : {}),
    ...(r.episode_num ? { episode_num: r.episode_num } : {}),
    ...(r.icon ? { icon: r.icon } : {}),
    season: r.season === null ? null : Number(r.season),
    episode: r.episode === null ? null : Number(r.episode),
    episode_title: r.sub_title || null,
    is_new: (airing & AIRING_NEW) !== 0,
    is_repeat: (airing & AIRING_REPEAT) !== 0,
    is_live: (airing & AIRING_LIVE) !== 0,
    series_key: r.series_key ?? null,
  };
}

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
  mapping: Map<number, { sourceId: string; guideId: string; generation: number; method: MatchMethod; score: number; shiftMs: number }[]>;
  /** channel id → the icon of the guide channel feeding it, when that is a web URL. */
  icons: Map<number, string>;
}

/** Guide channel icons used as channel logos: web URLs only (some guides give bare file names). */
const WEB_URL = /^https?:\/\/\S+$/i;

/** Guide channels whose programmes one DELETE removes (~30,000 programmes for a 14-day guide). */
const DELETE_CHANNELS = 100;
/**
 * Programmes per INSERT (about 100 KB of JSON). Their texts are cut from the guide's decoded text,
 * and gathered by the thousand they outlived V8's young generation with the pieces of text they
 * were cut from: a 500-channel import peaked 50-70 MB higher.
 */
const PROGRAMS_PER_INSERT = 200;
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
  /** source id → its newest generation's distinct titles and episode titles. */
  private readonly texts = new Map<string, { generation: number; texts: Promise<GuideTexts> }>();

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
    // Programmes are stored (SQLite works in libuv's pool) while the source reads the next ones (on
    // the main thread), one INSERT at a time: an import takes about as long as the longer of the
    // two, not their sum. A failed INSERT fails the next store().
    let rows: unknown[][] = [];
    let storing: Promise<void> = Promise.resolve();
    const store = async () => {
      const batch = rows;
      rows = [];
      await storing;
      storing = insertRows(knex, 'livetv_programs', PROGRAM_COLUMNS, batch);
      storing.catch(() => {}); // awaited by the next store(); not an unhandled rejection meanwhile
    };
    const titles = new TitleFolder();
    const write = async (batch: GuideProgramme[]) => {
      for (const p of batch) {
        if (!channels.has(p.channel)) channels.set(p.channel, { names: [] });
        const e = episodeInfo(p, titles);
        rows.push([ // PROGRAM_COLUMNS
          programId(source.id, p.channel, p.start), source.id, generation, p.channel,
          p.start, p.stop, p.title, p.subTitle ?? null, p.description ?? null,
          p.categories?.length ? JSON.stringify(p.categories) : null, p.episodeNum ?? null, p.icon ?? null,
          p.episodeNums?.length ? JSON.stringify(p.episodeNums.map((n) => [n.system, n.value])) : null, e.marks,
          p.previouslyShown?.start ?? null, e.season, e.episode, e.airing, titles.fold(p.title), e.seriesKey, e.episodeKey,
        ]);
      }
      if (rows.length >= PROGRAMS_PER_INSERT) await store();
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
      await store();
      await storing;
      signal.throwIfAborted();
      await insertRows(knex, 'livetv_guide_channels', ['source_id', 'generation', 'guide_id', 'names', 'icon'],
        [...channels].map(([guideId, c]) => [source.id, generation, guideId, JSON.stringify(c.names), c.icon ?? null]));
    } catch (err) {
      await storing.catch(() => {});
      await this.deleteGenerations(source.id, (q) => q.where('generation', generation));
      throw err;
    }
    await knex('livetv_guide_sources').where({ id: source.id }).update({
      generation, updated_at: Date.now(), stats: JSON.stringify({ ...result, warnings: Math.max(result.warnings, warnings) }),
    });
    this.invalidate();
    this.textsOf(source.id, generation).catch(() => {}); // read while the old generation is deleted: ready for the rules' evaluation that follows
    await this.deleteGenerations(source.id, (q) => q.where('generation', '<', generation));
    return { ...result, warnings: Math.max(result.warnings, warnings) };
  }

  /**
   * Deletes a source's programmes and guide channels of the generations `which` picks: a range
   * (`<`, `>`, `=`), as every generation from the lowest to the highest it picks goes.
   * SQLite: a generation at a time, the programmes of DELETE_CHANNELS guide channels per
   * statement, so other queries get the one connection in between; each statement seeks the
   * lookup index by (source_id, generation, guide_id).
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

  /** Every current guide channel of the sources named, in their order, for matching. */
  async matcher(sourceOrder: string[]): Promise<GuideMatcher> {
    // Only the guide sources there are now: a source removed from the config maps nothing.
    const rows = (await this.knex('livetv_guide_channels as g')
      .join('livetv_guide_sources as s', function () { this.on('s.id', 'g.source_id').andOn('s.generation', 'g.generation'); })
      .select('g.source_id', 'g.guide_id', 'g.names')).filter((r) => sourceOrder.includes(r.source_id));
    const rank = new Map(sourceOrder.map((id, i) => [id, i]));
    rows.sort((a, b) => rank.get(a.source_id)! - rank.get(b.source_id)!);
    return new GuideMatcher(rows.map((r): GuideEntry => ({ sourceId: r.source_id, guideId: r.guide_id, names: JSON.parse(r.names) as string[] })));
  }

  /**
   * Which guide channel feeds each playlist channel (guide-match.ts): a manual mapping names a
   * guide channel id, found in the first source (in config order) that has it; else the
   * automatic match. Each mapping keeps its method and score, and the channel's tvg-shift.
   */
  async remap(channels: readonly Channel[], sourceOrder: string[]): Promise<number> {
    const matcher = await this.matcher(sourceOrder);
    const mapping: unknown[][] = [];
    if (matcher.entries.length) {
      for (const c of channels) {
        const found = this.matchOf(matcher, c);
        if (found) mapping.push([c.id, found.ref.sourceId, found.ref.guideId, found.method, found.score, c.shiftMs]);
      }
    }
    await this.knex.transaction(async (trx) => {
      await trx('livetv_channel_guide').delete();
      await insertRows(trx, 'livetv_channel_guide', ['channel_id', 'source_id', 'guide_id', 'method', 'score', 'shift_ms'], mapping);
    });
    this.invalidate();
    return mapping.length;
  }

  private matchOf(matcher: GuideMatcher, c: Channel): GuideMatch | undefined {
    if (c.guideId !== null) {
      const entry = matcher.entries.find((e) => e.guideId === c.guideId);
      // A manual mapping to a guide channel no source has now: no guide until it is back (never a guess).
      return entry ? { ref: { sourceId: entry.sourceId, guideId: entry.guideId }, method: 'manual', score: 1 } : undefined;
    }
    return matcher.match(c);
  }

  /**
   * Channels without a guide, or matched fuzzily below CONFIDENT_SCORE, each with the `n` guide
   * channels closest to its names (the first `limit` such channels, in the order given).
   */
  async unmatched(channels: readonly Channel[], sourceOrder: string[], limit: number, n = 5): Promise<{ total: number; channels: UnmatchedChannel[] }> {
    const matcher = await this.matcher(sourceOrder);
    const { mapping } = await this.guideState();
    const out: UnmatchedChannel[] = [];
    let total = 0;
    for (const c of channels) {
      const ref = mapping.get(c.id)?.[0];
      if (ref && (ref.method !== 'fuzzy' || ref.score >= CONFIDENT_SCORE)) continue;
      total++;
      if (out.length >= limit) continue;
      const match = ref && { ref: { sourceId: ref.sourceId, guideId: ref.guideId }, method: ref.method, score: ref.score };
      out.push({ channel: c, match, candidates: matcher.candidates(c, n) });
    }
    return { total, channels: out };
  }

  /** channel id → its guide mapping (how it was found), as of the last second or so. */
  async channelGuides(): Promise<ReadonlyMap<number, readonly ChannelGuide[]>> {
    return (await this.guideState()).mapping;
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
    const out = new Map<number, Program[]>();
    for (const r of await this.programmeRows(channelIds, from, to)) {
      let list = out.get(r.channel_id);
      if (!list) out.set(r.channel_id, (list = []));
      list.push(programOf(r));
    }
    return out;
  }

  /** Programme rows of these channels overlapping [from, to) once shifted, by channel and start. */
  private programmeRows(channelIds: number[], from?: number, to?: number): Promise<any[]> {
    const q = this.current()
      .select('m.channel_id', 'm.shift_ms', ...PROGRAM_SELECT, 'p.episode_nums', 'p.marks', 'p.previously_shown')
      .orderBy([{ column: 'm.channel_id' }, { column: 'p.start' }]);
    q.whereIn('m.channel_id', channelIds);
    if (from !== undefined) shiftedAfter(q, from);
    if (to !== undefined) shiftedBefore(q, to);
    return q;
  }

  /** The channels' programmes overlapping [from, to), by start, with every detail kept (what the XMLTV output writes). */
  async programmeDetails(channelIds: number[], from?: number, to?: number): Promise<Map<number, LiveGuideProgramme[]>> {
    const out = new Map<number, LiveGuideProgramme[]>();
    for (const r of await this.programmeRows(channelIds, from, to)) {
      const shift = Number(r.shift_ms);
      const p: LiveGuideProgramme = { id: Number(r.id), title: r.title, start: Number(r.start) + shift, stop: Number(r.stop) + shift };
      if (r.sub_title) p.subTitle = r.sub_title;
      if (r.description) p.description = r.description;
      if (r.categories) p.categories = JSON.parse(r.categories);
      if (r.episode_num) p.episodeNum = r.episode_num;
      if (r.episode_nums) p.episodeNums = (JSON.parse(r.episode_nums) as [string, string][]).map(([system, value]) => ({ system, value }));
      const marks = Number(r.marks);
      if (marks & MARK_NEW) p.isNew = true;
      if (marks & MARK_PREMIERE) p.premiere = true;
      if (marks & MARK_PREVIOUSLY_SHOWN) p.previouslyShown = r.previously_shown === null ? {} : { start: Number(r.previously_shown) + shift };
      if (marks & MARK_LIVE) p.live = true;
      if (r.icon) p.icon = r.icon;
      let list = out.get(r.channel_id);
      if (!list) out.set(r.channel_id, (list = []));
      list.push(p);
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
  async programsJsonFor(channelIds: number[], from?: number, to?: number, cache = true): Promise<Map<number, string>> {
    const out = new Map<number, string>();
    if (!isSqlite(this.knex)) {
      for (const [channelId, list] of await this.programsFor(channelIds, from, to)) out.set(channelId, list.map((p) => JSON.stringify(p)).join(','));
      return out;
    }
    if (cache && from !== undefined && to !== undefined && to > from && to - from <= MAX_CACHED_WINDOW_MS) {
      // The cache holds programmes at the guide's times: channels with a tvg-shift are asked of SQL.
      const { mapping } = await this.guideState();
      const shifted = channelIds.filter((id) => mapping.get(id)?.some((r) => r.shiftMs !== 0));
      const cached = await this.cachedProgramsJson(shifted.length ? channelIds.filter((id) => !shifted.includes(id)) : channelIds, from, to);
      if (cached) {
        if (shifted.length) for (const [id, json] of await this.programsJsonFor(shifted, from, to, false)) cached.set(id, json);
        return cached;
      }
    }
    const item = programJsonSql(' + m.shift_ms');
    const q = this.knex('livetv_channel_guide as m')
      .join('livetv_guide_sources as s', 's.id', 'm.source_id')
      .join('livetv_programs as p', function () {
        this.on('p.source_id', 'm.source_id').andOn('p.generation', 's.generation').andOn('p.guide_id', 'm.guide_id');
      })
      .select('m.channel_id', this.knex.raw(`group_concat(${item}, ',' ORDER BY p.start) as programs`))
      .groupBy('m.channel_id');
    q.whereIn('m.channel_id', channelIds);
    if (from !== undefined) shiftedAfter(q, from);
    if (to !== undefined) shiftedBefore(q, to);
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
          .select('m.channel_id', 'm.source_id', 'm.guide_id', 'm.method', 'm.score', 'm.shift_ms', 's.generation');
        for (const r of rows) {
          let refs = mapping.get(r.channel_id);
          if (!refs) mapping.set(r.channel_id, (refs = []));
          refs.push({ sourceId: r.source_id, guideId: r.guide_id, generation: Number(r.generation), method: r.method, score: Number(r.score), shiftMs: Number(r.shift_ms) });
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

  /** Current programmes of mapped channels (table aliases m, s, p). */
  private current() {
    return this.knex('livetv_channel_guide as m')
      .join('livetv_guide_sources as s', 's.id', 'm.source_id')
      .join('livetv_programs as p', function () {
        this.on('p.source_id', 'm.source_id').andOn('p.generation', 's.generation').andOn('p.guide_id', 'm.guide_id');
      });
  }

  /** One channel's programmes overlapping [from, to), by start (what the DVR follows when times change). */
  async programmesOf(channelId: number, from: number, to: number): Promise<StoredProgram[]> {
    const rows = await this.current().where('m.channel_id', channelId).modify(shiftedAfter, from).modify(shiftedBefore, to)
      .orderBy('p.start').select('m.channel_id', ...AIRING_SELECT);
    return rows.map(airingOf);
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
    const r = await this.current().where({ 'm.channel_id': channelId, 'p.id': id }).first('m.channel_id', ...AIRING_SELECT);
    return r ? airingOf(r) : undefined;
  }

  /**
   * A generation's distinct titles and episode titles: what keyword and pattern rules are tried on,
   * in JavaScript. Read once per generation (a generation never changes), at its import or on
   * first need; only a source's newest generation is kept.
   */
  private textsOf(sourceId: string, generation: number): Promise<GuideTexts> {
    const cached = this.texts.get(sourceId);
    if (cached?.generation === generation) return cached.texts;
    const distinct = async (column: string) => (await this.knex('livetv_programs').where({ source_id: sourceId, generation }).whereNotNull(column)
      .distinct(`${column} as text`)).map((r: { text: string }) => r.text);
    const texts = (async () => ({ titles: await distinct('title'), subTitles: await distinct('sub_title') }))();
    if (!cached || cached.generation < generation) {
      this.texts.set(sourceId, { generation, texts });
      texts.catch(() => { if (this.texts.get(sourceId)?.texts === texts) this.texts.delete(sourceId); }); // read again on next need
    }
    return texts;
  }

  /** The GuideTexts of every source generation the channels' guides come from now. */
  private async currentTexts(): Promise<GuideTexts[]> {
    const current = new Map<string, number>();
    for (const refs of (await this.guideState()).mapping.values()) for (const r of refs) current.set(r.sourceId, r.generation);
    return Promise.all([...current].map(([sourceId, generation]) => this.textsOf(sourceId, generation)));
  }

  /**
   * Programmes of mapped channels overlapping [from, to) that any of `matches` picks, by start:
   * one scan of the current programmes comparing stored keys (title_key, series_key) and texts.
   * Keywords and regular expressions are tried on the distinct titles (and episode titles) of the
   * guide (textsOf), in JavaScript: SQL would lower-case every programme's texts once per keyword.
   */
  async findAirings(matches: readonly AiringMatch[], from: number, to: number): Promise<MatchedAiring[]> {
    const byTitle = new Map<string, number[]>();
    const bySeries = new Map<string, number[]>();
    const keywords: [string, number][] = [];
    const patterns: [RegExp, number][] = [];
    const add = (map: Map<string, number[]>, key: string, i: number) => { const l = map.get(key); if (l) l.push(i); else map.set(key, [i]); };
    matches.forEach((m, i) => {
      if ('title' in m) add(byTitle, fold(m.title), i);
      else if ('seriesId' in m) add(bySeries, `dd:${m.seriesId.trim()}`, i);
      else if ('keyword' in m) keywords.push([m.keyword.toLowerCase(), i]);
      else {
        try { patterns.push([new RegExp(m.regex, 'iu'), i]); } catch { /* picks nothing */ }
      }
    });
    const byRawTitle = new Map<string, number[]>();
    const bySubTitle = new Map<string, number[]>();
    if (patterns.length || keywords.length) {
      for (const { titles, subTitles } of await this.currentTexts()) {
        for (const title of titles) {
          const lower = title.toLowerCase();
          for (const [re, i] of patterns) if (re.test(title)) add(byRawTitle, title, i);
          for (const [k, i] of keywords) if (lower.includes(k)) add(byRawTitle, title, i);
        }
        if (!keywords.length) continue;
        for (const sub of subTitles) {
          const lower = sub.toLowerCase();
          for (const [k, i] of keywords) if (lower.includes(k)) add(bySubTitle, sub, i);
        }
      }
    }
    if (!byTitle.size && !bySeries.size && !byRawTitle.size && !bySubTitle.size) return [];
    const out: MatchedAiring[] = [];
    const q = this.current().where('p.stop', '>', from).where('p.start', '<', to).where((w) => {
      for (const [column, map] of [['p.title_key', byTitle], ['p.series_key', bySeries], ['p.title', byRawTitle], ['p.sub_title', bySubTitle]] as const) {
        const keys = [...map.keys()];
        for (let i = 0; i < keys.length; i += IN_CHUNK) w.orWhereIn(column, keys.slice(i, i + IN_CHUNK));
      }
    }).orderBy([{ column: 'p.start' }, { column: 'm.channel_id' }]).select('m.channel_id', 'p.title_key', ...AIRING_SELECT);
    for (const r of await q) {
      const found = new Set<number>([...(byTitle.get(r.title_key) ?? []), ...(bySeries.get(r.series_key) ?? []), ...(byRawTitle.get(r.title) ?? []),
        ...(r.sub_title ? bySubTitle.get(r.sub_title) ?? [] : [])]);
      if (found.size) out.push({ ...airingOf(r), matches: [...found].sort((a, b) => a - b) });
    }
    return out;
  }
}
