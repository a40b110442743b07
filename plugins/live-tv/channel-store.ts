import { setImmediate } from 'node:timers/promises';
import type { Knex } from 'knex';
import type { Database, TunerChannel } from 'antenna/sdk';
import { errors, isSqlite, sqliteText } from 'antenna/sdk';
import { digitsValue, fold, numberSortKey } from './text.js';

export interface Channel {
  readonly id: number;
  readonly tunerId: string;
  readonly key: string;
  readonly name: string;
  /** The number shown: the tuner's, else the one we assigned. */
  readonly number: string;
  readonly tvgId: string | null;
  readonly tvgName: string | null;
  readonly logo: string | null;
  readonly groups: string[];
  readonly extra: Record<string, string>;
  readonly data: Record<string, unknown>;
  /** Folded name and number, for search. */
  readonly search: string;
}

export interface ChannelSnapshot {
  version: number;
  /** Present channels of registered tuners, in number order. */
  channels: Channel[];
  byId: Map<number, Channel>;
}

/**
 * How a tuner's channels are stored: its list, in `livetv_channel_pages`, as
 * pages of PAGE_SIZE entries, each page one JSON array. The channels listed
 * come first, in the tuner's order, then the ones it no longer lists (hidden:
 * kept with their ids, so a channel that comes back is the same channel, with
 * its favorites and recordings).
 *
 * Why pages and not a row per channel: a first import of a 100,000-entry
 * playlist spent 0.7-0.9 s of SQLite's CPU inserting 100,000 rows of 14
 * columns (on a 2-core machine, against the main thread and the GC), which the
 * import waited for; 250 pages of JSON cost SQLite a few dozen ms. Nothing
 * queries channels by column: every reader uses the in-memory snapshot.
 * 400 entries make ~120 KB of JSON, small enough for V8's young generation
 * (a larger string goes straight to the old one, and 25 MB of them per import
 * is what V8 grows the heap by before it collects them).
 */
export const PAGE_SIZE = 400;
/** A listed channel in a page. `groups`, `extra` and `data` are JSON texts. */
export type ListedEntry = [id: number, key: string, name: string, given: string | null, assigned: string | null,
  tvgId: string | null, tvgName: string | null, logo: string | null, groups: string, extra: string, data: string];
/** A channel the tuner no longer lists, since `hiddenAt` (ms since epoch). */
export type HiddenEntry = [id: number, key: string, assigned: string | null, hiddenAt: number];
/** `livetv_state` key of the next channel id: ids are never reused, as favorites and recordings keep them. */
export const NEXT_ID_KEY = 'next_channel_id';

const VERSION_CHECK_MS = 1000;
/** Pages read per query when loading: a few MB, not the whole list (tens of MB for 100,000 channels). */
const LOAD_PAGES = 40;

export interface ImportCounts { channels: number; added: number; removed: number; duplicates: number }

export interface ChannelLimits {
  /**
   * How long a channel the tuner no longer lists keeps its id (and favorites, and assigned
   * number) for when it comes back; a favorited one is kept until it does. Without a limit,
   * a playlist whose stream URLs carry a token (keyed by URL, as it has no tvg-ids) would
   * add its whole list to the hidden ones at every refresh. Default 30 days.
   */
  keepHiddenMs?: number;
  /** A tuner listing more channels than this fails its import (413), its stored channels untouched. Default 1,000,000. */
  maxChannelsPerTuner?: number;
}

const parse = <T>(text: string | null, fallback: T): T => {
  if (!text) return fallback;
  try { return JSON.parse(text) as T; } catch { return fallback; }
};

/**
 * `text`, flattened. A string made by concatenation (`tvg:${id}|${url}`) is a
 * tree of its parts until V8 flattens it, and m3u-tuner's parts are slices of
 * whole playlist lines: 100,000 kept keys kept 28 MB of lines alive. Reading a
 * character flattens it into a copy of its own characters.
 */
function flat(text: string): string {
  text.charCodeAt(0);
  return text;
}

/**
 * A channel of the snapshot, and what an import stores for it. `extra`, `data`
 * and `search` are worked out on first use: only opening a stream needs the
 * first two and only a search the last, while for 100,000 channels parsing and
 * folding them all costs seconds and tens of MB at every reload.
 */
