/**
 * SQLite's WAL is copied into the database by SQLite's own checkpoints: a
 * large commit's pages reach the database file while the connection stays
 * open, the WAL does not keep growing, and closing removes it and keeps every
 * row. And the database's logger: knex's own messages come through it as
 * single lines.
 */
import 'reflect-metadata';
import t from 'tap';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import pino from 'pino';
import { loadConfig } from '../../core/config/load.js';
import { openDatabase, SQLITE_FILE } from '../../core/db/database.js';

const size = async (file: string): Promise<number> => (await stat(file).catch(() => ({ size: -1 }))).size;

/** The database with a logger whose lines (parsed) go to `lines`. */
async function open(dir: string, lines: Record<string, unknown>[] = []): Promise<Knex> {
  const config = loadConfig({ env: {}, baseDir: dir, object: { server: { dataDir: dir }, logging: { level: 'silent' } } });
  return openDatabase(config, pino({ level: 'debug' }, { write: (line: string) => { lines.push(JSON.parse(line)); } }));
}

/** ~8 MB in one transaction: 2,000 pages, more than SQLite checkpoints at (1,000 by default). */
async function writeRows(knex: Knex, from: number): Promise<void> {
  await knex.transaction(async (trx) => {
    for (let i = from; i < from + 2000; i++) await trx('blobs').insert({ id: i, body: `${i}:`.padEnd(4000, 'x') });
  });
}

t.test('SQLite checkpoints the WAL into the database', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-wal-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const db = path.join(dir, SQLITE_FILE);
  const lines: Record<string, unknown>[] = [];
  const knex = await open(dir, lines);
  await knex.schema.createTable('blobs', (tb) => { tb.integer('id').primary(); tb.text('body'); });

  await writeRows(knex, 0);
  // No timing asserted: the pages reach the database file (once the writes pause), with no other statement run.
  let bytes = 0;
  for (let waited = 0; waited < 20_000 && bytes < 2000 * 4000; waited += 50) {
    await new Promise((r) => setTimeout(r, 50));
    bytes = await size(db);
  }
  t.ok(bytes >= 2000 * 4000, `the database file holds the rows (${bytes} bytes)`);
  await writeRows(knex, 2000);
  const wal = await size(`${db}-wal`);
  t.ok(wal < 2 * 2000 * 4000, `the WAL is written over once checkpointed, not grown (${wal} bytes for two 8 MB commits)`);

  await knex.destroy();
  t.equal(await size(`${db}-wal`), -1, 'closing removed the WAL');
  t.same(lines, [], 'nothing logged');

  const again = await open(dir);
  t.teardown(() => again.destroy());
  const [{ n, total }] = await again('blobs').count({ n: '*' }).sum({ total: 'id' });
  t.equal(Number(n), 4000);
  t.equal(Number(total), (3999 * 4000) / 2);
});

t.test('closing right after a large commit keeps every row', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-wal-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const knex = await open(dir);
  await knex.schema.createTable('blobs', (tb) => { tb.integer('id').primary(); tb.text('body'); });
  await writeRows(knex, 0);
  await knex.destroy();
  const again = await open(dir);
  t.teardown(() => again.destroy());
  t.equal(Number((await again('blobs').count({ n: '*' }))[0].n), 2000);
  t.equal((await again.raw('PRAGMA integrity_check'))[0].integrity_check, 'ok');
});

t.test("knex's own messages are log lines, not stack traces on the console", async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-wal-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const lines: Record<string, unknown>[] = [];
  const knex = await open(dir, lines);
  // The one connection held by a transaction: a query waits for it, and closing the pool aborts it
  // (what a request left behind does as the server closes).
  const trx = await knex.transaction();
  const waiting = knex.raw('select 1').then(() => 'ran', (err: Error) => err.message);
  await new Promise((r) => setTimeout(r, 50));
  const closing = knex.destroy();
  await trx.rollback().catch(() => {});
  await closing;
  t.equal(await waiting, 'aborted');
  const warning = lines.find((l) => l.event === 'database_warning');
  t.match(warning, { level: 40, msg: /^Acquire connection error: Error: aborted$/ }, 'one line, without the stack');
});
