/**
 * HDHomeRun and IPTV MPEG-TS streams across two nodes on one PostgreSQL database
 * (ANTENNA_TEST_PG; skipped without it), with `maxStreams: 1`: channel 1 tuned
 * through A by an HLS viewer, then its HDHomeRun and IPTV streams asked of B
 * play (B passes A's stream on), with one upstream connection in all and no
 * lease or tuner slot taken on B; a revoked access key ends B's stream.
 */
import t from 'tap';
import { openStream } from '../../helpers/http.js';
import { killGroup, startUpstream } from '../../helpers/upstream.js';
import { decode, playerPids } from '../../helpers/player.js';
import { waitFor } from '../../helpers/wait.js';
import { testCluster, type NodeProcess } from '../../helpers/cluster.js';
import { m3u, write } from './fixtures.js';

const PG = process.env.ANTENNA_TEST_PG;
t.setTimeout(180_000);

t.test('MPEG-TS streams of a channel another node runs', { skip: !PG && 'needs PostgreSQL: set ANTENNA_TEST_PG' }, async (t) => {
  const upstream = await startUpstream();
  t.teardown(async () => {
    await upstream.close();
    for (const pid of playerPids) killGroup(pid);
  });
  const plugins = [
    '  live-tv: { initialImport: await, idleTimeout: 20s, readyTimeout: 30s }',
    '  m3u-tuner: { sources: [ { name: Main, url: ./tv.m3u, maxStreams: 1 } ] }',
    '  hdhomerun: {}',
    '  iptv-output: {}',
  ];
  const cluster = await testCluster(t, { pg: PG!, prefix: 'antenna-live-cluster-ts-', leaseSeconds: 3, plugins });
  await write(cluster.dir, 'tv.m3u', m3u([
    { name: 'One', tvgId: 'one', chno: '1', url: `${upstream.base}/live/one.ts` },
    { name: 'Two', tvgId: 'two', chno: '2', url: `${upstream.base}/live/two.ts` },
  ]));
  const [a, b] = await cluster.start(['a', 'b']) as [NodeProcess, NodeProcess];
  const { why } = cluster;
  const headers = { authorization: `Bearer ${await cluster.adminToken()}` };
  const createKey = async (name: string) => ((await (await fetch(`${a.base}/api/admin/access-keys`, {
    method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ name }),
  })).json()) as any).access_key as { id: number; key: string };
  const plex = await createKey('plex');
  const channels = ((await (await fetch(`${a.base}/channels`, { headers })).json()) as any).channels as { id: number; name: string }[];
  const one = channels.find((ch) => ch.name === 'One')!.id;

  const master = await fetch(`${a.base}/watch/live/${one}`, { headers });
  t.equal(master.status, 200, why(master.status === 200, 'channel 1 plays through A (HLS)'));
  await master.text();

  const hdhr = await decode(`${b.base}/hdhr/${plex.key}/auto/v1`, 3);
  t.equal(hdhr.code, 0, why(hdhr.code === 0, `HDHomeRun auto/v1 asked of B decodes: ${hdhr.stderr}`));
  t.ok(hdhr.seconds >= 2.5, `decoded ${hdhr.seconds.toFixed(2)} s of video through B`);

  const iptv = await decode(`${b.base}/iptv/${plex.key}/stream/${one}.ts`, 3);
  t.equal(iptv.code, 0, why(iptv.code === 0, `the IPTV stream asked of B decodes: ${iptv.stderr}`));
  t.ok(iptv.seconds >= 2.5, `decoded ${iptv.seconds.toFixed(2)} s of video through B`);

  t.equal(upstream.connections('/live/one.ts'), 1, 'one upstream connection for channel 1 in all');
  t.equal(upstream.peakConnections('/live/one.ts'), 1);

  // The route B reads A's stream from answers a player that asks B with a 307 to A, like the HLS routes.
  const moved = await fetch(`${b.base}/watch/live/${one}/stream.ts`, { headers, redirect: 'manual' });
  t.equal(moved.status, 307, 'stream.ts asked of B: redirected');
  t.ok(moved.headers.get('location')?.startsWith(`${a.base}/watch/live/${one}/stream.ts?key=`), 'to A, with a key for the channel');
  await moved.text();

  // B took no tuner slot: the tuner's one stream is A's, so channel 2 is refused on both nodes.
  const full = await fetch(`${b.base}/hdhr/${plex.key}/auto/v2`);
  t.equal(full.status, 503, 'channel 2 through B: all tuners in use');
  t.equal(full.headers.get('x-hdhomerun-error'), '805 All Tuners In Use');
  await full.text();
  const nodesNow = ((await (await fetch(`${b.base}/api/admin/nodes`, { headers })).json()) as any).nodes as { id: string; leases: string[] }[];
  t.strictSame(nodesNow.filter((n) => n.leases.includes(`live:${one}`)).map((n) => n.id), ['a'], 'A alone holds the channel\'s lease');

  // A key revoked on A ends the stream B passes on.
  const kodi = await createKey('kodi');
  // B reads the active keys again within a second of their creation on A.
  await waitFor(async () => (await fetch(`${b.base}/iptv/${kodi.key}/channels.m3u`).then((r) => r.text().then(() => r.status))) === 200, 10_000);
  const watched = await openStream(`${b.base}/iptv/${kodi.key}/stream/${one}.ts`);
  t.equal(watched.status, 200, `a second key's stream through B (${watched.status})`);
  const revoked = await fetch(`${a.base}/api/admin/access-keys/${kodi.id}`, { method: 'DELETE', headers });
  t.equal(revoked.status, 200, 'the key is revoked on A');
  await watched.ended;
  t.pass('the stream B passed on ended');
  const refused = await fetch(`${b.base}/iptv/${kodi.key}/stream/${one}.ts`);
  t.equal(refused.status, 401, 'and the revoked key is refused on B');
  await refused.text();
  t.equal(upstream.connections('/live/one.ts'), 1, 'still one upstream connection');
});
