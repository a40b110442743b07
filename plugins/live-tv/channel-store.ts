import type { Database, TunerChannel } from 'antenna/sdk';
import { errors } from 'antenna/sdk';
import { insertRows, isSqlite, upsertTail } from './sql.js';
import { fold, numberSortKey } from './text.js';

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
  /** Hidden by an administrator: listed to administrators only. */
  readonly hidden: boolean;
  /** The guide channel id an administrator mapped it to (a manual mapping), else null. */
  readonly guideId: string | null;
  /** How far its programmes are moved (the playlist's tvg-shift, in hours), in ms. */
  readonly shiftMs: number;
  /**
   * Its streams, in the order they are tried: the tuner entries it plays. `tunerId`, `key` and
   * `data` above are the first one's (what a live session opens).
   */
  readonly streams: readonly Channel[];
}

/** Whether entries of several tuners with one tvg-id are one channel (live-tv's `merge`). */
export type MergeMode = 'off' | 'tvg-id';

/** What an administrator changed on a channel; null (or absent) fields show the playlist's value. */
export interface ChannelEdit {
  name: string | null;
  number: string | null;
  logo: string | null;
  categories: string[] | null;
  hidden: boolean;
  guideId: string | null;
}
const NO_EDIT: ChannelEdit = { name: null, number: null, logo: null, categories: null, hidden: false, guideId: null };
const EDIT_COLUMNS = ['channel_id', 'name', 'number', 'logo', 'categories', 'hidden', 'guide_id', 'updated_at'];
const EDIT_UPSERT = upsertTail('channel_id', EDIT_COLUMNS);

export interface ChannelSnapshot {
  version: number;
  /** Present channels of registered tuners not hidden by an administrator, in number order. */
  channels: Channel[];
  byId: Map<number, Channel>;
  /** Present channels of registered tuners, hidden ones too (what administrators see), in number order. */
  all: Channel[];
  allById: Map<number, Channel>;
}

/** `livetv_state` key of the next channel id: ids are never reused, as favorites and recordings keep them. */
export const NEXT_ID_KEY = 'next_channel_id';

const VERSION_CHECK_MS = 1000;

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
  /** Entries of several tuners sharing a tvg-id make one channel (`tvg-id`), or not (`off`, the default). */
  merge?: MergeMode;
}

/** The columns of livetv_tuner_channels, in the order StoredChannel.row() gives them. */
const COLUMNS = ['id', 'tuner_id', 'key', 'name', 'number', 'assigned_number', 'tvg_id', 'tvg_name', 'logo',
  'groups', 'extra', 'data', 'hidden_at', 'updated_at'];
const UPSERT = upsertTail('id', COLUMNS);
/** Channels written per statement (about a MB), and ids per DELETE. */
const WRITE_CHUNK = 2000;
const DELETE_CHUNK = 1000;

const parse = <T>(text: string, fallback: T): T => {
  try { return JSON.parse(text) as T; } catch { return fallback; }
};

/**
 * A channel as stored: a row of livetv_tuner_channels. `groups`, `extra`, `data` and `search`
 * are worked out on first use: for 100,000 channels, parsing and folding them all at every
 * load would cost seconds, and most are never asked for (only opening a stream reads `data`).
 */
class StoredChannel implements Channel {
  private groupsValue?: string[];
  private extraValue?: Record<string, string>;
  private dataValue?: Record<string, unknown>;
  private searchValue?: string;

  constructor(
    // `id`, `key` and `assigned` are set by the import that makes the channel, before any snapshot
    // holds it; a channel in a snapshot is never changed (with() makes a changed copy).
    public id: number, readonly tunerId: string, public key: string, readonly name: string,
    /** The tuner's number; `assigned` is ours, for a channel without one. */
    readonly given: string | null, public assigned: string | null,
    readonly tvgId: string | null, readonly tvgName: string | null, readonly logo: string | null,
    readonly groupsJson: string, readonly extraJson: string, readonly dataJson: string,
    /** When the tuner stopped listing it (ms since epoch); null while it lists it. */
    readonly hiddenAt: number | null,
  ) {}

