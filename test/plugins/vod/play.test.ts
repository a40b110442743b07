/**
 * VOD playback entry points with the real plugin over generated clips:
 * play-info (every decision branch and reason, DASH-only devices), the file
 * with ranges, /watch/vod/{id} for direct and other clients, ffmpeg as a
 * player over real HTTP, bad input, access and credentials. The decision
 * function itself is unit-tested first, on hand-made MediaInfo.
 */
// The SDK re-exports tsyringe, which wants the metadata polyfill loaded first (as the host does).
import 'reflect-metadata';
import t from 'tap';
import { execFile } from 'node:child_process';
import { copyFile, mkdir, readFile, unlink } from 'node:fs/promises';
import path from 'node:path';
import { deviceCaps } from '../../../sdk/device.js';
import type { TestHost } from '../../../sdk/testing.js';
import type { MediaInfo } from '../../../plugins/vod/model.js';
import { decide } from '../../../plugins/vod/play-decision.js';
import { CachedItems } from '../../../plugins/vod/play-routes.js';
import { asInject, expectError, rawGet } from '../../helpers/http.js';
import { catalog, clip, FFMPEG, tempDir, vodHost } from './fixtures.js';

// ---------------------------------------------------------------------------
// decide(), on MediaInfo written by hand

const info = (over: Partial<MediaInfo> = {}, video: Partial<NonNullable<MediaInfo['video']>> = {}): MediaInfo => ({
  container: 'mp4', duration: 60, bitrate: 2_000_000,
  video: { index: 0, codec: 'h264', profile: 'High', width: 1920, height: 1080, hdr: false, bitrate: 1_800_000, fps: 25, ...video },
  audio: [{ index: 1, codec: 'aac', channels: 2, language: 'eng', title: null, default: true }],
  subtitles: [],
  ...over,
});
const browser = deviceCaps({});
const caps = (headers: Record<string, string>) => deviceCaps(headers);

