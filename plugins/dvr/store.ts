import type { Database } from 'antenna/sdk';
import type { Gap, Recording, RecordingStatus } from './model.js';

const TABLE = 'dvr_recordings';

function fromRow(r: any): Recording {
  let gaps: Gap[] = [];
  try { gaps = JSON.parse(r.gaps ?? '[]'); } catch { /* a damaged note is not worth failing a listing */ }
  return {
    id: Number(r.id), channelId: Number(r.channel_id), programId: Number(r.program_id), tunerId: r.tuner_id,
    title: r.title, start: Number(r.start), stop: Number(r.stop), status: r.status as RecordingStatus,
    error: r.error ?? null, sizeBytes: Number(r.size_bytes), duration: Number(r.duration), gaps,
    dir: r.dir, createdBy: r.created_by === null || r.created_by === undefined ? null : Number(r.created_by), createdAt: Number(r.created_at),
  };
}

export type RecordingChange = Partial<Pick<Recording, 'programId' | 'title' | 'start' | 'stop' | 'status' | 'error' | 'sizeBytes' | 'duration' | 'gaps'>>;

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
    return this.knex.transaction(async (trx) => {
      const [inserted] = await trx(TABLE).insert({
        channel_id: r.channelId, program_id: r.programId, tuner_id: r.tunerId, title: r.title.slice(0, 512),
        start: r.start, stop: r.stop, status: r.status, error: r.error, size_bytes: r.sizeBytes, duration: r.duration,
        gaps: JSON.stringify(r.gaps), dir: '', created_by: r.createdBy, created_at: r.createdAt,
      }).returning('id');
      const id = Number(typeof inserted === 'object' ? inserted.id : inserted);
      const dir = dirOf(id);
      await trx(TABLE).where({ id }).update({ dir });
      return { ...r, id, dir };
    });
  }

  async update(id: number, change: RecordingChange): Promise<void> {
    const row: Record<string, unknown> = {};
    if (change.programId !== undefined) row.program_id = change.programId;
    if (change.title !== undefined) row.title = change.title.slice(0, 512);
    if (change.start !== undefined) row.start = change.start;
    if (change.stop !== undefined) row.stop = change.stop;
    if (change.status !== undefined) row.status = change.status;
    if (change.error !== undefined) row.error = change.error;
    if (change.sizeBytes !== undefined) row.size_bytes = change.sizeBytes;
    if (change.duration !== undefined) row.duration = change.duration;
    if (change.gaps !== undefined) row.gaps = JSON.stringify(change.gaps);
    if (Object.keys(row).length) await this.knex(TABLE).where({ id }).update(row);
  }

  async remove(id: number): Promise<void> {
    await this.knex(TABLE).where({ id }).delete();
  }
}
