/**
 * VOD transcoding and remuxing into full-length HLS and DASH, with the real
 * plugin over generated clips and real HTTP: ffmpeg as the player, the
 * manifests through hls-parser (strict) and mpd-parser, the segments' own
 * timestamps (tfdt) against their place in the manifest, restarts far ahead,
 * one job per item/variant/device, idle stop, a killed ffmpeg, bad input and
 * credentials. The pure parts (segment plans, tokens, file names, fMP4
 * splitting) are tested first.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import * as HLS from 'hls-parser';
import pino from 'pino';
import type { TestHost } from '../../../sdk/testing.js';
import { audioLeadIn, seekOf } from '../../../plugins/vod/transcode/ffmpeg-args.js';
import { BoxReader, esdsCodec, splitFragment, splitInit } from '../../../plugins/vod/transcode/fmp4.js';
import { readBoxes } from '../../../sdk/index.js';
import { parseFramecrc } from '../../../plugins/vod/transcode/keyframes.js';
import { parseJobFile, segmentDurations } from '../../../plugins/vod/transcode/manifests.js';
import { fixedPlan, keyframePlan, nextKeyframe, segmentAt } from '../../../plugins/vod/transcode/segment-plan.js';
import type { VodSession } from '../../../plugins/vod/transcode/session.js';
import { parseToken, tokenOf } from '../../../plugins/vod/transcode/variant.js';
import { asInject, expectError, rawGet } from '../../helpers/http.js';
import { waitFor } from '../../helpers/wait.js';
import { catalog, clip, FFMPEG, FFPROBE, runFfmpeg, tempDir, vodHost } from './fixtures.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const mpdParser: { parse(text: string, options: { manifestUri: string }): any } = require('mpd-parser');

HLS.setOptions({ strictMode: true, silent: true });
// Real transcodes on a shared 2-core machine: slow when others are busy, never timed (benchmarks measure time).
t.setTimeout(300_000);

const HLS_TYPE = /^application\/vnd\.apple\.mpegurl/;
const DASH_TYPE = /^application\/dash\+xml/;
const WELL_FORMED_CODEC = /^(avc[13]\.[0-9A-Fa-f]{6}|mp4a\.40\.\d+|mp4a\.(69|6B|6b)|(hvc1|hev1)\.[\w.]+|ac-3|ec-3|opus|flac)$/;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------
// Pure parts

t.test('segment plans', async (t) => {
  t.strictSame(fixedPlan(10, 4), [0, 4, 8, 10], 'fixed: the last segment is what is left');
  t.strictSame(fixedPlan(8.5, 4), [0, 4, 8.5], 'fixed: a sliver at the end joins the segment before');
  t.strictSame(fixedPlan(3, 4), [0, 3], 'fixed: shorter than one segment');
  const kf = [0, 1.5, 3, 4.5, 6, 7.5, 9];
  t.strictSame(keyframePlan(kf, 10, 4), [0, 4.5, 9, 10], 'keyframes: greedy, the first keyframe at least 4 s after the previous cut');
  t.strictSame(keyframePlan([0, 3, 6, 9, 12, 15, 18], 20, 4), [0, 6, 12, 18, 20], 'keyframes every 3 s: cuts every 6 s (ffmpeg\'s hls muxer would cut at 6, 9, 12, 18)');
  t.strictSame(keyframePlan([0, 10, 20], 30, 4), [0, 10, 20, 30], 'keyframes further apart than a segment: every keyframe');
  t.strictSame(keyframePlan([0.021, 4.021, 8.021], 8.5, 4), [0, 4.021, 8.5], 'a keyframe in the last half second is not cut at');
  // Greedy cuts only depend on the previous one: a plan restarted at any cut finds the rest unchanged.
  const plan = keyframePlan([0, 2, 3.5, 5, 7.7, 9, 11.9, 13, 16], 18, 4);
  for (let k = 1; k < plan.length - 1; k++) {
    const rest = keyframePlan([0, 2, 3.5, 5, 7.7, 9, 11.9, 13, 16].filter((x) => x >= plan[k]!).map((x) => x - plan[k]!), 18 - plan[k]!, 4).map((x) => x + plan[k]!);
    t.strictSame(rest.slice(1), plan.slice(k + 1), `restarting at cut ${k} gives the same later cuts`);
  }
  const durations = segmentDurations(plan);
  t.ok(Math.abs(durations.reduce((a, b) => a + b, 0) - 18) < 1e-9, 'durations add up to the duration');
  t.equal(segmentAt([0, 4, 8, 10], 3.999, 0.004), 1, 'a fragment a rounding error before a boundary belongs after it');
  t.equal(segmentAt([0, 4, 8, 10], 7.9, 0.004), 1);
  t.equal(segmentAt([0, 4, 8, 10], 9.9, 0.004), 2, 'the last segment');
  t.equal(nextKeyframe(kf, 4.5, 0.004), 6);
  t.equal(nextKeyframe(kf, 9, 0.004), Number.POSITIVE_INFINITY, 'after the last keyframe: none');
});

t.test('where a restarted run seeks', async (t) => {
  const v = (method: 'remux' | 'audio-only' | 'transcode') => ({ version: 0, method, height: 0, videoKbps: 0, audio: 0, fingerprint: '0123abcd' });
  t.equal(seekOf(v('transcode'), 40), 40, 'transcode: exactly at the boundary (frames before it are decoded and dropped)');
  t.equal(seekOf(v('audio-only'), 40), 39.99, 'audio-only: a hair before the keyframe');
  t.equal(audioLeadIn(40), 1873, 'encoded audio: read from two AAC frames before the boundary (40 s is frame 1875 at 48 kHz)');
  t.equal(audioLeadIn(4.01), 186, 'a boundary off the grid: two frames before the first one after it');
  t.equal(audioLeadIn(0.01), 0, 'never before the start');
  const remux = seekOf(v('remux'), 40, 42);
  t.ok(remux - 3 / 23 >= 40 && remux < 42, `remux: past ffmpeg's B-frame step back, before the next keyframe (${remux})`);
  t.ok(seekOf(v('remux'), 40, 40.04) < 40.04, 'remux: never at or past the next keyframe');
  t.equal(seekOf(v('remux'), 0, 2), 0, 'the start: no seek');
});

t.test('keyframe scan output (framecrc)', async (t) => {
  const text = ['#tb 0: 1/1000', '#media_type 0: video', '0,        -80,          0,       40,     1234, 0xaaaa', '0,         -40,         80,       40,      100, 0xbbbb, F=0x0',
    '0,       1920,       2000,       40,     1234, 0xcccc', '0,       3920,       4000,       40,     1234, 0xdddd, F=0x5', ''].join('\n');
  t.strictSame(parseFramecrc(text), [0, 2, 4], 'key packets only (F= without the key bit is skipped), in seconds');
});

t.test('job tokens and file names', async (t) => {
  const v = { version: 2, method: 'transcode' as const, height: 720, videoKbps: 3500, audio: 1, fingerprint: '0123abcd' };
  t.equal(tokenOf(v), '2-t-720-3500-1-0123abcd');
  t.strictSame(parseToken(tokenOf(v)), v, 'round trip');
  t.strictSame(parseToken('0-r-0-0-n-0123abcd')?.audio, null, 'no audio');
  for (const bad of ['', '0-x-0-0-0-0123abcd', '0-r-0-0-0-0123abc', '../0-r-0-0-0-0123abcd', '0-r-0-0-0-0123abcd/..', '9999-r-0-0-0-0123abcd']) {
    t.equal(parseToken(bad), undefined, `token ${JSON.stringify(bad)} refused`);
  }
  t.strictSame(parseJobFile('v-12.m4s'), { kind: 'segment', track: 'v', index: 12 });
  t.strictSame(parseJobFile('init-a.mp4'), { kind: 'init', track: 'a' });
  t.strictSame(parseJobFile('audio.m3u8'), { kind: 'playlist', track: 'a' });
  for (const bad of ['../v-1.m4s', 'v-01.m4s', 'v-1.m4s/', 'x-1.m4s', 'init-v.mp4.tmp', '..', 'v-1.m4s?x', 'master.m3u8', 'v-1234567.m4s']) {
    t.equal(parseJobFile(bad), undefined, `file ${JSON.stringify(bad)} refused`);
  }
});

t.test('codec strings', async (t) => {
  // ES_Descriptor → DecoderConfigDescriptor (MPEG-4 audio) → AudioSpecificConfig (AAC-LC, then HE-AAC).
  const esds = (asc: number[]) => Buffer.from([0x03, 23 + asc.length, 0, 1, 0, 0x04, 15 + asc.length, 0x40, 0x15, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x05, asc.length, ...asc, 0x06, 1, 2]);
  t.equal(esdsCodec(esds([0x11, 0x90])), 'mp4a.40.2', 'AAC-LC');
  t.equal(esdsCodec(esds([0x2b, 0x92, 0x08, 0x00])), 'mp4a.40.5', 'HE-AAC');
});

t.test('fMP4 splitting on ffmpeg output', async (t) => {
  const dir = await tempDir(t);
  const file = path.join(dir, 'muxed.mp4');
  await runFfmpeg(['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc2=size=160x90:rate=25:duration=3', '-f', 'lavfi', '-i', 'sine=sample_rate=48000:duration=3',
    '-c:v', 'libx264', '-preset', 'veryfast', '-g', '25', '-c:a', 'aac', '-f', 'mp4', '-movflags', '+frag_keyframe+empty_moov+default_base_moof', file]);
  const bytes = readFileSync(file);
  const reader = new BoxReader();
  // Fed in small uneven chunks, as a pipe delivers it.
  for (let i = 0; i < bytes.length; i += 777) reader.push(bytes.subarray(i, i + 777));
  const boxes: { type: string; bytes: Buffer }[] = [];
  for (let b = reader.next(); b; b = reader.next()) boxes.push(b);
  t.equal(reader.pending, 0, 'every byte is in a box');
  const init = splitInit(boxes.find((b) => b.type === 'ftyp')!.bytes, boxes.find((b) => b.type === 'moov')!.bytes);
  t.strictSame(init.tracks.map((tr) => tr.kind), ['video', 'audio'], 'two tracks');
  t.match(init.tracks[0]!.codec, /^avc1\.64/, 'H.264 High from the avcC');
  t.equal(init.tracks[1]!.codec, 'mp4a.40.2', 'AAC-LC from the esds');
  t.equal(init.tracks[0]!.width, 160);
  let frames = 0;
  const perTrack = new Map<number, Buffer[]>();
  for (let i = 0; i < boxes.length; i++) {
    if (boxes[i]!.type !== 'moof') continue;
    for (const part of splitFragment(Buffer.concat([boxes[i]!.bytes, boxes[i + 1]!.bytes]), init.defaults)) {
      if (part.trackId === init.tracks[0]!.id) frames += part.samples;
      perTrack.set(part.trackId, [...(perTrack.get(part.trackId) ?? []), part.bytes]);
    }
  }
  t.equal(frames, 75, 'every video frame is in a fragment');
  // Each track alone decodes: init segment + its fragments is a valid file.
  for (const track of init.tracks) {
    const out = path.join(dir, `track-${track.id}.mp4`);
    await writeFile(out, Buffer.concat([init.segments.get(track.id)!, ...perTrack.get(track.id)!]));
    const probe = await ffprobe(out);
    t.equal(probe.streams.length, 1, `track ${track.id} alone: one stream`);
    t.equal(probe.streams[0]!.codec_type, track.kind, `track ${track.id}: ${track.kind}`);
    const decoded = await decodeFile(out);
    t.equal(decoded.code, 0, `track ${track.id} decodes without error${decoded.stderr ? `: ${decoded.stderr}` : ''}`);
  }
});

// ---------------------------------------------------------------------------
// Helpers for the routes

interface Decoded { code: number; video: number; audio: number; seconds: number; stderr: string }

/** ffmpeg as a player: decodes every frame of `url` (video and audio); frames per stream and the video's end time. */
function decodeUrl(url: string, headers: Record<string, string> = {}): Promise<Decoded> {
  const head = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
  return decodeArgs([...(head ? ['-headers', head] : []), '-i', url]);
}
const decodeFile = (file: string) => decodeArgs(['-i', file]);