  static fromRow(r: Record<string, any>): StoredChannel {
    const hiddenAt = r.hidden_at === null ? null : Number(r.hidden_at);
    return new StoredChannel(r.id, r.tuner_id, r.key, r.name, r.number, r.assigned_number, r.tvg_id, r.tvg_name, r.logo,
      r.groups, r.extra, r.data, hiddenAt);
  }

  /** A channel as the tuner lists it, before the import gives it its id and assigned number; `shared` may give a text already held. */
  static listed(tunerId: string, c: TunerChannel, shared: (text: string) => string): StoredChannel {
    return new StoredChannel(0, tunerId, c.key, c.name.slice(0, 512) || c.key.slice(0, 512), c.number?.trim().slice(0, 32) || null, null,
      c.tvgId?.trim() || null, c.tvgName ?? null, c.logo || null,
      shared(JSON.stringify(c.groups ?? [])), shared(JSON.stringify(c.extra ?? {})), JSON.stringify(c.data ?? {}), null);
  }

  get number(): string { return this.given ?? this.assigned ?? ''; }
  get groups(): string[] { return (this.groupsValue ??= parse(this.groupsJson, [])); }
  get extra(): Record<string, string> { return (this.extraValue ??= parse(this.extraJson, {})); }
  get data(): Record<string, unknown> { return (this.dataValue ??= parse(this.dataJson, {})); }
  get search(): string { return (this.searchValue ??= fold(`${this.name} ${this.number}`)); }
  get hidden(): boolean { return false; }
  get guideId(): string | null { return null; }
  get shiftMs(): number { return shiftOf(this.extra['tvg-shift']); }
  get streams(): readonly Channel[] { return [this]; }

  /** Its livetv_tuner_channels row, in COLUMNS order. */
  row(updatedAt: number): unknown[] {
    return [this.id, this.tunerId, this.key, this.name, this.given, this.assigned, this.tvgId, this.tvgName, this.logo,
      this.groupsJson, this.extraJson, this.dataJson, this.hiddenAt, updatedAt];
  }

  /** Whether `o` would be stored as the same row. */
  same(o: StoredChannel): boolean {
    return this.id === o.id && this.key === o.key && this.name === o.name && this.given === o.given && this.assigned === o.assigned &&
      this.tvgId === o.tvgId && this.tvgName === o.tvgName && this.logo === o.logo && this.groupsJson === o.groupsJson &&
      this.extraJson === o.extraJson && this.dataJson === o.dataJson && this.hiddenAt === o.hiddenAt;
  }

  with(changes: { assigned?: string | null; hiddenAt?: number | null }): StoredChannel {
    return new StoredChannel(this.id, this.tunerId, this.key, this.name, this.given, changes.assigned === undefined ? this.assigned : changes.assigned,
      this.tvgId, this.tvgName, this.logo, this.groupsJson, this.extraJson, this.dataJson, changes.hiddenAt === undefined ? this.hiddenAt : changes.hiddenAt);
  }
}

/** tvg-shift (hours, "-1.5" allowed) in ms; 0 when absent or not a number of hours within a day either way. */
export function shiftOf(hours: string | undefined): number {
  const h = hours === undefined ? NaN : Number(hours.trim());
  return Number.isFinite(h) && Math.abs(h) <= 24 ? Math.round(h * 3600_000) : 0;
}

/** A channel as an administrator edited it: the edit's values over the stored channel's. */
class EditedChannel implements Channel {
  private searchValue?: string;
  constructor(private readonly base: Channel, private readonly edit: ChannelEdit) {}
  get id() { return this.base.id; }
  get tunerId() { return this.base.tunerId; }
  get key() { return this.base.key; }
  get name() { return this.edit.name ?? this.base.name; }
  get number() { return this.edit.number ?? this.base.number; }
  get tvgId() { return this.base.tvgId; }
  get tvgName() { return this.base.tvgName; }
  get logo() { return this.edit.logo ?? this.base.logo; }
  get groups() { return this.edit.categories ?? this.base.groups; }
  get extra() { return this.base.extra; }
  get data() { return this.base.data; }
  get search(): string { return (this.searchValue ??= fold(`${this.name} ${this.number}`)); }
  get hidden() { return this.edit.hidden; }
  get guideId() { return this.edit.guideId; }
  get shiftMs() { return this.base.shiftMs; }
  get streams() { return this.base.streams; }
}

