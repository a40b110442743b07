/**
 * Changes made on one node seen on the others (ANTENNA_TEST_PG; skipped without it),
 * two nodes on one PostgreSQL database: a channel renamed through A is listed under
 * its new name by B (B is told over LISTEN/NOTIFY; the latencies are reported, the
 * 1 s figure is the bench's); a series rule created through A is listed by B, and
 * while A evaluates it B evaluates the rules too (a one-off recording created there):
 * each airing is scheduled once.
 */
import t from 'tap';
import { pgQuery, testCluster, type NodeProcess } from '../../helpers/cluster.js';
import { waitFor } from '../../helpers/wait.js';
import { m3u, write, xmltv, xt } from '../live-tv/fixtures.js';

const PG = process.env.ANTENNA_TEST_PG;
t.setTimeout(90_000);

t.test('channel edits and series rules across two nodes', { skip: !PG && 'needs PostgreSQL: set ANTENNA_TEST_PG' }, async (t) => {
  const cluster = await testCluster(t, { pg: PG!, prefix: 'antenna-cluster-invalidation-', leaseSeconds: 3 });
  const { dir } = cluster;
  // Nothing is tuned: the stream URLs are never opened.
  await write(dir, 'tv.m3u', m3u([
    { name: 'One', tvgId: 'one', chno: '1', url: 'http://127.0.0.1:9/one.ts' },
    { name: 'Two', tvgId: 'two', chno: '2', url: 'http://127.0.0.1:9/two.ts' },
  ]));
  // Six airings of a series on channel 1 and a film on channel 2, from an hour ahead: all scheduled, none starts.
  const first = Math.floor(Date.now() / 60_000) * 60_000 + 3_600_000;
  const at = (ms: number) => xt(new Date(ms).toISOString());
  await write(dir, 'guide.xml', xmltv([{ id: 'one', names: ['One'] }, { id: 'two', names: ['Two'] }], [
    ...Array.from({ length: 6 }, (_, i) => ({ channel: 'one', start: at(first + i * 1_800_000), stop: at(first + (i + 1) * 1_800_000), title: 'Acme Mystery' })),
    { channel: 'two', start: at(first), stop: at(first + 7_200_000), title: 'A film' },
  ]));
  const plugins = [
    '  live-tv: { initialImport: await }',
    '  m3u-tuner: { sources: [ { name: Main, url: ./tv.m3u, maxStreams: 2 } ] }',
    '  xmltv-guide: { sources: [ { url: ./guide.xml } ], maxAge: 100000d }',
    '  dvr: { path: ./recordings, prePadding: 0s, postPadding: 0s }',
  ];
  const [a, b] = await cluster.start(['a', 'b'], { plugins }) as [NodeProcess, NodeProcess];
  const { why } = cluster;
  const token = await cluster.adminToken();
  const call = async (node: NodeProcess, method: string, url: string, body?: unknown): Promise<{ status: number; json: any }> => {
    const res = await fetch(node.base + url, {
      method, headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, json: await res.json() };
  };
  const names = async (node: NodeProcess) => ((await call(node, 'GET', '/channels')).json.channels as { id: number; name: string }[]);
  const one = (await names(a)).find((c) => c.name === 'One')!.id;

  t.test('a channel renamed through A is listed renamed by B', async (t) => {
    const latencies: number[] = [];
    for (let i = 1; i <= 5; i++) {
      const name = `One, take ${i}`;
      await names(b); // B has just looked: without a message it would wait out its version check
      const patched = await call(a, 'PATCH', `/api/admin/channels/${one}`, { name });
      t.equal(patched.status, 200, patched.status === 200 ? 'renamed through A' : JSON.stringify(patched.json));
      const since = Date.now();
      const seen = await waitFor(async () => (await names(b)).some((c) => c.id === one && c.name === name), 5_000, 20);
      latencies.push(Date.now() - since);
      t.ok(seen, why(!!seen, `B lists "${name}"`));
    }
    t.comment(`seen on B after ${latencies.join(', ')} ms`);
  });

  t.test('a series rule created through A: listed by B, each airing scheduled once', async (t) => {
    const two = ((await call(b, 'GET', '/programs')).json.channels as any[]).find((c) => c.name === 'Two');
    // Both nodes plan at once: A for its new rule, B for a one-off recording (which evaluates the rules too).
    const [rule, oneOff] = await Promise.all([
      call(a, 'POST', '/api/dvr/rules', { title: 'Acme Mystery' }),
      call(b, 'POST', '/recordings', { channel_id: two.id, program_id: two.programs[0].id }),
    ]);
    t.equal(rule.status, 201, rule.status === 201 ? 'rule created through A' : JSON.stringify(rule.json));
    t.equal(oneOff.status, 201, oneOff.status === 201 ? 'one-off created through B' : JSON.stringify(oneOff.json));
    const listed = (await call(b, 'GET', '/api/dvr/rules')).json;
    t.ok(JSON.stringify(listed).includes('Acme Mystery'), `B lists the rule (${JSON.stringify(listed).slice(0, 200)})`);
    // B evaluates again, now that the rule is there: a second one-off.
    const again = await call(b, 'PATCH', `/api/dvr/rules/${rule.json.id}`, { priority: 1 });
    t.equal(again.status, 200, again.status === 200 ? 'rule changed through B' : JSON.stringify(again.json));
    const rows = await pgQuery(cluster.databaseUrl, 'SELECT channel_id, program_id, count(*)::int AS n FROM dvr_recordings WHERE rule_id IS NOT NULL GROUP BY channel_id, program_id');
    t.equal(rows.length, 6, `six airings scheduled (${JSON.stringify(rows)})`);
    t.ok(rows.every((r) => r.n === 1), 'one recording row per airing');
  });
});
