import sqlite3 from 'sqlite3';

/** A checkpoint runs once no statement has written for this long… */
const QUIET_MS = 1000;
/** …or this long after the first write it has not copied, writes or not. */
const MAX_DELAY_MS = 30_000;

/**
 * Copies SQLite's write-ahead log into the database from a connection of its
 * own, off every commit's path. By default SQLite does it inside the commit
 * that takes the WAL past 1,000 pages: the commit of a 100,000-channel playlist
 * waited 130-150 ms for its 28 MB to be copied. The knex connection's own
 * checkpoints now start only past 10,000 pages (40 MB, what a guide import used
 * to set while it ran), and this runs a PASSIVE checkpoint, which neither waits
 * for nor blocks readers and writers, once the writes pause (QUIET_MS) or have
 * gone on for MAX_DELAY_MS. Not after every commit: each checkpoint copies every
 * page changed since the one before, and during a guide import, checkpoints
 * every second or every 10 s copied its index pages again and again (1-8 s more
 * CPU per import in interleaved runs, on a noisy machine). (Each process that
 * writes has its own: the CLI's `guide refresh` too.)
 */
export class WalCheckpointer {
  private db?: sqlite3.Database;
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  /** When the first write not yet checkpointed was made. */
  private firstWrite?: number;
  private closed = false;

  constructor(private readonly filename: string, private readonly onError: (err: Error) => void) {}

  /** Opens the connection; until then (and after close) writes are only noted. */
  async open(): Promise<void> {
    this.db = await new Promise<sqlite3.Database>((resolve, reject) => {
      const db = new sqlite3.Database(this.filename, sqlite3.OPEN_READWRITE, (err) => (err ? reject(err) : resolve(db)));
    });
    this.schedule();
  }

  /** A statement that may have written finished on the main connection. */
  written(): void {
    this.firstWrite ??= Date.now();
    this.schedule();
  }

  private schedule(): void {
    if (this.closed || !this.db || this.running || this.firstWrite === undefined) return;
    const now = Date.now();
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.running = this.checkpoint().finally(() => {
        this.running = undefined;
        this.schedule();
      });
    }, Math.max(0, Math.min(now + QUIET_MS, this.firstWrite + MAX_DELAY_MS) - now));
    this.timer.unref();
  }

  private checkpoint(): Promise<void> {
    this.firstWrite = undefined;
    return new Promise((resolve) => {
      this.db!.get('PRAGMA wal_checkpoint(PASSIVE)', (err: Error | null, row?: { busy: number; log: number; checkpointed: number }) => {
        // Frames a reader still needed stay in the WAL: again later. (BUSY: another process's checkpoint runs.)
        if (err && !/SQLITE_BUSY/.test(err.message)) this.onError(err);
        else if (err || (row && row.log > row.checkpointed)) this.firstWrite ??= Date.now();
        resolve();
      });
    });
  }

  /** Stops, after a checkpoint in progress. (The last connection to close checkpoints what is left and removes the WAL.) */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
    const db = this.db;
    this.db = undefined;
    if (db) await new Promise<void>((resolve) => db.close(() => resolve()));
  }
}