/**
 * A channel of several streams: its own entry's name, number, logo and guide fields (the entry
 * whose id it has; the first stream when that one is gone), and the first stream's tuner and data.
 */
class MultiStreamChannel implements Channel {
  private searchValue?: string;
  constructor(readonly id: number, private readonly own: StoredChannel, readonly streams: readonly StoredChannel[]) {}
  get tunerId() { return this.streams[0].tunerId; }
  get key() { return this.streams[0].key; }
  get data() { return this.streams[0].data; }
  get name() { return this.own.name; }
  get number() { return this.own.number; }
  get tvgId() { return this.own.tvgId; }
  get tvgName() { return this.own.tvgName; }
  get logo() { return this.own.logo; }
  get groups() { return this.own.groups; }
  get extra() { return this.own.extra; }
  get search(): string { return (this.searchValue ??= fold(`${this.name} ${this.number}`)); }
  get hidden() { return false; }
  get guideId(): string | null { return null; }
  get shiftMs() { return this.own.shiftMs; }
}

/**
 * The channels a tuner lists, each once, by the key it is stored under: a key listed more than
 * once is replaced by the channel's shared key (`keyIfShared`; m3u-tuner: a tvg-id with the
 * stream URL), and of channels whose keys are still equal the first counts (the others are
 * duplicates).
 */
function withFinalKeys(read: StoredChannel[], sharedKeys: (string | undefined)[]): StoredChannel[] {
  const seen = new Set<string>();
  const repeated = new Set<string>();
  for (const c of read) {
    if (seen.has(c.key)) repeated.add(c.key);
    else seen.add(c.key);
  }
  if (!repeated.size) return read;
  seen.clear();
  const list: StoredChannel[] = [];
  read.forEach((c, i) => {
    if (repeated.has(c.key) && sharedKeys[i] !== undefined) c.key = sharedKeys[i]!;
    if (seen.has(c.key)) return;
    seen.add(c.key);
    list.push(c);
  });
  return list;
}

/** Channels in number order: by numberSortKey, then the number as written ("07" before "7"), the name, the id. */
export function sortChannels(channels: Channel[]): Channel[] {
  return channels.map((c) => ({ c, k: numberSortKey(c.number) }))
    .sort((a, b) => a.k - b.k || a.c.number.localeCompare(b.c.number) || a.c.name.localeCompare(b.c.name) || a.c.id - b.c.id)
    .map(({ c }) => c);
}

/** A snapshot, with every tuner's stored channels (registered or not, listed or hidden). */
/** What administrators and the config make of the tuners' entries: edits, streams attached by hand, merging. */
interface Layout {
  edits: ReadonlyMap<number, ChannelEdit>;
  /** channel id → the stream (entry) ids an administrator set, in order. */
  streams: ReadonlyMap<number, readonly number[]>;
  merge: MergeMode;
}

interface StoreSnapshot extends ChannelSnapshot {
  lists: ReadonlyMap<string, readonly StoredChannel[]>;
  layout: Layout;
  /** stream (entry) id → the id of the channel it plays in. */
  ownerOf: ReadonlyMap<number, number>;
}

/**
 * The channels the entries make. An entry is a channel of its own (its id the channel's) unless
 * an administrator attached it to another channel, or, with `merge: tvg-id`, another entry of
 * its tvg-id has a lower id: that entry's channel has them all as streams, in the tuners' order
 * (the config's). The lowest id is looked for among hidden entries too, so that a channel
 * keeps its id (and favorites) while its first entry is away.
 */