t.test('decide: every branch and reason', async (t) => {
  const d = (mi: MediaInfo, c = browser, o = {}) => decide(mi, c, o);
  t.equal(d(info()).method, 'direct', 'h264/aac mp4 plays directly in a browser');
  t.same(d(info()).reasons, []);
  t.equal(d(info({ container: 'webm' }, { codec: 'vp9' }), caps({ 'device-codecs': 'vp9' })).method, 'direct', 'webm is a direct container');

  const transcode = (what: string, mi: MediaInfo, c: typeof browser, o: object, reason: RegExp) => {
    const r = d(mi, c, o);
    t.equal(r.method, 'transcode', `${what}: transcode`);
    t.match(r.reasons.join('; '), reason, `${what}: the reason`);
    t.ok(r.height && r.videoBitrate, `${what}: with an output height and bitrate`);
  };
  transcode('video codec', info({}, { codec: 'hevc' }), browser, {}, /video codec hevc not supported/);
  transcode('height', info(), caps({ 'device-max-height': '720' }), {}, /height 1080 over 720/);
  transcode('HDR', info({}, { codec: 'hevc', hdr: true }), caps({ 'device-codecs': 'hevc' }), {}, /HDR/);
  transcode('maxBitrate', info(), browser, { maxBitrate: 1_000_000 }, /bitrate 2000000 over 1000000/);
  t.equal(d(info(), caps({ 'device-max-height': '720' })).height, 720, 'the output height fits the device');
  t.ok(d(info(), browser, { maxBitrate: 1_000_000 }).videoBitrate! < 1_000_000, 'the video bitrate leaves room for audio under maxBitrate');
  t.equal(d(info({}, { codec: 'hevc', hdr: true }), caps({ 'device-codecs': 'hevc', 'device-hdr': '1' })).method, 'direct', 'HDR to an HDR device: direct');
  t.equal(d(info(), browser, { maxBitrate: 3_000_000 }).method, 'direct', 'under maxBitrate: direct');

  const ac3 = info({ container: 'mkv', audio: [{ index: 1, codec: 'ac3', channels: 6, language: null, title: null, default: true }] });
  const mkv = { 'device-containers': 'mkv,mp4' };
  t.equal(d(ac3, caps(mkv)).method, 'audio-only', 'audio codec: audio-only');
  t.match(d(ac3, caps(mkv)).reasons.join(), /audio codec ac3 not supported/);
  t.equal(d(ac3, caps({ ...mkv, 'device-audio-codecs': 'ac3,aac' })).method, 'audio-only', 'channels: audio-only');
  t.match(d(ac3, caps({ ...mkv, 'device-audio-codecs': 'ac3,aac' })).reasons.join(), /6 audio channels over 2/);
  t.equal(d(ac3, caps({ ...mkv, 'device-audio-codecs': 'ac3', 'device-audio-channels': '6' })).method, 'direct', 'a 5.1 AC-3 device: direct');
  t.equal(d(ac3, browser).method, 'audio-only', 'the audio decides before the container');
  t.equal(d(info({}, { codec: 'hevc' }), browser).method, 'transcode', 'the video decides before anything else');

  t.equal(d(info({ container: 'mkv' })).method, 'remux', 'container mkv in a browser: remux');
  t.match(d(info({ container: 'mkv' })).reasons.join(), /container mkv not supported/);
  t.equal(d(info({ container: 'ts' }), caps({ 'device-containers': 'ts' })).method, 'remux', 'a ts the device takes is still repackaged');
  const two = info({ audio: [info().audio[0]!, { index: 2, codec: 'aac', channels: 2, language: 'fre', title: null, default: false }] });
  t.equal(d(two, browser, { audioTrack: 1 }).method, 'remux', 'another audio track: remux');
  t.equal(d(two, browser, { audioTrack: 1 }).audio?.language, 'fre', 'with that track');
  t.equal(d(two, browser, { audioTrack: 0 }).method, 'direct', 'the default track: direct');
  t.equal(d(info({ container: 'avi' }, { codec: 'mpeg4' }), caps({ 'device-codecs': 'mpeg4' })).method, 'transcode', 'a codec fMP4 cannot carry is transcoded when repackaging');
  t.equal(d(info({ audio: [] })).method, 'direct', 'no audio at all: direct');
  t.equal(d(info({ audio: [] })).audio, undefined);
});

t.test('CachedItems: a short-lived cache in front of the store', async (t) => {
  let now = 0;
  const calls: string[] = [];
  const item = { id: 'a', libraryId: 1, type: 'movie', title: 'A', year: null, parentId: null, seasonNumber: null, episodeNumber: null, addedAt: 0 } as const;
  const store = {
    item: async (id: string) => { calls.push(`item ${id}`); return id === 'a' ? { ...item } : undefined; },
    versions: async (id: string) => { calls.push(`versions ${id}`); if (id === 'boom') throw new Error('db down'); return []; },
  };
  const cache = new CachedItems(store, 5_000, () => now);
  await Promise.all([cache.item('a'), cache.item('a'), cache.item('a')]);
  t.same(calls, ['item a'], 'concurrent lookups share one query');
  now = 4_999;
  await cache.item('a');
  t.same(calls, ['item a'], 'reused within the TTL');
  now = 5_000;
  await cache.item('a');
  t.same(calls, ['item a', 'item a'], 'asked again once it expires');
  await cache.item('nope');
  await cache.item('nope');
  t.same(calls.filter((c) => c === 'item nope').length, 2, 'unknown ids are not remembered');
  await t.rejects(cache.versions('boom'));
  await t.rejects(cache.versions('boom'));
  t.same(calls.filter((c) => c === 'versions boom').length, 2, 'failures are not remembered');
  cache.clear();
  await cache.item('a');
  t.same(calls.filter((c) => c === 'item a').length, 3, 'clear() forgets everything');
});

// ---------------------------------------------------------------------------
// The routes, with the real plugin

