/**
 * Time to first frame in GStreamer's playbin (legacy hlsdemux, the player of
 * issue 24 item 7) for a VOD remux and a VOD transcode, beside ffmpeg's own
 * HLS fMP4 output of the same file (copied, and encoded with the same x264
 * settings) served by a plain static server, in the same run.
 *
 * First frame: the first buffer the video sink renders (fakesink sync=true,
 * so a timeline that starts late is waited for, as on a screen), from the
 * launch of gst-launch-1.0. Median of RUNS; each Antenna run asks for a new
 * job (another device). Skipped when gst-launch-1.0 is not installed
 * (apt-get install gstreamer1.0-tools gstreamer1.0-plugins-good
 * gstreamer1.0-plugins-bad gstreamer1.0-libav).
 *
 *   npm run bench -- vod-first-frame
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createTestHost } from '../../sdk/testing.js';
import { makeClip } from '../../plugins/vod/sample-media.js';
import { FFMPEG } from '../helpers/upstream.js';
import { load1, median } from './stats.js';

const GST = '/usr/bin/gst-launch-1.0';
const RUNS = Number(process.env.FIRST_FRAME_RUNS ?? 3);
const TIMEOUT_MS = 30_000;

const exec = (bin: string, args: string[]) => new Promise<void>((resolve, reject) => {
  execFile(bin, args, { maxBuffer: 16 * 2 ** 20 }, (err, _o, stderr) => (err ? reject(new Error(`${bin}: ${stderr}`)) : resolve()));
});

/** ms from launching playbin on `url` to the video sink's first rendered buffer. */
function firstFrame(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(GST, ['-v', 'playbin', `uri=${url}`, 'video-sink=fakesink name=vsink sync=true silent=false', 'audio-sink=fakesink sync=true'], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let text = '';
    const done = (err?: Error, ms?: number) => {
      clearTimeout(timer);
      try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* gone */ }
      if (err) reject(err); else resolve(ms!);
    };
    const timer = setTimeout(() => done(new Error(`no frame within ${TIMEOUT_MS} ms: ${text.slice(-500)}`)), TIMEOUT_MS);
    child.stdout!.on('data', (c: Buffer) => {
      text += c.toString();
      if (/vsink: last-message = chain/.test(text)) done(undefined, performance.now() - t0);
    });
    child.on('exit', () => done(new Error(`gst-launch exited: ${text.slice(-500)}`)));
  });
}

/** A static file server over `dir`, as a CDN would serve ffmpeg's output. */
function staticServer(dir: string): Promise<{ url: string; close(): void }> {
  const server = http.createServer((req, res) => {
    const file = path.join(dir, decodeURIComponent(new URL(req.url!, 'http://x').pathname));
    if (!file.startsWith(dir) || !existsSync(file)) { res.statusCode = 404; res.end(); return; }
    res.setHeader('content-type', file.endsWith('.m3u8') ? 'application/vnd.apple.mpegurl' : 'video/mp4');
    res.end(readFileSync(file));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as { port: number };
    resolve({ url: `http://127.0.0.1:${port}`, close: () => server.close() });
  }));
}

export async function run(): Promise<Record<string, unknown>> {
  if (!existsSync(GST)) return { skipped: 'gst-launch-1.0 is not installed' };
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-bench-ttff-'));
  const movies = path.join(dir, 'movies');
  const plain = path.join(dir, 'plain');
  await mkdir(movies);
  await mkdir(path.join(plain, 'copy'), { recursive: true });
  await mkdir(path.join(plain, 'x264'), { recursive: true });
  const source = path.join(movies, 'Feature (2020).mkv');
  await makeClip(exec.bind(null, FFMPEG), source, { width: 1280, height: 720, fps: 25, seconds: 30, gopSeconds: 2 });
  const hls = ['-f', 'hls', '-hls_time', '4', '-hls_playlist_type', 'vod', '-hls_segment_type', 'fmp4'];
  await exec(FFMPEG, ['-loglevel', 'error', '-i', source, '-c', 'copy', ...hls, path.join(plain, 'copy', 'index.m3u8')]);
  await exec(FFMPEG, ['-loglevel', 'error', '-i', source, '-vf', 'scale=-2:720', '-c:v', 'libx264', '-preset', 'veryfast', '-b:v', '3500k', '-maxrate', '3500k', '-bufsize', '3500k',
    '-force_key_frames', 'expr:gte(t,n_forced*4)', '-c:a', 'aac', '-b:a', '160k', '-ac', '2', ...hls, path.join(plain, 'x264', 'index.m3u8')]);
  const files = await staticServer(plain);
  const host = await createTestHost({ listen: true, plugins: { vod: { libraries: [{ name: 'Movies', type: 'movies', paths: [movies] }], initialScan: 'await' } } });
  try {
    const libs = (await host.inject({ method: 'GET', url: '/libraries', headers: host.authHeaders })).json().libraries as { id: number }[];
    const itemId = ((await host.inject({ method: 'GET', url: `/library/${libs[0]!.id}`, headers: host.authHeaders })).json().items as { id: string }[])[0]!.id;
    const figures: Record<string, number[]> = { antennaRemux: [], plainCopy: [], antennaTranscode: [], plainX264: [] };
    for (let i = 0; i < RUNS; i++) {
      const token = await host.login('admin', host.adminPassword, { 'device-id': `ttff-${i}` });
      // What play-info hands a player that cannot send headers: remux for a browser-like device, transcode at 720p 3.5 Mb/s.
      const info = async (headers: Record<string, string>) => (await host.inject({ method: 'GET', url: `/watch/vod/${itemId}/play-info`, headers: { authorization: `Bearer ${token}`, ...headers } })).json().url as string;
      const remux = await info({});
      const transcode = await info({ 'device-max-height': '720', 'device-codecs': 'hevc' });
      figures.antennaRemux!.push(await firstFrame(`${host.url}${remux}`));
      figures.plainCopy!.push(await firstFrame(`${files.url}/copy/index.m3u8`));
      figures.antennaTranscode!.push(await firstFrame(`${host.url}${transcode}`));
      figures.plainX264!.push(await firstFrame(`${files.url}/x264/index.m3u8`));
      for (const j of host.host.jobs.list()) await host.host.jobs.get(j.key)?.stop('bench');
    }
    const out: Record<string, unknown> = { runs: RUNS, load1: load1() };
    for (const [k, v] of Object.entries(figures)) out[`${k}Ms`] = { median: Math.round(median(v)), all: v.map(Math.round) };
    return out;
  } finally {
    files.close();
    await host.close();
    await rm(dir, { recursive: true, force: true });
  }
}