function snapshotOf(version: number, lists: ReadonlyMap<string, readonly StoredChannel[]>, layout: Layout, registered: Set<string>): StoreSnapshot {
  const attached = new Map<number, number>();
  for (const [channelId, ids] of layout.streams) for (const id of ids) attached.set(id, channelId);
  const lowestOfTvgId = new Map<string, number>();
  if (layout.merge === 'tvg-id') {
    for (const tunerId of registered) {
      for (const c of lists.get(tunerId) ?? []) {
        if (!c.tvgId || attached.has(c.id)) continue;
        const known = lowestOfTvgId.get(c.tvgId);
        if (known === undefined || c.id < known) lowestOfTvgId.set(c.tvgId, c.id);
      }
    }
  }
  const groups = new Map<number, StoredChannel[]>();
  const present = new Map<number, StoredChannel>();
  for (const tunerId of registered) { // in config order: merged streams are tried in that order
    for (const c of lists.get(tunerId) ?? []) {
      if (c.hiddenAt !== null) continue;
      present.set(c.id, c);
      if (attached.has(c.id)) continue;
      const channelId = (c.tvgId && lowestOfTvgId.get(c.tvgId)) || c.id;
      const group = groups.get(channelId);
      if (group) group.push(c); else groups.set(channelId, [c]);
    }
  }
  for (const [channelId, ids] of layout.streams) {
    const streams = ids.map((id) => present.get(id)).filter((c): c is StoredChannel => c !== undefined);
    if (streams.length) groups.set(channelId, streams);
  }
  const made: Channel[] = [];
  const ownerOf = new Map<number, number>();
  for (const [channelId, streams] of groups) {
    for (const c of streams) ownerOf.set(c.id, channelId);
    const base = streams.length === 1 && streams[0].id === channelId
      ? streams[0]
      : new MultiStreamChannel(channelId, present.get(channelId) ?? streams[0], streams);
    const edit = layout.edits.get(channelId);
    made.push(edit ? new EditedChannel(base, edit) : base);
  }
  const all = sortChannels(made);
  const channels = layout.edits.size ? all.filter((c) => !c.hidden) : all;
  return { version, lists, layout, ownerOf, all, allById: new Map(all.map((c) => [c.id, c])), channels, byId: new Map(channels.map((c) => [c.id, c])) };
}

const editOf = (r: Record<string, any>): ChannelEdit => ({
  name: r.name, number: r.number, logo: r.logo, categories: r.categories === null ? null : parse(r.categories, null),
  hidden: !!r.hidden, guideId: r.guide_id,
});

/**
 * Channels in the database, a row each, with an in-memory snapshot that is rebuilt when the
 * shared version number changes (an import in this process or in the CLI).
 */
export class ChannelStore {
  private snapshot?: StoreSnapshot;
  private loading?: Promise<StoreSnapshot>;
  private checkedAt = 0;

  private readonly keepHiddenMs: number;
  private readonly maxChannels: number;
  private readonly merge: MergeMode;

  constructor(
    private readonly knex: Database, private readonly tunerIds: () => Set<string>, private readonly now: () => number,
    limits: ChannelLimits = {},
  ) {
    this.keepHiddenMs = limits.keepHiddenMs ?? 30 * 86_400_000;
    this.maxChannels = limits.maxChannelsPerTuner ?? 1_000_000;
    this.merge = limits.merge ?? 'off';
  }

  private async version(trx: Database = this.knex): Promise<number> {
    const row = await trx('livetv_state').where({ key: 'version' }).first('value');
    return Number(row?.value ?? 0);
  }

  /**
   * The current channels. The shared version is read at most once per
   * VERSION_CHECK_MS, so an import by another process (the CLI) shows within a
   * second while a burst of requests costs no query each.
   */
  current(): Promise<ChannelSnapshot> {
    return this.latest();
  }

  /** Called after this process committed a new version (cluster mode tells the other nodes). */
  onChanged?: () => void;

