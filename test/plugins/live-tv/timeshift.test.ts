/**
 * The time-shift window of live sessions over a real upstream and ffmpeg:
 *
 *  - a viewer who pauses (reloads its playlist, fetches no segment) keeps the
 *    session past idleTimeout while its position is inside the window; the
 *    window slides under timeshiftMaxBytes (old segments leave the playlist
 *    and the disk); once the position has left the window the session stops
 *    after idleTimeout, and its files go;
 *  - after a burst faster than real time (a provider's backlog) and a restart of
 *    the upstream, the disk stays under the cap: nothing outlives the window
 *    without a holder, and an ended run leaves no ffmpeg files behind;
 *  - a viewer who leaves: the session stops after idleTimeout;
 *  - play-info's keyed URLs play without any header, down to the segments, in
 *    HLS and DASH; a key of one channel opens no other; an expired key gives 401;
 *    MPD updates (Location) never start a channel;
 *  - start over (`?start=program`): EXT-X-START and the DASH delay land at the
 *    programme's start when the window holds it, else at the window's start.
 */
import t from 'tap';
import { existsSync } from 'node:fs';
import { createTestHost, type TestHost } from '../../../sdk/testing.js';
import { diskBytes } from '../../helpers/disk.js';
import { expectError } from '../../helpers/http.js';
import { checkHlsMaster, checkHlsMedia, checkMpd, durationSeconds, validateDash, validateHls, type Fetcher } from '../../helpers/manifest-validator.js';
import { startUpstream } from '../../helpers/upstream.js';
import { channels, m3u, tempDir, write, xmltv, xt } from './fixtures.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.setTimeout(300_000);
/** The window's disk cap: about 50 s of the upstream below (~0.33 Mb/s with the session's AAC), more than the 30 s live playback needs. */
const CAP = 2 * 2 ** 20;
const IDLE_MS = 5000;

/** A small, steady upstream: 320x180 at 250 kb/s, keyframes every second. */
const SMALL = [
  '-re', '-f', 'lavfi', '-i', 'testsrc2=size=320x180:rate=25', '-re', '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000',
  '-c:v', 'libx264', '-preset', 'ultrafast', '-tune', 'zerolatency', '-pix_fmt', 'yuv420p', '-g', '25',
  '-b:v', '250k', '-maxrate', '250k', '-bufsize', '250k', '-c:a', 'aac',
];
/** The same as fast as it encodes, 70 s of it (more than the cap holds), then the connection ends. */
const BURST = [...SMALL.filter((a) => a !== '-re'), '-t', '70'];

/** The wall-clock time (ms) a player lands at from a media playlist's EXT-X-START, and the playlist's own span. */
function startOf(text: string): { landing?: number; first: number; end: number } {
  const pdt = /#EXT-X-PROGRAM-DATE-TIME:(.*)/.exec(text);
  const first = pdt ? Date.parse(pdt[1]) : NaN;
  const seconds = checkHlsMedia(text).playlist!.segments.reduce((n, s) => n + s.duration, 0);
  const end = first + seconds * 1000;
  const offset = /#EXT-X-START:TIME-OFFSET=(-?[\d.]+)/.exec(text);
  return { landing: offset ? end + Number(offset[1]) * 1000 : undefined, first, end };
}

