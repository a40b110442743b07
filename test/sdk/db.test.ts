/**
 * insertValues stores, on SQLite, exactly what binding the same values one row
 * at a time stores (its JSON path hands rows over as one text); RowInserter
 * gathers rows added a few at a time into statements; sqliteText's bytes, cast
 * to TEXT, are stored as the string bound would be.
 */
import t from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import knexFactory from 'knex';
import { insertRows, insertValues, RowInserter, sqliteText } from '../../sdk/db.js';
import { createTestHost } from '../../sdk/testing.js';

t.test('insertValues on SQLite stores what binding stores', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-db-'));
  const knex = knexFactory({ client: 'sqlite3', connection: { filename: path.join(dir, 'test.db') }, useNullAsDefault: true, pool: { min: 1, max: 1 } });
  t.teardown(async () => { await knex.destroy(); await rm(dir, { recursive: true, force: true }); });
  for (const table of ['bound', 'json']) {
    await knex.schema.createTable(table, (tb) => {
      tb.increments('id');
      tb.text('t').nullable();
      tb.string('s', 100).nullable();
      tb.bigInteger('n').nullable();
      tb.boolean('b').nullable();
      tb.text('j').nullable();
    });
  }
  const rows: unknown[][] = [
    ['plain', 'a', 1, true, '{"url":"http://x/?a=1&b=\\"q\\"","headers":{}}'],
    ['quotes \' " \\ and\nnewlines\ttabs', 'Ωμέγα', -7, false, '["News","Новости"]'],
    ['emoji 📺 and \u0000 NUL', '', 2 ** 31, null, null],
    [null, null, 1_700_000_000_123, true, '{}'],
    ['4294967296', '9007199254740991', 9_007_199_254_740_991, false, '[]'],
    [String(2 ** 40), 'x', 0, true, 'not json {'],
  ];
  const columns = ['t', 's', 'n', 'b', 'j'];
  for (const r of rows) await knex('bound').insert(Object.fromEntries(columns.map((c, i) => [c, r[i]])));
  await insertValues(knex, 'json', columns, rows);
  const read = (table: string) => knex.raw(`SELECT t, typeof(t) AS tt, s, typeof(s) AS ts, n, typeof(n) AS tn, b, typeof(b) AS tb, j, typeof(j) AS tj FROM ${table} ORDER BY id`);
  t.strictSame(await read('json'), await read('bound'), 'values and storage classes');

  // A wide integer in a TEXT column is stored as binding does (a REAL, written n.0).
  await insertRows(knex, 'json', [{ t: 2 ** 40, n: 2 ** 40 }]);
  await knex('bound').insert({ t: 2 ** 40, n: 2 ** 40 });
  t.strictSame((await read('json')).at(-1), (await read('bound')).at(-1), 'a safe integer beyond 32 bits');
});

t.test('sqliteText bound as CAST(? AS TEXT) stores what binding the string stores', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-db-'));
  const knex = knexFactory({ client: 'sqlite3', connection: { filename: path.join(dir, 'test.db') }, useNullAsDefault: true, pool: { min: 1, max: 1 } });
  t.teardown(async () => { await knex.destroy(); await rm(dir, { recursive: true, force: true }); });
  await knex.raw('CREATE TABLE texts (id INTEGER PRIMARY KEY, bound TEXT, cast_bytes TEXT)');
  const texts = [
    '', 'ascii only', 'Latin-1 ñ é ß', 'Канал 1 HD', '[["Ωμέγα","📺 emoji"]]', 'NUL \u0000 inside', '\u0000',
    'lone surrogates \ud800 and \udfff', '\udc00\ud83d', 'x'.repeat(300_000) + 'Ж', // beyond the first room it allots
    'Ж'.repeat(1_500_000), // past the largest room it keeps (4 MB): encoded on its own
  ];
  for (const text of texts) await knex.raw('INSERT INTO texts (bound, cast_bytes) VALUES (?, CAST(? AS TEXT))', [text, sqliteText(text)]);
  const rows = await knex.raw('SELECT typeof(bound) AS tb, typeof(cast_bytes) AS tc, hex(bound) = hex(cast_bytes) AS same, length(cast_bytes) AS n, cast_bytes FROM texts ORDER BY id') as
    { tb: string; tc: string; same: number; n: number; cast_bytes: string }[];
  t.equal(rows.length, texts.length);
  rows.forEach((r, i) => {
    t.strictSame([r.tb, r.tc, r.same], ['text', 'text', 1], `text ${i}: the same bytes, stored as text`);
    if (!/[\ud800-\udfff]/.test(texts[i]!.replace(/[\ud800-\udbff][\udc00-\udfff]/g, ''))) t.equal(r.cast_bytes, texts[i], `text ${i} reads back as written`);
  });
  // The room is written again by the next call: what a call returned stays as it was.
  const first = sqliteText('first text');
  sqliteText('second, longer text');
  t.equal(first.toString('utf8'), 'first text');
});

