import type { Knex } from 'knex';
import type { Database, Logger, TunerChannel } from 'antenna/sdk';
import { insertValues } from 'antenna/sdk';
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
}

export interface ChannelSnapshot {
  version: number;
  /** Present channels of registered tuners, in number order. */
  channels: Channel[];
  byId: Map<number, Channel>;
}

const VERSION_CHECK_MS = 1000;
const STORE_CHUNK = 400;
const LOAD_CHUNK = 10_000;
const HIDE_CHUNK = 10_000;
const CHANNEL_COLUMNS = ['tuner_id', 'key', 'name', 'number', 'assigned_number', 'tvg_id', 'tvg_name', 'logo', 'groups', 'extra', 'data', 'present', 'position', 'updated_at'];
const SNAPSHOT_COLUMNS = ['id', 'tuner_id', 'key', 'name', 'number', 'assigned_number', 'tvg_id', 'tvg_name', 'logo', 'groups', 'extra', 'data', 'position'];
/** A changed row is rewritten whole, through its id. */
const UPDATE_ON_ID = `ON CONFLICT (id) DO UPDATE SET ${CHANNEL_COLUMNS.map((c) => `${c} = excluded.${c}`).join(', ')}`;

export interface ImportCounts { channels: number; added: number; removed: number; duplicates: number }

const parse = <T>(text: string | null, fallback: T): T => {
  if (!text) return fallback;
  try { return JSON.parse(text) as T; } catch { return fallback; }
};

const isSqlite = (knex: Database): boolean => String(knex.client.config.client).startsWith('sqlite');

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

/** A tuner's row as an import finds it stored, when the snapshot does not hold it (hidden rows). */
interface StoredRow {
  readonly id: number;
  readonly assigned: string | null;
  readonly present: boolean;
}

/**
 * A channel of the snapshot, and the row an import writes for it. `extra`,
 * `data` and `search` are worked out on first use: only opening a stream needs
 * the first two and only a search the last, while for 100,000 channels parsing
 * and folding them all costs seconds and tens of MB at every reload.
 */
class StoredChannel implements Channel, StoredRow {
  private extraValue?: Record<string, string>;
  private dataValue?: Record<string, unknown>;
  private searchValue?: string;

  constructor(
    /** 0 until a new row is stored. */
    public id: number,
    // The strings are replaced once by compact copies of themselves (compactStrings), by the import
    // that made the channel, before anything else holds it; never changed otherwise.
    readonly tunerId: string, public key: string, public name: string,
    /** The tuner's number; `assigned` is ours, for a channel without one. */
    readonly given: string | null, readonly assigned: string | null,
    public tvgId: string | null, public tvgName: string | null, public logo: string | null, readonly groups: string[],
    public extraJson: string, public dataJson: string,
    /**
     * The channel's place in the tuner's list when its row was last written. A channel
     * listed higher or lower only because others came or went is not rewritten for that:
     * one channel added at the top of a 100,000-channel playlist would rewrite them all.
     */
    readonly position: number,
  ) {}

  get present(): boolean { return true; }
  get number(): string { return this.given ?? this.assigned ?? ''; }
  get extra(): Record<string, string> { return (this.extraValue ??= parse(this.extraJson, {})); }
  get data(): Record<string, unknown> { return (this.dataValue ??= parse(this.dataJson, {})); }
  get search(): string { return (this.searchValue ??= fold(`${this.name} ${this.number}`)); }

  /** Everything the tuner gives is the same (not the id, key, assigned number or position). */
  sameContent(o: StoredChannel): boolean {
    return this.name === o.name && this.given === o.given && this.tvgId === o.tvgId && this.tvgName === o.tvgName && this.logo === o.logo &&
      (this.groups === o.groups || JSON.stringify(this.groups) === JSON.stringify(o.groups)) &&
      this.extraJson === o.extraJson && this.dataJson === o.dataJson;
  }

