/**
 * Recording end to end: `antenna serve` in its own process, the test upstream
 * (realtime MPEG-TS from ffmpeg), m3u-tuner, a guide of 30-second programmes.
 * Records the programme on air, the next and the one after; plays a recording
 * in progress and finished ones with ffmpeg (HLS and DASH); SIGKILLs the server
 * in the middle of a recording and checks that, after a restart, the
 * interrupted recording and the scheduled one both end completed and playable.
 * Takes about two minutes: the programmes are real half-minutes.
 */
import t from 'tap';
import { existsSync } from 'node:fs';
import path from 'node:path';
import * as HLS from 'hls-parser';
import { expectFetchError } from '../../helpers/http.js';
import { checkMpd, validateDash, validateHls } from '../../helpers/manifest-validator.js';
import { killGroup, pidAlive, startUpstream, type Upstream } from '../../helpers/upstream.js';
import { closedPort, m3u, tempDir, write } from '../live-tv/fixtures.js';
import { ADMIN_PASSWORD, decode, guideByName, logTail, playerPids, programmeAt, slotAt, slotGuide, startServer, waitListening, type Server } from './fixtures.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const mpdParser: { parse(text: string, options: { manifestUri: string; NOW?: number }): any } = require('mpd-parser');
HLS.setOptions({ strictMode: true, silent: true });

t.setTimeout(540_000);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const PAD_MS = 5000;
/** The guide's programme length. */
const SLOT = 30_000;

