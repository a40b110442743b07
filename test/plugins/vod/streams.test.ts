/**
 * Streams every player accepts (issue 24, VOD items), with the real plugin,
 * real ffmpeg and real HTTP:
 *  - timelines start at 0 (GStreamer's playbin waits for the clock to reach the first timestamp);
 *  - segment completeness: every segment of a remux, an audio-only and a
 *    transcode fetched in a shuffled order (the remux first as reported: 7,
 *    then 0–6, then 7 again), each probed with its init segment: its video
 *    frames are exactly the source's frames between its boundaries, its
 *    audio covers it;
 *  - play-info's URL carries its decision: fetched with no headers it gives
 *    what play-info said;
 *  - CORS preflights on media paths;
 *  - AC-3 5.1 passthrough declared as 6 channels (and E-AC-3 JOC as 16/JOC);
 *  - BANDWIDTH at or above the measured peak; a remux's audio from its track;
 *  - BCP 47 languages with display names in manifests and /item;
 *  - audio segments made by different ffmpeg runs (restarts) meet without a gap.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import * as HLS from 'hls-parser';
import type { TestHost } from '../../../sdk/testing.js';
import { eac3Channels, splitFragment, splitInit } from '../../../plugins/vod/transcode/fmp4.js';
import { readBoxes } from '../../../sdk/index.js';
import { asInject, expectError, rawGet } from '../../helpers/http.js';
import { catalog, clip, FFPROBE, tempDir, vodHost } from './fixtures.js';

HLS.setOptions({ strictMode: true, silent: true });
t.setTimeout(300_000);

const probeJson = (args: string[]): Promise<any> => new Promise((resolve, reject) => {
  execFile(FFPROBE, ['-v', 'error', '-print_format', 'json', ...args], { maxBuffer: 64 * 2 ** 20 }, (err, out) => (err ? reject(err) : resolve(JSON.parse(out))));
});

/** Decoded frames of the one stream in `file` (ffprobe -count_frames). */
async function framesIn(file: string): Promise<number> {
  const p = await probeJson(['-count_frames', '-show_entries', 'stream=nb_read_frames', file]);
  return Number(p.streams[0].nb_read_frames);
}

/** Presentation times of a source's video frames. */
async function sourceFrameTimes(file: string): Promise<number[]> {
  const p = await probeJson(['-select_streams', 'v:0', '-show_entries', 'packet=pts_time', file]);
  return (p.packets as { pts_time: string }[]).map((x) => Number(x.pts_time)).sort((a, b) => a - b);
}