class StoredChannel implements Channel {
  private extraValue?: Record<string, string>;
  private dataValue?: Record<string, unknown>;
  private searchValue?: string;

  constructor(
    /** 0 until an import gives a new channel its id. */
    public id: number,
    // The strings are replaced once by compact copies of themselves (compactStrings), by the import
    // that made the channel, before anything else holds it; never changed otherwise.
    readonly tunerId: string, public key: string, public name: string,
    /** The tuner's number; `assigned` is ours, for a channel without one. */
    readonly given: string | null, public assigned: string | null,
    public tvgId: string | null, public tvgName: string | null, public logo: string | null, readonly groups: string[],
    public extraJson: string, public dataJson: string,
  ) {}

  get number(): string { return this.given ?? this.assigned ?? ''; }
  get extra(): Record<string, string> { return (this.extraValue ??= parse(this.extraJson, {})); }
  get data(): Record<string, unknown> { return (this.dataValue ??= parse(this.dataJson, {})); }
  get search(): string { return (this.searchValue ??= fold(`${this.name} ${this.number}`)); }

  /** Everything the tuner gives is the same (not the id, key or assigned number). */
  sameContent(o: StoredChannel): boolean {
    return this.name === o.name && this.given === o.given && this.tvgId === o.tvgId && this.tvgName === o.tvgName && this.logo === o.logo &&
      (this.groups === o.groups || JSON.stringify(this.groups) === JSON.stringify(o.groups)) &&
      this.extraJson === o.extraJson && this.dataJson === o.dataJson;
  }

  // Snapshots share channels: a change makes a copy, never changes one in place.
  copy(changes: { id?: number; key?: string; assigned?: string | null }): StoredChannel {
    return new StoredChannel(changes.id ?? this.id, this.tunerId, changes.key ?? this.key, this.name, this.given,
      changes.assigned === undefined ? this.assigned : changes.assigned, this.tvgId, this.tvgName, this.logo, this.groups, this.extraJson, this.dataJson);
  }

  entry(groupJson: (groups: string[]) => string): ListedEntry {
    return [this.id, this.key, this.name, this.given, this.assigned, this.tvgId, this.tvgName, this.logo, groupJson(this.groups), this.extraJson, this.dataJson];
  }
}

/** A channel its tuner no longer lists: kept for a while, so that it comes back with its id and assigned number. */
class HiddenChannel {
  constructor(readonly id: number, readonly key: string, readonly assigned: string | null, readonly hiddenAt: number) {}
  entry(): HiddenEntry { return [this.id, this.key, this.assigned, this.hiddenAt]; }
}

type Stored = StoredChannel | HiddenChannel;

/** Group lists are few and repeated (`["News"]`): channels share one array per list, whose JSON is made once. */
class GroupArrays {
  private readonly byJson = new Map<string, string[]>();
  private readonly jsonOf = new Map<readonly string[], string>();
  /** The extra attributes repeat as well (`{"tvg-country":"AR"}`): one string per distinct JSON (10,000 at most). */
  private readonly extras = new Map<string, string>();
  extra(json: string): string | undefined {
    return this.extras.get(json);
  }
  keepExtra(json: string): string {
    if (this.extras.size < 10_000) this.extras.set(json, json);
    return json;
  }
  array(json: string): string[] {
    let groups = this.byJson.get(json);
    if (!groups) {
      this.byJson.set(json, (groups = parse<string[]>(json, [])));
      this.jsonOf.set(groups, json);
    }
    return groups;
  }
  json = (groups: readonly string[]): string => {
    let json = this.jsonOf.get(groups);
    if (json === undefined) {
      json = JSON.stringify(groups);
      // A tuner may share arrays between its channels (m3u-tuner does) or give each its own: not 100,000 of those.
      if (this.jsonOf.size < 10_000) this.jsonOf.set(groups, json);
    }
    return json;
  };
}

function decodeEntry(e: ListedEntry | HiddenEntry, tunerId: string, groups: GroupArrays): Stored {
  if (e.length === 4) return new HiddenChannel(e[0], e[1], e[2], e[3]);
  const [id, key, name, given, assigned, tvgId, tvgName, logo, groupsJson, extra, data] = e;
  return new StoredChannel(id, tunerId, key, name, given, assigned, tvgId, tvgName, logo, groups.array(groupsJson), groups.extra(extra) ?? groups.keepExtra(extra), data);
}

