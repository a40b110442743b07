import type { Database } from 'antenna/sdk';
import type { Gap, Recording, RecordingStatus } from './model.js';

const TABLE = 'dvr_recordings';
/** Rows per INSERT (24 columns: far below SQLite's 32,766 parameters). */
const INSERT_CHUNK = 200;

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

function fromRow(r: any): Recording {
  let gaps: Gap[] = [];
  try { gaps = JSON.parse(r.gaps ?? '[]'); } catch { /* a damaged note is not worth failing a listing */ }
  return {
    id: Number(r.id), channelId: Number(r.channel_id), programId: Number(r.program_id), tunerId: r.tuner_id,
    title: r.title, start: Number(r.start), stop: Number(r.stop), status: r.status as RecordingStatus,
    error: r.error ?? null, sizeBytes: Number(r.size_bytes), duration: Number(r.duration), gaps,
    dir: r.dir, createdBy: num(r.created_by), createdAt: Number(r.created_at),
    ruleId: num(r.rule_id), episodeKey: r.episode_key ?? null, seriesKey: r.series_key ?? null, season: num(r.season), episode: num(r.episode),
    episodeTitle: r.episode_title ?? null, prePadding: num(r.pre_padding), postPadding: num(r.post_padding), watchedAt: num(r.watched_at),
  };
}

export type RecordingChange = Partial<Pick<Recording, 'channelId' | 'tunerId' | 'programId' | 'title' | 'start' | 'stop' | 'status' | 'error' | 'sizeBytes'
  | 'duration' | 'gaps' | 'episodeTitle' | 'season' | 'episode' | 'watchedAt' | 'ruleId'>>;

/** Columns of the Recording fields a change may set (title and gaps are written apart). */
const CHANGE_COLUMNS: [keyof RecordingChange, string][] = [
  ['channelId', 'channel_id'], ['tunerId', 'tuner_id'], ['programId', 'program_id'], ['start', 'start'], ['stop', 'stop'], ['status', 'status'],
  ['error', 'error'], ['sizeBytes', 'size_bytes'], ['duration', 'duration'], ['episodeTitle', 'episode_title'], ['season', 'season'],
  ['episode', 'episode'], ['watchedAt', 'watched_at'], ['ruleId', 'rule_id'],
];

/** The recordings table. Few rows (a household's recordings): every read is a plain query. */
export class RecordingStore {
  constructor(private readonly knex: Database) {}

  async all(): Promise<Recording[]> {
    return (await this.knex(TABLE).orderBy([{ column: 'start' }, { column: 'id' }])).map(fromRow);
  }

  async get(id: number): Promise<Recording | undefined> {
    const row = await this.knex(TABLE).where({ id }).first();
    return row ? fromRow(row) : undefined;
  }

  async withStatus(...statuses: RecordingStatus[]): Promise<Recording[]> {
    return (await this.knex(TABLE).whereIn('status', statuses).orderBy('start')).map(fromRow);
  }

  /** Inserts the row; `dir` is made from the id once it is known. */
  async insert(r: Omit<Recording, 'id' | 'dir'>, dirOf: (id: number) => string): Promise<Recording> {
    return (await this.insertMany([r], dirOf))[0];
  }

  /**
   * Inserts the rows in one transaction, INSERT_CHUNK to a statement (a rules' evaluation after an
   * import makes hundreds). A statement's ids come in the order of its rows: ascending.
   */
  async insertMany(rows: Omit<Recording, 'id' | 'dir'>[], dirOf: (id: number) => string): Promise<Recording[]> {
    if (!rows.length) return [];
    return this.knex.transaction(async (trx) => {
      const out: Recording[] = [];
      for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
        const chunk = rows.slice(i, i + INSERT_CHUNK);
        const inserted = await trx(TABLE).insert(chunk.map((r) => ({
          channel_id: r.channelId, program_id: r.programId, tuner_id: r.tunerId, title: r.title.slice(0, 512),
          start: r.start, stop: r.stop, status: r.status, error: r.error, size_bytes: r.sizeBytes, duration: r.duration,
          gaps: JSON.stringify(r.gaps), dir: '', created_by: r.createdBy, created_at: r.createdAt,
          rule_id: r.ruleId, episode_key: r.episodeKey, series_key: r.seriesKey, season: r.season, episode: r.episode,
          episode_title: r.episodeTitle, pre_padding: r.prePadding, post_padding: r.postPadding, watched_at: r.watchedAt,
        }))).returning('id');
        const ids = inserted.map((x: any) => Number(typeof x === 'object' ? x.id : x)).sort((a: number, b: number) => a - b);
        const recs = chunk.map((r, j) => ({ ...r, id: ids[j], dir: dirOf(ids[j]) }));
        await trx(TABLE).whereIn('id', ids).update({
          dir: trx.raw(`CASE id ${recs.map(() => 'WHEN ? THEN ?').join(' ')} END`, recs.flatMap((r) => [r.id, r.dir])),
        });
        out.push(...recs);
      }
      return out;
    });
  }

  async update(id: number, change: RecordingChange): Promise<void> {
    const row: Record<string, unknown> = {};
    for (const [field, column] of CHANGE_COLUMNS) if (change[field] !== undefined) row[column] = change[field];
    if (change.title !== undefined) row.title = change.title.slice(0, 512);
    if (change.gaps !== undefined) row.gaps = JSON.stringify(change.gaps);
    if (Object.keys(row).length) await this.knex(TABLE).where({ id }).update(row);
  }

  async ofRule(ruleId: number): Promise<Recording[]> {
    return (await this.knex(TABLE).where({ rule_id: ruleId }).orderBy([{ column: 'start' }, { column: 'id' }])).map(fromRow);
  }

  /** A rule's rows that are gone with it: not yet recorded ones are deleted, recorded ones become one-offs. */
  async forgetRule(ruleId: number): Promise<void> {
    await this.knex(TABLE).where({ rule_id: ruleId }).whereIn('status', ['scheduled', 'conflict', 'skipped']).delete();
    await this.knex(TABLE).where({ rule_id: ruleId }).update({ rule_id: null });
  }

  async remove(id: number): Promise<void> {
    await this.knex(TABLE).where({ id }).delete();
  }
}
