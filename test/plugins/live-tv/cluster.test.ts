/**
 * The tuner ledger across three nodes on one PostgreSQL database (ANTENNA_TEST_PG;
 * skipped without it), with `maxStreams: 1`: channel 1 tuned through A, then
 * channel 2 through B → 409; channel 1 through B → 307 to A, which plays it, and
 * its media requests sent to C go to A too: one upstream connection in all.
 */
import t from 'tap';
import { startUpstream } from '../../helpers/upstream.js';
import { CLUSTER_ADMIN_PASSWORD, freshDatabase, login, logTail, startNode, stopNode, type NodeProcess } from '../../helpers/cluster.js';
import { m3u, tempDir, write } from './fixtures.js';

const PG = process.env.ANTENNA_TEST_PG;
t.setTimeout(180_000);

t.test('maxStreams: 1 across three nodes', { skip: !PG && 'needs PostgreSQL: set ANTENNA_TEST_PG' }, async (t) => {
  const db = await freshDatabase(PG!);
  t.teardown(() => db.drop());
  const upstream = await startUpstream();
  t.teardown(() => upstream.close());
  const dir = await tempDir(t, 'antenna-live-cluster-');
  await write(dir, 'tv.m3u', m3u([
    { name: 'One', tvgId: 'one', chno: '1', url: `${upstream.base}/live/one.ts` },
    { name: 'Two', tvgId: 'two', chno: '2', url: `${upstream.base}/live/two.ts` },
  ]));
  const plugins = [
    '  live-tv: { initialImport: await, idleTimeout: 20s, readyTimeout: 30s }',
    '  m3u-tuner: { sources: [ { name: Main, url: ./tv.m3u, maxStreams: 1 } ] }',
  ];
  const nodes: NodeProcess[] = [];
  t.teardown(async () => { await Promise.all(nodes.map(stopNode)); });
  nodes.push(await startNode({ dir, id: 'a', databaseUrl: db.url, leaseSeconds: 3, plugins }));
  nodes.push(...(await Promise.all(['b', 'c'].map((id) => startNode({ dir, id, databaseUrl: db.url, leaseSeconds: 3, plugins })))));
  const [a, b, c] = nodes as [NodeProcess, NodeProcess, NodeProcess];
  const why = (ok: boolean, what: string) => (ok ? what : `${what}\n${nodes.map((n) => `node ${n.id}:\n${logTail(n.logFile, 12)}`).join('\n')}`);
  const token = await login(a.base, 'admin', CLUSTER_ADMIN_PASSWORD);
  const headers = { authorization: `Bearer ${token}` };
  const channels = ((await (await fetch(`${a.base}/channels`, { headers })).json()) as any).channels as { id: number; name: string }[];
  const one = channels.find((ch) => ch.name === 'One')!.id;
  const two = channels.find((ch) => ch.name === 'Two')!.id;

  const master = await fetch(`${a.base}/watch/live/${one}`, { headers });
  const masterText = await master.text();
  t.equal(master.status, 200, why(master.status === 200, `channel 1 plays through A (${masterText.slice(0, 200)})`));

  const full = await fetch(`${b.base}/watch/live/${two}`, { headers });
  t.equal(full.status, 409, 'channel 2 through B: the tuner\'s one stream is in use on A');
  t.match(await full.json(), { error: /Tuner limit reached for Main/ });

  const moved = await fetch(`${b.base}/watch/live/${one}`, { headers, redirect: 'manual' });
  t.equal(moved.status, 307, 'channel 1 through B: redirected');
  const location = moved.headers.get('location') ?? '';
  t.ok(location.startsWith(`${a.base}/watch/live/${one}?`), `to A (${location.replace(/key=[^&]+/, 'key=***')})`);
  t.match(location, /[?&]key=/, 'with a key for the channel (the Authorization header does not follow a redirect to another origin)');
  t.match(await moved.json(), { error: /playing on another node \(a\)/ });

  // A player follows the redirect, then the URLs of what it got.
  const followed = await fetch(location);
  const text = await followed.text();
  t.equal(followed.status, 200, 'A answers the redirected request');
  const media = text.split('\n').find((line) => line.startsWith('/watch/live/'))!;
  t.ok(media, 'a media playlist URL');
  const viaC = await fetch(`${c.base}${media}`, { redirect: 'manual' });
  t.equal(viaC.status, 307, 'its media playlist asked of C: redirected to A too');
  t.ok(viaC.headers.get('location')?.startsWith(`${a.base}/watch/live/${one}/s/`));
  const playlist = await (await fetch(`${c.base}${media}`)).text();
  const segment = playlist.split('\n').find((line) => line.includes('.m4s'));
  t.ok(segment, 'the media playlist lists segments');
  const segmentUrl = new URL(segment!, `${c.base}${media}`);
  const bytes = await fetch(`${c.base}${segmentUrl.pathname}${segmentUrl.search}`);
  t.equal(bytes.status, 200, 'a segment asked of C is served (by A)');
  t.ok((await bytes.arrayBuffer()).byteLength > 0);

  t.equal(upstream.connections('/live/one.ts'), 1, 'one upstream connection for channel 1 in all');
  t.equal(upstream.connections('/live/two.ts'), 0, 'none for channel 2');
  const listed = ((await (await fetch(`${c.base}/api/admin/nodes`, { headers })).json()) as any).nodes;
  t.strictSame(listed.filter((n: any) => n.leases.includes(`live:${one}`)).map((n: any) => n.id), ['a'], 'A holds the channel\'s lease');
});
