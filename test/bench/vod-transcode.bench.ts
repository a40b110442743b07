/**
 * VOD transcoding figures (server in this process, real HTTP, real ffmpeg):
 *
 *  1. Time to first segment: from `GET master.m3u8` sent to the last byte of
 *     the first video segment (master → video.m3u8 → v-0.m4s, as hls.js asks),
 *     with a new job every run:
 *       - remux of a 720p H.264/AAC Matroska clip. Target ≤ 0.5 s.
 *       - 720p H.264 transcode (maxBitrate=1500000 → 720p at 1.31 Mb/s) of the 720p clip.
 *         Target ≤ 1.25× plain ffmpeg run with the same input and codec arguments
 *         writing HLS fMP4 segments itself, to its first segment listed in its playlist.
 *  2. Seek: a segment 80 % into a 2-hour title (the 20 s clip looped with
 *     -stream_loop and -c copy into a 2-hour mp4), requested by a player that
 *     started playing a second before (manifest, first segment; ffmpeg is
 *     working from segment 0 and the server restarts it there): from the
 *     request to its last byte; transcode and remux. Target ≤ 1.5× plain
 *     ffmpeg started there with -ss (same arguments), and ≤ 2.5 s.
 *
 * Each figure is measured VOD_BENCH_RUNS times (default 3), the server and
 * plain ffmpeg alternating which goes first; every figure carries the
 * 1-minute load average (2-core machine, shared).
 *
 *   node dist/test/bench/run.js vod-transcode
 *   VOD_BENCH_RUNS=5 VOD_BENCH_KEEP=1 (keep the generated media in $TMPDIR/antenna-vod-bench)
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createTestHost, type TestHost } from '../../sdk/testing.js';
import { mediaInfoFromProbe } from '../../plugins/vod/model.js';
import { runArgParts } from '../../plugins/vod/transcode/ffmpeg-args.js';
import { parseToken } from '../../plugins/vod/transcode/variant.js';
import { FFMPEG, killGroup } from '../helpers/upstream.js';
import { load1, median, sleep } from './stats.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const FFPROBE: string = require('@ffprobe-installer/ffprobe').path;

const RUNS = Number(process.env.VOD_BENCH_RUNS ?? 3);
const SEGMENT_SECONDS = 4;
const CLIP_SECONDS = 20;
const LOOPS = 360; // 360 × 20 s = 2 h
const MEDIA = path.join(os.tmpdir(), 'antenna-vod-bench');

const round = (n: number, d = 0): number => Math.round(n * 10 ** d) / 10 ** d;

const exec = (bin: string, args: string[]) => new Promise<string>((resolve, reject) => {
  execFile(bin, args, { maxBuffer: 64 * 2 ** 20 }, (err, stdout, stderr) => (err ? reject(new Error(`${path.basename(bin)} ${args.join(' ')}: ${stderr}`)) : resolve(stdout)));
});

async function generate(): Promise<{ clipMp4: string; clipMkv: string; feature: string; movies: string }> {
  const movies = path.join(MEDIA, 'movies');
  await mkdir(movies, { recursive: true });
  const clipMp4 = path.join(movies, 'Clip (2020).mp4');
  const clipMkv = path.join(movies, 'Clip Remux (2020).mkv');
  const feature = path.join(movies, 'Feature (2019).mp4');
  if (!existsSync(clipMp4)) {
    // 720p25 H.264 High with B-frames (x264 veryfast), keyframes every 2 s, AAC stereo: a typical web file.
    await exec(FFMPEG, ['-hide_banner', '-loglevel', 'error', '-y',
      '-f', 'lavfi', '-i', `testsrc2=size=1280x720:rate=25:duration=${CLIP_SECONDS}`, '-f', 'lavfi', '-i', `sine=frequency=440:sample_rate=48000:duration=${CLIP_SECONDS}`,
      '-c:v', 'libx264', '-preset', 'veryfast', '-b:v', '1500k', '-maxrate', '2000k', '-bufsize', '3000k', '-g', '50', '-keyint_min', '50', '-sc_threshold', '0',
      '-c:a', 'aac', '-b:a', '128k', `${clipMp4}.tmp.mp4`]);
    await exec(FFMPEG, ['-hide_banner', '-loglevel', 'error', '-y', '-i', `${clipMp4}.tmp.mp4`, '-c', 'copy', clipMkv]);
    await exec(FFMPEG, ['-hide_banner', '-loglevel', 'error', '-y', '-i', `${clipMp4}.tmp.mp4`, '-c', 'copy', clipMp4]);
    await rm(`${clipMp4}.tmp.mp4`);
  }
  if (!existsSync(feature)) {
    await exec(FFMPEG, ['-hide_banner', '-loglevel', 'error', '-y', '-stream_loop', String(LOOPS - 1), '-i', clipMp4, '-c', 'copy', `${feature}.tmp.mp4`]);
    await exec(FFMPEG, ['-hide_banner', '-loglevel', 'error', '-y', '-i', `${feature}.tmp.mp4`, '-c', 'copy', '-f', 'mp4', feature]).finally(() => rm(`${feature}.tmp.mp4`, { force: true }));
  }
  return { clipMp4, clipMkv, feature, movies };
}

// ---------------------------------------------------------------------------
// HTTP as a player: keep-alive, timed to the last byte.

const agent = new http.Agent({ keepAlive: true });

function get(url: string): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.setTimeout(120_000, () => req.destroy(new Error('no answer within 120 s')));
    req.on('error', reject);
  });
}

async function ok(url: string): Promise<Buffer> {
  const r = await get(url);
  if (r.status !== 200) throw new Error(`GET ${url.replace(/(api_key|key)=[^&]*/g, '$1=***')}: ${r.status} ${r.body.toString().slice(0, 200)}`);
  return r.body;
}

interface Opened { videoPlaylist: string; segments: string[]; starts: number[]; token: string; manifestMs: number }

/** master.m3u8 → video.m3u8; the segment URLs and their start times. */
async function open(host: TestHost, itemId: string, query: string): Promise<Opened> {
  const t0 = performance.now();
  const masterUrl = `${host.url}/watch/vod/${itemId}/master.m3u8?api_key=${encodeURIComponent(host.adminToken)}${query}`;
  const master = (await ok(masterUrl)).toString();
  const manifestMs = performance.now() - t0;
  const uri = master.split('\n').find((l) => l && !l.startsWith('#'))!;
  const videoPlaylist = new URL(uri, masterUrl).href;
  const media = (await ok(videoPlaylist)).toString().split('\n');
  const segments: string[] = [];
  const starts: number[] = [];
  let at = 0;
  for (let i = 0; i < media.length; i++) {
    const m = /^#EXTINF:([\d.]+),/.exec(media[i]!);
    if (!m) continue;
    starts.push(at);
    at += Number(m[1]);
    segments.push(new URL(media[i + 1]!, videoPlaylist).href);
  }
  return { videoPlaylist, segments, starts, token: /\/t\/([^/]+)-[0-9a-f]{16}\//.exec(videoPlaylist)![1]!, manifestMs };
}

async function stopJobs(host: TestHost): Promise<void> {
  for (const j of host.host.jobs.list()) if (j.kind === 'vod-transcode' && j.state === 'running') await host.host.jobs.get(j.key)?.stop('benchmark');
}

/** Server: from the manifest request to the first video segment's last byte. */
async function serverFirstSegment(host: TestHost, itemId: string, query: string): Promise<{ ms: number; manifestMs: number }> {
  await stopJobs(host);
  const t0 = performance.now();
  const o = await open(host, itemId, query);
  await ok(o.segments[0]!);
  const ms = performance.now() - t0;
  // Its ffmpeg would go on working while plain ffmpeg is measured.
  await stopJobs(host);
  return { ms, manifestMs: o.manifestMs };
}

/**
 * Server: a player that started (manifest, first segment) and a second later seeks to 80 %: from the
 * request of that segment (ffmpeg is working from segment 0; the server restarts it there) to its last byte.
 */
async function serverSeek(host: TestHost, itemId: string, query: string): Promise<{ ms: number; segment: number; start: number; manifestMs: number }> {
  await stopJobs(host);
  const o = await open(host, itemId, query);
  await ok(o.segments[0]!);
  await sleep(1000);
  const k = Math.floor(o.segments.length * 0.8);
  const t0 = performance.now();
  await ok(o.segments[k]!);
  const ms = performance.now() - t0;
  await stopJobs(host);
  return { ms, segment: k, start: o.starts[k]!, manifestMs: o.manifestMs };
}

/**
 * Plain ffmpeg with the server's input and codec arguments for a run from `start`, writing HLS fMP4
 * segments itself: from spawn to its first segment listed in its playlist (the hls muxer lists a
 * segment once it is complete).
 */
async function plainFirstSegment(file: string, token: string, start: number, nextKeyframe?: number): Promise<number> {
  const probe = JSON.parse(await exec(FFPROBE, ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', file]));
  const variant = parseToken(token)!;
  const parts = runArgParts({ input: file, info: mediaInfoFromProbe(probe, file), variant, start, nextKeyframe, segmentSeconds: SEGMENT_SECONDS, preset: 'veryfast' });
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-vod-plain-'));
  const playlist = path.join(dir, 'p.m3u8');
  const args = ['-hide_banner', '-nostdin', ...parts.input, ...parts.codecs,
    '-f', 'hls', '-hls_time', String(SEGMENT_SECONDS), '-hls_segment_type', 'fmp4', '-hls_flags', 'temp_file',
    '-hls_fmp4_init_filename', 'init.mp4', '-hls_segment_filename', path.join(dir, 's%d.m4s'), playlist];
  const t0 = performance.now();
  const child = spawn(FFMPEG, args, { detached: true, stdio: 'ignore' });
  try {
    for (;;) {
      const exited = child.exitCode !== null;
      const text = await readFile(playlist, 'utf8').catch(() => '');
      if (text.includes('#EXTINF')) return performance.now() - t0;
      if (exited) throw new Error(`plain ffmpeg exited (${child.exitCode}) before its first segment`);
      if (performance.now() - t0 > 120_000) throw new Error('plain ffmpeg: no segment within 120 s');
      await sleep(5);
    }
  } finally {
    killGroup(child.pid);
    await rm(dir, { recursive: true, force: true });
  }
}

interface Pair { serverMs: number; plainMs: number; ratio: number; load1: number }

async function pairs(n: number, server: () => Promise<number>, plain: () => Promise<number>): Promise<Pair[]> {
  const out: Pair[] = [];
  for (let i = 0; i < n; i++) {
    // Alternate which goes first: the second one may find the file in the page cache.
    let serverMs: number;
    let plainMs: number;
    if (i % 2 === 0) { serverMs = await server(); plainMs = await plain(); } else { plainMs = await plain(); serverMs = await server(); }
    out.push({ serverMs: round(serverMs), plainMs: round(plainMs), ratio: round(serverMs / plainMs, 2), load1: load1() });
  }
  return out;
}

const summary = (ps: Pair[]) => ({
  runs: ps, medianServerMs: round(median(ps.map((p) => p.serverMs))), medianPlainMs: round(median(ps.map((p) => p.plainMs))),
  medianRatio: round(median(ps.map((p) => p.ratio)), 2),
});

export async function run(): Promise<Record<string, unknown>> {
  const generatedAt = performance.now();
  const media = await generate();
  const generateSeconds = round((performance.now() - generatedAt) / 1000, 1);
  const host = await createTestHost({
    listen: true,
    plugins: { vod: { libraries: [{ name: 'Movies', type: 'movies', paths: [media.movies] }], initialScan: 'await', segmentSeconds: SEGMENT_SECONDS, preset: 'veryfast' } },
  });
  try {
    const page = (await host.inject({ method: 'GET', url: '/library/1?limit=10', headers: host.authHeaders })).json();
    const id = (title: string) => (page.items as { id: string; title: string }[]).find((i) => i.title === title)!.id;
    const clip = id('Clip');
    const remuxClip = id('Clip Remux');
    const feature = id('Feature');
    const featureSize = (await stat(media.feature)).size;

    // 1. Time to first segment.
    const remuxRuns: { ms: number; manifestMs: number; load1: number }[] = [];
    for (let i = 0; i < RUNS; i++) {
      const r = await serverFirstSegment(host, remuxClip, '');
      remuxRuns.push({ ms: round(r.ms), manifestMs: round(r.manifestMs), load1: load1() });
    }
    // The clip is 1.65 Mb/s: a 1.5 Mb/s cap makes the play decision transcode it, at 720p (1.31 Mb/s video).
    const transcodeQuery = '&maxBitrate=1500000';
    const tToken = (await open(host, clip, transcodeQuery)).token;
    const transcode = await pairs(RUNS, async () => (await serverFirstSegment(host, clip, transcodeQuery)).ms, () => plainFirstSegment(media.clipMp4, tToken, 0));
    const rToken = (await open(host, remuxClip, '')).token;
    const remuxPlain: number[] = [];
    for (let i = 0; i < RUNS; i++) remuxPlain.push(round(await plainFirstSegment(media.clipMkv, rToken, 0)));

    // 2. Seek to 80 % of the 2-hour title (the remux's keyframe scan happens at its first manifest, reported apart).
    const seekOf = async (query: string) => {
      const first = await open(host, feature, query);
      const k = Math.floor(first.segments.length * 0.8);
      const seeks: { segment: number; start: number }[] = [];
      const ps = await pairs(RUNS, async () => {
        const r = await serverSeek(host, feature, query);
        seeks.push({ segment: r.segment, start: round(r.start, 3) });
        return r.ms;
        // The next keyframe after the segment's start: the clip has one every 2 s.
      }, () => plainFirstSegment(media.feature, first.token, first.starts[k]!, first.starts[k]! + 2));
      return { firstManifestMs: round(first.manifestMs), segment: k, of: first.segments.length, startSeconds: round(first.starts[k]!, 3), ...summary(ps) };
    };
    const seekTranscode = await seekOf(transcodeQuery);
    const seekRemux = await seekOf('');

    return {
      load1AtEnd: load1(),
      media: { clip: '1280x720 25 fps H.264 High (x264 veryfast, B-frames, 1.5 Mb/s, keyframes every 2 s) + AAC, 20 s', feature: `the clip looped ${LOOPS}× (2 h, ${round(featureSize / 2 ** 20)} MiB)`, generateSeconds },
      timeToFirstSegment: {
        remux: { runs: remuxRuns, medianMs: round(median(remuxRuns.map((r) => r.ms))), plainFfmpegMs: remuxPlain, targetMs: 500 },
        transcode720p: { ...summary(transcode), target: '≤ 1.25× plain' },
      },
      seek80PercentOf2h: {
        transcode720p: { ...seekTranscode, target: '≤ 1.5× plain and ≤ 2500 ms' },
        remux: { ...seekRemux, target: '≤ 1.5× plain and ≤ 2500 ms' },
      },
    };
  } finally {
    await host.close();
    agent.destroy();
    if (!process.env.VOD_BENCH_KEEP) await rm(MEDIA, { recursive: true, force: true });
  }
}
