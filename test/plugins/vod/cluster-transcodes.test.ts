/**
 * The transcode limits counted across three nodes on one PostgreSQL database
 * (ANTENNA_TEST_PG; skipped without it): 30 concurrent transcode requests from 5
 * users spread over the nodes (a node without room redirects a request to one
 * with some, which fetch follows). Together they never hold more than that many transcodes (leases in the
 * database, encoding ffmpeg processes of the nodes), nor more than
 * maxTranscodesPerUser for one user; the rest are 503 with Retry-After.
 */
import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { copyFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { CLUSTER_ADMIN_PASSWORD, freshDatabase, login, logTail, pgQuery, startNode, stopNode, type NodeProcess } from '../../helpers/cluster.js';
import { clip, tempDir } from './fixtures.js';

const PG = process.env.ANTENNA_TEST_PG;
t.setTimeout(120_000);
const MAX = 4;
const PER_USER = 2;

/** Encoding ffmpeg processes whose parent is one of `pids`. */
function encoders(pids: Set<number>): number {
  let n = 0;
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const m = /^\d+ \((.*)\) (\S) (\d+)/.exec(readFileSync(`/proc/${d}/stat`, 'utf8'));
      if (!m || !pids.has(Number(m[3])) || !m[1]!.startsWith('ffmpeg') || m[2] === 'Z') continue;
      if (readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0').includes('libx264')) n++;
    } catch { /* exited meanwhile */ }
  }
  return n;
}

t.test('30 concurrent transcodes across three nodes stay within the cluster-wide limits', { skip: !PG && 'needs PostgreSQL: set ANTENNA_TEST_PG' }, async (t) => {
  const db = await freshDatabase(PG!);
  t.teardown(() => db.drop());
  const dir = await tempDir(t, 'antenna-vod-cluster-');
  const movies = path.join(dir, 'movies');
  await mkdir(movies);
  // 5 Mb/s: every maxBitrate asked below transcodes. 24 s: transcodes still run when the last requests come.
  await clip(path.join(dir, 'clip.mp4'), { width: 320, height: 180, fps: 25, seconds: 24, gopSeconds: 2, videoBitrate: '5M' });
  const titles = ['One', 'Two', 'Three'];
  for (const [i, title] of titles.entries()) await copyFile(path.join(dir, 'clip.mp4'), path.join(movies, `${title} (${2001 + i}).mp4`));
  const plugins = ['  vod: { libraries: [ { name: Movies, type: movies, paths: [./movies] } ], initialScan: await, preset: ultrafast, idleTimeout: 30s }'];
  const config = [`ffmpeg: { maxTranscodes: ${MAX}, maxTranscodesPerUser: ${PER_USER} }`];
  const nodes: NodeProcess[] = [];
  t.teardown(async () => { await Promise.all(nodes.map(stopNode)); });
  nodes.push(await startNode({ dir, id: 'a', databaseUrl: db.url, leaseSeconds: 3, plugins, config }));
  nodes.push(...(await Promise.all(['b', 'c'].map((id) => startNode({ dir, id, databaseUrl: db.url, leaseSeconds: 3, plugins, config })))));
  const why = (ok: boolean, what: string) => (ok ? what : `${what}\n${nodes.map((n) => `node ${n.id}:\n${logTail(n.logFile, 12)}`).join('\n')}`);

  const admin = await login(nodes[0]!.base, 'admin', CLUSTER_ADMIN_PASSWORD);
  const asAdmin = async (method: string, url: string, body?: unknown) => {
    const res = await fetch(nodes[0]!.base + url, { method, headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<any>;
  };
  const [library] = (await asAdmin('GET', '/libraries')).libraries;
  const items = (await asAdmin('GET', `/library/${library.id}?limit=100`)).items as { id: string; title: string }[];
  t.equal(items.length, titles.length, 'the library was scanned');
  const users: string[] = [];
  for (let u = 0; u < 5; u++) {
    await asAdmin('POST', '/api/admin/users', { username: `viewer${u}`, password: 'viewer-password' });
    // Each user signs in on a node of their own: the nodes share the sessions.
    users.push(await login(nodes[u % 3]!.base, `viewer${u}`, 'viewer-password', `viewer-device-${u}`));
  }

  // The most held at once while the requests run: leases in the database, encoders on the machine.
  const pids = new Set(nodes.map((n) => n.proc.pid!));
  let mostLeases = 0;
  let mostEncoders = 0;
  const mostPerUser = new Map<string, number>();
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const rows = await pgQuery(db.url, `SELECT grp, count(*)::int AS n FROM cluster_leases WHERE grp LIKE 'transcodes%' AND expires_at > now() GROUP BY grp`);
      for (const r of rows) {
        if (r.grp === 'transcodes') mostLeases = Math.max(mostLeases, r.n);
        else mostPerUser.set(r.grp, Math.max(mostPerUser.get(r.grp) ?? 0, r.n));
      }
      mostEncoders = Math.max(mostEncoders, encoders(pids));
      await new Promise((r) => setTimeout(r, 20));
    }
  })();

  const bitrates = [300_000, 500_000];
  const requests = Array.from({ length: 30 }, (_, i) => ({
    node: nodes[i % 3]!, url: `/watch/vod/${items[i % titles.length]!.id}/master.m3u8?maxBitrate=${bitrates[Math.floor(i / 15)]}&api_key=${users[i % 5]}`,
  }));
  const answers = await Promise.all(requests.map(async ({ node, url }) => {
    const res = await fetch(node.base + url);
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.text() };
  }));
  sampling = false;
  await sampler;

  for (const [i, a] of answers.entries()) {
    const fine = a.status === 200 || (a.status === 503 && Number(a.retryAfter) > 0 && typeof JSON.parse(a.body).error === 'string');
    t.ok(fine, `request ${i} on ${requests[i]!.node.id}: ${a.status}${a.status === 200 ? '' : ` Retry-After ${a.retryAfter} ${a.body.slice(0, 200)}`}`);
  }
  const served = answers.filter((a) => a.status === 200).length;
  t.ok(served > 0, why(served > 0, `some were served (${served})`));
  t.ok(answers.some((a) => a.status === 503), `the rest were refused (${answers.length - served})`);
  t.ok(mostLeases > 0 && mostLeases <= MAX, `at most ${MAX} transcodes held across the nodes at once (saw ${mostLeases})`);
  t.ok([...mostPerUser.values()].every((n) => n <= PER_USER), `at most ${PER_USER} per user (${JSON.stringify(Object.fromEntries(mostPerUser))})`);
  t.ok(mostEncoders <= MAX, `never more than ${MAX} encoding ffmpeg processes on the three nodes (saw ${mostEncoders})`);
  const held = (await asAdmin('GET', '/api/admin/nodes')).nodes.map((n: any) => [n.id, n.leases.filter((l: string) => /^transcodes:/.test(l) && !l.includes(':user:')).length]);
  t.ok(held.reduce((sum: number, [, n]: [string, number]) => sum + n, 0) <= MAX, `the nodes list at most ${MAX} transcode leases (${JSON.stringify(held)})`);
});
