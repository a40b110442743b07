/**
 * Three `antenna serve` processes on one PostgreSQL database (ANTENNA_TEST_PG;
 * skipped without it): a token from one node works on the others, a logout,
 * a password change and a deactivation on one are refused on the others within
 * 1 s, GET /api/admin/nodes lists all three, and a guide refresh interval runs
 * one import in the whole cluster, not one per node; three nodes started
 * together import the playlist and guide once and scan the library once, and a
 * node restarted within the refresh and scan intervals does neither again.
 */
import t from 'tap';
import path from 'node:path';
import { m3u, serve, xmltv } from '../plugins/live-tv/fixtures.js';
import { CLUSTER_ADMIN_PASSWORD, login, testCluster, type NodeProcess } from '../helpers/cluster.js';
import { waitFor } from '../helpers/wait.js';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { CLI } from '../helpers/repo.js';
import { cleanEnv } from '../helpers/env.js';
import { createTestHost } from '../../sdk/testing.js';
import { tmpDir } from '../helpers/http.js';
import { clip } from '../plugins/vod/fixtures.js';
import { readFileSync } from 'node:fs';

const PG = process.env.ANTENNA_TEST_PG;
t.setTimeout(180_000);

t.test('a single node: GET /api/admin/nodes lists itself; cluster on SQLite stops start-up', async (t) => {
  const host = await createTestHost();
  t.teardown(() => host.close());
  const res = await host.inject({ method: 'GET', url: '/api/admin/nodes', headers: host.authHeaders });
  t.equal(res.statusCode, 200);
  const body = res.json();
  t.equal(body.cluster, false);
  t.equal(body.nodes.length, 1);
  t.match(body.nodes[0], { id: body.node, alive: true, leases: [], load: { cpus: Number } });
  t.equal((await host.inject({ method: 'GET', url: '/api/admin/nodes' })).statusCode, 401);
  const dataDir = await tmpDir(t, 'antenna-cluster-sqlite-');
  await t.rejects(createTestHost({ dataDir, config: { database: { client: 'sqlite3' }, cluster: { nodeId: 'a' } } }), /cluster: .*database\.client is sqlite3, expected pg/);
  await t.rejects(createTestHost({ dataDir, config: { database: { client: 'sqlite3' }, cluster: { leaseSeconds: 0 } } }), /cluster\.leaseSeconds: got 0/);
});

