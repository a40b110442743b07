/**
 * The continue_watching table: one user's entries read at once, and batches of
 * changes written in one transaction (the write-behind of entries.ts).
 */
import type { ContentType, Database, Logger } from 'antenna/sdk';

export interface Entry {
  videoId: string;
  libraryId: number;
  contentType: ContentType;
  title: string;
  /** Seconds. */
  position: number;
  /** Seconds; 0 when neither the player nor the catalog knows it. */
  duration: number;
  watched: boolean;
  /** ms since epoch. */
  updatedAt: number;
}

/** A change to write: the entry as it is now, or null when it was removed. */
export interface Change { userId: number; videoId: string; entry: Entry | null }

interface Row {
  user_id: number; video_id: string; library_id: number; content_type: string; title: string;
  position: number; duration: number; watched: boolean | number; updated_at: number | string;
}

const TABLE = 'continue_watching';
// 9 columns a row: 4,500 bound variables, under SQLite's 32,766 (3.32+) and PostgreSQL's 65,535.
const ROWS_PER_STATEMENT = 500;

const toRow = (userId: number, e: Entry): Row => ({
  user_id: userId, video_id: e.videoId, library_id: e.libraryId, content_type: e.contentType, title: e.title,
  position: e.position, duration: e.duration, watched: e.watched, updated_at: e.updatedAt,
});

const fromRow = (r: Row): Entry => ({
  videoId: r.video_id, libraryId: Number(r.library_id), contentType: r.content_type as ContentType, title: r.title,
  // PostgreSQL hands bigints back as strings, SQLite booleans as 0/1.
  position: Number(r.position), duration: Number(r.duration), watched: Boolean(r.watched), updatedAt: Number(r.updated_at),
});

export class EntryStore {
  constructor(private readonly knex: Database, private readonly log: Logger) {}

  async load(userId: number): Promise<Entry[]> {
    return (await this.knex<Row>(TABLE).where({ user_id: userId })).map(fromRow);
  }

  /**
   * Writes the changes at once. When that fails, each change is
   * tried on its own so one bad row (its user deleted meanwhile) cannot hold
   * back the others; those that still fail are logged and dropped — memory
   * keeps serving them, and the next change of the entry writes it again.
   */
  async write(changes: Change[]): Promise<void> {
    try {
      await this.apply(changes);
    } catch (batchErr) {
      let failed = 0;
      for (const change of changes) {
        try {
          await this.apply([change]);
        } catch (err) {
          failed++;
          if (failed === 1) this.log.error({ err, batchErr, user: change.userId, videoId: change.videoId }, 'continue-watching entry not saved');
        }
      }
      if (failed > 1) this.log.error({ failed, of: changes.length }, 'continue-watching entries not saved');
    }
  }

  /**
   * The usual batch (progress of up to ROWS_PER_STATEMENT entries) is one
   * statement, atomic by itself: it holds the database's one connection for a
   * single round trip. Larger batches and removals share a transaction.
   */
  private async apply(changes: Change[]): Promise<void> {
    const removed = changes.filter((c) => !c.entry);
    const kept = changes.filter((c) => c.entry).map((c) => toRow(c.userId, c.entry!));
    const upsert = (db: Database, rows: Row[]) => db(TABLE).insert(rows).onConflict(['user_id', 'video_id']).merge();
    if (!removed.length && kept.length <= ROWS_PER_STATEMENT) {
      if (kept.length) await upsert(this.knex, kept);
      return;
    }
    await this.knex.transaction(async (trx) => {
      for (const c of removed) await trx(TABLE).where({ user_id: c.userId, video_id: c.videoId }).delete();
      for (let i = 0; i < kept.length; i += ROWS_PER_STATEMENT) await upsert(trx, kept.slice(i, i + ROWS_PER_STATEMENT));
    });
  }
}