/**
 * A listed channel as it would be stored (its id and assigned number are worked
 * out later), or `before` when that is the same channel unchanged: so an
 * unchanged channel costs nothing new, and the snapshot keeps its objects.
 * A new channel holds the tuner's strings until compactStrings copies them.
 */
function listedChannel(c: TunerChannel, tunerId: string, groups: GroupArrays, before: StoredChannel | undefined): StoredChannel {
  const name = c.name.slice(0, 512) || c.key.slice(0, 512);
  const given = c.number?.trim().slice(0, 32) || null;
  const tvgId = c.tvgId?.trim() || null;
  const tvgName = c.tvgName ?? null;
  const logo = c.logo || null;
  const groupList = groups.array(groups.json(c.groups ?? []));
  const extra = JSON.stringify(c.extra ?? {});
  const data = JSON.stringify(c.data ?? {});
  if (before && before.name === name && before.given === given && before.tvgId === tvgId &&
    before.tvgName === tvgName && before.logo === logo && before.extraJson === extra && before.dataJson === data &&
    groups.json(before.groups) === groups.json(groupList)) return before;
  return new StoredChannel(0, tunerId, c.key, name, given, null, tvgId, tvgName, logo, groupList, extra, data);
}

const isList = (c: TunerChannel | readonly TunerChannel[]): c is readonly TunerChannel[] => Array.isArray(c);

/** New channels' strings are copied COPY_BATCH channels at a time: one structured clone for all of them. */
const COPY_BATCH = 512;

/**
 * The strings of new channels replaced by compact copies of themselves: the
 * tuner's may be slices of larger strings (m3u-tuner's: of the playlist's
 * lines) or concatenations of such slices (keys), which would keep those
 * alive. A structured clone copies each into a string of its own characters;
 * one for a few hundred channels, as one per channel cost a third of a first
 * import's reading. (It took 25-35 % less time than the JSON round trip it
 * replaced: no escaping, no parsing.) The JSON texts made of `extra` and
 * `data` hold nothing else: flattened (they are trees of their parts), not copied.
 */
function compactStrings(fresh: StoredChannel[], groups: GroupArrays): void {
  if (!fresh.length) return;
  const values: (string | null)[] = [];
  for (const c of fresh) values.push(c.key, c.name, c.tvgId, c.tvgName === c.name ? null : c.tvgName, c.logo);
  const copies = structuredClone(values);
  let k = 0;
  for (const c of fresh) {
    c.key = copies[k++]!;
    c.name = copies[k++]!;
    c.tvgId = copies[k++];
    const tvgName = copies[k++];
    c.tvgName = tvgName === null && c.tvgName !== null ? c.name : tvgName;
    c.logo = copies[k++];
    c.extraJson = groups.extra(c.extraJson) ?? groups.keepExtra(flat(c.extraJson));
    c.dataJson = flat(c.dataJson);
  }
}

/** Whether `before` is a listed channel stored as `c` would be with the assigned number `assigned`. */
function sameStored(before: Stored | undefined, c: StoredChannel, assigned = c.assigned): before is StoredChannel {
  return before instanceof StoredChannel && before.assigned === assigned && (before === c || before.sameContent(c));
}

interface Keyed { c: Channel; k: number }

/** Channels with the same sort key: by the number as written ("07" before "7"), the name, the id. */
const sameKeyOrder = (a: Channel, b: Channel): number => a.number.localeCompare(b.number) || a.name.localeCompare(b.name) || a.id - b.id;
const inChannelOrder = (a: Keyed, b: Keyed): number => a.k - b.k || sameKeyOrder(a.c, b.c);

/**
 * Channels in number order (by numberSortKey, then sameKeyOrder). Nearly every number is a whole
 * one (given or assigned), and for those the key and the channel's place go into one double,
 * sorted by Float64Array's native sort: a comparator called ~1.7 million times took 60-170 ms of a
 * 100,000-channel import, while SQLite committed. Runs of equal keys ("7" and "07", a number two
 * tuners give) are then put in order by the comparator, and the other channels ("22.1", "BS101",
 * none, beyond 2^36) are sorted by it and merged in.
 */
