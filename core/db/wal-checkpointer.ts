import sqlite3 from 'sqlite3';

/** At most one checkpoint per this many ms: a long import's WAL is copied once a second, not after each commit. */
const MIN_GAP_MS = 1000;

/**
 * Copies SQLite's write-ahead log into the database from a connection of its
 * own, off every commit's path. By default SQLite does it inside the commit
 * that takes the WAL past 1,000 pages: the commit of a 100,000-channel playlist
 * waited 130-150 ms for its 28 MB to be copied, and a guide import's commits
 * waited for theirs (with the next statement held back behind each). The knex
 * connection's own checkpoints start only past a far larger WAL (a backstop);
 * this runs a PASSIVE checkpoint, which neither waits for nor blocks readers and
 * writers, soon after each write, at most once per MIN_GAP_MS. (In the process
 * that writes last: the CLI's `guide refresh` has its own.)
 */
export class WalCheckpointer {
  private db?: sqlite3.Database;
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private dirty = false;
  private lastRun = 0;
  private closed = false;

  constructor(private readonly filename: string, private readonly onError: (err: Error) => void) {}

  /** Opens the connection; until then (and after close) writes are only noted. */
  async open(): Promise<void> {
    this.db = await new Promise<sqlite3.Database>((resolve, reject) => {
      const db = new sqlite3.Database(this.filename, sqlite3.OPEN_READWRITE, (err) => (err ? reject(err) : resolve(db)));
    });
    if (this.dirty) this.schedule();
  }

  /** A statement that may have written finished on the main connection. */
  written(): void {
    this.dirty = true;
    this.schedule();
  }

  private schedule(): void {
    if (this.closed || !this.db || this.timer || this.running) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.running = this.checkpoint().finally(() => {
        this.running = undefined;
        if (this.dirty) this.schedule();
      });
    }, Math.max(0, this.lastRun + MIN_GAP_MS - Date.now()));
    this.timer.unref();
  }

  private checkpoint(): Promise<void> {
    this.dirty = false;
    this.lastRun = Date.now();
    return new Promise((resolve) => {
      this.db!.get('PRAGMA wal_checkpoint(PASSIVE)', (err: Error | null, row?: { busy: number; log: number; checkpointed: number }) => {
        // Frames a reader still needed stay in the WAL: try again later. (BUSY: another process's checkpoint runs.)
        if (err && !/SQLITE_BUSY/.test(err.message)) this.onError(err);
        else if (err || (row && row.log > row.checkpointed)) this.dirty = true;
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