/** ffmpeg as a player: decodes every video frame of `url`; the frame count and the last frame's time. */
function decodeAll(url: string): Promise<{ code: number; frames: number; seconds: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(FFMPEG, ['-hide_banner', '-nostdin', '-loglevel', 'error', '-i', url, '-map', '0:v:0', '-f', 'framemd5', '-'], { maxBuffer: 16 * 2 ** 20, timeout: 60_000 }, (err, stdout, stderr) => {
      // framemd5: stream, dts, pts, duration, size, hash; timebase in a `#tb 0: 1/25` line.
      const tb = /#tb 0: (\d+)\/(\d+)/.exec(stdout);
      const rows = stdout.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => l.split(',').map((s) => s.trim()));
      const last = rows[rows.length - 1];
      const seconds = tb && last ? ((Number(last[2]) + Number(last[3])) * Number(tb[1])) / Number(tb[2]) : 0;
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, frames: rows.length, seconds, stderr: stderr.replace(/(api_key|key)=[^&\s]*/g, '$1=***') });
    });
  });
}

const SECONDS = 2;
const FPS = 25;
const small = { seconds: SECONDS, width: 320, height: 180, fps: FPS };

t.test('playback routes', async (t) => {
  const dir = await tempDir(t);
  const movies = path.join(dir, 'movies');
  const other = path.join(dir, 'other');
  const file = (name: string) => path.join(movies, name);
  await clip(file('Direct (2001).mp4'), small);
  await Promise.all([
    clip(file('Remux (2002).mkv'), small),
    clip(file('Hevc (2003).mkv'), { ...small, video: 'hevc' }),
  ]);
  await Promise.all([
    clip(file('Hdr (2004).mkv'), { ...small, video: 'hevc', hdr: true }),
    clip(file('Surround (2005).mkv'), { ...small, audio: 'ac3', channels: 6 }),
  ]);
  await Promise.all([
    clip(file('Tracks (2006).mp4'), { ...small, secondAudio: true }),
    clip(file('Versions (2010) - 360p.mp4'), { ...small, width: 640, height: 360 }),
  ]);
  await copyFile(file('Remux (2002).mkv'), file('Versions (2010) - 180p.mkv'));
  await copyFile(file('Direct (2001).mp4'), file('Gone (2007).mp4'));
  await mkdir(other);
  await copyFile(file('Direct (2001).mp4'), path.join(other, 'Secret (2020).mp4'));
  const directBytes = await readFile(file('Direct (2001).mp4'));

  const host: TestHost = await vodHost([
    { name: 'Movies', type: 'movies', paths: [movies] },
    { name: 'Other', type: 'movies', paths: [other] },
  ], { listen: true });
  t.teardown(() => host.close());
  const bearer = host.authHeaders;
  const token = host.adminToken;

  const { libs, ids, id } = await catalog(host);
  const libId = (name: string) => libs.find((l) => l.name === name)!.id;
  t.equal(ids.size, 9, 'the scan found every title');

  const playInfo = (title: string, headers: Record<string, string> = {}, query = '') =>
    host.inject({ method: 'GET', url: `/watch/vod/${id(title)}/play-info${query}`, headers: { ...bearer, ...headers } });
  const plays = async (title: string, headers: Record<string, string>, query: string, method: string, format: string, what: string) => {
    const res = await playInfo(title, headers, query);
    t.equal(res.statusCode, 200, `${what}: 200`);
    const body = res.json();
    t.equal(body.method, method, `${what}: ${method}`);
    t.equal(body.format, format, `${what}: format ${format}`);
    t.notOk(body.url.includes(token), `${what}: the URL does not carry the token`);
    return body as { method: string; url: string; format: string };
  };

  const H264_MKV = { 'device-containers': 'mp4,mkv' };
  const HEVC_MKV = { 'device-codecs': 'h264,hevc', 'device-containers': 'mp4,mkv' };

  t.test('play-info: every decision branch', async (t) => {
    const direct = await plays('Direct', {}, '', 'direct', 'mp4', 'h264/aac mp4, no headers (a browser)');
    t.match(direct.url, new RegExp(`^/watch/vod/${id('Direct')}/file\\?key=[\\w.-]+$`), 'direct: the /file URL with a signed key');
    t.strictSame(Object.keys(direct), ['method', 'url', 'format'], 'exactly the spec fields (resume_position only with progress)');

    await plays('Remux', {}, '', 'remux', 'hls', 'mkv in a browser: container');
    await plays('Remux', H264_MKV, '', 'direct', 'mkv', 'mkv to an mkv device');
    await plays('Hevc', {}, '', 'transcode', 'hls', 'hevc in a browser: video codec');
    await plays('Hevc', HEVC_MKV, '', 'direct', 'mkv', 'hevc to an hevc device');
    await plays('Direct', { 'device-max-height': '144' }, '', 'transcode', 'hls', 'height over Device-Max-Height');
    await plays('Hdr', HEVC_MKV, '', 'transcode', 'hls', 'HDR to an SDR device');
    await plays('Hdr', { ...HEVC_MKV, 'device-hdr': '1' }, '', 'direct', 'mkv', 'HDR to an HDR device');
    await plays('Direct', {}, '?maxBitrate=64000', 'transcode', 'hls', 'over maxBitrate');
    await plays('Direct', {}, '?maxBitrate=100000000', 'direct', 'mp4', 'under maxBitrate');
    await plays('Surround', H264_MKV, '', 'audio-only', 'hls', 'AC-3 to an AAC device: audio codec');
    await plays('Surround', { ...H264_MKV, 'device-audio-codecs': 'aac,ac3' }, '', 'audio-only', 'hls', '5.1 to a stereo device: channels');
    await plays('Surround', { ...H264_MKV, 'device-audio-codecs': 'aac,ac3', 'device-audio-channels': '6' }, '', 'direct', 'mkv', '5.1 AC-3 device');
    await plays('Surround', {}, '', 'audio-only', 'hls', 'no headers: the browser default (stereo AAC)');
    await plays('Tracks', {}, '?audioTrack=1', 'remux', 'hls', 'the second audio track');
    await plays('Tracks', {}, '?audioTrack=0', 'direct', 'mp4', 'the first (default) audio track');
  });

  t.test('play-info: DASH-only devices get master.mpd, others master.m3u8, with the request\'s options', async (t) => {
    for (const os of ['STB', 'stb', 'Android', 'Android TV 12']) {
      const body = await plays('Hevc', { 'device-os': os }, '?maxBitrate=2000000&audioTrack=0', 'transcode', 'dash', `Device-OS ${os}`);
      t.match(body.url, new RegExp(`^/watch/vod/${id('Hevc')}/master\\.mpd\\?`), `Device-OS ${os}: master.mpd`);
      t.notOk(body.url.includes('m3u8'), `Device-OS ${os}: never m3u8`);
    }
    for (const os of ['', 'Web', 'iOS', 'Windows']) {
      const body = await plays('Hevc', os ? { 'device-os': os } : {}, '?maxBitrate=2000000&audioTrack=0', 'transcode', 'hls', `Device-OS ${os || '(none)'}`);
      const u = new URL(body.url, 'http://x');
      t.equal(u.pathname, `/watch/vod/${id('Hevc')}/master.m3u8`, `Device-OS ${os || '(none)'}: master.m3u8`);
      t.equal(u.searchParams.get('maxBitrate'), '2000000', 'maxBitrate carried');
      t.equal(u.searchParams.get('audioTrack'), '0', 'audioTrack carried');
      t.notOk(u.searchParams.has('version'), 'version 0 (the default) not repeated');
      t.ok(u.searchParams.get('key'), 'a signed key');
      t.notOk(u.searchParams.has('api_key'), 'never the token');
    }
    const remux = await plays('Versions', {}, '?version=1', 'remux', 'hls', 'version 1 (mkv) in a browser');
    t.equal(new URL(remux.url, 'http://x').searchParams.get('version'), '1', 'the version is carried to the manifest');
    const direct = await plays('Versions', H264_MKV, '?version=1', 'direct', 'mkv', 'version 1 to an mkv device');
    t.match(direct.url, /\/file\?key=[\w.-]+&version=1$/, 'the direct URL names the version');
    await plays('Versions', {}, '?version=0', 'direct', 'mp4', 'version 0 is the best (360p mp4)');
  });

  t.test('play-info: bad input', async (t) => {
    const bad = async (query: string, status: number, message: RegExp) => expectError(t, await playInfo('Tracks', {}, query), status, message, query);
    await bad('?version=-1', 400, /version/);
    await bad('?version=abc', 400, /version/);
    await bad('?version=1.5', 400, /version/);
    await bad('?version=99999999999999999999', 400, /version/);
    await bad('?maxBitrate=abc', 400, /maxBitrate/);
    await bad('?maxBitrate=1', 400, /maxBitrate/);
    await bad('?maxBitrate=-5', 400, /maxBitrate/);
    await bad('?maxBitrate=1000000000000', 400, /maxBitrate/);
    await bad('?audioTrack=-1', 400, /audioTrack/);
    await bad('?audioTrack=x', 400, /audioTrack/);
    await bad('?audioTrack=100000', 400, /audioTrack/);
    await bad('?version=1', 404, /no version 1/);
    await bad('?audioTrack=2', 404, /no audio track 2/);
    expectError(t, await host.inject({ method: 'GET', url: `/watch/vod/${id('Versions')}/file?version=2`, headers: bearer }), 404, undefined, '/file of a missing version');
    expectError(t, await host.inject({ method: 'GET', url: `/watch/vod/nope/play-info`, headers: bearer }), 404, undefined, 'unknown id');
  });

  t.test('the file: ranges, validators, HEAD', async (t) => {
    const url = `/watch/vod/${id('Direct')}/file`;
    const get = (headers: Record<string, string> = {}, method: 'GET' | 'HEAD' = 'GET') => host.inject({ method, url, headers: { ...bearer, ...headers } });
    const size = directBytes.length;
    const whole = await get();
    t.equal(whole.statusCode, 200);
    t.equal(whole.headers['content-type'], 'video/mp4');
    t.equal(whole.headers['accept-ranges'], 'bytes');
    t.equal(whole.headers['content-length'], String(size));
    t.ok(whole.rawPayload.equals(directBytes), 'bytes equal to the file');
    t.equal(whole.headers['access-control-allow-origin'], '*', 'any origin may read it (players)');
    const ranges: [string, number, number][] = [['bytes=0-99', 0, 99], ['bytes=1000-4999', 1000, 4999], [`bytes=${size - 100}-`, size - 100, size - 1], ['bytes=-300', size - 300, size - 1]];
    for (const [range, start, end] of ranges) {
      const res = await get({ range });
      t.equal(res.statusCode, 206, `${range}: 206`);
      t.equal(res.headers['content-range'], `bytes ${start}-${end}/${size}`, `${range}: Content-Range`);
      t.ok(res.rawPayload.equals(directBytes.subarray(start, end + 1)), `${range}: the file's bytes`);
    }
    const past = await get({ range: `bytes=${size}-` });
    expectError(t, past, 416, undefined, 'past the end');
    t.equal(past.headers['content-range'], `bytes */${size}`);
    const malformed = await get({ range: 'bytes=oops' });
    t.equal(malformed.statusCode, 200, 'a malformed Range is ignored');
    t.ok(malformed.rawPayload.equals(directBytes));
    const head = await get({ range: 'bytes=0-99' }, 'HEAD');
    t.equal(head.statusCode, 206, 'HEAD: as GET');
    t.equal(head.headers['content-length'], '100');
    t.equal(head.rawPayload.length, 0, 'HEAD: no body');
    t.equal((await get({ 'if-none-match': String(whole.headers.etag) })).statusCode, 304, 'If-None-Match: 304');
    const stale = await get({ range: 'bytes=0-99', 'if-range': '"stale"' });
    t.equal(stale.statusCode, 200, 'If-Range with a stale ETag: the whole file');
    t.ok(stale.rawPayload.equals(directBytes));
    t.equal((await get({ range: 'bytes=0-99', 'if-range': String(whole.headers.etag) })).statusCode, 206, 'If-Range current: the range');
    const mkv = await host.inject({ method: 'HEAD', url: `/watch/vod/${id('Remux')}/file`, headers: bearer });
    t.equal(mkv.headers['content-type'], 'video/x-matroska', 'an mkv is video/x-matroska');
  });

  t.test('/watch/vod/{id}: the bytes for a direct client, the Redirect notice otherwise', async (t) => {
    const res = await host.inject({ method: 'GET', url: `/watch/vod/${id('Direct')}`, headers: { ...bearer, range: 'bytes=10-19' } });
    t.equal(res.statusCode, 206, 'direct: the file with its range');
    t.ok(res.rawPayload.equals(directBytes.subarray(10, 20)));
    const all = await host.inject({ method: 'GET', url: `/watch/vod/${id('Direct')}`, headers: bearer });
    t.equal(all.statusCode, 200);
    t.equal(all.headers['content-type'], 'video/mp4');
    t.ok(all.rawPayload.equals(directBytes), 'direct: the whole file');
    const head = await host.inject({ method: 'HEAD', url: `/watch/vod/${id('Direct')}`, headers: bearer });
    t.equal(head.headers['content-length'], String(directBytes.length), 'HEAD: the file\'s headers');
    t.equal(head.rawPayload.length, 0);

    const hls = await host.inject({ method: 'GET', url: `/watch/vod/${id('Hevc')}?maxBitrate=2000000`, headers: bearer });
    t.equal(hls.statusCode, 200);
    const notice = hls.json();
    t.strictSame(Object.keys(notice), ['status', 'type', 'transcode_url']);
    t.equal(notice.status, 'redirecting');
    t.equal(notice.type, 'hls', 'no Device-OS: hls');
    const info = (await playInfo('Hevc', {}, '?maxBitrate=2000000')).json();
    t.equal(notice.transcode_url.replace(/key=[^&]*/, ''), info.url.replace(/key=[^&]*/, ''), 'the manifest URL play-info gives');
    const dash = (await host.inject({ method: 'GET', url: `/watch/vod/${id('Remux')}`, headers: { ...bearer, 'device-os': 'STB' } })).json();
    t.equal(dash.type, 'dash', 'a DASH-only device: dash');
    t.match(dash.transcode_url, /\/master\.mpd\?/);
    const direct = await host.inject({ method: 'GET', url: `/watch/vod/${id('Remux')}`, headers: { ...bearer, ...H264_MKV } });
    t.equal(direct.headers['content-type'], 'video/x-matroska', 'the same mkv to an mkv device: its bytes');
  });

  t.test('ffmpeg plays /file over HTTP', async (t) => {
    const signed = (await playInfo('Direct')).json().url as string;
    const viaKey = await decodeAll(`${host.url}${signed}`);
    t.equal(viaKey.code, 0, `signed URL from play-info: ffmpeg exits 0 ${viaKey.stderr}`);
    t.equal(viaKey.frames, SECONDS * FPS, 'every frame');
    t.ok(Math.abs(viaKey.seconds - SECONDS) < 0.1, `the whole duration (${viaKey.seconds} s)`);
    const viaApiKey = await decodeAll(`${host.url}/watch/vod/${id('Hevc')}/file?api_key=${encodeURIComponent(token)}`);
    t.equal(viaApiKey.code, 0, `?api_key= on an hevc mkv: ffmpeg exits 0 ${viaApiKey.stderr}`);
    t.ok(Math.abs(viaApiKey.seconds - SECONDS) < 0.1, `the whole duration (${viaApiKey.seconds} s)`);
  });

  t.test('credentials and access', async (t) => {
    const direct = id('Direct');
    for (const url of [`/watch/vod/${direct}/play-info`, `/watch/vod/${direct}/file`, `/watch/vod/${direct}`]) {
      expectError(t, await host.inject({ method: 'GET', url }), 401, undefined, `${url} without a token`);
      expectError(t, await host.inject({ method: 'GET', url: `${url}?api_key=garbage` }), 401, undefined, `${url} with a bad api_key`);
      t.equal((await host.inject({ method: 'GET', url: `${url}?api_key=${encodeURIComponent(token)}`, headers: { range: 'bytes=0-0' } })).statusCode < 300, true, `${url} with ?api_key=`);
    }
    const keyOfDirect = new URL((await playInfo('Direct')).json().url, 'http://x').searchParams.get('key')!;
    t.equal((await host.inject({ method: 'GET', url: `/watch/vod/${direct}/file?key=${keyOfDirect}`, headers: { range: 'bytes=0-0' } })).statusCode, 206, 'its own signed key');
    t.equal((await host.inject({ method: 'GET', url: `/watch/vod/${direct}/play-info?key=${keyOfDirect}` })).statusCode, 200, 'the key works on every route of the item');
    expectError(t, await host.inject({ method: 'GET', url: `/watch/vod/${id('Remux')}/file?key=${keyOfDirect}` }), 401, undefined, 'a signed key for another item');
    expectError(t, await host.inject({ method: 'GET', url: `/watch/vod/${direct}/file?key=${keyOfDirect.slice(0, -2)}xx` }), 401, undefined, 'a tampered key');

    await host.createUser('restricted', 'restricted-password', { libraries: [String(libId('Other'))] });
    const rtoken = await host.login('restricted', 'restricted-password');
    const as = (url: string) => host.inject({ method: 'GET', url, headers: { authorization: `Bearer ${rtoken}` } });
    for (const url of [`/watch/vod/${direct}/play-info`, `/watch/vod/${direct}/file`, `/watch/vod/${direct}`]) {
      expectError(t, await as(url), 404, undefined, `restricted user: ${url} outside their libraries`);
    }
    t.equal((await as(`/watch/vod/${id('Secret')}/play-info`)).statusCode, 200, 'restricted user: play-info in their library');
    t.equal((await as(`/watch/vod/${id('Secret')}/file`)).statusCode, 200, 'restricted user: /file in their library');
    const unknown = await as('/watch/vod/AAAAAAAAAAAAAAAA/file');
    t.equal(unknown.body, (await as(`/watch/vod/${direct}/file`)).body.replace(direct, 'AAAAAAAAAAAAAAAA'), 'an item outside their libraries answers as an unknown one');

    const auth = { authorization: `Bearer ${token}` };
    for (const raw of ['/watch/vod/../file', '/watch/vod/..%2F..%2Fetc%2Fpasswd/file', '/watch/vod/%2E%2E/play-info', `/watch/vod/..%2F${direct}/file`, '/watch/vod/../../../etc/passwd', '/watch/vod/..']) {
      const res = await rawGet(host.url, raw, auth, 30_000);
      expectError(t, asInject(res), 404, undefined, `raw path ${raw}`);
    }
  });

  t.test('a file deleted after the scan', async (t) => {
    const gone = id('Gone');
    t.equal((await host.inject({ method: 'GET', url: `/watch/vod/${gone}/file`, headers: { ...bearer, range: 'bytes=0-0' } })).statusCode, 206, 'served while it exists');
    await unlink(file('Gone (2007).mp4'));
    expectError(t, await host.inject({ method: 'GET', url: `/watch/vod/${gone}/file`, headers: bearer }), 404, /rescan/, '/file');
    expectError(t, await host.inject({ method: 'GET', url: `/watch/vod/${gone}`, headers: bearer }), 404, undefined, '/watch/vod/{id}');
  });

  t.test('OpenAPI', async (t) => {
    const doc = (await host.inject({ method: 'GET', url: '/api/docs/json', headers: bearer })).json();
    for (const p of ['/watch/vod/{item_id}/play-info', '/watch/vod/{item_id}', '/watch/vod/{item_id}/file']) {
      t.ok(doc.paths[p]?.get, `${p} is documented`);
      t.same(doc.paths[p]?.get?.tags, ['vod'], `${p} is tagged vod`);
    }
    const q = doc.paths['/watch/vod/{item_id}/play-info'].get.parameters.map((p: { name: string }) => p.name);
    for (const n of ['version', 'maxBitrate', 'audioTrack']) t.ok(q.includes(n), `play-info documents ${n}`);
    const props = doc.paths['/watch/vod/{item_id}/play-info'].get.responses['200'].content['application/json'].schema.properties;
    t.ok(props.resume_position, 'play-info leaves room for resume_position');
  });
});
