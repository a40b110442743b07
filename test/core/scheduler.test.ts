import t from 'tap';
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createTestHost } from '../../sdk/testing.js';
import { freshDatabase } from '../helpers/cluster.js';

interface Listener { connect(): Promise<void>; query(sql: string): Promise<unknown>; end(): Promise<void>; on(event: 'notification', fn: (n: { payload?: string }) => void): void }
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { Client: PgClient } = require('pg') as { Client: new (o: { connectionString: string }) => Listener };

const SDK = path.resolve(__dirname, '../../sdk/index.js');

/** A plugin whose scheduler handler records each run in globalThis.__runs. */
async function ticker(dir: string): Promise<string> {
  const p = path.join(dir, 'ticker');
  await mkdir(p, { recursive: true });
  await writeFile(path.join(p, 'index.js'), `
    const sdk = require(${JSON.stringify(SDK)});
    module.exports = sdk.definePlugin({ id: 'ticker', version: '1.0.0', host: '^1',
      register(env) {
        env.registerInit({ deps: { scheduler: sdk.coreServices.scheduler }, async init({ scheduler }) {
          globalThis.__scheduler = scheduler;
          scheduler.handle('tick', async (task) => { (globalThis.__runs ??= []).push(task.id + ':' + JSON.stringify(task.payload)); });
        } });
      } });`);
  return p;
}

/** A test host running the ticker plugin, with no runs recorded yet; globalThis is returned for its __runs and __scheduler. */
async function tickerHost(t: { teardown(fn: () => unknown): void }): Promise<any> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-sched-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const plugin = await ticker(dir);
  const g = globalThis as any;
  g.__runs = [];
  const host = await createTestHost({ plugins: { [plugin]: {} } });
  t.teardown(() => host.close());
  return g;
}

async function until(check: () => boolean, ms = 10_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (!check() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  return check();
}

t.test('scheduled tasks are persisted and re-armed at start', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-sched-'));
  const dataDir = path.join(dir, 'data');
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const plugin = await ticker(dir);
  const g = globalThis as any;
  g.__runs = [];

  let host = await createTestHost({ dataDir, plugins: { [plugin]: {} } });
  await g.__scheduler.schedule({ id: 'later', kind: 'tick', at: Date.now() + 1500, payload: { n: 1 } });
  await g.__scheduler.schedule({ id: 'overdue', kind: 'tick', at: Date.now() + 60_000, payload: { n: 2 } });
  await g.__scheduler.schedule({ id: 'gone', kind: 'tick', at: Date.now() + 60_000 });
  t.ok(await g.__scheduler.cancel('gone'), 'cancel reports a removed task');
  t.same((await g.__scheduler.list('tick')).map((x: any) => x.id).sort(), ['later', 'overdue']);
  await host.close();
  t.same(g.__runs, [], 'nothing ran before the restart');

  // While "down", make one task overdue, as if its time passed while the server was off.
  host = await createTestHost({ dataDir, plugins: { [plugin]: {} } });
  t.teardown(() => host.close());
  await host.host.knex('scheduled_tasks').where({ id: 'overdue' }).update({ at: Date.now() - 1000 });
  await host.close();
  host = await createTestHost({ dataDir, plugins: { [plugin]: {} } });
  t.ok(await until(() => g.__runs.includes('overdue:{"n":2}')), 'a task whose time passed while down runs at start');
  t.ok(await until(() => g.__runs.includes('later:{"n":1}')), 'a future task runs at its time after a restart');
  t.notOk(g.__runs.some((r: string) => r.startsWith('gone')), 'a cancelled task never runs');
  for (let i = 0; i < 100 && (await g.__scheduler.list('tick')).length; i++) await new Promise((r) => setTimeout(r, 20));
  t.same(await g.__scheduler.list('tick'), [], 'one-shot tasks are removed once run');
});

t.test('repeating tasks are re-armed after each run', async (t) => {
  const g = await tickerHost(t);
  await g.__scheduler.schedule({ id: 'every', kind: 'tick', at: Date.now(), everyMs: 200 });
  t.ok(await until(() => g.__runs.filter((r: string) => r.startsWith('every')).length >= 3), 'ran at least three times');
  const [task] = await g.__scheduler.list('tick');
  t.equal(task.id, 'every', 'still scheduled');
  t.ok(task.at > Date.now() - 1000, 'next time moved forward');
});