function decodeArgs(input: string[]): Promise<Decoded> {
  return new Promise((resolve) => {
    execFile(FFMPEG, ['-hide_banner', '-nostdin', '-loglevel', 'error', ...input, '-f', 'framemd5', '-'], { maxBuffer: 64 * 2 ** 20, timeout: 120_000 }, (err, stdout, stderr) => {
      const tb = new Map<string, number>();
      for (const m of stdout.matchAll(/^#tb (\d+): (\d+)\/(\d+)/gm)) tb.set(m[1]!, Number(m[2]) / Number(m[3]));
      const types = new Map<string, string>();
      for (const m of stdout.matchAll(/^#media_type (\d+): (\w+)/gm)) types.set(m[1]!, m[2]!);
      let video = 0;
      let audio = 0;
      let first: number | undefined;
      let end = 0;
      for (const line of stdout.split('\n')) {
        if (!line || line.startsWith('#')) continue;
        const f = line.split(',').map((s) => s.trim());
        const type = types.get(f[0]!);
        if (type === 'audio') audio++;
        if (type !== 'video') continue;
        video++;
        const pts = Number(f[2]) * tb.get(f[0]!)!;
        first ??= pts;
        end = Math.max(end, pts + Number(f[3]) * tb.get(f[0]!)!);
      }
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, video, audio, seconds: end - (first ?? 0), stderr: stderr.replace(/(api_key|key)=[^&\s]*/g, '$1=***').slice(0, 2000) });
    });
  });
}

/** Size and CRC of the first `n` video packets of a file, as stream copy reads them. */
function packetCrcs(file: string, n: number): Promise<string[]> {
  return new Promise((resolve, reject) => {
    execFile(FFMPEG, ['-hide_banner', '-nostdin', '-loglevel', 'error', '-i', file, '-map', '0:v:0', '-c', 'copy', '-frames:v', String(n), '-f', 'framecrc', '-'], { maxBuffer: 16 * 2 ** 20 }, (err, stdout) => {
      if (err) return reject(err);
      resolve(stdout.split('\n').filter((l) => /^0,/.test(l)).map((l) => l.split(',').slice(4, 6).map((x) => x.trim()).join(' ')));
    });
  });
}

interface Probe { streams: { codec_type: string; codec_name: string; channels?: number; height?: number; width?: number }[]; format: { duration?: string } }
function ffprobe(file: string): Promise<Probe> {
  return new Promise((resolve, reject) => {
    execFile(FFPROBE, ['-v', 'error', '-print_format', 'json', '-show_streams', '-show_format', file], (err, stdout) => (err ? reject(err) : resolve(JSON.parse(stdout))));
  });
}

/** tfdt (decode time) and first composition offset of the first track fragment in a media segment, in seconds of the manifest's timeline. */
function segmentStart(segment: Buffer, timescale: number): number {
  const [moof] = readBoxes(segment);
  const traf = readBoxes(segment, moof!.body, moof!.end).find((b) => b.type === 'traf')!;
  const kids = readBoxes(segment, traf.body, traf.end);
  const tfdt = kids.find((b) => b.type === 'tfdt')!;
  const base = segment[tfdt.body] === 1 ? Number(segment.readBigUInt64BE(tfdt.body + 4)) : segment.readUInt32BE(tfdt.body + 4);
  const trun = kids.find((b) => b.type === 'trun')!;
  const flags = segment.readUInt32BE(trun.body) & 0xffffff;
  let p = trun.body + 8 + (flags & 1 ? 4 : 0) + (flags & 4 ? 4 : 0);
  p += (flags & 0x100 ? 4 : 0) + (flags & 0x200 ? 4 : 0) + (flags & 0x400 ? 4 : 0);
  const cto = flags & 0x800 ? (segment[trun.body] === 1 ? segment.readInt32BE(p) : segment.readUInt32BE(p)) : 0;
  return (base + cto) / timescale;
}

/** The ffmpeg processes this test process (the server runs in it) started, optionally only those whose arguments mention `match`. */
function ffmpegChildren(match?: string): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const m = /^\d+ \((.*)\) (\S) (\d+)/.exec(readFileSync(`/proc/${d}/stat`, 'utf8'));
      if (!m || Number(m[3]) !== process.pid || !m[1]!.startsWith('ffmpeg') || m[2] === 'Z') continue;
      const args = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0');
      if (args.includes('framecrc') || (match && !args.some((a) => a.includes(match)))) continue;
      out.push(Number(d));
    } catch { /* exited meanwhile */ }
  }
  return out;
}