  /** Another process wrote a new version: the next read looks, without waiting out VERSION_CHECK_MS. */
  recheck(): void {
    this.checkedAt = 0;
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

  /** Every tuner's channels, as stored now (in a transaction: the version and the rows of one state). */
  private async read(trx: Database): Promise<StoreSnapshot> {
    const version = await this.version(trx);
    const lists = new Map<string, StoredChannel[]>();
    for (const row of await trx('livetv_tuner_channels').select(COLUMNS)) {
      const c = StoredChannel.fromRow(row);
      let list = lists.get(c.tunerId);
      if (!list) lists.set(c.tunerId, (list = []));
      list.push(c);
    }
    const edits = new Map<number, ChannelEdit>();
    for (const r of await trx('livetv_channel_edits').select(EDIT_COLUMNS)) edits.set(Number(r.channel_id), editOf(r));
    const streams = new Map<number, number[]>();
    for (const r of await trx('livetv_channel_streams').orderBy(['channel_id', 'position']).select('channel_id', 'stream_id')) {
      const list = streams.get(Number(r.channel_id));
      if (list) list.push(Number(r.stream_id)); else streams.set(Number(r.channel_id), [Number(r.stream_id)]);
    }
    return snapshotOf(version, lists, { edits, streams, merge: this.merge }, this.tunerIds());
  }

  /**
   * The tuner's list, each channel as it would be stored (without its id and assigned number
   * yet), by the key it is stored under (withFinalKeys). Read before the import's transaction:
   * a tuner may use the database while it yields.
   */
  private async readList(
    tunerId: string, incoming: TunerChannel[] | AsyncIterable<TunerChannel | readonly TunerChannel[]>,
  ): Promise<{ list: StoredChannel[]; duplicates: number }> {
    const read: StoredChannel[] = [];
    const sharedKeys: (string | undefined)[] = [];
    // Most channels share their groups and extra attributes: one string for each, not one per channel.
    const texts = new Map<string, string>();
    const shared = (text: string) => {
      const known = texts.get(text);
      if (known !== undefined) return known;
      if (texts.size < 10_000) texts.set(text, text);
      return text;
    };
    const add = (c: TunerChannel) => {
      // Thrown from inside the for-await below, which ends the tuner's iteration (m3u-tuner stops reading).
      if (read.length === this.maxChannels) {
        throw errors.payloadTooLarge(`lists more than ${this.maxChannels} channels (live-tv's maxChannelsPerTuner)`);
      }
      read.push(StoredChannel.listed(tunerId, c, shared));
      sharedKeys.push(c.keyIfShared);
    };
    if (Array.isArray(incoming)) for (const c of incoming) add(c);
    else for await (const c of incoming) if (Array.isArray(c)) for (const one of c) add(one); else add(c as TunerChannel);
    const list = withFinalKeys(read, sharedKeys);
    return { list, duplicates: read.length - list.length };
  }

  /**
   * Writes the edits `change` returns (by channel id, whole edits) as one change of the
   * channels (a new version), locked against imports as they are against each other.
   * `change` may throw (nothing is written); `result` reads the new snapshot.
   */
  async changeLayout<T>(
    change: (latest: StoreSnapshot) => Promise<{ edits?: Map<number, ChannelEdit>; streams?: { channelId: number; ids: number[] } }>,
    result: (snapshot: ChannelSnapshot) => T,
  ): Promise<T> {
    const trx = await this.knex.transaction();
    try {
      const versionQuery = trx('livetv_state').where({ key: 'version' }).first('value');
      const version = Number((await (isSqlite(trx) ? versionQuery : versionQuery.forUpdate()))?.value ?? 0);
      const latest = this.snapshot?.version === version ? this.snapshot : await this.read(trx);
      const { edits = new Map(), streams } = await change(latest);
      const stamp = this.now();
      const rows = [...edits].map(([id, e]) => [id, e.name, e.number, e.logo, e.categories && JSON.stringify(e.categories), e.hidden, e.guideId, stamp]);
      for (let i = 0; i < rows.length; i += WRITE_CHUNK) await insertRows(trx, 'livetv_channel_edits', EDIT_COLUMNS, rows.slice(i, i + WRITE_CHUNK), EDIT_UPSERT);
      const layout = { ...latest.layout, edits: new Map([...latest.layout.edits, ...edits]) };
      if (streams) {
        const { channelId, ids } = streams;
        await trx('livetv_channel_streams').where({ channel_id: channelId }).orWhereIn('stream_id', ids).delete();
        await insertRows(trx, 'livetv_channel_streams', ['stream_id', 'channel_id', 'position'], ids.map((id, i) => [id, channelId, i]));
        const next = new Map<number, readonly number[]>();
        for (const [c, list] of latest.layout.streams) {
          const kept = list.filter((id) => !ids.includes(id));
          if (c !== channelId && kept.length) next.set(c, kept);
        }
        next.set(channelId, ids);
        layout.streams = next;
      }
      await trx('livetv_state').where({ key: 'version' }).increment('value', 1);
      await trx.commit();
      const snapshot = this.keep(snapshotOf(version + 1, latest.lists, layout, this.tunerIds()));
      this.checkedAt = 0;
      this.onChanged?.();
      return result(snapshot);
    } catch (err) {
      if (!trx.isCompleted()) await trx.rollback();
      throw err;
    }
  }

  /**
   * Makes the tuner's channels exactly `incoming`: known keys keep their ids,
   * new keys get new ids, keys no longer listed are hidden (not deleted, so a
   * channel that comes back keeps its id, favorites and recordings).
   *
   * Only the rows that change are written, so an identical playlist writes nothing
   * and no process reloads its snapshot; the snapshot after the import is made
   * from what was written, not read back. `listed` is called once the whole list
   * has been read.
   */
  async replaceTunerChannels(
    tunerId: string, incoming: TunerChannel[] | AsyncIterable<TunerChannel | readonly TunerChannel[]>, listed?: (channels: number) => void,
  ): Promise<ImportCounts> {
    const { list, duplicates } = await this.readList(tunerId, incoming);
    listed?.(list.length + duplicates);

    const trx = await this.knex.transaction();
    try {
      // PostgreSQL: one import at a time, as this row stays locked until commit. SQLite serialises
      // writers itself: an import whose reads predate another one's commit fails to write (SQLITE_BUSY).
      const versionQuery = trx('livetv_state').where({ key: 'version' }).first('value');
      const version = Number((await (isSqlite(trx) ? versionQuery : versionQuery.forUpdate()))?.value ?? 0);
      // What is stored now: the snapshot when it is current, else (another process imported) read again.
      const latest = this.snapshot?.version === version ? this.snapshot : await this.read(trx);
      const previous = latest.lists.get(tunerId) ?? [];
      const stored = new Map(previous.map((c) => [c.key, c]));
      const others: StoredChannel[] = [];
      for (const [id, l] of latest.lists) if (id !== tunerId) for (const c of l) if (c.hiddenAt === null) others.push(c);

      const edited = new Set<string>();
      for (const e of latest.layout.edits.values()) if (e.number) edited.add(e.number);
      assignNumbers(list, stored, others, edited);
      const firstNewId = Number((await trx('livetv_state').where({ key: NEXT_ID_KEY }).first('value'))?.value ?? 1);
      let nextId = firstNewId;
      const changed: StoredChannel[] = [];
      const tunerList = list.map((c) => {
        const before = stored.get(c.key);
        c.id = before?.id ?? nextId++;
        if (before?.same(c)) return before;
        changed.push(c);
        return c;
      });
      const stamp = this.now();
      const listedKeys = new Set(list.map((l) => l.key));
      const forgotten: number[] = [];
      let removed = 0;
      let favorited: Set<number> | undefined; // read when a hidden channel is due to go
      for (const c of previous) {
        if (listedKeys.has(c.key)) continue;
        if (c.hiddenAt === null) {
          removed++;
          const hidden = c.with({ hiddenAt: stamp });
          tunerList.push(hidden);
          changed.push(hidden);
        } else if (stamp - c.hiddenAt <= this.keepHiddenMs ||
          (favorited ??= new Set((await trx('livetv_favorites').distinct('channel_id')).map((r) => Number(r.channel_id)))).has(c.id)) {
          tunerList.push(c);
        } else {
          forgotten.push(c.id);
        }
      }
      const lists = new Map(latest.lists);
      lists.set(tunerId, tunerList);
      changed.push(...moveClashingAssignedNumbers(lists, tunerList, others));

      for (let i = 0; i < changed.length; i += WRITE_CHUNK) {
        await insertRows(trx, 'livetv_tuner_channels', COLUMNS, changed.slice(i, i + WRITE_CHUNK).map((c) => c.row(stamp)), UPSERT);
      }
      let edits = latest.layout.edits;
      for (let i = 0; i < forgotten.length; i += DELETE_CHUNK) {
        const ids = forgotten.slice(i, i + DELETE_CHUNK);
        await trx('livetv_tuner_channels').whereIn('id', ids).delete();
        if (ids.some((id) => edits.has(id))) {
          await trx('livetv_channel_edits').whereIn('channel_id', ids).delete();
          edits = new Map(edits);
          for (const id of ids) (edits as Map<number, ChannelEdit>).delete(id);
        }
      }
      if (nextId !== firstNewId) await trx('livetv_state').insert({ key: NEXT_ID_KEY, value: nextId }).onConflict('key').merge();
      const written = changed.length + forgotten.length > 0;
      // Nothing written, no new version: no process reloads its snapshot for an identical playlist.
      if (written) await trx('livetv_state').where({ key: 'version' }).increment('value', 1);
      // The new snapshot is made while SQLite commits (sorting 100,000 channels takes a while).
      const committing = trx.commit();
      const snapshot = written ? snapshotOf(version + 1, lists, { ...latest.layout, edits }, this.tunerIds()) : undefined;
      await committing;
      if (snapshot) {
        this.checkedAt = 0; // our own change: look again on the next read
        this.keep(snapshot);
        this.onChanged?.();
      }
      return { channels: list.length, added: nextId - firstNewId, removed, duplicates };
    } catch (err) {
      if (!trx.isCompleted()) await trx.rollback();
      throw err;
    }
  }
}

export type RenumberOrder = 'category' | 'name' | 'number';

/** The changes a PATCH asks for: absent fields stay as they are. */
export type ChannelChanges = Partial<ChannelEdit>;

/** Channel edits (administrators'), written beside the channels and never by an import. */
export class ChannelEdits {
  constructor(private readonly store: ChannelStore) {}

