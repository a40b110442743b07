/**
 * insertValues stores, on SQLite, exactly what binding the same values one row
 * at a time stores (its JSON path hands rows over as one text).
 */
import t from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import knexFactory from 'knex';
import { insertRows, insertValues } from '../../sdk/db.js';

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