/** Log lines of the server, parsed (pino JSON). */
function logCapture(): { logger: pino.Logger; lines: Record<string, any>[] } {
  const lines: Record<string, any>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString('utf8').split('\n')) if (l) try { lines.push(JSON.parse(l)); } catch { /* partial */ }
      cb();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

const small = { width: 320, height: 180, fps: 25 };

// ---------------------------------------------------------------------------
// The routes

t.test('VOD transcoding over HTTP', async (t) => {
  const dir = await tempDir(t);
  const movies = path.join(dir, 'movies');
  const other = path.join(dir, 'other');
  const file = (name: string) => path.join(movies, name);
  await mkdir(movies, { recursive: true });
  await mkdir(other, { recursive: true });
  // Pattern: with maxBitrate=100000 (under its own bitrate) it is transcoded. Copy: keyframes every
  // 1.52 s (from 0.021 s: the AAC priming delays the video in Matroska), so a copy cuts at 4.581 and 9.141.
  await Promise.all([
    clip(file('Pattern (2001).mkv'), { ...small, seconds: 8 }),
    clip(file('Copy (2002).mkv'), { ...small, seconds: 11, gopSeconds: 1.5 }),
  ]);
  await Promise.all([
    clip(file('Surround (2003).mkv'), { ...small, seconds: 5, audio: 'ac3', channels: 6 }),
    clip(file('Tracks (2004).mp4'), { ...small, seconds: 4, secondAudio: true }),
    clip(file('Big (2005).mp4'), { seconds: 4, width: 640, height: 360, fps: 25 }),
  ]);
  // 64 s, cheaply: an 8 s clip looped (copied) eight times.
  await clip(path.join(dir, 'eight.mp4'), { ...small, seconds: 8, gopSeconds: 4 });
  await runFfmpeg(['-hide_banner', '-loglevel', 'error', '-y', '-stream_loop', '7', '-i', path.join(dir, 'eight.mp4'), '-c', 'copy', file('Long (2006).mp4')]);
  // B-frames (x264 veryfast) and keyframes every 2.4 s, in Matroska (which stores no decode times): copy with reordered frames.
  await runFfmpeg(['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc2=size=320x180:rate=25:duration=12', '-f', 'lavfi', '-i', 'sine=sample_rate=48000:duration=12',
    '-c:v', 'libx264', '-preset', 'veryfast', '-g', '60', '-keyint_min', '60', '-sc_threshold', '0', '-crf', '32', '-c:a', 'aac', file('Bframes (2007).mkv')]);
  await clip(path.join(other, 'Secret (2020).mp4'), { ...small, seconds: 2 });
  await clip(file('Gone (2008).mkv'), { ...small, seconds: 2 });
  await clip(file('Subs (2009).mkv'), { ...small, seconds: 4, subtitle: true });

  const logs = logCapture();
  const host: TestHost = await vodHost([
    { name: 'Movies', type: 'movies', paths: [movies] },
    { name: 'Other', type: 'movies', paths: [other] },
  // x264 ultrafast: the tests check what is made, not how well; a shared 2-core machine runs them.
  ], { listen: true, logger: logs.logger, plugins: { subtitles: {} }, vod: { preset: 'ultrafast' } });
  t.teardown(() => host.close());
  const base = host.url;
  const token = host.adminToken;
  const bearer = host.authHeaders;
  const apiKey = `api_key=${encodeURIComponent(token)}`;

  const { libs, id } = await catalog(host);
  const durationOf = async (name: string) => Number((await ffprobe(file(name))).format.duration);
  const jobs = () => host.host.jobs.list().filter((j) => j.kind === 'vod-transcode' && j.state === 'running');
  /** The job of a manifest (its token is in every segment URL). */
  const sessionOf = (h: { video: { init: string } }): VodSession | undefined => {
    const token = /\/t\/([^/]+)-[0-9a-f]{16}\//.exec(h.video.init)![1]!; // the job key names the variant unsigned
    const summary = jobs().find((j) => j.key.includes(`:${token}:`));
    return summary && host.host.jobs.get<VodSession>(summary.key)?.data;
  };
  const get = (p: string, headers: Record<string, string> = {}, timeoutMs?: number) => rawGet(base, p, headers, timeoutMs);
  // Each test's jobs stop after it: their ffmpegs would otherwise run on, in the next tests' time.
  t.afterEach(async () => {
    for (const j of jobs()) await host.host.jobs.get(j.key)?.stop('test done');
  });

  /** Master playlist → its media playlists → segment URLs (absolute paths with their key), all parsed strictly. */
  async function hls(t: Tap, itemId: string, query = '', headers: Record<string, string> = {}) {
    const masterPath = `/watch/vod/${itemId}/master.m3u8?${apiKey}${query}`;
    const res = await get(masterPath, headers);
    t.equal(res.status, 200, `master.m3u8 200${res.status !== 200 ? `: ${res.body}` : ''}`);
    if (res.status !== 200) throw new Error(res.body.toString());
    t.match(String(res.headers['content-type']), HLS_TYPE, 'master content-type');
    const text = res.body.toString();
    t.notOk(text.includes(token), 'the master playlist does not carry the token');
    const master = HLS.parse(text) as HLS.types.MasterPlaylist;
    t.equal(master.isMasterPlaylist, true, 'a master playlist (hls-parser, strict)');
    t.equal(master.variants.length, 1, 'one variant');
    const variant = master.variants[0]!;
    const codecs = (variant.codecs ?? '').split(',');
    t.strictSame(codecs.filter((c) => !WELL_FORMED_CODEC.test(c)), [], `CODECS are RFC 6381 strings (${variant.codecs})`);
    const abs = (uri: string, from: string) => new URL(uri, new URL(from, base));
    const mediaOf = async (uri: string) => {
      const u = abs(uri, masterPath);
      t.ok(u.searchParams.get('key'), `${u.pathname}: keyed`);
      t.notOk(u.searchParams.has('api_key'), `${u.pathname}: without the token`);
      const r = await get(u.pathname + u.search);
      t.equal(r.status, 200, `${u.pathname}: 200 with only its key`);
      const playlist = HLS.parse(r.body.toString()) as HLS.types.MediaPlaylist;
      t.equal(playlist.isMasterPlaylist, false, `${u.pathname}: a media playlist (hls-parser, strict)`);
      t.equal(playlist.playlistType, 'VOD', 'EXT-X-PLAYLIST-TYPE:VOD');
      t.equal(playlist.endlist, true, 'EXT-X-ENDLIST');
      const pathOf = (s: string) => { const x = abs(s, u.pathname + u.search); return x.pathname + x.search; };
      return {
        playlist, durations: playlist.segments.map((s) => s.duration),
        segments: playlist.segments.map((s) => pathOf(s.uri)), init: pathOf(playlist.segments[0]!.map!.uri),
      };
    };
    const video = await mediaOf(variant.uri);
    const audio = variant.audio[0]?.uri ? await mediaOf(variant.audio[0].uri) : undefined;
    return { master, variant, codecs, video, audio, masterUrl: `${base}${masterPath}` };
  }

  t.test('ffmpeg plays a transcoded title as HLS and as DASH, the whole of it', async (t) => {
    const duration = await durationOf('Pattern (2001).mkv');
    for (const kind of ['m3u8', 'mpd']) {
      const d = await decodeUrl(`${base}/watch/vod/${id('Pattern')}/master.${kind}?${apiKey}&maxBitrate=100000`);
      t.equal(d.code, 0, `${kind}: ffmpeg exits 0${d.code ? `: ${d.stderr}` : ''}`);
      t.ok(Math.abs(d.seconds - duration) < 0.2, `${kind}: decoded ${d.seconds.toFixed(2)} s of video of ${duration.toFixed(2)} s (${d.video} frames)`);
      t.ok(d.audio > 0, `${kind}: and the audio (${d.audio} frames)`);
    }
    t.equal(jobs().filter((j) => j.key.startsWith(`vod:${id('Pattern')}:`)).length, 1, 'both players shared one job (same variant, same device)');
    t.match(jobs().find((j) => j.key.startsWith(`vod:${id('Pattern')}:`))?.key, /:0-t-180-200-0-/, 'a transcode (180p at 200 kb/s)');
  });

  t.test('HLS: fixed-length transcode segments add up to the duration; H.264 + AAC', async (t) => {
    const h = await hls(t, id('Pattern'), '&maxBitrate=100000');
    const duration = await durationOf('Pattern (2001).mkv');
    t.strictSame(h.video.durations.slice(0, -1), [4], 'fixed 4 s segments');
    t.ok(Math.abs(h.video.durations.reduce((a, b) => a + b, 0) - duration) < 0.001, `EXTINF durations add up to ${duration}`);
    t.strictSame(h.audio!.durations, h.video.durations, 'the audio rendition has the same segments');
    // x264 signals the profile its settings need (ultrafast here: Constrained Baseline, else High).
    t.match(h.codecs[0], /^avc1\.(42c0|6400)/, 'H.264');
    t.equal(h.codecs[1], 'mp4a.40.2', 'AAC-LC');
    t.equal(h.variant.resolution?.height, 180, 'RESOLUTION of the output');
    t.ok(h.video.playlist.targetDuration >= 4, 'TARGETDURATION covers the segments');
  });

  t.test('remux: keyframe-aligned copy, codecs kept, durations add up', async (t) => {
    const h = await hls(t, id('Copy'));
    const duration = await durationOf('Copy (2002).mkv');
    const starts = h.video.durations.reduce<number[]>((acc, d) => [...acc, acc[acc.length - 1]! + d], [0]);
    const expected = [0, 4.581, 9.141];
    t.equal(starts.length - 1, expected.length, `${expected.length} segments`);
    t.ok(expected.every((e, i) => Math.abs(starts[i]! - e) < 0.002), `segments start at the first keyframe at least 4 s after the previous cut (${starts.slice(0, -1).map((x) => x.toFixed(3)).join(', ')})`);
    t.ok(Math.abs(h.video.durations.reduce((a, b) => a + b, 0) - duration) < 0.001, `EXTINF durations add up to ${duration}`);
    const session = sessionOf(h);
    t.equal(session?.variant.method, 'remux', 'the job remuxes');
    // Copied: the segment's video packets are the source's, byte for byte (sizes and CRCs of the first ones).
    const seg = await get(h.video.segments[0]!);
    const init = await get(h.video.init);
    t.equal(seg.status, 200);
    const out = path.join(dir, 'remux-seg.mp4');
    await writeFile(out, Buffer.concat([init.body, seg.body]));
    const probe = await ffprobe(out);
    t.equal(probe.streams[0]!.codec_name, 'h264', 'video still H.264');
    const [mine, source] = await Promise.all([packetCrcs(out, 30), packetCrcs(file('Copy (2002).mkv'), 30)]);
    t.equal(mine.length, 30, 'packets read');
    t.strictSame(mine, source, 'the first 30 video packets are the source\'s, unchanged');
    const decoded = await decodeUrl(h.masterUrl);
    t.equal(decoded.code, 0, `ffmpeg plays the remux${decoded.code ? `: ${decoded.stderr}` : ''}`);
    t.ok(Math.abs(decoded.seconds - duration) < 0.2, `the whole of it (${decoded.seconds.toFixed(2)} s)`);
  });

  t.test('segments carry their manifest position (tfdt), from any run, copy with B-frames and transcode', async (t) => {
    for (const [title, headers] of [['Bframes', {}], ['Long', { 'device-max-height': '120' }]] as const) {
      const h = await hls(t, id(title), '', headers);
      const initBody = (await get(h.video.init)).body;
      const init = readBoxes(initBody);
      t.ok(init.length >= 2, `${title}: init segment`);
      const timescale = splitInit(initBody.subarray(0, init[0]!.end), initBody.subarray(init[1]!.start, init[1]!.end)).tracks[0]!.timescale;
      const starts = h.video.durations.reduce<number[]>((acc, d) => [...acc, acc[acc.length - 1]! + d], [0]);
      const n = h.video.segments.length;
      // The last first (a restart there), then the first, then one in the middle (behind: another restart).
      for (const k of [n - 1, 0, Math.floor(n / 2)]) {
        const seg = await get(h.video.segments[k]!);
        t.equal(seg.status, 200, `${title}: segment ${k} 200`);
        const at = segmentStart(seg.body, timescale);
        t.ok(Math.abs(at - starts[k]!) < 0.05, `${title}: segment ${k} starts at ${at.toFixed(3)} s, its place in the manifest ${starts[k]!.toFixed(3)} s`);
        const audio = await get(h.audio!.segments[k]!);
        t.equal(audio.status, 200, `${title}: audio segment ${k} 200`);
      }
    }
  });

  t.test('a segment near the end restarts ffmpeg there instead of waiting', async (t) => {
    const h = await hls(t, id('Long'), '', { 'device-max-height': '90' });
    const n = h.video.segments.length;
    t.equal(n, 16, '64 s in 4 s segments');
    const last = await get(h.video.segments[n - 1]!);
    t.equal(last.status, 200, 'the last segment: 200');
    const session = sessionOf(h);
    const variant = /\/t\/([^/]+)-[0-9a-f]{16}\//.exec(h.video.init)![1]!; // the job key names the variant unsigned
    const starts = logs.lines.filter((l) => l.event === 'transcode_start' && l.item === id('Long') && l.variant === variant);
    t.ok(starts.some((l) => l.startSegment === n - 1), `ffmpeg was restarted at segment ${n - 1} (runs started at ${starts.map((l) => l.startSegment).join(', ')})`);
    const notMade = [...Array(n - 4).keys()].map((k) => k + 2).filter((k) => !session?.done.has(k));
    t.ok(notMade.length > 0, `the segments before it were not all produced first (${notMade.length} of ${n - 4} in the middle not made)`);
    t.notOk(JSON.stringify(logs.lines).includes(token), 'no log line carries the token');
    t.notOk(JSON.stringify(logs.lines).includes(new URL(h.video.segments[0]!, base).searchParams.get('key')!), 'nor a media key');
  });

  t.test('one job and one ffmpeg per item, variant and device, also for concurrent manifests', async (t) => {
    const url = `/watch/vod/${id('Tracks')}/master.m3u8?${apiKey}&maxBitrate=100000`;
    const all = await Promise.all([get(url), get(url), get(url), get(url.replace('.m3u8', '.mpd'))]);
    t.strictSame(all.map((r) => r.status), [200, 200, 200, 200], 'four manifests');
    await get(url);
    const mine = jobs().filter((j) => j.key.startsWith(`vod:${id('Tracks')}:`));
    t.equal(mine.length, 1, `one job (${mine.map((j) => j.key).join(', ')})`);
    const listed = (await host.inject({ method: 'GET', url: '/api/jobs', headers: bearer })).json().jobs as { key: string; kind: string }[];
    t.ok(listed.some((j) => j.key === mine[0]!.key && j.kind === 'vod-transcode'), 'GET /api/jobs lists it');
    const spawned = logs.lines.filter((l) => l.event === 'transcode_start' && l.item === id('Tracks'));
    t.equal(spawned.length, 1, 'ffmpeg was started once');
    t.ok(ffmpegChildren(file('Tracks (2004).mp4')).length <= 1, 'at most one ffmpeg on the file');
    // Another device of the same user: its own job.
    const other = await host.login('admin', host.adminPassword, { 'device-id': 'second-device' });
    t.equal((await get(`/watch/vod/${id('Tracks')}/master.m3u8?api_key=${encodeURIComponent(other)}&maxBitrate=100000`)).status, 200);
    t.equal(jobs().filter((j) => j.key.startsWith(`vod:${id('Tracks')}:`)).length, 2, 'a second device gets its own job');
    // Another audio track: another variant, another job.
    const h = await hls(t, id('Tracks'), '&audioTrack=1');
    t.ok(h.master.variants[0]!.audio.length === 1, 'an audio rendition');
    t.equal(jobs().filter((j) => j.key.startsWith(`vod:${id('Tracks')}:`)).length, 3, 'audioTrack=1 is another variant');
  });

  t.test('audio-only: video copied, AC-3 5.1 becomes AAC stereo', async (t) => {
    const h = await hls(t, id('Surround'));
    t.equal(sessionOf(h)?.variant.method, 'audio-only', 'the job is audio-only');
    t.equal(h.codecs[1], 'mp4a.40.2', 'CODECS says AAC-LC');
    t.equal(h.master.variants[0]!.audio[0]!.channels, '2', 'CHANNELS="2"');
    const init = await get(h.audio!.init);
    const seg = await get(h.audio!.segments[0]!);
    const out = path.join(dir, 'audio-only.mp4');
    await writeFile(out, Buffer.concat([init.body, seg.body]));
    const probe = await ffprobe(out);
    t.equal(probe.streams.length, 1, 'the audio track alone');
    t.equal(probe.streams[0]!.codec_name, 'aac', 'AAC');
    t.equal(probe.streams[0]!.channels, 2, 'stereo');
    const v = await ffprobe(await (async () => {
      const o = path.join(dir, 'audio-only-video.mp4');
      await writeFile(o, Buffer.concat([(await get(h.video.init)).body, (await get(h.video.segments[0]!)).body]));
      return o;
    })());
    t.equal(v.streams[0]!.codec_name, 'h264', 'the video is still the source\'s H.264');
  });

  t.test('transcode respects Device-Max-Height', async (t) => {
    const h = await hls(t, id('Big'), '', { 'device-max-height': '180' });
    t.equal(h.variant.resolution?.height, 180, 'RESOLUTION height 180');
    t.equal(h.variant.resolution?.width, 320, 'aspect kept');
    const out = path.join(dir, 'big.mp4');
    await writeFile(out, Buffer.concat([(await get(h.video.init)).body, (await get(h.video.segments[0]!)).body]));
    const probe = await ffprobe(out);
    t.equal(probe.streams[0]!.height, 180, 'the segment is 180 lines high');
    t.equal(probe.streams[0]!.codec_name, 'h264');
  });

  t.test('DASH: a static MPD that mpd-parser reads, separate video and audio, durations add up', async (t) => {
    const mpdPath = `/watch/vod/${id('Copy')}/master.mpd?${apiKey}`;
    const res = await get(mpdPath);
    t.equal(res.status, 200);
    t.match(String(res.headers['content-type']), DASH_TYPE);
    const text = res.body.toString();
    t.match(text, /<MPD[^>]*type="static"/, 'static');
    t.match(text, /mediaPresentationDuration="PT11\.\d{3}S"/, 'the full duration');
    t.notOk(text.includes(token), 'no token in the MPD');
    const parsed = mpdParser.parse(text, { manifestUri: `${base}${mpdPath}` });
    const video = parsed.playlists ?? [];
    const audioGroups = Object.values(parsed.mediaGroups?.AUDIO ?? {}).flatMap((g: any) => Object.values(g)) as any[];
    t.equal(video.length, 1, 'one video representation');
    t.equal(audioGroups.length, 1, 'audio in its own adaptation set');
    const duration = await durationOf('Copy (2002).mkv');
    for (const p of [video[0], audioGroups[0].playlists[0]]) {
      const sum = p.segments.reduce((a: number, s: any) => a + s.duration, 0);
      t.ok(Math.abs(sum - duration) < 0.001, `segment durations add up (${sum} vs ${duration})`);
      const seg = new URL(p.segments[1].resolvedUri);
      t.equal((await get(seg.pathname + seg.search)).status, 200, `${seg.pathname}: 200`);
    }
    const codecs = [...text.matchAll(/\bcodecs="([^"]*)"/g)].map((m) => m[1]!);
    t.strictSame(codecs.filter((c) => !WELL_FORMED_CODEC.test(c)), [], `codecs are RFC 6381 strings (${codecs.join(', ')})`);
  });

  t.test('subtitle tracks (from the subtitles plugin): an HLS SUBTITLES rendition and a DASH text adaptation set', async (t) => {
    const h = await hls(t, id('Subs'));
    const subs = h.master.variants[0]!.subtitles;
    t.equal(subs.length, 1, 'one subtitle rendition (the embedded SubRip track)');
    t.equal(subs[0]?.language, 'en', 'its language');
    const listUrl = new URL(subs[0]!.uri!, h.masterUrl);
    const list = await get(listUrl.pathname + listUrl.search);
    t.equal(list.status, 200, 'its media playlist');
    const playlist = HLS.parse(list.body.toString()) as HLS.types.MediaPlaylist;
    t.equal(playlist.segments.length, 1, 'the WebVTT file as one segment (hls-parser, strict)');
    const duration = await durationOf('Subs (2009).mkv');
    t.ok(Math.abs(playlist.segments[0]!.duration - duration) < 0.001, 'as long as the title');
    const vttUrl = new URL(playlist.segments[0]!.uri, listUrl);
    t.ok(vttUrl.searchParams.get('key'), 'keyed');
    const vtt = await get(vttUrl.pathname + vttUrl.search);
    t.equal(vtt.status, 200, 'the WebVTT answers with that key alone');
    t.match(vtt.body.toString(), /^WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:0,LOCAL:00:00:00\.000\n/, 'with the timestamp map of the segments\' timeline (which starts at 0)');
    t.match(vtt.body.toString(), /Line 1: the tone is 440 Hz/, 'and the cues');

    const mpdPath = `/watch/vod/${id('Subs')}/master.mpd?${apiKey}`;
    const mpd = (await get(mpdPath)).body.toString();
    const parsed = mpdParser.parse(mpd, { manifestUri: `${base}${mpdPath}` });
    const text = Object.values(parsed.mediaGroups?.SUBTITLES ?? {}).flatMap((g: any) => Object.values(g)) as any[];
    t.equal(text.length, 1, 'DASH: one text adaptation set (mpd-parser)');
    const dashVtt = new URL(text[0].playlists[0].resolvedUri);
    const r = await get(dashVtt.pathname + dashVtt.search);
    t.equal(r.status, 200, 'DASH: its WebVTT answers');
    t.match(r.body.toString(), /^WEBVTT/, 'DASH: WebVTT');
    // ffmpeg 4.1's DASH demuxer cannot read a WebVTT adaptation set (it fails the whole input); dash.js
    // and hls.js show these tracks (test/e2e/vod-browser.test.ts). The HLS master still plays in ffmpeg.
    const d = await decodeUrl(h.masterUrl);
    t.equal(d.code, 0, `ffmpeg plays the HLS master with its subtitle rendition${d.code ? `: ${d.stderr}` : ''}`);
  });

  t.test('bad input, credentials, path tricks', async (t) => {
    const m = (item: string, query: string, headers: Record<string, string> = bearer) => get(`/watch/vod/${item}/master.m3u8${query}`, headers);
    const bad = async (query: string, status: number, message: RegExp) => expectError(t, asInject(await m(id('Tracks'), query)), status, message, query);
    await bad('?version=abc', 400, /version/);
    await bad('?version=-1', 400, /version/);
    await bad('?maxBitrate=abc', 400, /maxBitrate/);
    await bad('?maxBitrate=1', 400, /maxBitrate/);
    await bad('?maxBitrate=99999999999999', 400, /maxBitrate/);
    await bad('?audioTrack=-1', 400, /audioTrack/);
    await bad('?audioTrack=x', 400, /audioTrack/);
    await bad('?version=3', 404, /no version 3/);
    await bad('?audioTrack=2', 404, /no audio track 2/);
    expectError(t, asInject(await get(`/watch/vod/${id('Tracks')}/master.mpd?audioTrack=5`, bearer)), 404, /audio track/, 'DASH: audioTrack 5');
    expectError(t, asInject(await m('nope', '')), 404, undefined, 'unknown item');
    expectError(t, asInject(await m(id('Tracks'), '', {})), 401, undefined, 'no token');
    expectError(t, asInject(await m(id('Tracks'), '?api_key=nonsense', {})), 401, undefined, 'a bad token');

    // A signed key is scoped to its item: Copy's key opens nothing of Tracks.
    const h = await hls(t, id('Copy'));
    const copyKey = new URL(h.video.segments[0]!, base).searchParams.get('key')!;
    expectError(t, asInject(await m(id('Tracks'), `?key=${copyKey}`, {})), 401, undefined, 'the key of another item on a manifest');
    const seg = new URL(h.video.segments[0]!, base);
    const moved = seg.pathname.replace(id('Copy'), id('Tracks')) + seg.search;
    expectError(t, asInject(await get(moved)), 401, undefined, 'the key of another item on a segment');
    t.equal((await get(h.video.segments[0]!)).status, 200, 'the segment itself with its key: 200');

    // A user without the library sees neither manifests nor segments.
    await host.createUser('limited', 'limited-password', { libraries: [String(libs.find((l) => l.name === 'Movies')!.id)] });
    const limited = await host.login('limited', 'limited-password');
    expectError(t, asInject(await m(id('Secret'), '', { authorization: `Bearer ${limited}` })), 404, undefined, 'an item of a library not granted');

    const dirOf = seg.pathname.slice(0, seg.pathname.lastIndexOf('/'));
    for (const trick of ['../../../master.m3u8', '..%2F..%2Fmaster.m3u8', '%2e%2e%2Fv-0.m4s', 'v-0.m4s.tmp', 'init.mp4', 'v-99999.m4s', 'audio.m3u8x', 'sub-0.m3u8', 'sub-01.m3u8']) {
      const r = await get(`${dirOf}/${trick}${seg.search}`);
      t.equal(r.status, 404, `file ${trick}: 404 (${r.status})`);
    }
    const tokenPart = dirOf.slice(dirOf.lastIndexOf('/') + 1);
    for (const badToken of ['0-r-0-0-0-00000000', '0-t-4000-3500-0-' + tokenPart.slice(-8), '7-r-0-0-0-' + tokenPart.slice(-8), 'x']) {
      const r = await get(`${dirOf.slice(0, dirOf.lastIndexOf('/'))}/${badToken}/v-0.m4s${seg.search}`);
      t.equal(r.status, 404, `token ${badToken}: 404 (${r.status} ${r.body.toString().slice(0, 100)})`);
    }
  });

  t.test('a file gone since the scan: 503 with Retry-After, never a hang or a 500', async (t) => {
    await rm(file('Gone (2008).mkv'));
    for (const [what, query] of [['remux (the keyframe scan fails)', ''], ['transcode (ffmpeg fails)', '&maxBitrate=64000']]) {
      const r = await get(`/watch/vod/${id('Gone')}/master.m3u8?${apiKey}${query}`, {}, 45_000);
      const body = expectError(t, asInject(r), 503, /transcoder failed|Cannot segment/, what);
      t.ok(Number(r.headers['retry-after']) > 0, `${what}: Retry-After`);
      t.notOk(String(body.error).includes(movies), `${what}: the message does not reveal where the file was`);
    }
  });

  t.test('a killed ffmpeg: the next segment request restarts it or answers 503 with Retry-After, never hangs', async (t) => {
    const h = await hls(t, id('Long'), '', { 'device-max-height': '60' });
    const session = sessionOf(h);
    const pids = ffmpegChildren(file('Long (2006).mp4'));
    t.ok(pids.length >= 1, 'ffmpeg runs');
    const pid = session?.run?.proc?.pid;
    t.ok(pid && pids.includes(pid), 'the job\'s ffmpeg');
    process.kill(pid!, 'SIGKILL');
    const started = Date.now();
    for (const k of [1, 10, 11]) {
      const r = await get(h.video.segments[k]!, {}, 45_000);
      t.ok(r.status === 200 || (r.status === 503 && Number(r.headers['retry-after']) > 0), `segment ${k}: ${r.status}${r.status === 503 ? ` Retry-After ${r.headers['retry-after']}` : ''}`);
    }
    const again = await get(h.video.segments[12]!, {}, 45_000);
    t.equal(again.status, 200, 'a later request is served by a new ffmpeg');
    t.ok(Date.now() - started < 45_000, 'no request hung');
    t.ok(logs.lines.some((l) => l.event === 'transcode_stop' && l.item === id('Long') && l.outcome === 'failed'), 'the failure was logged');
  });
});