export function sortChannels(channels: Channel[]): Channel[] {
  const n = channels.length;
  const bits = Math.max(1, Math.ceil(Math.log2(n + 1)));
  const place = 2 ** bits;
  const limit = 2 ** (53 - bits); // key * place + i stays an exact integer below 2^53
  const packed = new Float64Array(n);
  const others: Keyed[] = [];
  let whole = 0;
  for (let i = 0; i < n; i++) {
    const k = numberSortKey(channels[i].number);
    if (Number.isInteger(k) && k >= 0 && k < limit) packed[whole++] = k * place + i;
    else others.push({ c: channels[i], k });
  }
  const sorted = packed.subarray(0, whole).sort();
  const byKey: Channel[] = new Array(whole);
  for (let j = 0; j < whole; j++) byKey[j] = channels[sorted[j] % place];
  for (let j = 0; j < whole;) { // runs of equal keys
    const k = Math.floor(sorted[j] / place);
    let end = j + 1;
    while (end < whole && Math.floor(sorted[end] / place) === k) end++;
    if (end - j > 1) {
      const run = byKey.slice(j, end).sort(sameKeyOrder);
      for (let r = 0; r < run.length; r++) byKey[j + r] = run[r];
    }
    j = end;
  }
  if (!others.length) {
    for (let i = 0; i < n; i++) channels[i] = byKey[i];
    return channels;
  }
  others.sort(inChannelOrder);
  for (let i = 0, a = 0, b = 0; i < n; i++) {
    const takeWhole = b >= others.length || (a < whole && inChannelOrder({ c: byKey[a], k: Math.floor(sorted[a] / place) }, others[b]) <= 0);
    channels[i] = takeWhole ? byKey[a++] : others[b++].c;
  }
  return channels;
}

/** A snapshot, with every tuner's stored list (registered or not) as the pages hold it. */
interface StoreSnapshot extends ChannelSnapshot {
  lists: ReadonlyMap<string, readonly Stored[]>;
}

function snapshotOf(version: number, lists: ReadonlyMap<string, readonly Stored[]>, registered: Set<string>): StoreSnapshot {
  const channels: Channel[] = [];
  for (const [tunerId, list] of lists) {
    if (registered.has(tunerId)) for (const c of list) if (c instanceof StoredChannel) channels.push(c);
  }
  sortChannels(channels);
  const byId = new Map<number, Channel>();
  for (const c of channels) byId.set(c.id, c);
  return { version, lists, channels, byId };
}

const byKey = (list: readonly Stored[] | undefined, into = new Map<string, Stored>()): Map<string, Stored> => {
  into.clear();
  for (const c of list ?? []) into.set(c.key, c);
  return into;
};

/**
 * Pages per statement (~1-2 MB of JSON). node-sqlite3 goes on with a statement only once the main
 * thread has taken its turn twice (after SQLite prepared it, after it ran it): with a statement
 * per page, the 250 pages of a 100,000-channel list took SQLite 50-80 ms of work and the import
 * 310-420 ms, SQLite mostly waiting for the main thread to be free. Ten per statement, the main
 * thread letting those turns in between pages: 220-280 ms.
 */
const PAGES_PER_STATEMENT = 10;

const upsertPages = new Map<string, string>();
/**
 * `pages` pages, each written over the one stored. As SQL, not a knex builder: building 250
 * queries took 50-70 ms of a first 100,000-channel import. SQLite gets each page's JSON as UTF-8
 * bytes (sqliteText: a fifth of the main thread's time), cast to TEXT.
 */
function upsertPagesSql(pages: number, sqlite: boolean): string {
  const key = `${pages}${sqlite}`;
  let sql = upsertPages.get(key);
  if (!sql) {
    const row = sqlite ? '(?, ?, CAST(? AS TEXT), ?)' : '(?, ?, ?, ?)';
    sql = `INSERT INTO livetv_channel_pages (tuner_id, page, channels, updated_at) VALUES ${new Array(pages).fill(row).join(', ')} ` +
      'ON CONFLICT (tuner_id, page) DO UPDATE SET channels = excluded.channels, updated_at = excluded.updated_at';
    upsertPages.set(key, sql);
  }
  return sql;
}