  /** Changes one present channel: 404 for an unknown id, 409 for a number another channel shows. */
  async edit(id: number, changes: ChannelChanges): Promise<Channel> {
    return this.store.changeLayout(async (latest) => {
      const channel = latest.allById.get(id);
      if (!channel) throw errors.notFound(`No channel ${id}`);
      const number = changes.number?.trim();
      if (changes.number !== undefined && changes.number !== null && !number) throw errors.badRequest('number must not be empty (null gives back the playlist\'s)');
      if (number && latest.all.some((c) => c.id !== id && c.number === number)) throw errors.conflict(`Number ${number} is already in use`);
      const before = latest.layout.edits.get(id) ?? NO_EDIT;
      const edit: ChannelEdit = { ...before };
      for (const k of Object.keys(changes) as (keyof ChannelEdit)[]) if (changes[k] !== undefined) (edit as any)[k] = changes[k];
      if (changes.number !== undefined) edit.number = number || null;
      return { edits: new Map([[id, edit]]) };
    }, (snapshot) => snapshot.allById.get(id)!);
  }

  /** Numbers every present channel from `start` on, in the order `by` says. */
  async renumber(start: number, by: RenumberOrder): Promise<number> {
    return this.store.changeLayout(async (latest) => {
      const order = [...latest.all];
      const text = (a: string, b: string) => a.localeCompare(b, undefined, { sensitivity: 'base', numeric: true });
      if (by === 'name') order.sort((a, b) => text(a.name, b.name));
      else if (by === 'category') {
        // Channels without a category after those with one; within a category, the order they had.
        order.sort((a, b) => (a.groups.length ? 0 : 1) - (b.groups.length ? 0 : 1) || text(a.groups[0] ?? '', b.groups[0] ?? ''));
      }
      return { edits: new Map(order.map((c, i) => [c.id, { ...(latest.layout.edits.get(c.id) ?? NO_EDIT), number: String(start + i) }])) };
    }, (snapshot) => snapshot.all.length);
  }

