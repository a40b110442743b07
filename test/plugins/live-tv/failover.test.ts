/**
 * Failover between a channel's streams, with real upstreams (realtime MPEG-TS from ffmpeg on
 * loopback), real ffmpeg and a real recording:
 *
 *  - the playing upstream dies mid-stream: a decoder reading our HLS keeps getting frames, the
 *    HLS playlist goes on after a discontinuity and the MPD in a new Period, and the recording
 *    goes on with one gap;
 *  - a first stream answering 404 at tune: the second plays;
 *  - every stream dead: 502;
 *  - slots are counted per source across a failover of a stalled stream (the full source is
 *    passed over, the old source's slot is given back, the new one's taken);
 *  - per-stream health (state, last failure, viewers) in GET /api/admin/channels.
 */
import t from 'tap';
import path from 'node:path';
import { createTestHost, type TestHost } from '../../../sdk/testing.js';
import { expectError } from '../../helpers/http.js';
import { decode, playerPids } from '../../helpers/player.js';
import { killGroup, startUpstream } from '../../helpers/upstream.js';
import { waitFor } from '../../helpers/wait.js';
import { channels, closedPort, m3u, tempDir, write, xmltv, xt } from './fixtures.js';

t.setTimeout(120_000);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test('failover between the streams of a channel', async (t) => {
  const upA = await startUpstream(); // killed mid-stream
  const upB = await startUpstream();
  const upX = await startUpstream(); // the other streams of sources A and C
  t.teardown(async () => {
    for (const pid of playerPids) killGroup(pid);
    await Promise.all([upA.close(), upB.close(), upX.close()]);
  });
  upX.fail('/live/miss.ts', 404);
  const [dead1, dead2] = [await closedPort(), await closedPort()];
  const dir = await tempDir(t, 'antenna-failover-');
  const a = await write(dir, 'a.m3u', m3u([
    { name: 'News', tvgId: 'news.tv', chno: '1', url: `${upA.base}/live/news.ts` },
    { name: 'Miss', tvgId: 'miss.tv', chno: '2', url: `${upX.base}/live/miss.ts` },
    { name: 'Dead', tvgId: 'dead.tv', chno: '3', url: `http://127.0.0.1:${dead1}/live/dead.ts` },
    { name: 'Slot', tvgId: 'slot.tv', chno: '4', url: `${upX.base}/live/slot.ts` },
    { name: 'Solo A', tvgId: 'solo-a.tv', chno: '5', url: `${upX.base}/live/solo-a.ts` },
  ]));
  const b = await write(dir, 'b.m3u', m3u([
    { name: 'News B', tvgId: 'news.tv', chno: '11', url: `${upB.base}/live/news.ts` },
    { name: 'Miss B', tvgId: 'miss.tv', chno: '12', url: `${upB.base}/live/miss.ts` },
    { name: 'Dead B', tvgId: 'dead.tv', chno: '13', url: `http://127.0.0.1:${dead2}/live/dead.ts` },
    { name: 'Slot B', tvgId: 'slot.tv', chno: '14', url: `${upB.base}/live/slot.ts` },
    { name: 'Busy B', tvgId: 'busy.tv', chno: '15', url: `${upB.base}/live/busy.ts` },
  ]));
  const c = await write(dir, 'c.m3u', m3u([
    { name: 'Slot C', tvgId: 'slot.tv', chno: '21', url: `${upX.base}/live/slot-c.ts` },
    { name: 'Solo C', tvgId: 'solo-c.tv', chno: '22', url: `${upX.base}/live/solo-c.ts` },
  ]));
  // One programme on News from now on: a recording of it starts at once, without a lead gap.
  const t0 = Date.now();
  const guide = await write(dir, 'guide.xml', xmltv([{ id: 'news.tv', names: ['News'] }], [
    { channel: 'news.tv', start: xt(new Date(t0 - 1000).toISOString()), stop: xt(new Date(t0 + 3_600_000).toISOString()), title: 'The news' },
  ]));
  const host: TestHost = await createTestHost({
    listen: true,
    plugins: {
      'live-tv': { initialImport: 'await', merge: 'tvg-id', idleTimeout: '30s', readyTimeout: '20s', stallTimeout: '3s', failoverCooldown: '5m' },
      'm3u-tuner': { sources: [{ name: 'A', url: a, maxStreams: 1 }, { name: 'B', url: b, maxStreams: 1 }, { name: 'C', url: c, maxStreams: 1 }] },
      'xmltv-guide': { sources: [{ url: guide }], maxAge: '100000d' },
      dvr: { path: path.join(dir, 'recordings'), prePadding: '0s', postPadding: '0s' },
    },
  });
  t.teardown(() => host.close());
  const token = host.adminToken;
  const headers = { authorization: `Bearer ${token}` };
  const all = await channels(host);
  const id = (name: string) => all.find((x) => x.name === name)!.id;
  const watch = (cid: number) => host.inject({ method: 'GET', url: `/watch/live/${cid}`, headers });
  const health = async (cid: number) => {
    const list = (await host.inject({ method: 'GET', url: '/api/admin/channels', headers })).json().channels as any[];
    return list.find((x) => x.id === cid).streams as { id: number; source: string; state: string; last_failure: { reason: string; at: string } | null; viewers: number }[];
  };
  const stopAll = async () => {
    for (const j of host.host.jobs.list()) if (j.key.startsWith('live:')) await host.host.jobs.get(j.key)?.stop('test');
  };

  t.test('the upstream dies mid-stream: the viewer keeps getting frames, the recording has one gap', async (t) => {
    const news = id('News');
    const first = await watch(news);
    t.equal(first.statusCode, 200, `News plays (${first.body.slice(0, 200)})`);
    const rec = await host.inject({ method: 'POST', url: '/recordings', headers, payload: { channel_id: news, program_id: (await programmeOf(host, news)) } });
    t.equal(rec.statusCode, 201, rec.body);
    const recId = rec.json().id as number;
    const player = decode(`${host.url}/watch/live/${news}?api_key=${encodeURIComponent(token)}`, 18);
    await sleep(3000);
    let streams = await health(news);
    t.match(streams.map((s) => [s.source, s.state]), [['m3u:A', 'playing'], ['m3u:B', 'standby']], 'A plays');
    t.ok(streams[0].viewers >= 1, `A has its viewer (${streams[0].viewers})`);
    const windowAtKill = host.host.jobs.get<{ timeline: { windowSeconds(): number } }>(`live:${news}`)!.data.timeline.windowSeconds();
    await upA.close(); // the upstream dies: its connection closes, its ffmpeg is killed
    // Everything of the first stream was in the window when it died (but the segment its ffmpeg
    // was writing): a decoder that got more than that got frames of the second stream.
    const decoded = await player;
    const seconds = decoded.pts.length / 25;
    t.ok(seconds >= windowAtKill + 2 + 2, `the decoder got ${seconds.toFixed(1)} s of video, more than the ${windowAtKill.toFixed(1)} s there were when the upstream died (+ a segment) (exit ${decoded.code})${seconds < windowAtKill + 4 ? `: ${decoded.stderr.slice(-500)}` : ''}`);
    streams = await health(news);
    t.match(streams.map((s) => [s.source, s.state]), [['m3u:A', 'cooldown'], ['m3u:B', 'playing']], 'B plays now, A is passed over');
    t.match(streams[0].last_failure, { reason: /ended the stream|sent nothing|stopped|refused/, at: /^\d{4}-\d\d-\d\dT/ }, `A's failure is noted (${JSON.stringify(streams[0].last_failure)})`);
    t.equal(streams[1].last_failure, null, 'B has not failed');
    t.equal(upB.connections('/live/news.ts'), 1, 'one connection to B');
    // The URLs viewers hold go on: HLS after a discontinuity, DASH in a new Period.
    const master = (await watch(news)).body;
    const mediaUri = master.split('\n').find((l) => l.trim() && !l.startsWith('#'))!;
    const mediaUrl = new URL(mediaUri, `${host.url}/watch/live/${news}`);
    const media = await host.inject({ method: 'GET', url: mediaUrl.pathname + mediaUrl.search });
    t.equal(media.statusCode, 200, 'the media playlist URL of before the failover answers');
    t.equal(media.body.split('\n').filter((l) => l.trim() === '#EXT-X-DISCONTINUITY').length, 1, 'with one discontinuity');
    const mpd = await host.inject({ method: 'GET', url: `/watch/live/${news}/master.mpd`, headers });
    t.equal(mpd.body.match(/<Period\b/g)?.length, 2, 'the MPD has two Periods');
    // The recording: two parts, one gap between them, no more.
    const r = await waitFor(async () => {
      const body = (await host.inject({ method: 'GET', url: `/recordings/${recId}`, headers })).json();
      return body.gaps.length >= 1 && body.duration >= 12 ? body : undefined;
    }, 20_000, 500);
    t.ok(r, 'the recording goes on after the failover');
    t.equal(r?.gaps.length, 1, `one gap (${JSON.stringify(r?.gaps)})`);
    const gap = r ? Date.parse(r.gaps[0].stop) - Date.parse(r.gaps[0].start) : 0;
    t.ok(gap > 0 && gap < 15_000, `the gap is the real one: ${gap} ms`);
    t.equal((await host.inject({ method: 'DELETE', url: `/recordings/${recId}`, headers })).statusCode, 200);
    await stopAll();
  });

  t.test('the first stream answers 404 at tune: the second plays', async (t) => {
    const miss = id('Miss');
    const res = await watch(miss);
    t.equal(res.statusCode, 200, `Miss plays (${res.body.slice(0, 200)})`);
    const streams = await health(miss);
    t.match(streams.map((s) => [s.source, s.state]), [['m3u:A', 'cooldown'], ['m3u:B', 'playing']]);
    t.match(streams[0].last_failure, { reason: 'the source answered HTTP 404' });
    t.equal(upX.connections('/live/miss.ts'), 1, 'the 404 stream was asked once');
    // Asked again within the cooldown, the failed stream is passed over at once.
    await stopAll();
    t.equal((await watch(miss)).statusCode, 200);
    t.equal(upX.connections('/live/miss.ts'), 1, 'the failed stream is not asked again within failoverCooldown');
    await stopAll();
  });

  t.test('every stream dead: 502', async (t) => {
    const res = await watch(id('Dead'));
    expectError(t, res, 502, /cannot be played: the source refused the connection/);
    const streams = await health(id('Dead'));
    t.match(streams.map((s) => [s.state, s.last_failure?.reason]), [
      ['cooldown', 'the source refused the connection'], ['cooldown', 'the source refused the connection'],
    ], 'both marked');
    await stopAll();
  });

  t.test('slots per source across a failover: a full source is passed over, the old slot given back', async (t) => {
    const slot = id('Slot');
    const [busy, first] = await Promise.all([watch(id('Busy B')), watch(slot)]);
    t.equal(busy.statusCode, 200, 'Busy B fills source B (maxStreams 1)');
    t.equal(first.statusCode, 200, 'Slot plays on A');
    t.equal((await watch(id('Solo A'))).statusCode, 409, 'A is full');
    // A's stream of Slot stalls (its encoder stopped, the connection open): B is full, so C takes it.
    for (const pid of upX.alivePids()) killGroup(pid, 'SIGSTOP');
    const moved = await waitFor(async () => (await health(slot)).find((s) => s.state === 'playing')?.source === 'm3u:C', 30_000, 250);
    t.ok(moved, 'Slot moved to C');
    const streams = await health(slot);
    t.match(streams.map((s) => [s.source, s.state]), [['m3u:A', 'cooldown'], ['m3u:B', 'standby'], ['m3u:C', 'playing']], 'B (full) passed over');
    t.match(streams[0].last_failure, { reason: 'the source sent nothing for 3 s' }, 'the stall is the reason');
    t.equal(upB.connections('/live/slot.ts'), 0, 'B was never asked for it');
    t.ok(await waitFor(async () => (await watch(id('Solo A'))).statusCode === 200, 20_000, 500), "A's slot was given back: another channel of A plays");
    t.equal((await watch(id('Solo C'))).statusCode, 409, "C's slot is taken by Slot");
    t.equal(upB.openConnections('/live/busy.ts'), 1, 'Busy B plays on');
    await stopAll();
  });
});

/** A player (ffmpeg) decoding the video of `url` for `limit` seconds of timestamps: each frame's pts (s). */
/** The id of the programme on air on a channel (from /programs). */
async function programmeOf(host: TestHost, channelId: number): Promise<number> {
  const body = (await host.inject({ method: 'GET', url: '/programs', headers: { authorization: `Bearer ${host.adminToken}` } })).json();
  const c = body.channels.find((x: any) => x.id === channelId);
  return c.programs[0].id;
}