t.test('idle jobs stop: no ffmpeg, no files; a segment URL brings the job back', async (t) => {
  const dir = await tempDir(t);
  // Four minutes (an 8 s clip looped): ffmpeg is still running (or held back, far ahead) when the job idles.
  const movies = path.join(dir, 'movies');
  await mkdir(movies);
  await clip(path.join(dir, 'eight.mkv'), { ...small, seconds: 8 });
  await runFfmpeg(['-hide_banner', '-loglevel', 'error', '-y', '-stream_loop', '29', '-i', path.join(dir, 'eight.mkv'), '-c', 'copy', path.join(movies, 'Idle (2010).mp4')]);
  const host = await vodHost([{ name: 'Movies', type: 'movies', paths: [movies] }], { listen: true, vod: { idleTimeout: '2s', preset: 'ultrafast' } });
  t.teardown(() => host.close());
  const page = (await host.inject({ method: 'GET', url: '/library/1?limit=10', headers: host.authHeaders })).json();
  const itemId = page.items[0].id as string;
  const apiKey = `api_key=${encodeURIComponent(host.adminToken)}`;
  const master = await rawGet(host.url, `/watch/vod/${itemId}/master.m3u8?${apiKey}&maxBitrate=100000`);
  t.equal(master.status, 200);
  const media = HLS.parse(master.body.toString()) as HLS.types.MasterPlaylist;
  const videoUrl = new URL(media.variants[0]!.uri, `${host.url}/watch/vod/${itemId}/master.m3u8`);
  const playlist = HLS.parse((await rawGet(host.url, videoUrl.pathname + videoUrl.search)).body.toString()) as HLS.types.MediaPlaylist;
  const segment = new URL(playlist.segments[5]!.uri, videoUrl);
  const workDir = path.join(host.dataDir, 'plugins', 'vod', 'transcode');
  const running = () => host.host.jobs.list().filter((j) => j.kind === 'vod-transcode' && j.state === 'running');
  t.equal(running().length, 1, 'the manifest started a job');
  t.equal(ffmpegChildren(dir).length, 1, 'its ffmpeg runs');
  t.ok((await readdir(workDir)).length > 0, 'with files');

  const stopped = await waitFor(() => running().length === 0, 20_000);
  t.ok(stopped, 'the job stopped after 2 s without requests');
  const clean = await waitFor(async () => ffmpegChildren(dir).length === 0 && (await readdir(workDir)).length === 0, 10_000);
  t.strictSame(ffmpegChildren(dir), [], 'no ffmpeg left');
  t.strictSame(await readdir(workDir), [], 'no files left');
  t.ok(clean);

  const back = await rawGet(host.url, segment.pathname + segment.search);
  t.equal(back.status, 200, 'a segment URL of the old manifest: 200 (the job is recreated from its token)');
  t.equal(running().length, 1, 'one job again');
});

/** The part of a tap Test the helpers use. */
interface Tap {
  ok(...args: any[]): unknown;
  notOk(...args: any[]): unknown;
  equal(...args: any[]): unknown;
  match(...args: any[]): unknown;
  strictSame(...args: any[]): unknown;
}