  /**
   * Makes `ids` the channel's streams, in this order: a stream may come from a channel of its
   * own (that channel goes) or from this one; one of another channel of several streams is
   * refused (409), as is leaving out the channel's own entry (400). Streams left out become
   * channels of their own again.
   */
  async setStreams(id: number, ids: number[]): Promise<Channel> {
    return this.store.changeLayout(async (latest) => {
      const channel = latest.allById.get(id);
      if (!channel) throw errors.notFound(`No channel ${id}`);
      if (new Set(ids).size !== ids.length) throw errors.badRequest('a stream can be listed once');
      for (const s of ids) {
        const owner = latest.ownerOf.get(s);
        if (owner === undefined) throw errors.notFound(`No stream ${s}`);
        if (owner !== id && (owner !== s || latest.allById.get(owner)!.streams.length > 1)) {
          throw errors.conflict(`Stream ${s} is attached to channel ${owner}; detach it there first`);
        }
      }
      if (latest.ownerOf.get(id) === id && !ids.includes(id)) throw errors.badRequest(`Channel ${id} keeps its own stream (${id}); hide the channel instead`);
      return { streams: { channelId: id, ids } };
    }, (snapshot) => snapshot.allById.get(id)!);
  }
}

/**
 * Another tuner's channel may hold, as a number we assigned, a number this
 * playlist now gives: that channel moves to the next free number (once; it
 * keeps the new one afterwards), so no two channels ever share a number.
 * Changes `lists` (with copies of the channels moved); returns the copies.
 */
function moveClashingAssignedNumbers(lists: Map<string, readonly StoredChannel[]>, list: StoredChannel[], others: StoredChannel[]): StoredChannel[] {
  if (!others.some((c) => !c.given && c.assigned)) return [];
  const wanted = new Set<string>();
  for (const c of list) if (c.given && c.hiddenAt === null) wanted.add(c.given);
  const clashing = others.filter((c) => !c.given && c.assigned && wanted.has(c.assigned));
  if (!clashing.length) return [];
  // Above every number in use, this list's assigned ones too (its new channels may just have taken the next ones).
  const next = nextNumbers([...list, ...others].filter((c) => c.hiddenAt === null).map((c) => c.number));
  const moved = new Map(clashing.map((c) => [c, c.with({ assigned: next() })]));
  for (const tunerId of new Set(clashing.map((c) => c.tunerId))) {
    lists.set(tunerId, lists.get(tunerId)!.map((c) => moved.get(c) ?? c));
  }
  return [...moved.values()];
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
    const v = Math.floor(Number.parseFloat(n));
    if (v >= 1e9) beyond.add(n);
    else if (v >= next) next = v + 1;
  }
  return () => {
    let number: string;
    do number = String(next++); while (beyond.has(number));
    return number;
  };
}

/**
 * Sets the numbers of channels the playlist leaves unnumbered: a channel keeps the number it
 * was assigned before when that is still free, others get the next integers above every
 * number in use, so none collides with a given one.
 */
function assignNumbers(list: StoredChannel[], previous: Map<string, StoredChannel>, others: StoredChannel[], edited: Set<string>): void {
  const taken = new Set<string>(edited);
  for (const c of list) if (c.given) taken.add(c.given);
  for (const c of others) if (c.number) taken.add(c.number);
  const pending: StoredChannel[] = [];
  for (const c of list) {
    if (c.given) continue;
    const before = previous.get(c.key)?.assigned;
    if (before && !taken.has(before)) {
      taken.add(before);
      c.assigned = before;
    } else {
      pending.push(c);
    }
  }
  const next = nextNumbers(taken);
  for (const c of pending) c.assigned = next();
}