/**
 * Writes a tuner's list over its `previous` one: only the pages whose entries
 * are not all the same objects as before, with at most two statements queued
 * (the next pages are encoded on the main thread while SQLite, in libuv's pool,
 * stores the ones before). Returns the pages written or deleted.
 */
async function writePages(
  trx: Database, tunerId: string, list: readonly Stored[], previous: readonly Stored[], groups: GroupArrays, stamp: number,
): Promise<number> {
  const sqlite = isSqlite(trx);
  let written = 0;
  let rows: unknown[] = []; // the bound values of the pages not sent yet, 4 per page
  let storing: Promise<void> | undefined;
  const send = async () => {
    const before = storing;
    // .then: a knex query runs each time it is awaited; this promise runs it once.
    storing = trx.raw(upsertPagesSql(rows.length / 4, sqlite), rows as Knex.RawBinding[]).then(() => {});
    storing.catch(() => {}); // awaited below
    rows = [];
    await before;
  };
  for (let start = 0; start < list.length; start += PAGE_SIZE) {
    const end = Math.min(list.length, start + PAGE_SIZE);
    let same = Math.min(previous.length, start + PAGE_SIZE) === end; // the page had these places before
    for (let i = start; same && i < end; i++) same = list[i] === previous[i];
    if (same) continue;
    const entries: (ListedEntry | HiddenEntry)[] = [];
    for (let i = start; i < end; i++) entries.push(list[i].entry(groups.json));
    const json = JSON.stringify(entries);
    rows.push(tunerId, start / PAGE_SIZE, sqlite ? sqliteText(json) : json, stamp);
    written++;
    if (rows.length === PAGES_PER_STATEMENT * 4) await send();
    else await setImmediate(); // node-sqlite3's turn, for the statement being stored
  }
  if (rows.length) await send();
  await storing;
  const pages = Math.ceil(list.length / PAGE_SIZE);
  const stale = Math.ceil(previous.length / PAGE_SIZE) - pages;
  if (stale > 0) {
    await trx('livetv_channel_pages').where({ tuner_id: tunerId }).where('page', '>=', pages).delete();
    written += stale;
  }
  return written;
}

/**
 * Channels in the database, with an in-memory snapshot that is rebuilt when the
 * shared version number changes (an import in this process or in the CLI).
 */
export class ChannelStore {
  private snapshot?: StoreSnapshot;
  private loading?: Promise<StoreSnapshot>;
  private checkedAt = 0;

  private readonly keepHiddenMs: number;
  private readonly maxChannels: number;

  constructor(
    private readonly knex: Database, private readonly tunerIds: () => Set<string>, private readonly now: () => number,
    limits: ChannelLimits = {},
  ) {
    this.keepHiddenMs = limits.keepHiddenMs ?? 30 * 86_400_000;
    this.maxChannels = limits.maxChannelsPerTuner ?? 1_000_000;
  }

  private async version(trx: Database = this.knex): Promise<number> {
    const row = await trx('livetv_state').where({ key: 'version' }).first('value');
    return Number(row?.value ?? 0);
  }

  private async bumpVersion(trx: Database = this.knex): Promise<void> {
    await trx('livetv_state').where({ key: 'version' }).increment('value', 1);
    this.checkedAt = 0; // our own change: look again on the next read
  }

  /**
   * The current channels. The shared version is read at most once per
   * VERSION_CHECK_MS, so an import by another process (the CLI) shows within a
   * second while a burst of requests costs no query each.
   */
  current(): Promise<ChannelSnapshot> {
    return this.latest();
  }

  private async latest(): Promise<StoreSnapshot> {
    if (this.snapshot && this.now() - this.checkedAt < VERSION_CHECK_MS) return this.snapshot;
    if (!this.loading) {
      this.loading = (async () => {
        const version = await this.version();
        this.checkedAt = this.now();
        if (this.snapshot?.version === version) return this.snapshot;
        return this.keep(await this.knex.transaction((trx) => this.read(trx)));
      })().finally(() => { this.loading = undefined; });
    }
    return this.loading;
  }