t.test('RowInserter: rows added a few at a time are stored in order, in statements of up to rowsPerStatement', async (t) => {
  // On the test host's database: SQLite, or PostgreSQL under test:pg (the VALUES path).
  const host = await createTestHost();
  t.teardown(() => host.close());
  const knex = host.host.knex;
  await knex.schema.createTable('inserted', (tb) => {
    tb.increments('id');
    tb.text('t').notNullable();
    tb.bigInteger('n').nullable();
    tb.double('f').nullable();
  });
  const statements: string[] = [];
  const onQuery = (q: { sql: string }) => { if (/^insert/i.test(q.sql)) statements.push(q.sql); };
  knex.on('query', onQuery);
  t.teardown(() => { knex.off('query', onQuery); });

  const inserter = new RowInserter(knex, 'inserted', ['t', 'n', 'f'], { rowsPerStatement: 20 });
  const expected: unknown[][] = [];
  for (let b = 0; b < 10; b++) {
    const batch: unknown[][] = [];
    for (let k = 0; k < 7; k++) {
      const i = b * 7 + k;
      // Batch 4 holds a fraction: JSON could round it otherwise than binding, so it goes by VALUES.
      batch.push([`row ${i} "quoted" Ωμέγα`, i % 3 ? 2 ** 40 + i : null, b === 4 && k === 3 ? 0.1 + i : null]);
    }
    expected.push(...batch);
    await inserter.add(batch);
  }
  await inserter.flush();
  const stored = await knex('inserted').orderBy('id').select('t', 'n', 'f');
  t.strictSame(stored.map((r) => [r.t, r.n === null ? null : Number(r.n), r.f === null ? null : Number(r.f)]), expected, 'every row, in the order added');
  t.ok(statements.length >= 4 && statements.length <= 7, `70 rows in a few statements, not one per add() (${statements.length})`);

  // Long rows: statements of several MB, pieces larger than the bytes RowInserter first sets aside.
  const long = new RowInserter(knex, 'inserted', ['t', 'n', 'f'], { rowsPerStatement: 40 });
  const longRows: unknown[][] = [];
  for (let b = 0; b < 6; b++) {
    const batch = Array.from({ length: 15 }, (_, k) => [`${b}.${k} ` + 'Ж📺"\\'.repeat(4000 + b * 1000 + k), b * 100 + k, null]);
    longRows.push(...batch);
    await long.add(batch);
  }
  await long.flush();
  const storedLong = await knex('inserted').where('id', '>', 70).orderBy('id').select('t', 'n');
  t.ok(storedLong.length === longRows.length && storedLong.every((r, i) => r.t === longRows[i]![0] && Number(r.n) === longRows[i]![1]), 'long rows, in order, as written');

  // A statement that fails rejects flush() (or a later add()): nothing is lost silently.
  const failing = new RowInserter(knex, 'inserted', ['t', 'n', 'f'], { rowsPerStatement: 5 });
  await failing.add([['fine', 1, null]]);
  await failing.add([[null, 2, null]]); // t is NOT NULL
  await t.rejects(failing.flush(), 'the failed insert surfaces');
});