t.test('time-shift window', async (t) => {
  const upstream = await startUpstream();
  t.teardown(() => upstream.close());
  for (const name of ['paused', 'keyed', 'program', 'other']) upstream.encode(`/live/${name}.ts`, SMALL);
  upstream.encode('/live/refilled.ts', BURST);
  const dir = await tempDir(t, 'antenna-timeshift-');
  const list = await write(dir, 'tv.m3u', m3u(['Paused', 'Keyed', 'Program', 'Other', 'Refilled'].map((name, i) => ({
    name, tvgId: name.toLowerCase(), chno: String(i + 1), url: `${upstream.base}/live/${name.toLowerCase()}.ts`,
  }))));
  // The guide: on "Program", a programme that begins 20 s from now (inside the window once it has).
  const programStart = Math.ceil((Date.now() + 20_000) / 1000) * 1000;
  const iso = (ms: number) => new Date(ms).toISOString();
  const guideFile = await write(dir, 'guide.xml', xmltv([{ id: 'program', names: ['Program'] }, { id: 'keyed', names: ['Keyed'] }], [
    { channel: 'program', start: xt(iso(programStart - 3600_000)), stop: xt(iso(programStart)), title: 'Before' },
    { channel: 'program', start: xt(iso(programStart)), stop: xt(iso(programStart + 7200_000)), title: 'Now on' },
    { channel: 'keyed', start: xt(iso(programStart - 3600_000)), stop: xt(iso(programStart + 7200_000)), title: 'Long ago' },
  ]));
  let skew = 0;
  const host: TestHost = await createTestHost({
    listen: true,
    clock: { now: () => Date.now() + skew },
    plugins: {
      'live-tv': { initialImport: 'await', idleTimeout: `${IDLE_MS / 1000}s`, readyTimeout: '30s', timeshift: '2h', timeshiftMaxBytes: CAP },
      'm3u-tuner': { sources: [{ name: 'Main', url: list, maxStreams: 5, refresh: '1000d' }] },
      'xmltv-guide': { sources: [{ url: guideFile, refresh: '1000d' }] },
    },
  });
  t.teardown(() => host.close());
  const all = await channels(host);
  const id = (name: string) => all.find((c) => c.name === name)!.id;
  await host.createUser('viewer', 'viewer-password-1');
  const viewer = await host.login('viewer', 'viewer-password-1', { 'device-id': 'viewer-tv' });
  const admin = encodeURIComponent(host.adminToken);
  const job = (cid: number) => host.host.jobs.get<{ dir: string; timeline: { firstSequence: number; playable(): boolean } }>(`live:${cid}`);
  const get = (url: string, headers: Record<string, string> = {}) => fetch(new URL(url, host.url), { headers });
  const text = async (url: string, headers: Record<string, string> = {}) => {
    const res = await get(url, headers);
    if (res.status !== 200) throw new Error(`${url.split('?')[0]}: ${res.status} ${await res.text()}`);
    return res.text();
  };
  /** A fetcher that sends no header at all: what a player handed a URL does. */
  const bare: Fetcher = async (url) => {
    const res = await fetch(url);
    return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
  };

  // "Program" runs from now on (its programme begins inside the window); kept alive meanwhile.
  const programId = id('Program');
  const keyedId = id('Keyed');
  const otherId = id('Other');
  await text(`/watch/live/${programId}?api_key=${admin}`);
  const keepProgram = setInterval(() => {
    for (const cid of [programId, keyedId]) void get(`/watch/live/${cid}?api_key=${admin}`).catch(() => {});
  }, 2000);
  t.teardown(() => clearInterval(keepProgram));

  // "Paused": a viewer watches a moment, then pauses; it goes on reloading its playlist every 2 s.
  const pausedId = id('Paused');
  const paused = (async () => {
    const auth = { authorization: `Bearer ${viewer}` };
    const master = checkHlsMaster(await text(`/watch/live/${pausedId}`, auth));
    const videoUrl = master.variants[0].uri;
    // It watches for 10 s (each new segment as it comes), then pauses.
    let position = 0;
    for (const until = Date.now() + 10_000; Date.now() < until; await sleep(1000)) {
      const p = checkHlsMedia(await text(videoUrl)).playlist!;
      const newest = p.segments[p.segments.length - 1];
      if (newest.sequence > position && (await get(newest.uri)).status === 200) position = newest.sequence;
    }
    const sessionDir = job(pausedId)!.data.dir;
    const pausedAt = Date.now();
    const samples: { at: number; alive: boolean; disk: number; mediaSequence: number; seconds: number }[] = [];
    let leftAt: number | undefined;
    let endedAt: number | undefined;
    let oldSegment: { uri: string; status: number } | undefined;
    let firstSegment: { uri: string; status: number } | undefined;
    while (Date.now() - pausedAt < 200_000) {
      const j = job(pausedId);
      if (!j) { endedAt = Date.now(); break; }
      if (leftAt === undefined && j.data.timeline.firstSequence > position) leftAt = Date.now();
      const res = await get(videoUrl);
      if (res.status === 200) {
        const p = checkHlsMedia(await res.text()).playlist!;
        samples.push({ at: Date.now() - pausedAt, alive: true, disk: await diskBytes(sessionDir), mediaSequence: p.mediaSequence, seconds: p.segments.reduce((n, s) => n + s.duration, 0) });
        // Once the window has slid: a segment before it is gone, its first is there (asked by another viewer, before this one's position leaves).
        if (!oldSegment && p.mediaSequence > 2 && p.mediaSequence < position) {
          const old = p.segments[0].uri.replace(/video-(\d+)\.m4s/, (_, n) => `video-${Number(n) - 2}.m4s`).replace(/key=[^&]*/, `api_key=${admin}`);
          const firstUri = p.segments[0].uri.replace(/key=[^&]*/, `api_key=${admin}`);
          oldSegment = { uri: old, status: (await get(old)).status };
          firstSegment = { uri: firstUri, status: (await get(firstUri)).status };
        }
      }
      await sleep(2000);
    }
    return { position, pausedAt, sessionDir, samples, leftAt, endedAt, oldSegment, firstSegment };
  })();

  // "Refilled": the upstream's first connection delivers 70 s at once and ends; the session
  // restarts on it in real time. A viewer watches until the window has slid past the burst.
  const refilledId = id('Refilled');
  const refilled = (async () => {
    const path = '/live/refilled.ts';
    // The burst takes the CPU for a moment: once the other channels have started (ffmpeg probes
    // their first seconds, and a starved upstream hides their frame rate).
    for (const cid of [programId, keyedId, pausedId]) while (!job(cid)?.data.timeline.playable()) await sleep(200);
    const tuned = text(`/watch/live/${refilledId}?api_key=${admin}`);
    while (upstream.connections(path) < 1) await sleep(50);
    upstream.encode(path, SMALL); // the next connection plays in real time
    const videoUrl = checkHlsMaster(await tuned).variants[0].uri;
    const sessionDir = job(refilledId)!.data.dir;
    while (upstream.connections(path) < 2) {
      if (!job(refilledId)) throw new Error('the session ended');
      await get(videoUrl); // keeps the session
      await sleep(500);
    }
    // The first run has ended: its ffmpeg files went with it.
    const firstRunFfmpeg = existsSync(`${sessionDir}/0/ffmpeg`);
    const samples: { disk: number; periods: number; seconds: number; longest: number }[] = [];
    for (const started = Date.now(); Date.now() - started < 150_000;) {
      const res = await get(videoUrl);
      // A machine short of CPU may restart the session's ffmpeg: what the disk holds is asked here, not that.
      if (res.status !== 200) { await sleep(1000); continue; }
      const p = checkHlsMedia(await res.text()).playlist!;
      samples.push({
        disk: await diskBytes(sessionDir), periods: 1 + p.segments.filter((s) => s.discontinuity).length,
        seconds: p.segments.reduce((n, s) => n + s.duration, 0), longest: Math.max(...p.segments.map((s) => s.duration)),
      });
      // Done once the window has slid past the burst (both runs listed, then one) and a few samples more.
      if (slidPast(samples).length >= 3) break;
      await sleep(1000);
    }
    return { firstRunFfmpeg, samples, firstRunGone: !existsSync(`${sessionDir}/0`) };
  })();

  t.test('play-info: keyed URLs play without any header, down to the segments', async (t) => {
    const auth = { authorization: `Bearer ${viewer}` };
    const info = await (await get(`/watch/live/${keyedId}/play-info`, auth)).json() as any;
    t.match(info, { method: 'live', url: new RegExp(`^/watch/live/${keyedId}\\?key=[\\w.-]+$`), format: 'hls', timeshift: 7200 }, 'HLS master URL with a key, and the window');
    t.notOk(String(info.url).includes(viewer), 'the token is not in the URL');
    const hls = await validateHls(new URL(info.url, host.url).href, { fetch: bare });
    t.strictSame(hls.problems, [], 'master, media playlists, init and media segments: all 200 without a header, and valid');
    t.ok([...hls.playlists.values()].every((p) => p.segments.length >= 3), 'with segments');

    const dash = await (await get(`/watch/live/${keyedId}/play-info`, { ...auth, 'Device-OS': 'STB' })).json() as any;
    t.match(dash, { method: 'live', url: new RegExp(`^/watch/live/${keyedId}/master\\.mpd\\?key=[\\w.-]+$`), format: 'dash', timeshift: 7200 }, 'DASH-only devices: the MPD');
    const mpdUrl = new URL(dash.url, host.url).href;
    const report = await validateDash(mpdUrl, { fetch: bare });
    t.strictSame(report.problems, [], 'the MPD and its segments, without a header');
    const mpd = await (await fetch(mpdUrl)).text();
    const location = /<Location>([^<]*)<\/Location>/.exec(mpd)?.[1]?.replace(/&amp;/g, '&');
    t.match(location, /^master\.mpd\?key=[\w.-]+&refresh=1$/, 'updates come from Location');
    const update = await fetch(new URL(location!, mpdUrl));
    t.equal(update.status, 200, 'which answers without a header');
    t.strictSame(checkMpd(await update.text()).problems, [], 'a valid MPD');
    const tsbd = durationSeconds(/timeShiftBufferDepth="([^"]*)"/.exec(mpd)?.[1]);
    t.ok(tsbd! >= 6 && tsbd! < 120, `timeShiftBufferDepth: the window held now (${tsbd} s)`);

    const started = await (await get(`/watch/live/${keyedId}/play-info?start=program`, auth)).json() as any;
    t.match(started.url, /\?key=[\w.-]+&start=program$/, 'start=program is carried into the URL');

    const doc = await (await get('/api/docs/json', auth)).json() as any;
    const params = (path: string) => (doc.paths[path]?.get?.parameters ?? []).map((p: { name: string; in: string }) => `${p.in}:${p.name}`);
    t.ok(doc.paths['/watch/live/{channel_id}/play-info']?.get?.responses?.['200'], 'the OpenAPI document shows play-info and its answer');
    for (const path of ['/watch/live/{channel_id}', '/watch/live/{channel_id}/master.mpd', '/watch/live/{channel_id}/play-info']) {
      t.ok(params(path).includes('query:start'), `and start=program on ${path}`);
    }
    expectError(t, await errorOf(await get(`/watch/live/999999/play-info`, auth)), 404, undefined, 'unknown channel');
    expectError(t, await errorOf(await get(`/watch/live/abc/play-info`, auth)), 400, undefined, 'bad id');
    expectError(t, await errorOf(await get(`/watch/live/${keyedId}/play-info`)), 401, undefined, 'no token');
    expectError(t, await errorOf(await get(`/watch/live/${keyedId}/play-info?start=nonsense`, auth)), 400, undefined, 'start is only "program"');
  });

  t.test('a key for one channel opens no other', async (t) => {
    const info = await (await get(`/watch/live/${keyedId}/play-info`, { authorization: `Bearer ${viewer}` })).json() as any;
    const key = new URL(info.url, host.url).searchParams.get('key')!;
    t.equal((await get(info.url)).status, 200, 'the key opens its channel');
    for (const p of [`/watch/live/${otherId}`, `/watch/live/${otherId}/master.mpd`, `/watch/live/${otherId}/play-info`, `/watch/live/${otherId}/s/0/video.m3u8`, `/watch/live/${otherId}/s/0/video-1.m4s`]) {
      expectError(t, await errorOf(await get(`${p}?key=${encodeURIComponent(key)}`)), 401, undefined, `${p} with the key of another channel`);
    }
    t.notOk(job(otherId), 'and tuned nothing');
  });

  t.test('each viewer gets its own key in a media playlist, however it is cached', async (t) => {
    const keys = await Promise.all([`Bearer ${viewer}`, `Bearer ${host.adminToken}`].map(async (authorization) => {
      const info = await (await get(`/watch/live/${keyedId}/play-info`, { authorization })).json() as any;
      const own = new URL(info.url, host.url).searchParams.get('key')!;
      const master = checkHlsMaster(await text(info.url));
      const media = await text(master.variants[0].uri);
      const inside = new Set([...media.matchAll(/[?&]key=([^&\s"]+)/g)].map((m) => m[1]));
      return { own, inside };
    }));
    t.not(keys[0].own, keys[1].own, 'two users, two keys');
    for (const [i, k] of keys.entries()) t.strictSame([...k.inside], [k.own], `viewer ${i + 1}: every URL of its media playlist carries its own key`);

    // Gzipped for clients that accept it, as it is for those that do not.
    const info = await (await get(`/watch/live/${keyedId}/play-info`, { authorization: `Bearer ${viewer}` })).json() as any;
    const own = new URL(info.url, host.url).searchParams.get('key')!;
    const uri = checkHlsMaster(await text(info.url)).variants[0].uri;
    for (const encoding of ['gzip', 'identity']) {
      const res = await get(uri, { 'accept-encoding': encoding });
      t.equal(res.headers.get('content-encoding') ?? 'identity', encoding, `accept-encoding ${encoding}: sent as ${encoding}`);
      const body = await res.text();
      t.strictSame(checkHlsMedia(body).problems, [], 'a valid media playlist');
      t.ok(body.includes(`key=${own}`), 'with the viewer\'s key');
    }
  });

  t.test('MPD updates (refresh=1) never start a channel', async (t) => {
    expectError(t, await errorOf(await get(`/watch/live/${otherId}/master.mpd?refresh=1&api_key=${admin}`)), 404, /not running/, 'a channel not running: 404');
    t.notOk(job(otherId), 'no session started');
  });

  t.test("start over: the programme's start when the window holds it, else the window's start", async (t) => {
    const wait = programStart + 12_000 - Date.now();
    if (wait > 0) await sleep(wait);
    const masterText = await text(`/watch/live/${programId}?start=program&api_key=${admin}`);
    const master = checkHlsMaster(masterText);
    t.match(master.variants[0].uri, new RegExp(`&start=${programStart}$`), "the media playlists carry the programme's start");
    for (const uri of [master.variants[0].uri, master.renditions[0].uri!]) {
      const s = startOf(await text(uri));
      t.ok(s.first < programStart, `the window holds the programme's start (${(programStart - s.first) / 1000} s into it)`);
      t.ok(s.landing !== undefined && Math.abs(s.landing - programStart) <= 50, `${uri.split('?')[0]}: EXT-X-START lands at the programme's start (${s.landing === undefined ? 'none' : (s.landing - programStart) / 1000} s off)`);
    }
    const report = await validateHls(`${host.url}/watch/live/${programId}?start=program&api_key=${admin}`, { segments: false });
    t.strictSame(report.problems, [], 'the start-over presentation passes the validator');

    const mpd = await text(`/watch/live/${programId}/master.mpd?start=program&api_key=${admin}`);
    t.strictSame(checkMpd(mpd).problems, [], 'a valid MPD');
    const publish = Date.parse(/publishTime="([^"]*)"/.exec(mpd)![1]);
    const delay = durationSeconds(/suggestedPresentationDelay="([^"]*)"/.exec(mpd)![1])!;
    t.ok(Math.abs(publish - delay * 1000 - programStart) <= 50, `DASH: suggestedPresentationDelay reaches back to the programme's start (${(publish - delay * 1000 - programStart) / 1000} s off)`);
    const plain = await text(`/watch/live/${programId}/master.mpd?api_key=${admin}`);
    t.equal(durationSeconds(/suggestedPresentationDelay="([^"]*)"/.exec(plain)![1]), 5, 'without start: the usual delay');

    // "Keyed": its programme began an hour ago, before the window: the window's start.
    const keyedMaster = checkHlsMaster(await text(`/watch/live/${keyedId}?start=program&api_key=${admin}`));
    const s = startOf(await text(keyedMaster.variants[0].uri));
    t.ok(s.landing !== undefined && Math.abs(s.landing - s.first) <= 50, `a programme that began before the window: the window's start (${s.landing === undefined ? 'none' : (s.landing - s.first) / 1000} s off)`);
  });

  t.test('a viewer who leaves: the session stops after idleTimeout', async (t) => {
    t.ok(job(programId), 'running while its viewer asks');
    clearInterval(keepProgram);
    const left = Date.now();
    while (job(programId) && Date.now() - left < 30_000) await sleep(250);
    const seconds = (Date.now() - left) / 1000;
    t.notOk(job(programId), `stopped ${seconds.toFixed(1)} s after the last request`);
    t.ok(seconds >= IDLE_MS / 1000 - 2.5 && seconds <= IDLE_MS / 1000 + 3, 'after idleTimeout (the last request was up to 2 s before)');
  });

  t.test('a paused viewer keeps the session while its position is inside the window; the window slides under the cap', async (t) => {
    const r = await paused;
    const alive20 = r.samples.filter((s) => s.at >= 20_000);
    t.ok(alive20.length > 0, `the session still ran 20 s after the pause, four times idleTimeout (${r.samples.length} reloads answered)`);
    t.ok(r.leftAt !== undefined, `the window slid past the paused position (${r.leftAt === undefined ? '-' : (r.leftAt - r.pausedAt) / 1000} s after the pause)`);
    t.ok(r.endedAt !== undefined, 'then the session stopped, although the viewer kept reloading');
    if (r.leftAt !== undefined && r.endedAt !== undefined) {
      const after = (r.endedAt - r.leftAt) / 1000;
      t.ok(after >= 0 && after <= IDLE_MS / 1000 + 4, `idleTimeout after the position left the window (${after.toFixed(1)} s)`);
    }
    const slid = r.samples.filter((s) => s.mediaSequence > 1);
    t.ok(slid.length > 0, `old segments left the playlist (EXT-X-MEDIA-SEQUENCE up to ${Math.max(...r.samples.map((s) => s.mediaSequence))})`);
    t.equal(r.oldSegment?.status, 404, `a segment before the window: 404 (${r.oldSegment?.uri.split('?')[0]})`);
    t.equal(r.firstSegment?.status, 200, "the window's first: 200");
    const peak = Math.max(...r.samples.map((s) => s.disk));
    t.ok(peak <= CAP + 150_000, `disk use never above the cap by more than a segment being written (peak ${peak}, cap ${CAP})`);
    // Steady state: once the window slides (it holds more than the minute files stay after they were announced).
    const steady = slid.slice(1);
    for (const s of steady) t.comment(`at ${(s.at / 1000).toFixed(0)} s: ${s.disk} bytes on disk (${(100 * s.disk / CAP).toFixed(1)} % of the cap), ${s.seconds.toFixed(0)} s listed`);
    t.ok(steady.length >= 5 && steady.every((s) => s.disk >= 0.9 * CAP && s.disk <= CAP + 150_000), 'at steady state the window fills the cap, and stays under it');
    t.ok(await waitForGone(r.sessionDir), 'the session files are removed when it stops');
  });

  t.test('after a burst and a restart of the upstream, the disk stays under the cap', async (t) => {
    const r = await refilled;
    t.notOk(r.firstRunFfmpeg, "once the first run has ended, ffmpeg's files of it are gone (the session has linked what it took)");
    t.ok(r.samples.some((s) => s.periods === 2), 'the window held both runs after the restart (a discontinuity)');
    t.ok(slidPast(r.samples).length > 0, 'then slid past the burst');
    const peak = Math.max(...r.samples.map((s) => s.disk));
    for (const [i, s] of r.samples.entries()) if (s.disk !== r.samples[i - 1]?.disk) t.comment(`${s.disk} bytes on disk (${(100 * s.disk / CAP).toFixed(1)} % of the cap), ${s.seconds.toFixed(0)} s listed in ${s.periods} period(s), the longest segment ${s.longest.toFixed(1)} s`);
    t.ok(peak <= CAP + 150_000, `disk use never above the cap by more than a segment being written (peak ${peak}, ${(100 * peak / CAP).toFixed(1)} % of the cap ${CAP})`);
    t.ok(r.firstRunGone, "the first run's directory went once the window had left it");
  });

  t.test('an expired key: 401', async (t) => {
    const info = await (await get(`/watch/live/${keyedId}/play-info`, { authorization: `Bearer ${viewer}` })).json() as any;
    skew = 7 * 3600_000; // past the key's lifetime (mediaKeyTtlSeconds: 6 h)
    try {
      expectError(t, await errorOf(await get(info.url)), 401, /expired/, 'the master with an expired key');
      expectError(t, await errorOf(await get(`/watch/live/${keyedId}/s/0/video.m3u8?key=${new URL(info.url, host.url).searchParams.get('key')}`)), 401, /expired/, 'a media playlist with it');
    } finally {
      skew = 0;
    }
  });
});

/** The samples after the window held two runs, once it holds one again. */
function slidPast<T extends { periods: number }>(samples: T[]): T[] {
  const both = samples.findIndex((s) => s.periods === 2);
  return both < 0 ? [] : samples.slice(both).filter((s) => s.periods === 1);
}

async function waitForGone(dir: string): Promise<boolean> {
  for (let i = 0; i < 40 && existsSync(dir); i++) await sleep(250);
  return !existsSync(dir);
}

/** A fetch Response as expectError takes it. */
async function errorOf(res: Response): Promise<{ statusCode: number; body: string; headers: Record<string, any> }> {
  return { statusCode: res.status, body: await res.text(), headers: Object.fromEntries(res.headers) };
}