  /** `snapshot`, made current unless a newer one is (an import of this process may have made one meanwhile). */
  private keep(snapshot: StoreSnapshot): StoreSnapshot {
    if (!this.snapshot || this.snapshot.version <= snapshot.version) this.snapshot = snapshot;
    return snapshot;
  }

  /** Every tuner's list, as stored now (in a transaction: the version and the pages of one state). */
  private async read(trx: Database): Promise<StoreSnapshot> {
    const version = await this.version(trx);
    const groups = new GroupArrays();
    const lists = new Map<string, Stored[]>();
    for (let offset = 0; ; offset += LOAD_PAGES) {
      const pages = await trx('livetv_channel_pages').orderBy([{ column: 'tuner_id' }, { column: 'page' }])
        .offset(offset).limit(LOAD_PAGES).select('tuner_id', 'channels') as { tuner_id: string; channels: string }[];
      for (const { tuner_id: tunerId, channels } of pages) {
        let list = lists.get(tunerId);
        if (!list) lists.set(tunerId, (list = []));
        for (const e of JSON.parse(channels) as (ListedEntry | HiddenEntry)[]) list.push(decodeEntry(e, tunerId, groups));
      }
      if (pages.length < LOAD_PAGES) break;
    }
    return snapshotOf(version, lists, this.tunerIds());
  }

