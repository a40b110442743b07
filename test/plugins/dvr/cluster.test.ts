/**
 * A recording with three nodes on one PostgreSQL database (ANTENNA_TEST_PG;
 * skipped without it): scheduled through one node, it is recorded by exactly
 * one (one upstream connection, one lease); that node is killed with SIGKILL
 * (its ffmpeg with it, as when a machine dies) and another node continues the
 * recording into a new part after the lease time; it completes with the gap
 * noted, and a plain ffmpeg plays both parts.
 */
import t from 'tap';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import pino from 'pino';
import { reapLeftovers } from '../../../core/ffmpeg/leftovers.js';
import { decode, playerPids } from '../../helpers/player.js';
import { killGroup, startUpstream } from '../../helpers/upstream.js';
import { testCluster, type NodeProcess } from '../../helpers/cluster.js';
import { waitFor } from '../../helpers/wait.js';
import { m3u, write, xmltv, xt } from '../live-tv/fixtures.js';

const PG = process.env.ANTENNA_TEST_PG;
t.setTimeout(240_000);
const SLOT_MS = 40_000;
const LEASE_S = 3;

t.test('a recording with three nodes, through a SIGKILL of the node recording it', { skip: !PG && 'needs PostgreSQL: set ANTENNA_TEST_PG' }, async (t) => {
  const upstream = await startUpstream();
  t.teardown(async () => {
    await upstream.close();
    for (const pid of playerPids) killGroup(pid);
  });
  const cluster = await testCluster(t, { pg: PG!, prefix: 'antenna-dvr-cluster-', leaseSeconds: LEASE_S });
  const { dir } = cluster;
  await write(dir, 'tv.m3u', m3u([{ name: 'One', tvgId: 'one', chno: '1', url: `${upstream.base}/live/one.ts` }]));
  // Programmes of 40 s from two minutes ago to ten minutes ahead.
  const first = Math.floor(Date.now() / SLOT_MS) * SLOT_MS - 3 * SLOT_MS;
  const programmes = Array.from({ length: 20 }, (_, i) => first + i * SLOT_MS).map((start) => ({
    channel: 'one', start: xt(new Date(start).toISOString()), stop: xt(new Date(start + SLOT_MS).toISOString()), title: `One at ${new Date(start).toISOString().slice(11, 19)}`,
  }));
  await write(dir, 'guide.xml', xmltv([{ id: 'one', names: ['One'] }], programmes));
  const plugins = [
    '  live-tv: { initialImport: await, idleTimeout: 10s, readyTimeout: 20s }',
    '  m3u-tuner: { sources: [ { name: Main, url: ./tv.m3u, maxStreams: 1 } ] }',
    '  xmltv-guide: { sources: [ { url: ./guide.xml } ], maxAge: 100000d }',
    '  dvr: { path: ./recordings, prePadding: 1s, postPadding: 1s }',
  ];
  const nodes = await cluster.start(['a', 'b', 'c'], { plugins });
  const { why } = cluster;
  const token = await cluster.adminToken();
  const get = async (node: NodeProcess, url: string): Promise<any> => {
    const res = await fetch(node.base + url, { headers: { authorization: `Bearer ${token}` } });
    if (!res.ok) throw new Error(`GET ${url} on ${node.id}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  const alive = () => nodes.filter((n) => n.alive());
  /** The nodes holding the recording's lease, as any live node lists them. */
  const holders = async (id: number): Promise<string[]> =>
    (await get(alive()[0]!, '/api/admin/nodes')).nodes.filter((n: any) => n.leases.includes(`recording:${id}`)).map((n: any) => n.id);

  // The next programme starting at least 10 s from now: scheduled, not on air yet.
  const { channels } = await get(nodes[0]!, '/programs');
  const programme = channels[0].programs.find((p: any) => Date.parse(p.start) >= Date.now() + 10_000);
  const created = await fetch(`${nodes[0]!.base}/recordings`, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ channel_id: channels[0].id, program_id: programme.id }),
  });
  const rec = (await created.json()) as any;
  t.equal(created.status, 201, JSON.stringify(rec));
  t.equal(rec.status, 'scheduled');

  let holder: NodeProcess | undefined;
  t.test('it starts on one node: one lease, one upstream connection', async (t) => {
    // The programme starts up to a slot from now: the 45 s count from its start.
    const untilStart = Math.max(0, Date.parse(programme.start) - Date.now());
    const recording = await waitFor(async () => (await get(nodes[1]!, `/recordings/${rec.id}`)).duration >= 6, untilStart + 45_000, 500);
    t.ok(recording, why(recording, 'recording, 6 s recorded'));
    const held = await holders(rec.id);
    t.equal(held.length, 1, `one node holds the recording (${held.join(', ')})`);
    holder = nodes.find((n) => n.id === held[0]);
    t.equal(upstream.connections('/live/one.ts'), 1, 'one upstream connection in all');
    const jobs = (await get(nodes[2]!, '/api/admin/nodes')).nodes.map((n: any) => [n.id, n.jobs.filter((j: any) => j.kind === 'recording').length]);
    const recordingJobs = await waitFor(async () => {
      const list = (await get(nodes[2]!, '/api/admin/nodes')).nodes;
      return list.filter((n: any) => n.jobs.some((j: any) => j.key === `dvr:${rec.id}`)).map((n: any) => n.id).join(',') === holder?.id;
    }, 10_000, 500);
    t.ok(recordingJobs, `its job runs on ${holder?.id} alone (${JSON.stringify(jobs)})`);
  });

  t.test('SIGKILL of that node: another continues after the lease time, into a new part', async (t) => {
    if (!holder) return t.fail('no node records it');
    holder.proc.kill('SIGKILL');
    t.equal((await holder.exited).signal, 'SIGKILL');
    // Its ffmpeg dies with it, as when the machine goes down.
    await reapLeftovers(path.join(holder.dataDir, 'run'), pino({ level: 'silent' }));
    const taken = await waitFor(async () => {
      const held = await holders(rec.id);
      return held.length === 1 && held[0] !== holder!.id ? held[0] : undefined;
    }, 30_000, 250);
    t.ok(taken, why(!!taken, `node ${taken} took the recording over`));
    const done = await waitFor(async () => (await get(alive()[0]!, `/recordings/${rec.id}`)).status !== 'recording', SLOT_MS + 60_000, 1000);
    const final = await get(alive()[0]!, `/recordings/${rec.id}`);
    t.equal(final.status, 'completed', why(!!done && final.status === 'completed', `completed: ${JSON.stringify(final)}`));
    t.equal(final.gaps.length, 1, `one gap noted (${JSON.stringify(final.gaps)})`);
    const parts = (await readdir(path.join(dir, 'recordings', String(rec.id)))).filter((n) => /^p\d+$/.test(n));
    t.strictSame(parts.sort(), ['p0', 'p1'], 'one set of parts: the dead node\'s and the one that continued');
    t.equal(upstream.peakConnections('/live/one.ts'), 1, 'never two upstream connections at once');
    t.equal(upstream.connections('/live/one.ts'), 2, 'one per node that recorded');
    // ffmpeg reads both parts as one stream: the second's media times must go on after the first's.
    const played = await decode(`${alive()[0]!.base}/watch/recording/${rec.id}?api_key=${encodeURIComponent(token)}`, 120, 120_000);
    const both = played.seconds >= final.duration - 1 && played.monotonic;
    t.ok(both, `a plain ffmpeg plays ${played.seconds.toFixed(1)} s of ${final.duration} s recorded, in order: ${played.monotonic}${both ? '' : `: ${played.stderr}`}`);
  });
});
