/**
 * Where transcodes run in a cluster of three nodes on one PostgreSQL database
 * (ANTENNA_TEST_PG; skipped without it). Capacities a 1, b 2, c 1; at most 3
 * transcodes across the nodes:
 *  - A runs one transcode, so it is full: the next play request on A is 307 to B
 *    (the most room), with the same signed URL made of a key instead of the
 *    token (no Authorization), and B's stream decodes with ffmpeg;
 *  - the same device asking A again (Authorization header only) reaches its job on B;
 *  - requests for B's job sent to C (a load balancer) are 307 to B, and C starts nothing;
 *  - a live session that transcodes on C takes the third place: a VOD play on B,
 *    which has room of its own, is refused, the limit being counted across the nodes.
 */
import t from 'tap';
import { copyFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { CLUSTER_ADMIN_PASSWORD, freshDatabase, login, logTail, pgQuery, startNode, stopNode, type NodeProcess } from '../../helpers/cluster.js';
import { decode } from '../../helpers/player.js';
import { sourceArgs, startUpstream } from '../../helpers/upstream.js';
import { m3u, write } from '../live-tv/fixtures.js';
import { clip, tempDir } from './fixtures.js';

const PG = process.env.ANTENNA_TEST_PG;
t.setTimeout(180_000);

t.test('transcodes go to the node with room; their requests to the node running them', { skip: !PG && 'needs PostgreSQL: set ANTENNA_TEST_PG' }, async (t) => {
  const db = await freshDatabase(PG!);
  t.teardown(() => db.drop());
  const upstream = await startUpstream();
  t.teardown(() => upstream.close());
  // HEVC: a browser (no Device-* headers) cannot take it as it is, so the live session transcodes.
  upstream.encode('/live/hevc.ts', sourceArgs({ hevc: true }));
  const dir = await tempDir(t, 'antenna-vod-placement-');
  const movies = path.join(dir, 'movies');
  await mkdir(movies);
  await clip(path.join(dir, 'clip.mp4'), { width: 320, height: 180, fps: 25, seconds: 20, gopSeconds: 2, videoBitrate: '5M' });
  await copyFile(path.join(dir, 'clip.mp4'), path.join(movies, 'One (2001).mp4'));
  await write(dir, 'tv.m3u', m3u([{ name: 'Hevc', tvgId: 'hevc', chno: '1', url: `${upstream.base}/live/hevc.ts` }]));
  const plugins = [
    '  vod: { libraries: [ { name: Movies, type: movies, paths: [./movies] } ], initialScan: await, preset: ultrafast, idleTimeout: 60s }',
    '  live-tv: { initialImport: await, idleTimeout: 60s, readyTimeout: 30s }',
    '  m3u-tuner: { sources: [ { name: Main, url: ./tv.m3u, maxStreams: 1 } ] }',
  ];
  const config = ['ffmpeg: { maxTranscodes: 3, maxTranscodesPerUser: 2 }'];
  const capacity: Record<string, number> = { a: 1, b: 2, c: 1 };
  const nodes: NodeProcess[] = [];
  t.teardown(async () => { await Promise.all(nodes.map(stopNode)); });
  const start = (id: string) => startNode({ dir, id, databaseUrl: db.url, leaseSeconds: 3, plugins, config, cluster: [`maxNodeTranscodes: ${capacity[id]}`] });
  nodes.push(await start('a'));
  nodes.push(...(await Promise.all(['b', 'c'].map(start))));
  const [a, b, c] = nodes as [NodeProcess, NodeProcess, NodeProcess];
  const why = (ok: boolean, what: string) => (ok ? what : `${what}\n${nodes.map((n) => `node ${n.id}:\n${logTail(n.logFile, 15)}`).join('\n')}`);
  const hide = (url: string) => url.replace(/(key|api_key)=[^&]+/g, '$1=***');

  const admin = await login(a.base, 'admin', CLUSTER_ADMIN_PASSWORD);
  const asAdmin = async (method: string, url: string, body?: unknown) => {
    const res = await fetch(a.base + url, { method, headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<any>;
  };
  const listed = (await asAdmin('GET', '/api/admin/nodes')).nodes as { id: string; transcode_capacity: number }[];
  t.same(Object.fromEntries(listed.map((n) => [n.id, n.transcode_capacity])), capacity, 'each node tells its capacity');
  const [library] = (await asAdmin('GET', '/libraries')).libraries;
  const [item] = (await asAdmin('GET', `/library/${library.id}?limit=10`)).items as { id: string }[];
  const users: string[] = [];
  for (let u = 0; u < 4; u++) {
    await asAdmin('POST', '/api/admin/users', { username: `viewer${u}`, password: 'viewer-password' });
    users.push(await login(a.base, `viewer${u}`, 'viewer-password', `viewer-device-${u}`));
  }
  const play = (node: NodeProcess, user: number, init: RequestInit = {}) =>
    fetch(`${node.base}/watch/vod/${item!.id}/master.m3u8?maxBitrate=300000&api_key=${users[user]}`, init);
  const transcodesOf = async (node: string) =>
    (await pgQuery(db.url, `SELECT count(*)::int AS n FROM cluster_leases WHERE grp = 'transcodes' AND node = $1 AND expires_at > now()`, [node]))[0].n as number;

  const first = await play(a, 0);
  t.equal(first.status, 200, why(first.status === 200, 'A has room for a first transcode'));
  await first.text();
  t.equal(await transcodesOf('a'), 1, 'A holds one transcode lease: it is full');

  // A play request on the full node: sent to B, the node with the most room.
  const moved = await play(a, 1, { redirect: 'manual' });
  const location = moved.headers.get('location') ?? '';
  t.equal(moved.status, 307, why(moved.status === 307, 'a second play request on A is redirected'));
  t.ok(location.startsWith(`${b.base}/watch/vod/${item!.id}/master.m3u8?`), `to B (${hide(location)})`);
  t.notMatch(location, /api_key=/, 'without the token');
  t.match(location, /[?&]key=[^&]+/, 'with a key for the item: a redirect to another origin drops the Authorization header');
  t.match(location, /[?&]variant=[^&]+/, 'with the decision A made');
  t.match(await moved.json(), { error: /node b/ });

  // A player follows it with no Authorization header at all.
  const there = await fetch(location);
  const master = await there.text();
  t.equal(there.status, 200, why(there.status === 200, 'B answers the redirected request'));
  t.equal(await transcodesOf('b'), 1, 'and runs the transcode');
  const decoded = await decode(location, 4);
  t.equal(decoded.code, 0, `B's stream decodes (${decoded.stderr.slice(0, 300)})`);
  t.ok(decoded.frames >= 25, `with its frames (${decoded.frames})`);

  // The same device asks A again, signed in by its Authorization header: sent to its job on B, which
  // answers although the header stayed behind (fetch, as browsers, drops it on a redirect to another origin).
  const again = await fetch(`${a.base}/watch/vod/${item!.id}/master.m3u8?maxBitrate=300000`, { headers: { authorization: `Bearer ${users[1]}` } });
  t.equal(again.status, 200, why(again.status === 200, 'the device asking A again is served'));
  t.ok(again.url.startsWith(`${b.base}/`), `by B, which runs its job (${hide(again.url)})`);
  await again.text();
  t.equal(await transcodesOf('b'), 1, 'still one transcode on B');

  // A load balancer sends the job's requests to C: they go to B, the node that runs it.
  const media = master.split('\n').find((line) => line.startsWith('t/') && line.includes('video.m3u8'))!;
  t.ok(media, 'the master lists the video playlist');
  const jobBase = `/watch/vod/${item!.id}/${media.slice(0, media.indexOf('video.m3u8'))}`;
  const key = /key=([^&]+)/.exec(media)![1]!;
  for (const file of ['video.m3u8', 'v-1.m4s']) {
    const viaC = await fetch(`${c.base}${jobBase}${file}?key=${key}`, { redirect: 'manual' });
    t.equal(viaC.status, 307, why(viaC.status === 307, `${file} asked of C: redirected`));
    t.equal(viaC.headers.get('location'), `${b.base}${jobBase}${file}?key=${key}`, `${file}: to the same URL on B`);
    const followed = await fetch(`${c.base}${jobBase}${file}?key=${key}`);
    t.equal(followed.status, 200, `${file}: served by B`);
    t.ok((await followed.arrayBuffer()).byteLength > 0);
  }
  t.equal(await transcodesOf('c'), 0, 'C started no transcode of its own');

  // A live session that transcodes on C takes the third place of the installation.
  const viewer = { authorization: `Bearer ${users[2]}` };
  const channels = ((await (await fetch(`${c.base}/channels`, { headers: viewer })).json()) as any).channels as { id: number }[];
  const live = await fetch(`${c.base}/watch/live/${channels[0]!.id}`, { headers: viewer });
  const liveText = await live.text();
  t.equal(live.status, 200, why(live.status === 200, `the channel plays through C (${liveText.slice(0, 200)})`));
  t.equal(await transcodesOf('c'), 1, 'its transcode holds a lease of the installation\'s limit, as VOD transcodes do');
  const userLeases = await pgQuery(db.url, `SELECT count(*)::int AS n FROM cluster_leases WHERE grp LIKE 'transcodes:user:%' AND node = 'c' AND expires_at > now()`);
  t.equal(userLeases[0].n, 1, 'and one of its viewer\'s own limit');
  const full = await play(b, 3, { redirect: 'manual' });
  const fullBody = await full.json() as any;
  t.equal(full.status, 503, why(full.status === 503, 'a VOD play on B, which has room of its own, is refused: 3 transcodes run across the nodes'));
  t.match(fullBody, { error: /installation is running its limit of 3 transcodes/ });
  t.ok(Number(full.headers.get('retry-after')) > 0, 'with Retry-After');
});