  // Snapshots share channels: a change makes a copy, never changes one in place.
  withAssigned(assigned: string | null): StoredChannel {
    return new StoredChannel(this.id, this.tunerId, this.key, this.name, this.given, assigned, this.tvgId, this.tvgName, this.logo,
      this.groups, this.extraJson, this.dataJson, this.position);
  }

  moved(key: string, position: number): StoredChannel {
    return new StoredChannel(0, this.tunerId, key, this.name, this.given, this.assigned, this.tvgId, this.tvgName, this.logo,
      this.groups, this.extraJson, this.dataJson, position);
  }

  row(groupJson: (groups: string[]) => string, stamp: number): unknown[] {
    return [
      this.tunerId, this.key, this.name, this.given, this.assigned, this.tvgId, this.tvgName, this.logo,
      groupJson(this.groups), this.extraJson, this.dataJson, true, this.position, stamp,
    ];
  }
}

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

/**
 * A listed channel as it would be stored (its id and assigned number are worked
 * out later), or `before` when that is the same channel unchanged: so an
 * unchanged channel costs nothing new, and the snapshot keeps its objects.
 * A new channel holds the tuner's strings until compactStrings copies them.
 */
function listedChannel(c: TunerChannel, tunerId: string, position: number, groups: GroupArrays, before: StoredChannel | undefined): StoredChannel {
  const name = c.name.slice(0, 512) || c.key.slice(0, 512);
  const given = c.number?.trim() ? c.number.trim().slice(0, 32) : null;
  const tvgId = c.tvgId?.trim() || null;
  const tvgName = c.tvgName ?? null;
  const logo = c.logo || null;
  const groupList = groups.array(groups.json(c.groups ?? []));
  const extra = JSON.stringify(c.extra ?? {});
  const data = JSON.stringify(c.data ?? {});
  if (before && before.name === name && before.given === given && before.tvgId === tvgId &&
    before.tvgName === tvgName && before.logo === logo && before.extraJson === extra && before.dataJson === data &&
    groups.json(before.groups) === groups.json(groupList)) return before;
  return new StoredChannel(0, tunerId, c.key, name, given, null, tvgId, tvgName, logo, groupList, extra, data, position);
}

/** New channels' strings are copied COPY_BATCH channels at a time: one JSON round trip for all of them. */
const COPY_BATCH = 512;

/**
 * The strings of new channels replaced by compact copies of themselves. The
 * tuner's, back from one JSON text: they may be slices of larger strings
 * (m3u-tuner's: of the playlist's lines) or concatenations of such slices
 * (keys), which would keep those alive. One round trip for a few hundred
 * channels costs half what one per channel did (that was a third of a first
 * import's reading). The JSON texts made of `extra` and `data` hold nothing
 * else: flattened (they are trees of their parts), not copied (their quotes
 * would make the round trip take twice as long).
 */
