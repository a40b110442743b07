import path from 'node:path';
import { chmod } from 'node:fs/promises';
import knexFactory, { type Knex } from 'knex';
import type { Logger } from 'pino';
import type { AntennaConfig } from '../config/schema.js';
import { WalCheckpointer } from './wal-checkpointer.js';

export const SQLITE_FILE = 'antenna.db';
/**
 * The knex connection's own WAL checkpoints, in the commit that takes the WAL past this many
 * pages (40 MB): during a long run of writes, as a guide import's, the WalCheckpointer waits for
 * a pause and these copy the WAL. SQLite's default, 1,000, meant ~75 checkpoints per 300 MB guide,
 * its pages copied again and again: 20-30 % more SQLite time than 10,000.
 */
const WAL_AUTOCHECKPOINT_PAGES = 10_000;

/**
 * One knex instance for the core and every plugin. SQLite runs in WAL mode with
 * a busy timeout, so the CLI (`antenna user add`, `guide refresh`) can write
 * while a server reads, and its WAL is checkpointed in the background
 * (WalCheckpointer).
 */
export async function openDatabase(config: AntennaConfig, logger?: Logger): Promise<Knex> {
  const log = logger && knexLog(logger);
  if (config.database.client === 'pg') {
    if (!config.database.connection) throw new Error('database.connection: missing, expected a postgres:// URL or connection object when database.client is pg');
    return knexFactory({ client: 'pg', connection: config.database.connection as Knex.StaticConnectionConfig, pool: { min: 0, max: 10 }, log });
  }
  const onCheckpointError = (err: Error) => logger?.warn({ event: 'wal_checkpoint_failed', err: err.message }, 'WAL checkpoint failed');
  const filename = path.join(config.server.dataDir, SQLITE_FILE);
  const knex = knexFactory({
    client: 'sqlite3',
    connection: { filename },
    useNullAsDefault: true,
    log,
    // One connection: node-sqlite3 serialises on it anyway, and one writer avoids SQLITE_BUSY inside the process.
    pool: {
      min: 1,
      max: 1,
      afterCreate(conn: any, done: (err: Error | null, conn: any) => void) {
        // The checkpointer lives as long as this connection: knex closes it with conn.close().
        const checkpointer = new WalCheckpointer(filename, onCheckpointError);
        // 'profile': a statement finished (a commit among them); reads need no checkpoint.
        conn.on('profile', (sql: string) => { if (!/^\s*select/i.test(sql)) checkpointer.written(); });
        const close = conn.close.bind(conn);
        conn.close = (callback: (err: Error | null) => void) => { void checkpointer.close().finally(() => close(callback)); };
        conn.exec(`PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON; PRAGMA busy_timeout=10000;
          PRAGMA wal_autocheckpoint=${WAL_AUTOCHECKPOINT_PAGES};`, (err: Error | null) => {
          if (err) done(err, conn);
          else checkpointer.open().then(() => done(null, conn), (e: Error) => done(e, conn));
        });
      },
    },
  });
  await knex.raw('select 1');
  // The data dir is 0700 already; the file itself is owner-only too, in case it is moved out.
  for (const suffix of ['', '-wal', '-shm']) await chmod(filename + suffix, 0o600).catch(() => {});
  return knex;
}

/**
 * knex's own messages (by default multi-line stack traces on the console), as one log line each:
 * e.g. "Acquire connection error: aborted" for a query a request left behind as the server closed.
 */
function knexLog(logger: Logger): Knex.Logger {
  const line = (message: unknown) => (message instanceof Error ? message.message : String(message)).split('\n')[0];
  return {
    warn: (m) => logger.warn({ event: 'database_warning' }, line(m)),
    error: (m) => logger.error({ event: 'database_error' }, line(m)),
    debug: (m) => logger.debug({ event: 'database_debug' }, line(m)),
    deprecate: (method, alternative) => logger.warn({ event: 'database_warning' }, `${method} is deprecated, use ${alternative}`),
  };
}
