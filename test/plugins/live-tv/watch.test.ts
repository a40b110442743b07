/**
 * Live TV watching end to end: a real upstream (ffmpeg serving realtime
 * MPEG-TS and a live HLS playlist), the m3u-tuner, the live-tv watch routes
 * with the HLS and DASH packagers, and ffmpeg as the player.
 */
import t from 'tap';
import { existsSync } from 'node:fs';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import * as HLS from 'hls-parser';
import { createTestHost, type TestHost } from '../../../sdk/testing.js';
import { expectError, rawGet as rawHttpGet } from '../../helpers/http.js';
import { checkHlsMaster, checkHlsMedia, checkMpd, validateDash, validateHls } from '../../helpers/manifest-validator.js';
import { decode, playerPids as clientPids } from '../../helpers/player.js';
import { waitFor } from '../../helpers/wait.js';
import { killGroup, pidAlive, startUpstream, type Upstream } from '../../helpers/upstream.js';
import { channels, closedPort, m3u, tempDir, write } from './fixtures.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const mpdParser: { parse(text: string, options: { manifestUri: string; NOW?: number }): any } = require('mpd-parser');

HLS.setOptions({ strictMode: true, silent: true });
// One host runs a dozen real channels through ffmpeg: more than tap's 120 s on a busy machine.
t.setTimeout(300_000);

const HLS_TYPE = /^application\/vnd\.apple\.mpegurl/;
const DASH_TYPE = /^application\/dash\+xml/;
/** RFC 6381 codec strings as MSE / hls.js / dash.js accept them. */
const WELL_FORMED_CODEC = /^(avc[13]\.[0-9A-Fa-f]{6}|mp4a\.40\.\d+|mp4a\.(69|6B|6b)|(hvc1|hev1)\.[\w.]+|ac-3|ec-3|opus|vp09\.[\d.]+|av01\.[\w.]+)$/;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Res { status: number; headers: http.IncomingHttpHeaders; body: string }

/** rawGet (test/helpers/http.ts) with the body as a latin1 string and a 40 s deadline. */
const rawGet = async (base: string, rawPath: string, headers: Record<string, string> = {}, timeoutMs = 40_000): Promise<Res> => {
  const r = await rawHttpGet(base, rawPath, headers, timeoutMs);
  return { ...r, body: r.body.toString('latin1') };
};

/** As expectError, for a rawGet result. */
const asInject = (r: Res) => ({ statusCode: r.status, body: r.body, headers: r.headers as Record<string, any> });