function compactStrings(fresh: StoredChannel[], groups: GroupArrays): void {
  if (!fresh.length) return;
  const values: (string | null)[] = [];
  for (const c of fresh) values.push(c.key, c.name, c.tvgId, c.tvgName === c.name ? null : c.tvgName, c.logo);
  const copies = JSON.parse(JSON.stringify(values)) as (string | null)[];
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

/**
 * The rows `query` selects, each as an array in `columns` order. On SQLite the
 * rows come back as one JSON text: node-sqlite3 builds an object per row, which
 * for 100,000 rows costs about four times as much.
 */
async function selectArrays(knex: Database, query: Knex.QueryBuilder, columns: string[]): Promise<unknown[][]> {
  query.select(columns);
  if (!isSqlite(knex)) return (await query).map((r: Record<string, unknown>) => columns.map((c) => r[c]));
  const { sql, bindings } = query.toSQL();
  const rows = await knex.raw(`SELECT json_group_array(json_array(${columns.map((c) => `"${c}"`).join(', ')})) AS j FROM (${sql})`, bindings);
  return JSON.parse(rows[0].j);
}

function sortChannels(channels: Channel[]): Channel[] {
  // numberSortKey once per channel, not twice per comparison.
  const keyed = channels.map((c) => ({ c, k: numberSortKey(c.number) }));
  keyed.sort((a, b) => a.k - b.k || a.c.number.localeCompare(b.c.number) || a.c.name.localeCompare(b.c.name) || a.c.id - b.c.id);
  for (let i = 0; i < keyed.length; i++) channels[i] = keyed[i].c;
  return channels;
}

const snapshotOf = (version: number, channels: Channel[]): ChannelSnapshot =>
  ({ version, channels: sortChannels(channels), byId: new Map(channels.map((c) => [c.id, c])) });

/**
 * Writes rows STORE_CHUNK at a time, with at most two statements queued: the
 * next chunk is encoded on the main thread while SQLite, in libuv's pool,
 * stores the previous one. Chunks stay small enough (~120 KB of JSON) for V8's
 * young generation; a large string would go straight to the old one, and 25 MB
 * of them per import is what V8 grows the heap by before collecting them.
 */
class ChunkWriter {
  rows = 0;
  private readonly added: StoredChannel[] = [];
  private readonly updated: StoredChannel[] = [];
  private storing?: Promise<void>;

  constructor(private readonly trx: Database, private readonly stamp: number, private readonly groups: GroupArrays) {}

  /** A new row; a promise to wait for when a chunk went out. */
  add(c: StoredChannel): Promise<void> | undefined {
    this.added.push(c);
    return this.added.length >= STORE_CHUNK ? this.flush(this.added, false) : undefined;
  }

  /** A changed row, rewritten whole through its id. */
  update(c: StoredChannel): Promise<void> | undefined {
    this.updated.push(c);
    return this.updated.length >= STORE_CHUNK ? this.flush(this.updated, true) : undefined;
  }

  async done(): Promise<void> {
    await this.flush(this.updated, true);
    await this.flush(this.added, false);
    await this.storing;
  }

  private async flush(channels: StoredChannel[], withId: boolean): Promise<void> {
    if (!channels.length) return;
    this.rows += channels.length;
    const rows = channels.map((c) => (withId ? [c.id, ...c.row(this.groups.json, this.stamp)] : c.row(this.groups.json, this.stamp)));
    channels.length = 0;
    // Encoded now and queued behind the statement in flight (the connection runs them in turn), so
    // SQLite goes from one to the next without waiting; then wait for that one: two at most.
    const previous = this.storing;
    this.storing = insertValues(this.trx, 'livetv_channels', withId ? ['id', ...CHANNEL_COLUMNS] : CHANNEL_COLUMNS, rows, withId ? { onConflict: UPDATE_ON_ID } : {});
    this.storing.catch(() => {}); // awaited by the next flush or done()
    await previous;
  }
}

/**
 * Channels in the database, with an in-memory snapshot that is rebuilt when the
 * shared version number changes (an import in this process or in the CLI).
 */
export class ChannelStore {
  private snapshot?: ChannelSnapshot;
  private loading?: Promise<ChannelSnapshot>;
  private checkedAt = 0;

  constructor(private readonly knex: Database, private readonly log: Logger, private readonly tunerIds: () => Set<string>, private readonly now: () => number) {}

  async version(trx: Database = this.knex): Promise<number> {
    const row = await trx('livetv_state').where({ key: 'version' }).first('value');
    return Number(row?.value ?? 0);
  }

  async bumpVersion(trx: Database = this.knex): Promise<void> {
    await trx('livetv_state').where({ key: 'version' }).increment('value', 1);
    this.checkedAt = 0; // our own change: look again on the next read
  }

  /**
   * The current channels. The shared version is read at most once per
   * VERSION_CHECK_MS, so an import by another process (the CLI) shows within a
   * second while a burst of requests costs no query each.
   */
  async current(): Promise<ChannelSnapshot> {
    if (this.snapshot && this.now() - this.checkedAt < VERSION_CHECK_MS) return this.snapshot;
    if (!this.loading) {
      this.loading = (async () => {
        const version = await this.version();
        this.checkedAt = this.now();
        return this.snapshot?.version === version ? this.snapshot : this.load(version);
      })().finally(() => { this.loading = undefined; });
    }
    return this.loading;
  }

  private async load(version: number): Promise<ChannelSnapshot> {
    const tuners = this.tunerIds();
    const groups = new GroupArrays();
    const channels: Channel[] = [];
    // By id, LOAD_CHUNK rows a query, in one read transaction (one consistent state), so that a
    // whole result (100,000 rows: tens of MB as JSON) is never in memory at once.
    await this.knex.transaction(async (trx) => { for (let after = -Infinity; ;) {
      const rows = await selectArrays(trx, trx('livetv_channels').where({ present: true }).where('id', '>', after).orderBy('id').limit(LOAD_CHUNK), SNAPSHOT_COLUMNS);
      for (const r of rows as [number, string, string, string, string | null, string | null, string | null, string | null, string | null, string, string, string, number][]) {
        const [id, tunerId, key, name, given, assigned, tvgId, tvgName, logo, groupsJson, extra, data, position] = r;
        if (id > after) after = id;
        if (!tuners.has(tunerId)) continue;
        channels.push(new StoredChannel(id, tunerId, key, name, given, assigned, tvgId, tvgName, logo, groups.array(groupsJson), groups.extra(extra) ?? groups.keepExtra(extra), data, position));
      }
      if (rows.length < LOAD_CHUNK) break;
    } });
    const snapshot = snapshotOf(version, channels);
    // An import of this process may have put a newer snapshot in place meanwhile.
    if (!this.snapshot || this.snapshot.version <= version) this.snapshot = snapshot;
    return snapshot;
  }

  /**
   * Makes the tuner's channels exactly `incoming`: known keys keep their ids,
   * new keys get new ids, keys no longer listed are hidden (not deleted, so a
   * channel that comes back keeps its id, favorites and recordings).
   *
   * Only the rows that differ from what is stored are written. What is stored is
   * what the snapshot holds (it holds every present channel whole), so a
   * channel listed unchanged is the snapshot's own object: an identical playlist
   * writes nothing and holds nothing new, and the snapshot after the import is
   * made from the one before and the rows written, not reloaded.
   * `listed` is called once the whole list has been read.
   */
  async replaceTunerChannels(
    tunerId: string, incoming: TunerChannel[] | AsyncIterable<TunerChannel>, listed?: (channels: number) => void,
  ): Promise<ImportCounts> {
    const base = await this.current(); // on an empty database, an empty one
    const registered = this.tunerIds().has(tunerId);
    // This tuner's channels by key: what each listed channel is compared with. (The hidden rows join
    // them in the transaction: this is what it reads as stored when the snapshot is still current.)
    const stored = new Map<string, StoredRow>();
    if (registered) for (const c of base.channels) if (c.tunerId === tunerId) stored.set(c.key, c as StoredChannel);
    const snapshotted = (key: string) => { const c = stored.get(key); return c instanceof StoredChannel ? c : undefined; };
    const groups = new GroupArrays();

    // The list is read before the transaction (a tuner may use the database while it yields), each
    // channel made at once into the row it would be stored as, or into the snapshot's own channel
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
      const before = snapshotted(c.key);
      const channel = listedChannel(c, tunerId, read.length, groups, before);
      if (channel !== before) fresh.push(channel);
      sharedKeys.push(c.keyIfShared === undefined ? undefined : flat(c.keyIfShared));
      read.push(channel);
      if (read.length - copied >= COPY_BATCH) compact();
    };
    if (Array.isArray(incoming)) for (const c of incoming) add(c);
    else for await (const c of incoming) add(c);
    compact();
    listed?.(read.length);

    // The keys, now that it is known which repeat; the first channel of each key counts, an exact
    // repeat is a duplicate. A channel whose key turns out other than as listed becomes a copy with
    // the right one (or the snapshot's channel under that key, if that is the same), and a new one
    // takes its place in the list without the duplicates. (When no key repeats, the keys are the
    // keys as listed, each once.)
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
        c = before && before.sameContent(c) ? before : c.moved(key, list.length);
      } else if (!c.id && c.position !== list.length) {
        c = c.moved(key, list.length);
      }
      list.push(c);
    }
    const total = read.length;
    read.length = sharedKeys.length = 0;
    if (keys !== listedKeys) listedKeys.clear();
    repeated.clear();

    const stamp = this.now();
    const done = await this.knex.transaction(async (trx) => {
      // PostgreSQL: one import at a time, as this row stays locked until commit. SQLite serialises
      // writers itself: an import whose reads predate another one's commit fails to write (SQLITE_BUSY).
      const versionQuery = trx('livetv_state').where({ key: 'version' }).first('value');
      const version = Number((await (isSqlite(trx) ? versionQuery : versionQuery.forUpdate()))?.value ?? 0);
      // What is stored now: the present channels from the snapshot when it is current (another
      // import of this process may have made a newer one since this one began), the hidden rows
      // from the database. Without a current snapshot (another process imported meanwhile) every
      // row is read, without its content: those still listed are rewritten.
      const latest = this.snapshot?.version === version ? this.snapshot : undefined;
      if (latest !== base) {
        stored.clear();
        if (latest && registered) for (const c of latest.channels) if (c.tunerId === tunerId) stored.set(c.key, c as StoredChannel);
      }
      for (const [id, key, assigned, present] of await selectArrays(trx,
        trx('livetv_channels').where({ tuner_id: tunerId, ...(latest && registered ? { present: false } : {}) }),
        ['id', 'key', 'assigned_number', 'present']) as [number, string, string | null, number | boolean][]) {
        stored.set(key, { id, assigned, present: !!present });
      }

      const others = await selectArrays(trx, trx('livetv_channels').where({ present: true }).whereNot({ tuner_id: tunerId })
        .orderBy([{ column: 'tuner_id' }, { column: 'position' }]), ['id', 'number', 'assigned_number']) as Others;
      const assigned = assignNumbers(list, stored, others);
      const maxId = Number((await trx('livetv_channels').max({ m: 'id' }).first())?.m ?? 0);

      const inserted: StoredChannel[] = []; // by position (its place in the list)
      let added = 0;
      const writer = new ChunkWriter(trx, stamp, groups);
      for (let i = 0; i < list.length; i++) {
        let c = list[i];
        const number = assigned.get(c.key) ?? null;
        if (c.assigned !== number) c = c.withAssigned(number);
        const before = stored.get(c.key);
        if (!before) {
          if (c.id) c = c.moved(c.key, i); // (a snapshot's channel without a row: never changed in place)
          inserted[i] = c;
          added++;
          const flushing = writer.add(c);
          if (flushing) await flushing;
        } else if (before instanceof StoredChannel && before.assigned === c.assigned && (before === c || before.sameContent(c))) {
          c = before; // unchanged
        } else {
          if (!c.id) c.id = before.id;
          const flushing = writer.update(c);
          if (flushing) await flushing;
        }
        list[i] = c;
      }
      await writer.done();
      if (added) {
        // The new rows' ids, matched by position (unique within this import).
        for (const [id, position] of await selectArrays(trx, trx('livetv_channels').where({ tuner_id: tunerId }).where('id', '>', maxId), ['id', 'position']) as [number, number][]) {
          const c = inserted[position];
          if (c) c.id = id;
        }
      }
      const hidden: number[] = [];
      for (const [key, before] of stored) if (before.present && !keys.has(key)) hidden.push(before.id);
      for (let i = 0; i < hidden.length; i += HIDE_CHUNK) {
        await trx('livetv_channels').whereIn('id', hidden.slice(i, i + HIDE_CHUNK)).update({ present: false });
      }
      const moved = await moveClashingAssignedNumbers(trx, list, others);
      const changed = writer.rows + hidden.length + moved.size > 0;
      // Nothing written, no new version: no process reloads its snapshot for an identical playlist.
      if (changed) await this.bumpVersion(trx);
      return { version, latest, changed, moved, counts: { channels: list.length, added, removed: hidden.length, duplicates: total - list.length } };
    });

    // (Unless an import that committed after this one has put a newer snapshot in place meanwhile.)
    if (done.changed && (this.snapshot?.version ?? -1) <= done.version) {
      // Without the snapshot this import compared with (another process imported meanwhile): reload on the next read.
      this.snapshot = done.latest ? this.updated(done.latest, done.version + 1, tunerId, list, done.moved) : undefined;
    }
    return done.counts;
  }

  /**
   * The snapshot after an import, from the one current when it wrote: other
   * tuners' channels stay (with the numbers moved), this tuner's are the ones
   * just listed (unchanged ones are the same objects).
   */
  private updated(base: ChannelSnapshot, version: number, tunerId: string, list: StoredChannel[], moved: Map<number, string>): ChannelSnapshot {
    const channels: Channel[] = [];
    for (const c of base.channels) {
      if (c.tunerId === tunerId) continue;
      const number = moved.get(c.id);
      channels.push(number === undefined ? c : (c as StoredChannel).withAssigned(number));
    }
    if (this.tunerIds().has(tunerId)) for (const c of list) channels.push(c);
    return snapshotOf(version, channels);
  }
}

