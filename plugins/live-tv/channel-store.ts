import type { Database, Logger, TunerChannel } from 'antenna/sdk';
import { insertValues } from 'antenna/sdk';
import { fold, numberSortKey } from './text.js';

export interface Channel {
  id: number;
  tunerId: string;
  key: string;
  name: string;
  /** The number shown: the tuner's, else the one we assigned. */
  number: string;
  tvgId: string | null;
  tvgName: string | null;
  logo: string | null;
  groups: string[];
  extra: Record<string, string>;
  data: Record<string, unknown>;
  /** Folded name and number, for search. */
  search: string;
}

export interface ChannelSnapshot {
  version: number;
  /** Present channels of registered tuners, in number order. */
  channels: Channel[];
  byId: Map<number, Channel>;
}

const VERSION_CHECK_MS = 1000;
const STORE_CHUNK = 5000;
const LOAD_CHUNK = 10_000;
const CHANNEL_COLUMNS = ['tuner_id', 'key', 'name', 'number', 'assigned_number', 'tvg_id', 'tvg_name', 'logo', 'groups', 'extra', 'data', 'present', 'position', 'updated_at'];

export interface ImportCounts { channels: number; added: number; removed: number; duplicates: number }

const parse = <T>(text: string | null, fallback: T): T => {
  if (!text) return fallback;
  try { return JSON.parse(text) as T; } catch { return fallback; }
};

/**
 * Channels in the database, with an in-memory snapshot that is rebuilt when the
 * shared version number changes (an import in this process or in the CLI).
 */
export class ChannelStore {
  private snapshot?: ChannelSnapshot;
  private loading?: Promise<ChannelSnapshot>;
  private checkedAt = 0;

  constructor(private readonly knex: Database, private readonly log: Logger, private readonly tunerIds: () => Set<string>, private readonly now: () => number) {}

  async version(): Promise<number> {
    const row = await this.knex('livetv_state').where({ key: 'version' }).first('value');
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
    const channels: Channel[] = [];
    // By id, LOAD_CHUNK rows a query, in one read transaction (one consistent state): node-sqlite3
    // holds a whole result twice (C++ rows, then JS objects), which for 100,000 channels was a few
    // hundred MB at once. The order is the sort's below.
    await this.knex.transaction(async (trx) => { for (let after = -Infinity; ;) {
      const rows = await trx('livetv_channels').where({ present: true }).where('id', '>', after).orderBy('id').limit(LOAD_CHUNK)
        .select('id', 'tuner_id', 'key', 'name', 'number', 'assigned_number', 'tvg_id', 'tvg_name', 'logo', 'groups', 'extra', 'data');
      for (const r of rows) {
        if (!tuners.has(r.tuner_id)) continue;
        const number = r.number ?? r.assigned_number ?? '';
        channels.push({
          id: r.id, tunerId: r.tuner_id, key: r.key, name: r.name, number, tvgId: r.tvg_id, tvgName: r.tvg_name, logo: r.logo,
          groups: parse<string[]>(r.groups, []), extra: parse(r.extra, {}), data: parse(r.data, {}),
          search: fold(`${r.name} ${number}`),
        });
      }
      if (rows.length < LOAD_CHUNK) break;
      after = rows[rows.length - 1].id;
    } });
    // numberSortKey once per channel, not twice per comparison.
    const keyed = channels.map((c) => ({ c, k: numberSortKey(c.number) }));
    keyed.sort((a, b) => a.k - b.k || a.c.number.localeCompare(b.c.number) || a.c.name.localeCompare(b.c.name) || a.c.id - b.c.id);
    for (let i = 0; i < keyed.length; i++) channels[i] = keyed[i].c;
    this.snapshot = { version, channels, byId: new Map(channels.map((c) => [c.id, c])) };
    return this.snapshot;
  }