t.test('recording end to end, through a SIGKILL of the server', async (t) => {
  const upstream: Upstream = await startUpstream();
  t.teardown(async () => {
    await upstream.close();
    for (const pid of playerPids) killGroup(pid);
  });
  const dir = await tempDir(t, 'antenna-dvr-record-');
  const port = await closedPort();
  const base = `http://127.0.0.1:${port}`;
  await write(dir, 'tv.m3u', m3u([
    { name: 'One', tvgId: 'one', chno: '1', url: `${upstream.base}/live/one.ts` },
    { name: 'Two', tvgId: 'two', chno: '2', url: `${upstream.base}/live/two.ts` },
  ]));
  const t0 = Date.now();
  await write(dir, 'guide.xml', slotGuide(['one', 'two'], t0, -10, 30, undefined, SLOT));
  const config = await write(dir, 'antenna.yaml', [
    `server: { host: 127.0.0.1, port: ${port}, dataDir: ./data }`,
    'logging: { level: info }',
    'plugins:',
    '  live-tv: { initialImport: await, idleTimeout: 10s, readyTimeout: 20s }',
    '  m3u-tuner: { sources: [ { name: Main, url: ./tv.m3u, maxStreams: 4 } ] }',
    '  xmltv-guide: { sources: [ { url: ./guide.xml } ], maxAge: 100000d }',
    `  dvr: { path: ./recordings, prePadding: ${PAD_MS / 1000}s, postPadding: ${PAD_MS / 1000}s }`,
  ].join('\n') + '\n');
  const logFile = path.join(dir, 'server.log');
  let server: Server = startServer(dir, config, logFile);
  t.teardown(async () => {
    if (server.proc.exitCode === null && server.proc.signalCode === null) {
      server.proc.kill('SIGTERM');
      await Promise.race([server.exited, sleep(15_000)]);
      if (server.proc.exitCode === null) server.proc.kill('SIGKILL');
    }
  });
  await waitListening(base, server);
  const login = await fetch(`${base}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }) });
  const token: string = ((await login.json()) as any).auth.token;
  const headers = { authorization: `Bearer ${token}` };
  const get = async (u: string): Promise<any> => {
    const res = await fetch(base + u, { headers });
    if (!res.ok) throw new Error(`GET ${u}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  const post = (body: unknown) => fetch(`${base}/recordings`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const rec = (id: number) => get(`/recordings/${id}`);
  const watch = (id: number, rest = '') => `${base}/watch/recording/${id}${rest}?api_key=${encodeURIComponent(token)}`;
  /** The message, with the server's last log lines when the check failed. */
  const why = (ok: boolean, what: string) => (ok ? what : `${what}\nserver log:\n${logTail(logFile)}`);

  // The on-air programme needs time left to be watched while it records: start early in a slot.
  if (Date.now() % SLOT > 12_000) await sleep(SLOT - (Date.now() % SLOT) + 1000);
  const now = Date.now();
  const guide = await guideByName(get);
  const p0 = programmeAt(guide, 'One', slotAt(now, 0, SLOT));
  const p1 = programmeAt(guide, 'One', slotAt(now, 1, SLOT));
  const p2 = programmeAt(guide, 'One', slotAt(now, 2, SLOT));
  const p5 = programmeAt(guide, 'One', slotAt(now, 5, SLOT));
  const two = programmeAt(guide, 'Two', slotAt(now, 0, SLOT));
  const create = async (p: { channelId: number; programme: { id: number } }, status: string) => {
    const res = await post({ channel_id: p.channelId, program_id: p.programme.id });
    const body = (await res.json()) as any;
    t.equal(res.status, 201, `201 (${JSON.stringify(body)})`);
    t.equal(body.status, status, `${body.title}: ${status}`);
    return body.id as number;
  };

  const ids = { p0: 0, p1: 0, p2: 0, p5: 0, two: 0 };
  t.test('schedule the programme on air, the next one and later ones', async (t) => {
    ids.p0 = await create(p0, 'recording');
    ids.p1 = await create(p1, 'scheduled');
    ids.p2 = await create(p2, 'scheduled');
    ids.p5 = await create(p5, 'scheduled');
    ids.two = await create(two, 'recording');
  });

  t.test('past → 400, duplicate → 409, malformed → 400, no token → 401', async (t) => {
    const past = programmeAt(guide, 'One', slotAt(now, -3, SLOT));
    let res = await post({ channel_id: past.channelId, program_id: past.programme.id });
    expectFetchError(t, res, await res.text(), 400, /already over/, 'past');
    res = await post({ channel_id: p1.channelId, program_id: p1.programme.id });
    expectFetchError(t, res, await res.text(), 409, /already recorded/, 'duplicate');
    res = await post({ channel_id: p1.channelId });
    expectFetchError(t, res, await res.text(), 400, /program_id/, 'malformed');
    res = await fetch(`${base}/recordings`);
    expectFetchError(t, res, await res.text(), 401, undefined, 'GET /recordings without token');
    res = await fetch(`${base}/watch/recording/${ids.p0}`);
    expectFetchError(t, res, await res.text(), 401, undefined, 'watch without token');
  });

  const recordedAtLeast = async (id: number, seconds: number, timeoutMs: number) => {
    let r: any;
    for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(1000)) {
      r = await rec(id);
      if (r.duration >= seconds) break;
    }
    return r;
  };

  t.test('a recording in progress: an EVENT playlist that ffmpeg plays, a live viewer sharing the upstream', async (t) => {
    const r = await recordedAtLeast(ids.p0, 6, 30_000);
    t.ok(r.duration >= 6 && r.size_bytes > 0, why(r.duration >= 6 && r.size_bytes > 0, `recording: ${r.duration} s, ${r.size_bytes} bytes`));
    const master = await fetch(watch(ids.p0));
    t.equal(master.status, 200);
    t.match(master.headers.get('content-type'), /mpegurl/);
    const text = await master.text();
    t.notOk(text.includes(token), 'no token in the master playlist');
    const parsed = HLS.parse(text) as HLS.types.MasterPlaylist;
    const report = await validateHls(watch(ids.p0));
    t.strictSame(report.problems, [], 'the manifest validator passes the recording in progress (HLS)');
    const mediaUrl = new URL(parsed.variants[0].uri, base);
    t.ok(mediaUrl.searchParams.get('key'), 'media playlist URL with a signed key');
    const media = HLS.parse(await (await fetch(mediaUrl)).text()) as HLS.types.MediaPlaylist;
    t.equal(media.playlistType, 'EVENT', 'EVENT while recording');
    t.equal(media.endlist, false, 'no ENDLIST yet');
    t.ok(media.segments.length >= 3, `${media.segments.length} segments so far`);
    const seg = await fetch(new URL(media.segments[0].uri, base));
    t.equal(seg.status, 200, 'a segment plays without the token');
    const d = await decode(watch(ids.p0), 4);
    t.ok(d.seconds >= 3.5, `ffmpeg decoded ${d.seconds.toFixed(2)} s of the recording in progress${d.seconds < 3.5 ? `: ${d.stderr}` : ''}`);

    const live = await fetch(`${base}/watch/live/${p0.channelId}?api_key=${encodeURIComponent(token)}`);
    t.equal(live.status, 200, 'the channel plays live meanwhile');
    await live.text();
    t.equal(upstream.connections('/live/one.ts'), 1, 'recording and viewer: one upstream connection');
    t.equal(upstream.peakConnections('/live/one.ts'), 1);
  });

  t.test('DASH-only client: 302 to a keyed master.mpd, a dynamic MPD', async (t) => {
    const res = await fetch(`${base}/watch/recording/${ids.p0}`, { headers: { ...headers, 'Device-OS': 'STB' }, redirect: 'manual' });
    t.equal(res.status, 302);
    const location = new URL(res.headers.get('location') ?? '/', base);
    t.equal(location.pathname, `/watch/recording/${ids.p0}/master.mpd`);
    t.ok(location.searchParams.get('key'), 'with a signed key');
    t.notOk(location.href.includes(token), 'not the token');
    const mpd = await fetch(location);
    t.equal(mpd.status, 200);
    const text = await mpd.text();
    t.match(text, /type="dynamic"/, 'dynamic while recording');
    t.strictSame(checkMpd(text).problems, [], 'the manifest validator passes the dynamic MPD');
    const report = await validateDash(location.href);
    t.strictSame(report.problems, [], 'and the whole DASH presentation');
    const parsed = mpdParser.parse(text, { manifestUri: location.href, NOW: Date.now() });
    t.ok(parsed.playlists[0].segments.length >= 3, 'mpd-parser lists its segments');
    const android = await fetch(`${base}/watch/recording/${ids.p0}`, { headers: { ...headers, 'Device-OS': 'Android 14' }, redirect: 'manual' });
    t.equal(android.status, 302, 'Android too');
    const ios = await fetch(`${base}/watch/recording/${ids.p0}`, { headers: { ...headers, 'Device-OS': 'iOS' }, redirect: 'manual' });
    t.equal(ios.status, 200, 'iOS gets HLS');
  });

  t.test('cancel a running recording (it keeps what it has) and a scheduled one', async (t) => {
    const r = await recordedAtLeast(ids.two, 4, 30_000);
    t.ok(r.duration >= 4, why(r.duration >= 4, `Two recorded ${r.duration} s`));
    let res = await fetch(`${base}/recordings/${ids.two}`, { method: 'DELETE', headers });
    t.equal(res.status, 200);
    t.strictSame(await res.json(), { ok: true });
    t.match(await rec(ids.two), { status: 'cancelled' });
    const media = HLS.parse(await (await fetch(watch(ids.two, '/hls/video.m3u8'))).text()) as HLS.types.MediaPlaylist;
    t.equal(media.endlist, true, 'what was recorded plays as VOD');
    res = await fetch(`${base}/recordings/${ids.p5}`, { method: 'DELETE', headers });
    t.equal(res.status, 200);
    t.match(await rec(ids.p5), { status: 'cancelled' });
  });

  const statuses: string[] = [];
  t.test('the next programme: scheduled → recording; SIGKILL of the server mid-recording', async (t) => {
    for (const deadline = Date.parse(p1.programme.start) + 40_000; Date.now() < deadline; await sleep(1000)) {
      const r = await rec(ids.p1);
      if (statuses[statuses.length - 1] !== r.status) statuses.push(r.status);
      if (r.status === 'recording' && r.duration >= 8) break;
    }
    t.strictSame(statuses, ['scheduled', 'recording'], 'scheduled, then recording');
    // It ends as the next one has about 10 s; its last part is closed on the DVR's next poll, later under load.
    let p0done = await rec(ids.p0);
    for (const deadline = Date.now() + 20_000; p0done.status === 'recording' && Date.now() < deadline; await sleep(1000)) p0done = await rec(ids.p0);
    t.equal(p0done.status, 'completed', why(p0done.status === 'completed', 'the on-air programme completed'));
    server.proc.kill('SIGKILL');
    t.equal((await server.exited).signal, 'SIGKILL', 'the server is gone');
    server = startServer(dir, config, logFile);
    await waitListening(base, server);
    const after = await rec(ids.p1);
    t.equal(after.status, 'recording', 'after the restart the interrupted recording records again');
    t.ok(['scheduled', 'recording'].includes((await rec(ids.p2)).status), 'the scheduled one is still there');
  });

  t.test('after the restart: both end completed and play', async (t) => {
    let r2: any;
    const until = Date.parse(p2.programme.stop) + PAD_MS + 30_000;
    for (; Date.now() < until; await sleep(2000)) {
      r2 = await rec(ids.p2);
      const r1 = await rec(ids.p1);
      if (statuses[statuses.length - 1] !== r1.status) statuses.push(r1.status);
      if (r2.status !== 'scheduled' && r2.status !== 'recording' && r1.status !== 'recording') break;
    }
    const r1 = await rec(ids.p1);
    t.equal(r1.status, 'completed', why(r1.status === 'completed', `interrupted: ${JSON.stringify(r1)}`));
    t.ok(r1.gaps.length >= 1, `the gap is noted (${JSON.stringify(r1.gaps)})`);
    t.equal(r2?.status, 'completed', why(r2?.status === 'completed', `scheduled: ${JSON.stringify(r2)}`));
    t.strictSame(statuses, ['scheduled', 'recording', 'completed'], 'scheduled → recording → completed');

    const media = HLS.parse(await (await fetch(watch(ids.p1, '/hls/video.m3u8'))).text()) as HLS.types.MediaPlaylist;
    t.equal(media.playlistType, 'VOD');
    t.equal(media.endlist, true);
    t.ok(media.segments.some((s) => s.discontinuity), 'its parts are joined with a discontinuity');
    // ffmpeg ignores the discontinuity: it plays both parts only when the second's timestamps follow the first's.
    const d1 = await decode(watch(ids.p1), 120);
    const both = d1.seconds >= 15 && d1.seconds >= r1.duration - 1 && d1.monotonic;
    t.ok(both, `interrupted: ffmpeg decoded ${d1.seconds.toFixed(1)} s of ${r1.duration} s recorded, in order: ${d1.monotonic}${both ? '' : `: ${d1.stderr}`}`);

    const d2 = await decode(watch(ids.p2), 120);
    t.ok(d2.seconds >= 25, `scheduled: ffmpeg decoded ${d2.seconds.toFixed(1)} s of the 30 s programme (HLS)${d2.seconds < 25 ? `: ${d2.stderr}` : ''}`);
    const mpdText = await (await fetch(watch(ids.p2, '/master.mpd'))).text();
    t.match(mpdText, /type="static"/, 'a static MPD once complete');
    t.match(mpdText, /<Period id="\d+" start="PT0\.000S"/, 'starting at 0');
    const hlsReport = await validateHls(watch(ids.p1));
    t.strictSame(hlsReport.problems, [], 'the manifest validator passes the completed recording of two parts (HLS: equal target durations, ENDLIST)');
    const dashReport = await validateDash(watch(ids.p1, '/master.mpd'));
    t.strictSame(dashReport.problems, [], 'and its static MPD');
    const dd = await decode(watch(ids.p2, '/master.mpd'), 120);
    t.ok(dd.seconds >= 25, `ffmpeg decoded ${dd.seconds.toFixed(1)} s of it as DASH${dd.seconds < 25 ? `: ${dd.stderr}` : ''}`);
    const p0done = await rec(ids.p0);
    const d0 = await decode(watch(ids.p0), 120);
    t.ok(d0.seconds >= p0done.duration - 4, `the on-air one: ${d0.seconds.toFixed(1)} s decoded of ${p0done.duration} s`);
  });

  t.test('delete a finished recording: its files go', async (t) => {
    const folder = path.join(dir, 'recordings', String(ids.p0));
    t.ok(existsSync(folder), 'its folder exists');
    const res = await fetch(`${base}/recordings/${ids.p0}`, { method: 'DELETE', headers });
    t.equal(res.status, 200);
    t.strictSame(await res.json(), { ok: true });
    t.notOk(existsSync(folder), 'its folder is gone');
    const gone = await fetch(`${base}/recordings/${ids.p0}`, { headers });
    expectFetchError(t, gone, await gone.text(), 404, undefined, 'the recording is gone');
    const play = await fetch(watch(ids.p0));
    expectFetchError(t, play, await play.text(), 404, undefined, 'and cannot be played');
    t.ok((await get('/recordings')).every((r: any) => r.id !== ids.p0), 'nor listed');
  });

  t.test('a clean stop leaves nothing running', async (t) => {
    server.proc.kill('SIGTERM');
    t.equal((await server.exited).code, 0, 'the server exits cleanly');
    for (const deadline = Date.now() + 10_000; Date.now() < deadline && upstream.openConnections('/live/one.ts') > 0; await sleep(250));
    t.equal(upstream.openConnections('/live/one.ts'), 0, 'no upstream connection left open');
    t.strictSame([...playerPids].filter(pidAlive), [], 'no player left');
  });
});