  /**
   * Makes the tuner's channels exactly `incoming`: known keys keep their ids,
   * new keys get new ids, keys no longer listed are hidden (not deleted, so a
   * channel that comes back keeps its id, favorites and recordings).
   *
   * The list is compared with what is stored, which the snapshot holds: a
   * channel listed unchanged is the snapshot's own object, an identical playlist
   * writes nothing and holds nothing new, only the pages that changed are
   * written, and the snapshot after the import is made from the lists, not
   * reloaded. `listed` is called once the whole list has been read.
   */
  async replaceTunerChannels(
    tunerId: string, incoming: TunerChannel[] | AsyncIterable<TunerChannel | readonly TunerChannel[]>, listed?: (channels: number) => void,
  ): Promise<ImportCounts> {
    const base = await this.latest(); // on an empty database, an empty one
    // This tuner's channels by key: what each listed channel is compared with.
    const stored = byKey(base.lists.get(tunerId));
    // (Not asked when nothing is stored, as on a first import: a lookup flattens the key, a second copy.)
    const snapshotted = (key: string) => { const c = stored.size ? stored.get(key) : undefined; return c instanceof StoredChannel ? c : undefined; };
    const groups = new GroupArrays();

    // The list is read before the transaction (a tuner may use the database while it yields), each
    // channel made at once into what it would be stored as, or into the snapshot's own channel
    // when that is the same: the tuner's objects (and the playlist lines their strings are slices
    // of) go as soon as they are read.
    const read: StoredChannel[] = []; // each with its key as listed (a compact copy, or the snapshot's own string)
    const sharedKeys: (string | undefined)[] = [];
    const listedKeys = new Set<string>(); // every key listed
    const repeated = new Set<string>(); // the keys listed more than once
    let fresh: StoredChannel[] = []; // new channels of read[copied…], still holding the tuner's strings
    let copied = 0;
    const compact = () => {
      compactStrings(fresh, groups);
      fresh = [];
      for (; copied < read.length; copied++) {
        const size = listedKeys.size;
        if (listedKeys.add(read[copied].key).size === size) repeated.add(read[copied].key);
      }
    };
    const add = (c: TunerChannel) => {
      // Thrown from inside the for-await below, which ends the tuner's iteration (m3u-tuner stops reading).
      if (read.length === this.maxChannels) {
        throw errors.payloadTooLarge(`lists more than ${this.maxChannels} channels (live-tv's maxChannelsPerTuner)`);
      }
      const before = snapshotted(c.key);
      const channel = listedChannel(c, tunerId, groups, before);
      if (channel !== before) fresh.push(channel);
      sharedKeys.push(c.keyIfShared === undefined ? undefined : flat(c.keyIfShared));
      read.push(channel);
      if (read.length - copied >= COPY_BATCH) compact();
    };
    if (Array.isArray(incoming)) for (const c of incoming) add(c);
    else for await (const c of incoming) if (isList(c)) for (const one of c) add(one); else add(c);
    compact();
    listed?.(read.length);

    // The keys, now that it is known which repeat; the first channel of each key counts, an exact
    // repeat is a duplicate. A channel whose key turns out other than as listed becomes a copy with
    // the right one (or the snapshot's channel under that key, if that is the same). (When no key
    // repeats, the keys are the keys as listed, each once.)
    const list: StoredChannel[] = [];
    const keys = repeated.size ? new Set<string>() : listedKeys;
    for (let i = 0; i < read.length; i++) {
      let c = read[i];
      const shared = sharedKeys[i];
      const key = shared !== undefined && repeated.has(c.key) ? shared : c.key;
      if (keys !== listedKeys) {
        if (keys.has(key)) continue;
        keys.add(key);
      }
      if (c.key !== key) {
        const before = snapshotted(key);
        c = before && before.sameContent(c) ? before : c.copy({ id: 0, key });
      }
      list.push(c);
    }
    const total = read.length;
    read.length = sharedKeys.length = 0;
    repeated.clear();

    const trx = await this.knex.transaction();
    try {
      // PostgreSQL: one import at a time, as this row stays locked until commit. SQLite serialises
      // writers itself: an import whose reads predate another one's commit fails to write (SQLITE_BUSY).
      const versionQuery = trx('livetv_state').where({ key: 'version' }).first('value');
      const version = Number((await (isSqlite(trx) ? versionQuery : versionQuery.forUpdate()))?.value ?? 0);
      // What is stored now: the snapshot when it is current (another import of this process may have
      // made a newer one since this one began), else (another process imported meanwhile) read again.
      const latest = this.snapshot?.version === version ? this.snapshot : await this.read(trx);
      if (latest !== base) byKey(latest.lists.get(tunerId), stored);
      const previous = latest.lists.get(tunerId) ?? [];
      const others: StoredChannel[] = [];
      for (const [id, l] of latest.lists) if (id !== tunerId) for (const c of l) if (c instanceof StoredChannel) others.push(c);

      const assigned = assignNumbers(list, stored, others);
      const nextId = Number((await trx('livetv_state').where({ key: NEXT_ID_KEY }).first('value'))?.value ?? 1);
      let id = nextId;
      for (let i = 0; i < list.length; i++) {
        let c = list[i];
        const number = assigned[i];
        const before = stored.get(c.key);
        if (!c.id) {
          // Made by this import: the one kind of channel changed in place (snapshots share theirs).
          c.assigned = number;
          c.id = before ? before.id : id++;
          if (sameStored(before, c)) c = before;
        } else if (!before) {
          c = c.copy({ id: id++, assigned: number });
        } else if (before !== c || c.assigned !== number) {
          c = sameStored(before, c, number) ? before : c.copy({ id: before.id, assigned: number });
        }
        list[i] = c;
      }
      const stamp = this.now();
      const lists = new Map(latest.lists);
      const tunerList: Stored[] = list.slice(); // what the pages will hold: listed, then hidden
      let removed = 0;
      let favorited: Set<number> | undefined; // read when a hidden channel is due to go
      for (const c of previous) {
        if (keys.has(c.key)) continue;
        if (c instanceof StoredChannel) {
          removed++;
          tunerList.push(new HiddenChannel(c.id, c.key, c.assigned, stamp));
        } else if (stamp - c.hiddenAt <= this.keepHiddenMs ||
          (favorited ??= new Set((await trx('livetv_favorites').distinct('channel_id')).map((r) => Number(r.channel_id)))).has(c.id)) {
          tunerList.push(c);
        }
      }
      lists.set(tunerId, tunerList);
      const moved = moveClashingAssignedNumbers(lists, list, others);

      let written = await writePages(trx, tunerId, tunerList, previous, groups, stamp);
      for (const other of moved) written += await writePages(trx, other, lists.get(other)!, latest.lists.get(other)!, groups, stamp);
      if (id !== nextId) {
        await trx('livetv_state').insert({ key: NEXT_ID_KEY, value: id }).onConflict('key').merge();
      }
      // Nothing written, no new version: no process reloads its snapshot for an identical playlist.
      if (written) await this.bumpVersion(trx);
      // The new snapshot is made while SQLite commits: sorting 100,000 channels takes a tenth of a second.
      const committing = trx.commit();
      const snapshot = written ? snapshotOf(version + 1, lists, this.tunerIds()) : latest;
      await committing;
      this.keep(snapshot);
      return { channels: list.length, added: id - nextId, removed, duplicates: total - list.length };
    } catch (err) {
      if (!trx.isCompleted()) await trx.rollback();
      throw err;
    }
  }
}