  /**
   * Makes the tuner's channels exactly `incoming`: known keys keep their ids,
   * new keys get new ids, keys no longer listed are hidden (not deleted, so a
   * channel that comes back keeps its id, favorites and recordings).
   */
  async replaceTunerChannels(tunerId: string, incoming: TunerChannel[]): Promise<ImportCounts> {
    const stamp = this.now();
    const unique = new Map<string, TunerChannel>();
    for (const c of incoming) if (!unique.has(c.key)) unique.set(c.key, c);
    const duplicates = incoming.length - unique.size;

    return this.knex.transaction(async (trx) => {
      const existing = new Map<string, string | null>();
      for (const r of await trx('livetv_channels').where({ tuner_id: tunerId }).select('key', 'assigned_number')) existing.set(r.key, r.assigned_number);
      const others = await trx('livetv_channels').where({ present: true }).whereNot({ tuner_id: tunerId }).select('number', 'assigned_number');
      const assigned = assignNumbers([...unique.values()], existing, others);

      // Rows (arrays in CHANNEL_COLUMNS order) are built and stored a chunk at a time, so a
      // 100,000-channel playlist never exists a second time over as rows; the next chunk is built
      // while SQLite (in libuv's pool) stores the previous one.
      const list = [...unique.values()];
      const numbers: (string | null)[] = new Array(list.length);
      let storing: Promise<void> | undefined;
      for (let from = 0; from < list.length; from += STORE_CHUNK) {
        const rows = list.slice(from, from + STORE_CHUNK).map((c, k) => {
          const number = c.number?.trim() ? c.number.trim().slice(0, 32) : null;
          numbers[from + k] = number;
          return [
            tunerId, c.key, c.name.slice(0, 512) || c.key.slice(0, 512), number, assigned.get(c.key) ?? null,
            c.tvgId?.trim() || null, c.tvgName ?? null, c.logo || null,
            JSON.stringify(c.groups ?? []), JSON.stringify(c.extra ?? {}), JSON.stringify(c.data ?? {}),
            true, from + k, stamp,
          ];
        });
        if (storing) await storing;
        storing = insertValues(trx, 'livetv_channels', CHANNEL_COLUMNS, rows, {
          onConflict: 'ON CONFLICT (tuner_id, key) DO UPDATE SET name = excluded.name, number = excluded.number, ' +
            'assigned_number = excluded.assigned_number, tvg_id = excluded.tvg_id, tvg_name = excluded.tvg_name, logo = excluded.logo, ' +
            'groups = excluded.groups, extra = excluded.extra, data = excluded.data, present = excluded.present, ' +
            'position = excluded.position, updated_at = excluded.updated_at',
        });
        storing.catch(() => {}); // awaited before the next chunk or below
      }
      if (storing) await storing;
      const removed = await trx('livetv_channels').where({ tuner_id: tunerId, present: true }).where('updated_at', '<', stamp).update({ present: false });
      await moveClashingAssignedNumbers(trx, tunerId, numbers);
      await this.bumpVersion(trx);
      const added = [...unique.keys()].filter((k) => !existing.has(k)).length;
      return { channels: unique.size, added, removed: Number(removed), duplicates };
    });
  }
}

/**
 * Another tuner's channel may hold, as a number we assigned, a number this
 * playlist now gives: that channel moves to the next free number (once; it
 * keeps the new one afterwards), so no two channels ever share a number.
 */
async function moveClashingAssignedNumbers(trx: Database, tunerId: string, given: (string | null)[]): Promise<void> {
  const wanted = new Set(given.filter((n): n is string => !!n));
  if (!wanted.size) return;
  const others = await trx('livetv_channels').where({ present: true }).whereNot({ tuner_id: tunerId })
    .orderBy([{ column: 'tuner_id' }, { column: 'position' }]).select('id', 'number', 'assigned_number');
  const clashing = others.filter((o) => !o.number && o.assigned_number && wanted.has(o.assigned_number));
  if (!clashing.length) return;
  const taken = new Set<string>(wanted);
  for (const o of others) if (o.number ?? o.assigned_number) taken.add(o.number ?? o.assigned_number);
  let next = 1;
  for (const n of taken) {
    const v = Number.parseFloat(n);
    if (Number.isFinite(v)) next = Math.max(next, Math.floor(v) + 1);
  }
  for (const o of clashing) {
    while (taken.has(String(next))) next++;
    taken.add(String(next));
    await trx('livetv_channels').where({ id: o.id }).update({ assigned_number: String(next++) });
  }
}

/**
 * Numbers for channels the playlist leaves unnumbered: a channel keeps the
 * number it was assigned before when that is still free, others get the next
 * free integers above every number in use, so none collides with a given one.
 */
function assignNumbers(
  channels: TunerChannel[],
  previous: Map<string, string | null>,
  others: { number: string | null; assigned_number: string | null }[],
): Map<string, string> {
  const taken = new Set<string>();
  let max = 0;
  const use = (n: string | null | undefined) => {
    if (!n) return;
    taken.add(n);
    const v = Number.parseFloat(n);
    if (Number.isFinite(v)) max = Math.max(max, Math.floor(v));
  };
  for (const c of channels) use(c.number?.trim());
  for (const o of others) use(o.number ?? o.assigned_number);
  const result = new Map<string, string>();
  const pending: TunerChannel[] = [];
  for (const c of channels) {
    if (c.number?.trim()) continue;
    const before = previous.get(c.key);
    if (before && !taken.has(before)) {
      taken.add(before);
      result.set(c.key, before);
    } else {
      pending.push(c);
    }
  }
  for (const n of taken) {
    const v = Number.parseFloat(n);
    if (Number.isFinite(v)) max = Math.max(max, Math.floor(v));
  }
  let next = max + 1;
  for (const c of pending) {
    while (taken.has(String(next))) next++;
    result.set(c.key, String(next));
    taken.add(String(next++));
  }
  return result;
}
