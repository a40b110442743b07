/**
 * Accounts across two nodes on one PostgreSQL database (ANTENNA_TEST_PG; skipped
 * without it): failed sign-ins count once for the installation, not once per
 * node (4 allowed: 2 on A and 2 on B use them up, and the next, even with the
 * right password, is 429 on both; the lockout shows and is lifted on either), and
 * an avatar uploaded on A is served by B.
 */
import t from 'tap';
import { CLUSTER_ADMIN_PASSWORD, freshDatabase, login, logTail, startNode, stopNode, type NodeProcess } from '../helpers/cluster.js';
import { multipart, tinyPng } from '../helpers/http.js';
import { tempDir } from '../plugins/live-tv/fixtures.js';

const PG = process.env.ANTENNA_TEST_PG;
t.setTimeout(120_000);

t.test('sign-in limits and avatars across two nodes', { skip: !PG && 'needs PostgreSQL: set ANTENNA_TEST_PG' }, async (t) => {
  const db = await freshDatabase(PG!);
  t.teardown(() => db.drop());
  const dir = await tempDir(t, 'antenna-cluster-accounts-');
  const config = ['auth: { maxFailuresPerUser: 4, maxFailuresPerAddress: 100, failureWindowSeconds: 600 }'];
  const nodes: NodeProcess[] = [];
  t.teardown(async () => { await Promise.all(nodes.map(stopNode)); });
  nodes.push(await startNode({ dir, id: 'a', databaseUrl: db.url, leaseSeconds: 3, config }));
  nodes.push(await startNode({ dir, id: 'b', databaseUrl: db.url, leaseSeconds: 3, config }));
  const [a, b] = nodes as [NodeProcess, NodeProcess];
  const why = (ok: boolean, what: string) => (ok ? what : `${what}\n${nodes.map((n) => `node ${n.id}:\n${logTail(n.logFile, 12)}`).join('\n')}`);

  const admin = await login(a.base, 'admin', CLUSTER_ADMIN_PASSWORD);
  const asAdmin = async (node: NodeProcess, method: string, url: string, body?: unknown) => {
    const headers = { authorization: `Bearer ${admin}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) };
    const res = await fetch(node.base + url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<any>;
  };
  const { user } = await asAdmin(a, 'POST', '/api/admin/users', { username: 'mallory-target', password: 'target-password' });
  const attempt = (node: NodeProcess, password: string) => fetch(`${node.base}/login`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'mallory-target', password }),
  });

  for (const [i, node] of [a, b, a, b].entries()) {
    const res = await attempt(node, `guess-${i}`);
    t.equal(res.status, 401, why(res.status === 401, `wrong password ${i + 1} on ${node.id}: 401`));
  }
  for (const node of [a, b]) {
    const res = await attempt(node, 'target-password');
    t.equal(res.status, 429, `the fifth attempt on ${node.id}, even with the right password: 429 (the limit is 4 for the installation)`);
    t.ok(Number(res.headers.get('retry-after')) > 0, 'with Retry-After');
  }
  const listed = (await asAdmin(b, 'GET', '/api/admin/users')).users.find((u: any) => u.id === user.id);
  t.ok(listed.locked_for > 0, `B lists the user as locked out (${listed.locked_for} s)`);
  await asAdmin(b, 'DELETE', `/api/admin/users/${user.id}/lockout`);
  const lifted = await attempt(a, 'target-password');
  t.equal(lifted.status, 200, 'lifted on B, the user signs in on A');
  const token = ((await lifted.json()) as any).auth.token as string;

  const { body, contentType } = multipart([{ name: 'avatar', filename: 'me.png', contentType: 'image/png', data: tinyPng() }]);
  const up = await fetch(`${a.base}/api/user/me/avatar`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': contentType }, body });
  t.equal(up.status, 200, 'an avatar uploaded on A');
  const down = await fetch(`${b.base}/api/user/me/avatar`, { headers: { authorization: `Bearer ${token}` } });
  t.equal(down.status, 200, why(down.status === 200, 'is served by B'));
  t.equal(down.headers.get('content-type'), 'image/png');
  t.ok(Buffer.from(await down.arrayBuffer()).equals(tinyPng()), 'the same bytes');
});