t.test('three nodes on one database', { skip: !PG && 'needs PostgreSQL: set ANTENNA_TEST_PG' }, async (t) => {
  const upstream = await serve(t);
  const guideTimes: number[] = [];
  const guide = xmltv([{ id: 'one', names: ['One'] }], []);
  upstream.routes.set('/guide.xml', (_req, res) => {
    guideTimes.push(Date.now());
    res.writeHead(200, { 'content-type': 'application/xml' }).end(guide);
  });
  const REFRESH_S = 2;
  const plugins = [
    '  live-tv: { initialImport: skip }',
    `  xmltv-guide: { sources: [ { url: "${upstream.base}/guide.xml", refresh: ${REFRESH_S}s } ], maxAge: 100000d }`,
  ];
  const cluster = await testCluster(t, { pg: PG!, prefix: 'antenna-cluster-', leaseSeconds: 3, plugins });
  // The first node makes the tables; the others start together (they wait for each other's migrations).
  const nodes = await cluster.start(['a', 'b', 'c']);
  const [a, b, c] = nodes as [NodeProcess, NodeProcess, NodeProcess];
  const why = (ok: boolean, what: string) => cluster.why(ok, what, 15);

  const call = async (node: NodeProcess, method: string, url: string, token: string, body?: unknown) => {
    const res = await fetch(node.base + url, {
      method, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  /** Polls GET /me on `node` until the token is refused (401, or 403 for an inactive user), for 1 s at most; whether it was. */
  const refusedWithin1s = async (node: NodeProcess, token: string) => {
    const deadline = Date.now() + 1000;
    for (;;) {
      if ([401, 403].includes((await call(node, 'GET', '/me', token)).status)) return true;
      if (Date.now() > deadline) return false;
      await new Promise((r) => setTimeout(r, 25));
    }
  };

  const admin = await cluster.adminToken();

  t.test('one admin, one secret: a token from A works on B and C', async (t) => {
    for (const node of [b, c]) {
      const me = await call(node, 'GET', '/me', admin);
      t.equal(me.status, 200, `node ${node.id} accepts A's token`);
      t.equal(me.body.user.username, 'admin');
    }
    const users = await call(c, 'GET', '/api/admin/users', admin);
    t.equal(users.body.users.filter((u: any) => u.username === 'admin').length, 1, 'three nodes starting on an empty database made one admin');
  });

  t.test('GET /api/admin/nodes lists the three, alive, with their advertised URLs', async (t) => {
    const res = await call(b, 'GET', '/api/admin/nodes', admin);
    t.equal(res.status, 200);
    t.equal(res.body.cluster, true);
    t.equal(res.body.node, 'b', 'the node that answered');
    t.strictSame(res.body.nodes.map((n: any) => [n.id, n.advertise_url, n.alive]), nodes.map((n) => [n.id, n.base, true]));
    t.ok(res.body.nodes.every((n: any) => typeof n.load.avg1 === 'number' && n.load.cpus > 0 && Array.isArray(n.jobs) && Array.isArray(n.leases)), 'load, jobs and leases of each');
    const user = await call(a, 'POST', '/api/admin/users', admin, { username: 'nora', password: 'nora-password', admin: false, active: true });
    t.equal(user.status, 201);
    const nora = await login(a.base, 'nora', 'nora-password');
    const refused = await call(c, 'GET', '/api/admin/nodes', nora);
    t.equal(refused.status, 403, 'admin only');
    t.match(refused.body, { error: String });
    t.equal((await fetch(`${c.base}/api/admin/nodes`)).status, 401, 'a token is needed');
  });

  t.test('a logout on A is refused on B and C within 1 s', async (t) => {
    const token = await login(a.base, 'admin', CLUSTER_ADMIN_PASSWORD, 'phone');
    for (const node of [b, c]) t.equal((await call(node, 'GET', '/me', token)).status, 200, `node ${node.id} knows the session (its state is cached now)`);
    t.equal((await call(a, 'POST', '/logout', token)).status, 200);
    for (const node of [b, c]) t.ok(await refusedWithin1s(node, token), `node ${node.id} refuses the token within 1 s`);
  });

  t.test('a password change on B signs the user out on A and C; a deactivation on C refuses her on A within 1 s', async (t) => {
    const phone = await login(b.base, 'nora', 'nora-password', 'phone');
    const tv = await login(b.base, 'nora', 'nora-password', 'tv');
    for (const node of [a, c]) t.equal((await call(node, 'GET', '/me', tv)).status, 200);
    const changed = await call(b, 'PUT', '/api/user/me/password', phone, { current_password: 'nora-password', new_password: 'nora-new-password' });
    t.equal(changed.status, 200, JSON.stringify(changed.body));
    for (const node of [a, c]) t.ok(await refusedWithin1s(node, tv), `node ${node.id} refuses her other session within 1 s`);
    t.equal((await call(a, 'GET', '/me', phone)).status, 200, 'the session that changed it stays');
    const id = (await call(a, 'GET', '/me', phone)).body.user.id;
    t.equal((await call(c, 'PATCH', `/api/admin/users/${id}`, admin, { active: false })).status, 200);
    t.ok(await refusedWithin1s(a, phone), 'deactivated: refused on A within 1 s');
  });

  t.test('a password set with the CLI signs the user out on every node within 1 s', async (t) => {
    t.equal((await call(a, 'POST', '/api/admin/users', admin, { username: 'olga', password: 'olga-password', admin: false, active: true })).status, 201);
    const token = await login(b.base, 'olga', 'olga-password', 'tv');
    for (const node of nodes) t.equal((await call(node, 'GET', '/me', token)).status, 200);
    const cli = await promisify(execFile)(process.execPath, [CLI, 'user', 'passwd', 'olga', '--password', 'olga-new-password', '--config', path.join(cluster.dir, 'node-a.yaml')], { cwd: cluster.dir, env: cleanEnv() });
    t.match(cli.stdout, /1 session\(s\) signed out/);
    for (const node of nodes) t.ok(await refusedWithin1s(node, token), `node ${node.id} refuses her session within 1 s`);
  });

  t.test('a guide refresh interval runs one import in the cluster', async (t) => {
    const enough = await waitFor(() => guideTimes.length >= 4, 30_000);
    t.ok(enough, why(enough, `the guide was fetched ${guideTimes.length} times`));
    // Every node arms the refresh; one import per firing means the imports are an interval apart
    // (the next is armed when one ends). Three uncoordinated nodes would fetch it together.
    const spacing = guideTimes.slice(1).map((at, i) => at - guideTimes[i]!);
    t.ok(spacing.every((ms) => ms >= (REFRESH_S * 1000) / 2), `imports ${spacing.join(', ')} ms apart: one per interval`);
    const tasks = await call(b, 'GET', '/api/admin/jobs', admin);
    t.equal(tasks.body.tasks.filter((x: any) => x.kind === 'livetv.refresh').length, 1, 'one persisted schedule');
  });
});

t.test('three nodes started together: one start-up import and one library scan', { skip: !PG && 'needs PostgreSQL: set ANTENNA_TEST_PG' }, async (t) => {
  const upstream = await serve(t);
  const movies = path.join(await tmpDir(t, 'antenna-cluster-movies-'), 'Movies');
  await clip(path.join(movies, 'Shared Film (2020).mp4'), { seconds: 1, width: 160, height: 90 });
  upstream.routes.set('/tv.m3u', { body: m3u([{ name: 'One', tvgId: 'one', chno: '1', url: `${upstream.base}/live/one.ts` }]), type: 'audio/x-mpegurl' });
  upstream.routes.set('/guide.xml', { body: xmltv([{ id: 'one', names: ['One'] }], []), type: 'application/xml' });
  const plugins = [
    '  live-tv: { initialImport: await }',
    `  m3u-tuner: { sources: [ { name: Main, url: "${upstream.base}/tv.m3u", refresh: 1h } ] }`,
    `  xmltv-guide: { sources: [ { url: "${upstream.base}/guide.xml", refresh: 1h } ], maxAge: 100000d }`,
    `  vod: { initialScan: await, scanInterval: 1h, libraries: [ { name: Movies, type: movies, paths: ["${movies}"] } ] }`,
  ];
  /** Libraries scanned by each node, from their logs (one line per library scanned). */
  const scans = () => nodes.map((n) => (readFileSync(n.logFile, 'utf8').match(/"event":"library_scanned"/g) ?? []).length);
  const cluster = await testCluster(t, { pg: PG!, prefix: 'antenna-cluster-import-', leaseSeconds: 3, plugins });
  // All three at once: the first node (of three) to take the lease imports, after the tables are made.
  const nodes = cluster.nodes;
  await Promise.all(['a', 'b', 'c'].map((id) => cluster.start([id])));
  const why = (ok: boolean, what: string) => cluster.why(ok, what, 15);
  const fetched = () => [upstream.hits.get('/tv.m3u') ?? 0, upstream.hits.get('/guide.xml') ?? 0];
  t.strictSame(fetched(), [1, 1], why(fetched().join() === '1,1', `the playlist and the guide fetched once by three nodes (${fetched().join(', ')})`));
  const sum = (n: number[]) => n.reduce((a, b) => a + b, 0);
  t.equal(sum(scans()), 1, why(sum(scans()) === 1, `the library scanned once by three nodes (${scans().join(', ')})`));
  const token = await cluster.adminToken();
  for (const node of nodes) {
    const get = async (url: string) => (await fetch(`${node.base}${url}`, { headers: { authorization: `Bearer ${token}` } })).json() as Promise<any>;
    t.equal((await get('/channels')).channels?.length, 1, `node ${node.id} lists the imported channel (initialImport: await waited for the node that imported)`);
    const library = (await get('/libraries')).libraries?.[0];
    t.equal((await get(`/library/${library?.id}`)).items?.[0]?.title, 'Shared Film', `node ${node.id} lists the scanned movie`);
  }
  // A restart within the refresh and scan intervals: the sources are current, nothing is fetched or scanned again.
  await cluster.restart(nodes[1]!);
  t.strictSame(fetched(), [1, 1], 'a node restarted within the refresh interval imports nothing');
  t.equal(sum(scans()), 1, 'nor scans the library again');
});