t.test('scheduleMany: many tasks stored and armed at once; an id given twice keeps its last', async (t) => {
  const g = await tickerHost(t);
  const later = Date.now() + 3_600_000;
  const tasks = Array.from({ length: 1200 }, (_, i) => ({ id: `many-${i}`, kind: 'tick', at: later + i, payload: { i } }));
  await g.__scheduler.scheduleMany([...tasks, { id: 'many-7', kind: 'tick', at: Date.now(), payload: { again: true } }, { id: 'now', kind: 'tick', at: Date.now() }]);
  t.ok(await until(() => g.__runs.includes('now:undefined')), 'armed: a task due runs');
  t.ok(await until(() => g.__runs.includes('many-7:{"again":true}')), 'the later entry of an id is the one armed');
  const stored = (await g.__scheduler.list('tick')).filter((x: any) => x.id !== 'now' && x.id !== 'many-7'); // those two ran (and go)
  t.equal(stored.length, 1199, 'every other task, each once (three statements)');
  t.strictSame(stored.find((x: any) => x.id === 'many-3'), { id: 'many-3', kind: 'tick', at: later + 3, everyMs: undefined, payload: { i: 3 } });
  t.notOk(g.__runs.some((r: string) => r.startsWith('many-') && r !== 'many-7:{"again":true}'), 'the others wait for their time');
  await g.__scheduler.scheduleMany([]);
  await t.rejects(g.__scheduler.scheduleMany([{ id: 'bad', kind: 'tick', at: Number.NaN }]), /task bad has no valid time/);
});

t.test('cluster: a batch is one message, and another node arms every task of it', { skip: !process.env.ANTENNA_TEST_PG && 'needs PostgreSQL: set ANTENNA_TEST_PG' }, async (t) => {
  const db = await freshDatabase(process.env.ANTENNA_TEST_PG!);
  t.teardown(() => db.drop());
  // A long lease: the nodes' periodic re-read of the table (every lease time) never happens during the test, only messages count.
  const node = (nodeId: string) => createTestHost({ config: { database: { client: 'pg', connection: db.url }, cluster: { nodeId, leaseSeconds: 600 } } });
  const a = await node('a');
  t.teardown(() => a.close());
  const b = await node('b');
  t.teardown(() => b.close());
  const ran: string[] = [];
  b.host.scheduler.handle('tick', async (task) => { ran.push(task.id); }); // A has no handler: only B can run them

  const listener = new PgClient({ connectionString: db.url });
  await listener.connect();
  t.teardown(() => listener.end());
  const heard: string[] = [];
  listener.on('notification', (n) => heard.push(n.payload ?? ''));
  await listener.query('LISTEN antenna_cluster');
  /** Every message sent before it has arrived once our own marker has (NOTIFYs arrive in commit order). */
  const settled = async () => {
    const marker = `test.marker listener ${heard.length}`;
    await listener.query(`NOTIFY antenna_cluster, '${marker}'`);
    await until(() => heard.includes(marker));
  };
  const fromA = () => heard.filter((m) => m.startsWith('scheduler a '));

  const at = Date.now() + 500;
  await a.host.scheduler.scheduleMany(Array.from({ length: 300 }, (_, i) => ({ id: `batch-${i}`, kind: 'tick', at: at + i })));
  t.ok(await until(() => ran.length === 300, 30_000), `B ran every task of A's batch (${ran.length})`);
  await settled();
  t.equal(fromA().length, 1, 'A sent one message for the batch of 300');

  await a.host.scheduler.schedule({ id: 'single', kind: 'tick', at: Date.now() });
  t.ok(await until(() => ran.includes('single'), 30_000), 'B ran a single task A scheduled');
  await settled();
  t.strictSame(fromA().slice(1), ['scheduler a single'], 'a single task is one message naming it');
  t.equal(new Set(ran).size, ran.length, 'each task ran once');
});