/** Other tuners' present channels, in their tuners' order: whose numbers an import must not take. */
type Others = [id: number, number: string | null, assigned: string | null][];

/**
 * Another tuner's channel may hold, as a number we assigned, a number this
 * playlist now gives: that channel moves to the next free number (once; it
 * keeps the new one afterwards), so no two channels ever share a number.
 * Returns the channels moved, by id, with their new numbers.
 */
async function moveClashingAssignedNumbers(trx: Database, list: StoredChannel[], others: Others): Promise<Map<number, string>> {
  const moved = new Map<number, string>();
  if (!others.some(([, number, assigned]) => !number && assigned)) return moved;
  const wanted = new Set<string>();
  for (const c of list) if (c.given) wanted.add(c.given);
  const clashing = others.filter(([, number, assigned]) => !number && assigned && wanted.has(assigned));
  if (!clashing.length) return moved;
  const taken = new Set<string>(wanted);
  for (const [, number, assigned] of others) if (number ?? assigned) taken.add((number ?? assigned)!);
  let next = 1;
  for (const n of taken) {
    const v = Number.parseFloat(n);
    if (Number.isFinite(v)) next = Math.max(next, Math.floor(v) + 1);
  }
  for (const [id] of clashing) {
    while (taken.has(String(next))) next++;
    const number = String(next++);
    taken.add(number);
    await trx('livetv_channels').where({ id }).update({ assigned_number: number });
    moved.set(id, number);
  }
  return moved;
}

/**
 * Numbers for channels the playlist leaves unnumbered: a channel keeps the
 * number it was assigned before when that is still free, others get the next
 * free integers above every number in use, so none collides with a given one.
 */
function assignNumbers(channels: StoredChannel[], previous: Map<string, StoredRow>, others: Others): Map<string, string> {
  const taken = new Set<string>();
  let max = 0;
  const use = (n: string | null | undefined) => {
    if (!n || taken.has(n)) return;
    taken.add(n);
    const v = Number.parseFloat(n);
    if (Number.isFinite(v) && v > max) max = Math.floor(v);
  };
  for (const c of channels) use(c.given);
  for (const [, number, assigned] of others) use(number ?? assigned);
  const result = new Map<string, string>();
  const pending: StoredChannel[] = [];
  for (const c of channels) {
    if (c.given) continue;
    const before = previous.get(c.key)?.assigned;
    if (before && !taken.has(before)) {
      use(before);
      result.set(c.key, before);
    } else {
      pending.push(c);
    }
  }
  let next = max + 1;
  for (const c of pending) {
    while (taken.has(String(next))) next++;
    result.set(c.key, String(next));
    taken.add(String(next++));
  }
  return result;
}