/**
 * Another tuner's channel may hold, as a number we assigned, a number this
 * playlist now gives: that channel moves to the next free number (once; it
 * keeps the new one afterwards), so no two channels ever share a number.
 * Changes `lists` (with copies of the channels moved); returns the tuners whose
 * lists changed.
 */
function moveClashingAssignedNumbers(lists: Map<string, readonly Stored[]>, list: StoredChannel[], others: StoredChannel[]): Set<string> {
  const tuners = new Set<string>();
  if (!others.some((c) => !c.given && c.assigned)) return tuners;
  const wanted = new Set<string>();
  for (const c of list) if (c.given) wanted.add(c.given);
  const clashing = others.filter((c) => !c.given && c.assigned && wanted.has(c.assigned));
  if (!clashing.length) return tuners;
  // Above every number in use, this list's assigned ones too (its new channels may just have taken the next ones).
  const taken = new Set<string>();
  for (const c of list) if (c.number) taken.add(c.number);
  for (const c of others) if (c.number) taken.add(c.number);
  const next = nextNumbers(taken);
  const moved = new Map<StoredChannel, StoredChannel>();
  for (const c of clashing) {
    moved.set(c, c.copy({ assigned: next() }));
    tuners.add(c.tunerId);
  }
  for (const tunerId of tuners) lists.set(tunerId, lists.get(tunerId)!.map((c) => (c instanceof StoredChannel && moved.get(c)) || c));
  return tuners;
}

/**
 * The numbers we assign, one after the other: integers above every number in
 * `taken`, none of them in it. A number beyond a billion ("1e308") is not
 * counted, or there would be no integer above it (an import looped forever);
 * those are the only ones an assigned number could meet, so only they are kept.
 */
function nextNumbers(taken: Iterable<string>): () => string {
  let next = 1;
  const beyond = new Set<string>();
  for (const n of taken) {
    const digits = digitsValue(n);
    const v = digits >= 0 ? digits : Math.floor(Number.parseFloat(n));
    if (v >= 1e9) beyond.add(n);
    else if (v >= next) next = v + 1;
  }
  return () => {
    let number: string;
    do number = String(next++); while (beyond.has(number));
    return number;
  };
}

/** The numbers of `channels` (given ones) and of `others`. */
function numbersInUse(channels: StoredChannel[], others: StoredChannel[]): string[] {
  const numbers: string[] = [];
  for (const c of channels) if (c.given) numbers.push(c.given);
  for (const c of others) if (c.number) numbers.push(c.number);
  return numbers;
}

/**
 * Numbers for channels the playlist leaves unnumbered (null for the others),
 * by position in `channels`: a channel keeps the number it was assigned before
 * when that is still free, others get the next integers above every number in
 * use, so none collides with a given one. (The numbers in use are gathered
 * into a set only when some channel had one assigned: a first import of
 * 100,000 channels spent 60-70 ms on a set it never looked in.)
 */
function assignNumbers(channels: StoredChannel[], previous: Map<string, Stored>, others: StoredChannel[]): (string | null)[] {
  let taken: Set<string> | undefined;
  const result = new Array<string | null>(channels.length).fill(null);
  const pending: number[] = [];
  for (let i = 0; i < channels.length; i++) {
    const c = channels[i];
    if (c.given) continue;
    const before = previous.get(c.key)?.assigned;
    if (before && !(taken ??= new Set(numbersInUse(channels, others))).has(before)) {
      taken.add(before);
      result[i] = before;
    } else {
      pending.push(i);
    }
  }
  if (!pending.length) return result;
  const next = nextNumbers(taken ?? numbersInUse(channels, others));
  for (const i of pending) result[i] = next();
  return result;
}