/** A fixed shuffle (xorshift), so a failure can be replayed. */
function shuffled<T>(items: T[], seed = 7): T[] {
  const out = [...items];
  let s = seed;
  for (let i = out.length - 1; i > 0; i--) {
    s ^= s << 13; s ^= s >>> 17; s ^= s << 5;
    const j = Math.abs(s) % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

t.test('dec3: E-AC-3 5.1 with JOC (Atmos)', async (t) => {
  // data_rate 768, one independent substream: fscod 0, bsid 16, asvc 0, bsmod 0, acmod 7 (3/2), lfeon 1,
  // no dependent substream; then TS 103 420's flag_ec3_extension_type_a = 1, complexity index 16.
  const bits = '0001100000000' + '000' + '00' + '10000' + '0' + '0' + '000' + '111' + '1' + '000' + '0000' + '0' + '0000000' + '1' + '00010000';
  const bytes = Buffer.from(bits.padEnd(Math.ceil(bits.length / 8) * 8, '0').match(/.{8}/g)!.map((b) => parseInt(b, 2)));
  t.strictSame(eac3Channels(bytes), { channels: 6, joc: true }, '5.1 bed, JOC');
  t.strictSame(eac3Channels(bytes.subarray(0, 5)), { channels: 6, joc: false }, 'without the extension: plain 5.1');
});

t.test('VOD streams over HTTP', async (t) => {
  const dir = await tempDir(t);
  const movies = path.join(dir, 'movies');
  await mkdir(movies);
  const file = (name: string) => path.join(movies, name);
  const small = { width: 320, height: 180, fps: 25 };
  await Promise.all([
    // Keyframes every 2 s: remux segments of two GOPs (100 frames), as in the report.
    clip(file('Remux (2001).mkv'), { ...small, seconds: 40, gopSeconds: 2 }),
    // AC-3 5.1 in MP4 (browsers play MP4 directly but not AC-3): audio-only.
    clip(file('Dolby (2002).mp4'), { ...small, seconds: 30, gopSeconds: 2, audio: 'ac3', channels: 6 }),
  ]);
  await Promise.all([
    clip(file('Surround (2003).mkv'), { ...small, seconds: 6, audio: 'ac3', channels: 6 }),
    clip(file('Big (2004).mp4'), { width: 640, height: 360, fps: 25, seconds: 6 }),
    clip(file('Hevc (2005).mkv'), { ...small, seconds: 6, video: 'hevc' }),
    clip(file('Tracks (2006).mp4'), { ...small, seconds: 6, secondAudio: true }),
  ]);
  const host: TestHost = await vodHost([{ name: 'Movies', type: 'movies', paths: [movies] }], { listen: true, vod: { preset: 'ultrafast' } });
  t.teardown(() => host.close());
  const { id } = await catalog(host);
  const apiKey = `api_key=${encodeURIComponent(host.adminToken)}`;
  const get = (p: string, headers: Record<string, string> = {}) => rawGet(host.url, p, headers, 90_000);
  const jobs = () => host.host.jobs.list().filter((j) => j.kind === 'vod-transcode' && j.state === 'running');
  t.afterEach(async () => { for (const j of jobs()) await host.host.jobs.get(j.key)?.stop('test done'); });

  /** A manifest URL (path and query) → the master, its variant and both media playlists' init and segment paths. */
  async function open(masterPath: string, headers: Record<string, string> = {}) {
    const res = await get(masterPath, headers);
    if (res.status !== 200) throw new Error(`${masterPath}: ${res.status} ${res.body}`);
    const text = res.body.toString();
    const master = HLS.parse(text) as HLS.types.MasterPlaylist;
    const variant = master.variants[0]!;
    const media = async (uri: string) => {
      const u = new URL(uri, new URL(masterPath, host.url));
      const playlist = HLS.parse((await get(u.pathname + u.search)).body.toString()) as HLS.types.MediaPlaylist;
      const abs = (s: string) => { const x = new URL(s, u); return x.pathname + x.search; };
      return { durations: playlist.segments.map((s) => s.duration), segments: playlist.segments.map((s) => abs(s.uri)), init: abs(playlist.segments[0]!.map!.uri) };
    };
    return { text, master, variant, video: await media(variant.uri), audio: variant.audio[0]?.uri ? await media(variant.audio[0].uri) : undefined };
  }

  /** Writes init + segment and counts the decoded frames. */
  let n = 0;
  async function frames(init: Buffer, segment: Buffer): Promise<number> {
    const out = path.join(dir, `seg-${n++}.mp4`);
    await writeFile(out, Buffer.concat([init, segment]));
    return framesIn(out);
  }

  /** Fetches every segment in `order`, checks each one's frames; returns the bodies. */
  async function checkSegments(t: Tap, what: string, h: Awaited<ReturnType<typeof open>>, source: string, order: number[], audioFrameSeconds: number) {
    const times = await sourceFrameTimes(source);
    const starts = h.video.durations.reduce<number[]>((acc, d) => [...acc, acc[acc.length - 1]! + d], [0]);
    const vInit = (await get(h.video.init)).body;
    const aInit = (await get(h.audio!.init)).body;
    const bodies = new Map<number, Buffer>();
    for (const k of order) {
      const [v, a] = await Promise.all([get(h.video.segments[k]!), get(h.audio!.segments[k]!)]);
      t.strictSame([v.status, a.status], [200, 200], `${what}: segment ${k} 200`);
      // Frames the source has from this segment's start to the next one's (the plan's times, rounded to 1 ms in the playlist).
      const expected = times.filter((x) => x >= starts[k]! - 0.002 && x < starts[k + 1]! - 0.002).length;
      t.equal(await frames(vInit, v.body), expected, `${what}: video segment ${k} holds its ${expected} frames`);
      const audio = await frames(aInit, a.body);
      const wanted = h.audio!.durations[k]! / audioFrameSeconds;
      t.ok(audio >= Math.floor(wanted) - 3 && audio <= Math.ceil(wanted) + 3, `${what}: audio segment ${k} covers it (${audio} frames for ${wanted.toFixed(1)})`);
      if (bodies.has(k)) t.ok(bodies.get(k)!.equals(v.body), `${what}: segment ${k} asked again is the same bytes`);
      bodies.set(k, v.body);
    }
  }

  t.test('segment completeness: remux, audio-only and transcode, segments in a shuffled order', async (t) => {
    const remux = await open(`/watch/vod/${id('Remux')}/master.m3u8?${apiKey}`);
    t.match(remux.variant.codecs, /^avc1/, 'remux');
    const count = remux.video.segments.length;
    t.equal(count, 10, '40 s in 4 s segments');
    // As reported: 7 first (a run from 7), then 0–6 (a run from 0 that stops on reaching 7), then 7 again.
    await checkSegments(t, 'remux', remux, file('Remux (2001).mkv'), [7, 0, 1, 2, 3, 4, 5, 6, 7, ...shuffled([8, 9, 0, 3])], 1024 / 48_000);

    const audioOnly = await open(`/watch/vod/${id('Dolby')}/master.m3u8?${apiKey}`);
    t.equal(audioOnly.master.variants[0]!.audio[0]!.channels, '2', 'audio-only: AAC stereo');
    await checkSegments(t, 'audio-only', audioOnly, file('Dolby (2002).mp4'), shuffled([...audioOnly.video.segments.keys()], 11), 1024 / 48_000);

    const transcode = await open(`/watch/vod/${id('Remux')}/master.m3u8?${apiKey}&maxBitrate=100000`);
    t.match(transcode.variant.codecs, /^avc1/, 'transcode');
    await checkSegments(t, 'transcode', transcode, file('Remux (2001).mkv'), shuffled([...transcode.video.segments.keys()], 3), 1024 / 48_000);
  });

  t.test('timelines start at 0: remux, audio-only and transcode, video and audio', async (t) => {
    /** The presentation time of a media segment's first sample, with its init segment. */
    const firstSample = (init: Buffer, segment: Buffer): number => {
      const [ftyp, moov] = readBoxes(init);
      const info = splitInit(init.subarray(ftyp!.start, ftyp!.end), init.subarray(moov!.start, moov!.end));
      const [moof, mdat] = readBoxes(segment);
      const [part] = splitFragment(segment.subarray(moof!.start, mdat!.end), info.defaults);
      return (part!.baseTime + part!.firstOffset) / info.tracks[0]!.timescale;
    };
    for (const [what, query] of [['remux', `${id('Remux')}/master.m3u8?${apiKey}`], ['audio-only', `${id('Dolby')}/master.m3u8?${apiKey}`], ['transcode', `${id('Remux')}/master.m3u8?${apiKey}&maxBitrate=100000`]] as const) {
      const h = await open(`/watch/vod/${query}`);
      for (const [track, m] of [['video', h.video], ['audio', h.audio!]] as const) {
        const at = firstSample((await get(m.init)).body, (await get(m.segments[0]!)).body);
        t.ok(at >= 0 && at < 0.05, `${what}: the ${track} starts at ${at.toFixed(3)} s`);
      }
      const mpd = (await get(`/watch/vod/${query.replace('.m3u8', '.mpd')}`)).body.toString();
      t.notMatch(mpd, /presentationTimeOffset="[1-9]/, `${what}: DASH declares no timeline offset`);
    }
  });

  t.test('audio segments meet across transcoder restarts: no gap, no overlap', async (t) => {
    const frame = 1024 / 48_000;
    /** First packet's time and last packet's end (ffprobe, init + segment: no edit list, so the segment's own times). */
    const span = async (init: Buffer, segment: Buffer) => {
      const out = path.join(dir, `audio-${n++}.mp4`);
      await writeFile(out, Buffer.concat([init, segment]));
      const packets = (await probeJson(['-select_streams', 'a:0', '-show_entries', 'packet=pts_time,duration_time', out])).packets as { pts_time: string; duration_time: string }[];
      const last = packets[packets.length - 1]!;
      return { start: Number(packets[0]!.pts_time), end: Number(last.pts_time) + Number(last.duration_time) };
    };
    for (const [what, query] of [
      ['transcode', `${id('Remux')}/master.m3u8?${apiKey}&maxBitrate=100000`],
      ['audio-only', `${id('Dolby')}/master.m3u8?${apiKey}`],
      ['remux', `${id('Remux')}/master.m3u8?${apiKey}`],
    ] as const) {
      const h = await open(`/watch/vod/${query}`);
      // The job goes; segment requests bring it back with runs from where they ask: the last but one
      // (a run from there), then behind it twice (runs that stop on reaching segments already made).
      for (const j of jobs()) await host.host.jobs.get(j.key)?.stop('test: runs from the segments asked for');
      const count = h.audio!.segments.length;
      const order = [count - 2, 4, 0, ...[...Array(count).keys()]];
      const spans = new Map<number, { start: number; end: number }>();
      let init: Buffer | undefined;
      for (const k of order) {
        if (spans.has(k)) continue;
        const res = await get(h.audio!.segments[k]!);
        t.equal(res.status, 200, `${what}: audio segment ${k}`);
        init ??= (await get(h.audio!.init)).body;
        spans.set(k, await span(init, res.body));
      }
      const gaps = [...Array(count - 1).keys()].map((k) => spans.get(k + 1)!.start - spans.get(k)!.end);
      const worst = Math.max(...gaps.map(Math.abs));
      // Encoded AAC is on one grid in every run: segments meet exactly (to the millisecond the source's times are
      // rounded to). Copied audio keeps the source's frames: each segment holds those starting within it.
      const bound = what === 'remux' ? frame : 0.001;
      t.ok(worst < bound, `${what}: consecutive audio segments meet within ${(bound * 1000).toFixed(1)} ms, at the restarts (${count - 2}, 4) too; worst ${(worst * 1000).toFixed(1)} ms (${gaps.map((g) => (g * 1000).toFixed(1)).join(', ')})`);
      t.ok(spans.get(0)!.start < frame && spans.get(count - 1)!.end > spans.get(count - 2)!.end, `${what}: from the start to the end`);
    }
  });

  t.test("play-info's URL carries its decision; headers refine a URL without one", async (t) => {
    const playInfo = async (itemId: string, headers: Record<string, string>) => {
      const r = await host.inject({ method: 'GET', url: `/watch/vod/${itemId}/play-info`, headers: { ...host.authHeaders, ...headers } });
      t.equal(r.statusCode, 200);
      return r.json() as { method: string; url: string; format: string };
    };
    const small = await playInfo(id('Big'), { 'device-max-height': '240' });
    t.equal(small.method, 'transcode', 'Device-Max-Height 240 on a 360p file: transcode');
    t.match(small.url, /[?&]variant=0-t-240-450-0-[0-9a-f]{8}-[0-9a-f]{16}(&|$)/, 'the URL names the variant, signed');
    const played = await open(small.url);
    t.equal(played.variant.resolution?.height, 240, 'fetched with no headers: 240 lines, as play-info said');
    const plain = await open(`/watch/vod/${id('Big')}/master.m3u8?${apiKey}`);
    t.equal(plain.variant.resolution?.height, 360, 'the manifest without a decision and without headers: the file as it is');
    const refined = await open(`/watch/vod/${id('Big')}/master.m3u8?${apiKey}`, { 'device-max-height': '240' });
    t.equal(refined.variant.resolution?.height, 240, 'without a decision, headers decide');

    const hevc = await playInfo(id('Hevc'), { 'device-codecs': 'h264,hevc' });
    t.equal(hevc.method, 'remux', 'HEVC for a device that plays it: remux');
    const copied = await open(hevc.url);
    t.match(copied.variant.codecs, /^hvc1\./, 'fetched with no headers: the HEVC is copied, not transcoded to H.264');

    const tampered = small.url.replace(/variant=0-t-240-450/, 'variant=0-t-240-1500');
    expectError(t, asInject(await get(tampered)), 404, /not valid/, 'a decision altered in the URL');
  });

  t.test('CORS: media paths answer preflights; other paths do not', async (t) => {
    const h = await open(`/watch/vod/${id('Remux')}/master.m3u8?${apiKey}`);
    const preflight = { origin: 'https://player.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization,range' };
    for (const p of [`/watch/vod/${id('Remux')}/master.m3u8`, `/watch/vod/${id('Remux')}/master.mpd`, h.video.segments[1]!.split('?')[0]!, `/watch/vod/${id('Big')}/file`, `/watch/vod/${id('Big')}/play-info`]) {
      const r = await host.inject({ method: 'OPTIONS', url: p, headers: preflight });
      t.equal(r.statusCode, 204, `OPTIONS ${p}: 204`);
      t.equal(r.headers['access-control-allow-origin'], '*', 'any origin');
      t.match(String(r.headers['access-control-allow-headers']), /Authorization/, 'Authorization allowed');
      t.match(String(r.headers['access-control-allow-headers']), /Range/, 'Range allowed');
      t.match(String(r.headers['access-control-allow-methods']), /GET/, 'GET allowed');
    }
    expectError(t, await host.inject({ method: 'OPTIONS', url: '/libraries', headers: preflight }), 404, undefined, 'OPTIONS on an API route');
    const ranged = await host.inject({ method: 'GET', url: `/watch/vod/${id('Big')}/file`, headers: { ...host.authHeaders, origin: 'https://player.example', range: 'bytes=0-99' } });
    t.equal(ranged.statusCode, 206);
    t.equal(ranged.headers['access-control-allow-origin'], '*', 'the media answer itself: any origin');
    t.match(String(ranged.headers['access-control-expose-headers']), /Content-Range/, 'Content-Range readable by the page');
  });

  t.test('AC-3 5.1 passthrough is declared as 6 channels', async (t) => {
    const headers = { 'device-audio-codecs': 'aac,ac3', 'device-audio-channels': '6' };
    const h = await open(`/watch/vod/${id('Surround')}/master.m3u8?${apiKey}`, headers);
    t.match(h.variant.codecs, /ac-3/, 'AC-3 copied');
    t.equal(h.variant.audio[0]!.channels, '6', 'HLS CHANNELS="6"');
    const mpd = (await get(`/watch/vod/${id('Surround')}/master.mpd?${apiKey}`, headers)).body.toString();
    t.match(mpd, /<AudioChannelConfiguration schemeIdUri="urn:mpeg:dash:23003:3:audio_channel_configuration:2011" value="6"\/>/, 'DASH: 6');
  });

  t.test('BANDWIDTH: at or above the measured peak; a remux declares its own audio bitrate', async (t) => {
    const h = await open(`/watch/vod/${id('Remux')}/master.m3u8?${apiKey}&maxBitrate=600000`);
    let peak = 0;
    for (let k = 0; k < h.video.segments.length; k++) {
      const [v, a] = await Promise.all([get(h.video.segments[k]!), get(h.audio!.segments[k]!)]);
      peak = Math.max(peak, ((v.body.length + a.body.length) * 8) / h.video.durations[k]!);
    }
    t.ok(h.variant.bandwidth >= peak, `transcode: BANDWIDTH ${h.variant.bandwidth} ≥ measured peak ${Math.round(peak)}`);
    t.ok(h.variant.bandwidth <= 3 * peak, `and not wildly above it (${(h.variant.bandwidth / peak).toFixed(2)}×)`);

    const remuxHeaders = { 'device-containers': 'mkv' }; // MP4 is then not played directly: remuxed
    const mpd = (await get(`/watch/vod/${id('Big')}/master.mpd?${apiKey}`, remuxHeaders)).body.toString();
    const audioBandwidth = Number(/<Representation id="audio" codecs="mp4a[^"]*" bandwidth="(\d+)"/.exec(mpd)?.[1]);
    const track = (await probeJson(['-select_streams', 'a:0', '-show_entries', 'stream=bit_rate', file('Big (2004).mp4')])).streams[0].bit_rate;
    t.ok(audioBandwidth >= Number(track) && audioBandwidth < 1.3 * Number(track), `remux: audio bandwidth ${audioBandwidth} from the track's ${track} b/s, not 640000`);
  });

  t.test('languages: BCP 47 with display names, in HLS, DASH and /item', async (t) => {
    const headers = { 'device-containers': 'mkv' };
    for (const [track, tag, name] of [[0, 'en', 'English'], [1, 'fr', 'French']] as const) {
      const h = await open(`/watch/vod/${id('Tracks')}/master.m3u8?${apiKey}&audioTrack=${track}`, headers);
      const rendition = h.master.variants[0]!.audio[0]!;
      t.equal(rendition.language, tag, `track ${track}: LANGUAGE="${tag}" (the file says ${track ? 'fre' : 'eng'})`);
      t.equal(rendition.name, name, `NAME="${name}"`);
      const mpd = (await get(`/watch/vod/${id('Tracks')}/master.mpd?${apiKey}&audioTrack=${track}`, headers)).body.toString();
      t.match(mpd, new RegExp(`<AdaptationSet id="1" contentType="audio"[^>]* lang="${tag}">\\s*<Label>${name}</Label>`), `DASH lang="${tag}" and its Label`);
    }
    const item = (await host.inject({ method: 'GET', url: `/item/${id('Tracks')}`, headers: host.authHeaders })).json();
    t.match(item.versions[0].audio, [{ language: 'en', language_name: 'English' }, { language: 'fr', language_name: 'French' }], '/item: the same codes and names');
  });
});

interface Tap { ok(...args: any[]): unknown; equal(...args: any[]): unknown; strictSame(...args: any[]): unknown }
