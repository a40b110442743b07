/**
 * The tuner ledger across three nodes on one PostgreSQL database (ANTENNA_TEST_PG;
 * skipped without it), with `maxStreams: 1`: channel 1 tuned through A, then
 * channel 2 through B → 409; channel 1 through B → 307 to A, which plays it, and
 * its media requests sent to C go to A too: one upstream connection in all.
 * Then a recording of channel 1 through B: the channel's session moves to the
 * recording's node (viewers elsewhere give way), still one upstream connection.
 */
import t from 'tap';
import { startUpstream } from '../../helpers/upstream.js';
import { waitFor } from '../../helpers/wait.js';
import { testCluster, type NodeProcess } from '../../helpers/cluster.js';
import { m3u, write, xmltv, xt } from './fixtures.js';

const PG = process.env.ANTENNA_TEST_PG;
t.setTimeout(180_000);

t.test('maxStreams: 1 across three nodes', { skip: !PG && 'needs PostgreSQL: set ANTENNA_TEST_PG' }, async (t) => {
  const upstream = await startUpstream();
  t.teardown(() => upstream.close());
  const cluster = await testCluster(t, { pg: PG!, prefix: 'antenna-live-cluster-', leaseSeconds: 3, plugins: [
    '  live-tv: { initialImport: await, idleTimeout: 20s, readyTimeout: 30s }',
    '  m3u-tuner: { sources: [ { name: Main, url: ./tv.m3u, maxStreams: 1 } ] }',
    '  xmltv-guide: { sources: [ { url: ./guide.xml } ], maxAge: 100000d }',
    '  dvr: { path: ./recordings, prePadding: 0s, postPadding: 0s }',
  ] });
  const { dir } = cluster;
  await write(dir, 'tv.m3u', m3u([
    { name: 'One', tvgId: 'one', chno: '1', url: `${upstream.base}/live/one.ts` },
    { name: 'Two', tvgId: 'two', chno: '2', url: `${upstream.base}/live/two.ts` },
  ]));
  // One long programme on air on channel 1, for a recording.
  const now = Date.now();
  await write(dir, 'guide.xml', xmltv([{ id: 'one', names: ['One'] }], [
    { channel: 'one', start: xt(new Date(now - 600_000).toISOString()), stop: xt(new Date(now + 3_600_000).toISOString()), title: 'The long one' },
  ]));
  const [a, b, c] = await cluster.start(['a', 'b', 'c']) as [NodeProcess, NodeProcess, NodeProcess];
  const { why } = cluster;
  const token = await cluster.adminToken();
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
  const holdersOf = async (name: string) => ((await (await fetch(`${c.base}/api/admin/nodes`, { headers })).json()) as any).nodes
    .filter((n: any) => n.leases.includes(name)).map((n: any) => n.id);
  t.strictSame(await holdersOf(`live:${one}`), ['a'], 'A holds the channel\'s lease');

  // A recording of channel 1 started through B while viewers watch it on A: A's viewers give way.
  const programme = ((await (await fetch(`${b.base}/programs`, { headers })).json()) as any).channels.find((ch: any) => ch.id === one).programs[0];
  const created = await fetch(`${b.base}/recordings`, {
    method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ channel_id: one, program_id: programme.id }),
  });
  const rec = (await created.json()) as any;
  t.equal(created.status, 201, JSON.stringify(rec));
  t.equal(rec.status, 'recording');
  const recording = await waitFor(async () => ((await (await fetch(`${b.base}/recordings/${rec.id}`, { headers })).json()) as any).duration >= 4, 60_000, 500);
  t.ok(recording, why(recording, 'the recording records'));
  t.strictSame(await holdersOf(`live:${one}`), await holdersOf(`recording:${rec.id}`), 'the channel runs on the node that records it');
  t.equal(upstream.peakConnections('/live/one.ts'), 1, 'never two upstream connections for channel 1');
  const owner = (await holdersOf(`live:${one}`))[0];
  if (owner !== 'a') {
    const moved = await fetch(`${a.base}${media}`, { redirect: 'manual' });
    t.equal(moved.status, 307, 'A\'s viewers are sent to the recording node');
  }
  t.equal((await fetch(`${b.base}/recordings/${rec.id}`, { method: 'DELETE', headers })).status, 200, 'recording cancelled');
});