t.test('live watch', async (t) => {
  const upstream: Upstream = await startUpstream();
  t.teardown(async () => {
    await upstream.close();
    for (const pid of clientPids) killGroup(pid);
  });

  const dir = await tempDir(t);
  const dead = await closedPort();
  const live = (name: string) => `${upstream.base}/live/${name}.ts`;
  upstream.fail('/live/missing.ts', 404);
  upstream.fail('/live/broken.ts', 500);
  upstream.fail('/live/flaky.ts', 500);
  const main = await write(dir, 'main.m3u', m3u([
    { name: 'One', tvgId: 'one', chno: '1', url: live('one') },
    { name: 'Two', tvgId: 'two', chno: '2', url: live('two') },
    { name: 'Killme', tvgId: 'killme', chno: '3', url: live('killme') },
    { name: 'Refused', tvgId: 'refused', chno: '4', url: `http://127.0.0.1:${dead}/live/refused.ts` },
    { name: 'Missing', tvgId: 'missing', chno: '5', url: live('missing') },
    { name: 'Broken', tvgId: 'broken', chno: '6', url: live('broken') },
    { name: 'HLS In', tvgId: 'hlsin', chno: '7', url: `${upstream.base}/hls/index.m3u8` },
    { name: 'Flaky', tvgId: 'flaky', chno: '8', url: live('flaky') },
  ]));
  const single = await write(dir, 'single.m3u', m3u([
    { name: 'S1', tvgId: 's1', chno: '11', url: live('s1') },
    { name: 'S2', tvgId: 's2', chno: '12', url: live('s2') },
  ]));

  const hlsReady = upstream.startHls(); // in the background; awaited by the HLS-input test
  hlsReady.catch(() => {});
  const host: TestHost = await createTestHost({
    listen: true,
    plugins: {
      // readyTimeout: ffmpeg reading an HLS upstream took over 8 s to its first segment on a loaded CI machine.
      'live-tv': { initialImport: 'await', idleTimeout: '3s', readyTimeout: '20s' },
      'm3u-tuner': { sources: [{ name: 'Main', url: main, maxStreams: 20 }, { name: 'Single IPTV', url: single, maxStreams: 1 }] },
    },
  });
  let hostClosed = false;
  t.teardown(async () => { if (!hostClosed) await host.close(); });

  const token = host.adminToken;
  const base = host.url;
  const liveRoot = path.join(host.dataDir, 'plugins/live-tv/live');
  const all = await channels(host);
  const id = (name: string) => {
    const c = all.find((x) => x.name === name);
    if (!c) throw new Error(`no channel ${name}`);
    return c.id;
  };
  const job = (cid: number) => host.host.jobs.get<{ pid?: number }>(`live:${cid}`);
  const watchUrl = (cid: number) => `${base}/watch/live/${cid}?api_key=${encodeURIComponent(token)}`;
  const mpdUrl = (cid: number) => `${base}/watch/live/${cid}/master.mpd?api_key=${encodeURIComponent(token)}`;
  const bearer = { authorization: `Bearer ${token}` };

  /** What is wrong with a URL found in a manifest of channel `cid` (empty: nothing). */
  const urlProblems = (cid: number, abs: URL): string[] => {
    const out: string[] = [];
    const at = abs.pathname;
    if (abs.origin !== new URL(base).origin) out.push(`${at}: other origin ${abs.origin}`);
    if (!abs.pathname.startsWith(`/watch/live/${cid}/s/`)) out.push(`${at}: not under /watch/live/${cid}/s/`);
    if (!(abs.searchParams.get('key') ?? '')) out.push(`${at}: no ?key=`);
    if (abs.searchParams.has('api_key')) out.push(`${at}: has api_key`);
    if (abs.href.includes(token)) out.push(`${at}: carries the user's token`);
    return out;
  };

  /** Fetches and parses a channel's HLS master and its first media playlist. */
  const hlsOf = async (t: Tap, cid: number) => {
    const res = await rawGet(base, `/watch/live/${cid}?api_key=${encodeURIComponent(token)}`);
    t.equal(res.status, 200, `channel ${cid}: master 200`);
    if (res.status !== 200) throw new Error(`master: ${res.status} ${res.body}`);
    t.match(String(res.headers['content-type']), HLS_TYPE, 'master content-type');
    t.notOk(res.body.includes(token), 'the master playlist does not contain the token');
    const master = HLS.parse(res.body) as HLS.types.MasterPlaylist;
    t.equal(master.isMasterPlaylist, true, 'a master playlist (hls-parser, strict)');
    t.strictSame(checkHlsMaster(res.body).problems, [], 'the manifest validator passes the master');
    t.ok(master.variants.length >= 1, 'with a variant');
    const masterUrl = watchUrl(cid);
    const problems: string[] = [];
    const mediaUrls: string[] = [];
    for (const v of master.variants) {
      for (const uri of [v.uri, ...[...v.audio, ...v.video, ...v.subtitles].map((r) => r.uri).filter((u): u is string => !!u)]) {
        const abs = new URL(uri, masterUrl);
        problems.push(...urlProblems(cid, abs));
        mediaUrls.push(abs.href);
      }
    }
    t.strictSame(problems, [], 'master: every media playlist URL is keyed, under /s/, without the token');
    t.ok(master.variants.every((v) => v.bandwidth > 0), 'every variant has a BANDWIDTH');
    const mres = await rawGet(base, new URL(mediaUrls[0]!).pathname + new URL(mediaUrls[0]!).search);
    t.equal(mres.status, 200, 'media playlist 200 without Authorization');
    t.match(String(mres.headers['content-type']), HLS_TYPE, 'media playlist content-type');
    t.notOk(mres.body.includes(token), 'the media playlist does not contain the token');
    const media = HLS.parse(mres.body) as HLS.types.MediaPlaylist;
    t.equal(media.isMasterPlaylist, false, 'a media playlist (hls-parser, strict)');
    t.strictSame(checkHlsMedia(mres.body).problems, [], 'the manifest validator passes the media playlist');
    t.equal(media.endlist, false, 'live: no EXT-X-ENDLIST');
    t.ok(media.segments.length >= 1, 'with segments');
    const segments = media.segments.map((s) => new URL(s.uri, mediaUrls[0]!));
    const inits = [...new Set(media.segments.filter((s) => s.map).map((s) => new URL(s.map!.uri, mediaUrls[0]!).href))].map((u) => new URL(u));
    t.strictSame([...segments, ...inits].flatMap((u) => urlProblems(cid, u)), [], 'media playlist: every segment URL is keyed, under /s/, without the token');
    return { masterText: res.body, master, mediaUrl: mediaUrls[0]!, media, segments: segments.map((u) => u.href), inits: inits.map((u) => u.href) };
  };

  /** A segment URL of a channel as a player would get it right now. */
  const currentSegment = async (t: Tap, cid: number): Promise<string> => {
    const h = await hlsOf(t, cid);
    return h.segments[h.segments.length - 1]!;
  };

  const fetchBytes = async (url: string) => {
    const u = new URL(url);
    const r = await rawGet(base, u.pathname + u.search);
    return { status: r.status, size: Buffer.byteLength(r.body, 'latin1'), body: r.body };
  };

  t.test('ffmpeg plays the HLS of a channel for 5 s', async (t) => {
    const d = await decode(watchUrl(id('One')), 6);
    t.ok(d.seconds >= 5, `decoded ${d.seconds.toFixed(2)} s of video (${d.frames} frames)${d.seconds < 5 ? `; ffmpeg: ${d.stderr}` : ''}`);
    t.equal(upstream.peakConnections('/live/one.ts'), 1, 'one upstream connection');
  });

  t.test('HLS manifests: valid, every URL keyed and under /s/, segments served without Authorization', async (t) => {
    const report = await validateHls(watchUrl(id('One')));
    t.strictSame(report.problems, [], 'the manifest validator passes the whole presentation (CODECS against the init segments, BANDWIDTH against the measured peak)');
    const h = await hlsOf(t, id('One'));
    t.ok(h.media.targetDuration >= 1, 'EXT-X-TARGETDURATION');
    const codecs = h.master.variants.flatMap((v) => (v.codecs ?? '').split(',').map((c) => c.trim()).filter(Boolean));
    t.ok(codecs.length >= 1, `variants declare CODECS (${codecs.join(',')})`);
    t.strictSame(codecs.filter((c) => !WELL_FORMED_CODEC.test(c)), [], 'every CODECS entry is a full RFC 6381 string (browsers reject e.g. "mp4a.40")');
    for (const url of [...h.inits, h.segments[h.segments.length - 1]!]) {
      const r = await fetchBytes(url);
      t.equal(r.status, 200, `${new URL(url).pathname}: 200`);
      t.ok(r.size > 0, 'not empty');
    }
  });

  t.test('ffmpeg plays the DASH manifest of a channel for 5 s', async (t) => {
    const d = await decode(mpdUrl(id('One')), 6);
    t.ok(d.seconds >= 5, `decoded ${d.seconds.toFixed(2)} s of video (${d.frames} frames)${d.seconds < 5 ? `; ffmpeg: ${d.stderr}` : ''}`);
  });

  t.test('DASH manifest: dynamic, valid, every URL keyed and under /s/', async (t) => {
    const cid = id('One');
    const res = await rawGet(base, `/watch/live/${cid}/master.mpd?api_key=${encodeURIComponent(token)}`);
    t.equal(res.status, 200);
    t.match(String(res.headers['content-type']), DASH_TYPE, 'content-type');
    t.match(res.body, /<MPD[^>]*\btype="dynamic"/, 'type="dynamic"');
    t.strictSame(checkMpd(res.body).problems, [], 'the manifest validator passes the MPD');
    const report = await validateDash(mpdUrl(cid));
    for (const note of report.notes) t.comment(note);
    t.strictSame(report.problems, [], 'and the whole presentation (codecs, bandwidth against the measured peak, the schema when at hand)');
    t.notOk(res.body.includes(token), 'the MPD does not contain the token');
    const manifest = mpdParser.parse(res.body, { manifestUri: mpdUrl(cid), NOW: Date.now() });
    const playlists: any[] = [...(manifest.playlists ?? [])];
    for (const group of Object.values(manifest.mediaGroups?.AUDIO ?? {}) as any[]) {
      for (const rendition of Object.values(group) as any[]) playlists.push(...(rendition.playlists ?? []));
    }
    t.ok(playlists.length >= 1, 'mpd-parser finds playlists');
    t.ok(playlists.length > 0 && playlists.every((p) => (p.segments ?? []).length >= 1), 'every playlist has segments');
    const urls: URL[] = [];
    const inits: string[] = [];
    for (const p of playlists) {
      for (const s of p.segments ?? []) {
        urls.push(new URL(s.resolvedUri));
        if (s.map?.resolvedUri && !inits.includes(s.map.resolvedUri)) inits.push(s.map.resolvedUri);
      }
    }
    t.strictSame([...urls, ...inits.map((u) => new URL(u))].flatMap((u) => urlProblems(cid, u)), [], 'every segment URL is keyed, under /s/, without the token');
    t.ok(inits.length >= 1, 'init segments');
    for (const init of inits) {
      const r = await fetchBytes(init);
      t.equal(r.status, 200, `${new URL(init).pathname}: 200 without Authorization`);
      t.ok(r.size > 0, 'init not empty');
    }
    const last = urls[urls.length - 1];
    if (last) t.equal((await fetchBytes(last.href)).status, 200, 'the newest media segment: 200');
    const codecs = [...res.body.matchAll(/\bcodecs="([^"]*)"/g)].flatMap((m) => m[1]!.split(','));
    t.ok(codecs.length >= 1, `Representations declare codecs (${codecs.join(',')})`);
    t.strictSame(codecs.filter((c) => !WELL_FORMED_CODEC.test(c)), [], 'every codecs entry is a full RFC 6381 string');
  });

  t.test('Device-OS: DASH-only clients get a 302 to a keyed master.mpd, others HLS', async (t) => {
    const cid = id('One');
    const dashOnly: [string, string][] = [
      ['Device-OS', 'STB'], ['device-os', 'STB'], ['DEVICE-OS', 'STB'], ['Device-OS', 'stb'],
      ['Device-OS', 'Android 14'], ['device-os', 'AndroidTV'], ['Device-OS', 'android 14'], ['DEVICE-OS', 'Android'],
    ];
    for (const [name, value] of dashOnly) {
      const r = await rawGet(base, `/watch/live/${cid}`, { ...bearer, [name]: value });
      t.equal(r.status, 302, `${name}: ${value} → 302`);
      const location = String(r.headers.location ?? '');
      const loc = new URL(location, base);
      t.equal(loc.pathname, `/watch/live/${cid}/master.mpd`, `${name}: ${value}: Location is master.mpd`);
      t.ok((loc.searchParams.get('key') ?? '').length > 0, `${name}: ${value}: Location carries ?key=`);
      t.notOk(location.includes(token) || loc.searchParams.has('api_key'), `${name}: ${value}: Location does not carry the token`);
    }
    const r = await rawGet(base, `/watch/live/${cid}?api_key=${encodeURIComponent(token)}`, { 'Device-OS': 'STB' });
    t.equal(r.status, 302, 'with ?api_key= too');
    const loc = new URL(String(r.headers.location ?? '/'), base);
    const follow = await rawGet(base, loc.pathname + loc.search);
    t.equal(follow.status, 200, 'the Location plays without Authorization');
    t.match(String(follow.headers['content-type']), DASH_TYPE, 'and is DASH');
    t.match(follow.body, /type="dynamic"/);

    const others: [string, string | undefined][] = [
      ['Device-OS', 'iOS'], ['device-os', 'tvOS'], ['DEVICE-OS', 'Windows'], ['Device-OS', 'MySTB'], ['Device-OS', 'STB2'],
      ['Device-OS', 'Linux; Android'], ['Device-OS', undefined],
    ];
    for (const [name, value] of others) {
      const r = await rawGet(base, `/watch/live/${cid}`, { ...bearer, ...(value === undefined ? {} : { [name]: value }) });
      const label = value === undefined ? 'no Device-OS' : `${name}: ${value}`;
      t.equal(r.status, 200, `${label} → 200`);
      t.match(String(r.headers['content-type']), HLS_TYPE, `${label}: HLS`);
      t.match(r.body, /^#EXTM3U/, `${label}: a playlist`);
    }
  });

  t.test('auth and bad ids on the watch routes', async (t) => {
    const cid = id('One');
    expectError(t, asInject(await rawGet(base, `/watch/live/${cid}`)), 401, undefined, 'HLS without token');
    expectError(t, asInject(await rawGet(base, `/watch/live/${cid}/master.mpd`)), 401, undefined, 'DASH without token');
    expectError(t, asInject(await rawGet(base, `/watch/live/${cid}?api_key=not-a-token`)), 401, undefined, 'bad api_key');
    expectError(t, asInject(await rawGet(base, `/watch/live/${cid}`, { authorization: 'Bearer not-a-token' })), 401, undefined, 'bad bearer');
    expectError(t, asInject(await rawGet(base, `/watch/live/${cid}`, { 'Device-OS': 'STB' })), 401, undefined, 'STB without token (no redirect)');
    expectError(t, asInject(await rawGet(base, `/watch/live/999999`, bearer)), 404, undefined, 'unknown channel');
    expectError(t, asInject(await rawGet(base, `/watch/live/999999/master.mpd`, bearer)), 404, undefined, 'unknown channel, DASH');
    expectError(t, asInject(await rawGet(base, `/watch/live/999999`, { ...bearer, 'Device-OS': 'STB' })), 404, undefined, 'unknown channel, STB');
    expectError(t, asInject(await rawGet(base, `/watch/live/abc`, bearer)), 400, undefined, 'id abc');
    expectError(t, asInject(await rawGet(base, `/watch/live/1.5`, bearer)), 400, undefined, 'id 1.5');
    expectError(t, asInject(await rawGet(base, `/watch/live/abc/master.mpd`, bearer)), 400, undefined, 'id abc, DASH');
  });

  t.test('path tricks in segment names never reach a file outside the session dir', async (t) => {
    const one = id('One');
    const oneSegment = await currentSegment(t, one);
    const seg = new URL(oneSegment);
    const key = seg.searchParams.get('key')!;
    const fileDir = seg.pathname.slice(0, seg.pathname.lastIndexOf('/') + 1); // e.g. /watch/live/1/s/0/
    const ok = await rawGet(base, `${seg.pathname}?key=${encodeURIComponent(key)}`);
    t.equal(ok.status, 200, 'the key itself is good');
    await mkdir(path.join(host.dataDir, 'plugins/live-tv'), { recursive: true });
    await writeFile(path.join(host.dataDir, 'plugins/live-tv/sentinel.txt'), 'SENTINEL-live-tv');
    await writeFile(path.join(host.dataDir, 'sentinel.txt'), 'SENTINEL-datadir');
    const names: string[] = [];
    for (let depth = 1; depth <= 6; depth++) {
      for (const target of ['sentinel.txt', 'antenna.db']) {
        names.push(`${'../'.repeat(depth)}${target}`);
        names.push(`${'..%2F'.repeat(depth)}${target}`);
        names.push(`${'%2e%2e%2f'.repeat(depth)}${target}`);
        names.push(`${'..%5C'.repeat(depth)}${target}`);
      }
    }
    names.push('%2Fetc%2Fpasswd', '..', '.', '%2e%2e', '..%2F', 'seg%00.mp4', `%2F${encodeURIComponent(host.dataDir.slice(1))}%2Fsentinel.txt`);
    const wrong: string[] = [];
    const leaked: string[] = [];
    for (const prefix of [fileDir, `/watch/live/${one}/s/`]) {
      for (const name of names) {
        const r = await rawGet(base, `${prefix}${name}?key=${encodeURIComponent(key)}`);
        if (r.status !== 400 && r.status !== 404) wrong.push(`${prefix}${name} → ${r.status}`);
        if (/SENTINEL|SQLite format 3|root:x:0:0/.test(r.body)) leaked.push(`${prefix}${name}`);
      }
    }
    t.strictSame(wrong, [], `${names.length * 2} tricky names: each 400 or 404`);
    t.strictSame(leaked, [], 'no file content leaked');
  });

  t.test('four concurrent viewers: one job, one upstream connection', async (t) => {
    const cid = id('Two');
    await host.createUser('viewer', 'viewer-password-1');
    const viewerToken = await host.login('viewer', 'viewer-password-1', { 'device-id': 'viewer-tv' });
    const tokens = [token, token, viewerToken, viewerToken];
    const masters = await Promise.all(tokens.map((tk) => rawGet(base, `/watch/live/${cid}?api_key=${encodeURIComponent(tk)}`)));
    t.strictSame(masters.map((m) => m.status), [200, 200, 200, 200], 'all four get the master playlist');
    const pid = job(cid)?.data.pid;
    t.ok(pid && pidAlive(pid), 'the job has a running ffmpeg');
    const results = await Promise.all(tokens.map((tk) => decode(`${base}/watch/live/${cid}?api_key=${encodeURIComponent(tk)}`, 4)));
    for (const [i, d] of results.entries()) t.ok(d.seconds >= 3, `viewer ${i} decoded ${d.seconds.toFixed(2)} s${d.seconds < 3 ? `; ffmpeg: ${d.stderr}` : ''}`);
    t.equal(upstream.connections('/live/two.ts'), 1, 'exactly one upstream connection was opened');
    t.equal(upstream.peakConnections('/live/two.ts'), 1, 'never two at once');
    t.equal(host.host.jobs.list().filter((j) => j.key === `live:${cid}`).length, 1, 'one job for the channel');
    t.equal(job(cid)?.data.pid, pid, 'the same ffmpeg throughout');
  });

  t.test('signed keys are scoped to their channel', async (t) => {
    const one = id('One');
    const two = id('Two');
    // Both channels run, so only the key can refuse these requests.
    const twoSegment = await currentSegment(t, two);
    // Two keeps being watched while One starts.
    const warm = setInterval(() => { void rawGet(base, `/watch/live/${two}?api_key=${encodeURIComponent(token)}`).catch(() => {}); }, 1000);
    const oneHls = await hlsOf(t, one).finally(() => clearInterval(warm));
    const u = new URL(twoSegment);
    const key = u.searchParams.get('key')!;
    const file = u.pathname.slice(`/watch/live/${two}/s/`.length);
    const own = await rawGet(base, `${u.pathname}?key=${encodeURIComponent(key)}`);
    t.equal(own.status, 200, `the key works on its own channel (${u.pathname}: ${own.status} ${own.status === 200 ? '' : own.body.slice(0, 200)})`);
    expectError(t, asInject(await rawGet(base, `/watch/live/${one}/s/${file}?key=${encodeURIComponent(key)}`)), 401, undefined, 'key of Two on a segment path of One');
    const oneMedia = new URL(oneHls.mediaUrl);
    expectError(t, asInject(await rawGet(base, `${oneMedia.pathname}?key=${encodeURIComponent(key)}`)), 401, undefined, 'key of Two on the media playlist of One');
    const stb = await rawGet(base, `/watch/live/${two}`, { ...bearer, 'Device-OS': 'STB' });
    const twoMpdKey = new URL(String(stb.headers.location ?? '/'), base).searchParams.get('key') ?? '';
    t.ok(twoMpdKey, 'a redirect key for Two');
    expectError(t, asInject(await rawGet(base, `/watch/live/${one}/master.mpd?key=${encodeURIComponent(twoMpdKey)}`)), 401, undefined, 'the redirect key of Two on master.mpd of One');
    expectError(t, asInject(await rawGet(base, u.pathname)), 401, undefined, 'segment without key');
    expectError(t, asInject(await rawGet(base, `${u.pathname}?key=garbage`)), 401, undefined, 'segment with a bad key');
    const tampered = key.slice(0, -2) + (key.endsWith('xx') ? 'yy' : 'xx');
    expectError(t, asInject(await rawGet(base, `${u.pathname}?key=${encodeURIComponent(tampered)}`)), 401, undefined, 'tampered key');
  });

  t.test('maxStreams 1: a second channel of the source is refused with 409, no upstream connection', async (t) => {
    const r1 = await rawGet(base, `/watch/live/${id('S1')}?api_key=${encodeURIComponent(token)}`);
    t.equal(r1.status, 200, 'S1 plays');
    const r2 = await rawGet(base, `/watch/live/${id('S2')}?api_key=${encodeURIComponent(token)}`);
    expectError(t, asInject(r2), 409, /Single IPTV/, 'S2 while S1 plays');
    const r3 = await rawGet(base, `/watch/live/${id('S2')}/master.mpd?api_key=${encodeURIComponent(token)}`);
    expectError(t, asInject(r3), 409, /Single IPTV/, 'S2 DASH while S1 plays');
    t.equal(upstream.connections('/live/s2.ts'), 0, 'no upstream connection for S2');
    t.equal(upstream.peakConnections('/live/s1.ts'), 1, 'one for S1');
    t.notOk(job(id('S2')), 'no job for S2');
  });

  t.test('idle channel stops: ffmpeg gone, session dir removed; the tuner slot is free again', async (t) => {
    const cid = id('S1');
    const h = await hlsOf(t, cid);
    const pid = job(cid)?.data.pid ?? 0;
    t.ok(pid > 1 && pidAlive(pid), 'S1 has a running ffmpeg');
    const segName = path.posix.basename(new URL(h.segments[h.segments.length - 1]!).pathname);
    const found = await findDirOf(liveRoot, decodeURIComponent(segName));
    const sessionDir = found && found !== liveRoot ? path.join(liveRoot, path.relative(liveRoot, found).split(path.sep)[0]!) : found;
    t.ok(sessionDir && sessionDir.startsWith(liveRoot + path.sep), `the segment file is under ${liveRoot} (${sessionDir})`);
    const stopped = await waitFor(() => !job(cid), 20_000);
    t.ok(stopped, 'the job stopped after the idle timeout');
    t.ok(await waitFor(() => !pidAlive(pid), 10_000), `ffmpeg ${pid} exited`);
    if (sessionDir) t.ok(await waitFor(() => !existsSync(sessionDir), 10_000), 'its session dir is removed');
    t.ok(await waitFor(() => upstream.openConnections('/live/s1.ts') === 0, 5000), 'the upstream connection is closed');
    const r = await rawGet(base, `/watch/live/${id('S2')}?api_key=${encodeURIComponent(token)}`);
    t.equal(r.status, 200, 'S2 plays now');
    t.equal(upstream.connections('/live/s2.ts'), 1, 'with one upstream connection');
  });

  t.test('dead upstreams answer 502/503, never hang', async (t) => {
    const cases: [string, string][] = [
      ['Refused', `/watch/live/${id('Refused')}`],
      ['Missing', `/watch/live/${id('Missing')}`],
      ['Broken', `/watch/live/${id('Broken')}`],
      ['Refused', `/watch/live/${id('Refused')}/master.mpd`],
    ];
    const results = await Promise.all(cases.map(async ([name, p]) => {
      try {
        return { name, p, res: await rawGet(base, `${p}?api_key=${encodeURIComponent(token)}`, {}, 40_000) };
      } catch (err) {
        return { name, p, error: (err as Error).message };
      }
    }));
    for (const r of results) {
      if (!r.res) { t.fail(`${r.name} ${r.p}: ${r.error}`); continue; }
      t.ok(r.res.status === 502 || r.res.status === 503, `${r.name} ${r.p}: 502 or 503 (got ${r.res.status} ${r.res.body.slice(0, 200)})`);
      expectError(t, asInject(r.res), r.res.status, undefined, `${r.name}`);
    }
    t.ok(upstream.connections('/live/missing.ts') >= 1, 'the 404 upstream was actually asked');
  });

  t.test('a failing upstream is retried with backoff while viewers ask, and plays once it is back', async (t) => {
    const cid = id('Flaky');
    const flaky = '/live/flaky.ts';
    const get = () => rawGet(base, `/watch/live/${cid}?api_key=${encodeURIComponent(token)}`, {}, 40_000)
      .catch((err: Error) => ({ status: 0, body: err.message, headers: {} as http.IncomingHttpHeaders }));
    const first = await get();
    t.ok(first.status === 502 || first.status === 503, `while the upstream answers 500: 502/503 (got ${first.status})`);
    t.match(String(first.headers['retry-after'] ?? ''), /^\d+$/, 'with Retry-After');
    // A player that keeps asking about once a second.
    const statuses: number[] = [];
    const until = Date.now() + 3500;
    while (Date.now() < until) {
      await sleep(1000);
      statuses.push((await get()).status);
    }
    const retried = upstream.connections(flaky) >= 2;
    t.ok(retried, `the failed start is retried while viewers ask (${upstream.connections(flaky)} upstream request(s); answers ${statuses.join(', ')})`);
    upstream.fail(flaky, undefined);
    if (!retried) return; // nothing retries: waiting for a recovery would only burn time
    let res = first;
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      await sleep(1000);
      res = await get();
      statuses.push(res.status);
      if (res.status === 200) break;
    }
    t.equal(res.status, 200, `once the upstream is back, the channel plays (answers ${statuses.join(', ')})`);
    t.ok(upstream.peakConnections(flaky) <= 1, 'never two upstream connections at once');
  });

  t.test('killing the channel ffmpeg: restarted, same URLs keep serving new segments', async (t) => {
    const cid = id('Killme');
    const h = await hlsOf(t, cid);
    const theJob = job(cid);
    const pid = theJob?.data.pid ?? 0;
    t.ok(pid > 1 && pidAlive(pid), 'running ffmpeg');
    const player = decode(watchUrl(cid), 6, 60_000);
    await sleep(2000);
    const before = await rawGet(base, new URL(h.mediaUrl).pathname + new URL(h.mediaUrl).search);
    const seen = new Set((HLS.parse(before.body) as HLS.types.MediaPlaylist).segments.map((s) => s.uri));
    process.kill(pid, 'SIGKILL');
    const newPid = await waitFor(() => { const p = job(cid)?.data.pid; return p && p !== pid && pidAlive(p) ? p : 0; }, 30_000);
    t.ok(newPid, `a new ffmpeg runs (${newPid})`);
    t.equal(job(cid), theJob, 'the same job');
    let fresh = '';
    await waitFor(async () => {
      const r = await rawGet(base, new URL(h.mediaUrl).pathname + new URL(h.mediaUrl).search);
      if (r.status !== 200) return false;
      const uris = (HLS.parse(r.body) as HLS.types.MediaPlaylist).segments.map((s) => s.uri);
      fresh = uris.filter((u) => !seen.has(u)).pop() ?? '';
      return fresh !== '';
    }, 30_000, 500);
    t.ok(fresh, 'the media playlist URL handed out before the kill lists new segments');
    if (fresh) {
      const r = await fetchBytes(new URL(fresh, h.mediaUrl).href);
      t.equal(r.status, 200, 'a new segment is served');
    }
    const d = await player;
    t.comment(`the player that was watching during the kill decoded ${d.seconds.toFixed(2)} s of 6 (exit ${d.code})${d.seconds < 5.9 ? `: ${d.stderr.split('\n').slice(-3).join(' | ')}` : ''}`);
  });

  t.test('a channel whose upstream is HLS plays', async (t) => {
    await hlsReady;
    const d = await decode(watchUrl(id('HLS In')), 6);
    t.ok(d.seconds >= 5, `decoded ${d.seconds.toFixed(2)} s of video${d.seconds < 5 ? `; ffmpeg: ${d.stderr}` : ''}`);
  });

  t.test('everything idles out; nothing left running or on disk', async (t) => {
    const pids = () => (host.host.ffmpeg as unknown as { livePids(): number[] }).livePids();
    const running = () => host.host.jobs.list().filter((j) => j.key.startsWith('live:') && j.state === 'running');
    t.ok(await waitFor(() => running().length === 0, 30_000), `no live job running (${running().map((j) => j.key).join(', ')})`);
    t.ok(await waitFor(() => pids().length === 0, 15_000), `no ffmpeg left (${pids().join(', ')})`);
    const left = await waitFor(async () => (await readdir(liveRoot).catch(() => [] as string[])).length === 0, 10_000);
    t.ok(left, `${liveRoot} is empty (${(await readdir(liveRoot).catch(() => [])).join(', ')})`);
    await host.close();
    hostClosed = true;
    await upstream.close();
    t.strictSame(upstream.alivePids(), [], 'no upstream ffmpeg left');
    t.strictSame([...clientPids].filter(pidAlive), [], 'no player ffmpeg left');
  });
});

/** The part of a tap Test the helpers use. */
interface Tap {
  ok(...args: any[]): unknown;
  notOk(...args: any[]): unknown;
  equal(...args: any[]): unknown;
  match(...args: any[]): unknown;
  strictSame(...args: any[]): unknown;
}

/** The directory (under root) that holds a file named `name`. */
async function findDirOf(root: string, name: string): Promise<string | undefined> {
  let entries;
  try { entries = await readdir(root, { withFileTypes: true }); } catch { return undefined; }
  for (const e of entries) if (e.isFile() && e.name === name) return root;
  for (const e of entries) {
    if (!e.isDirectory()) continue;
    const found = await findDirOf(path.join(root, e.name), name);
    if (found) return found;
  }
  return undefined;
}
