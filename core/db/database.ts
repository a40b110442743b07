import path from 'node:path';
import { chmod } from 'node:fs/promises';
import knexFactory, { type Knex } from 'knex';
import type { Logger } from 'pino';
import type { AntennaConfig } from '../config/schema.js';

export const SQLITE_FILE = 'antenna.db';

/**
 * One knex instance for the core and every plugin. SQLite runs in WAL mode with
 * a busy timeout, so the CLI (`antenna user add`, `guide refresh`) can write
 * while a server reads; SQLite checkpoints its WAL itself.
 */
export async function openDatabase(config: AntennaConfig, logger?: Logger): Promise<Knex> {
  const log = logger && knexLog(logger);
  if (config.database.client === 'pg') {
    if (!config.database.connection) throw new Error('database.connection: missing, expected a postgres:// URL or connection object when database.client is pg');
    return knexFactory({ client: 'pg', connection: config.database.connection as Knex.StaticConnectionConfig, pool: { min: 0, max: 10 }, log });
  }
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
        conn.exec('PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON; PRAGMA busy_timeout=10000;', (err: Error | null) => done(err, conn));
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
