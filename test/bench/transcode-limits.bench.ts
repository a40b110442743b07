/**
 * Issue 25's figure: with the transcode limit reached, authenticated JSON
 * routes keep their p95 within 2× of the idle p95, in the same run.
 *
 * One server (in this process, real HTTP), one library of 720p clips. Idle:
 * 8 clients request GET /libraries, /library/{id}, /item/{id} and play-info
 * back to back for LOAD_SECONDS, with ordinary users' tokens; p50/p95/p99 of
 * their latencies. Loaded: ordinary users start transcodes (720p, preset
 * veryfast) until the server refuses one (ffmpeg.maxTranscodes, default one
 * per core), each kept busy by a player fetching its segments, and the same
 * load is measured again. Both phases report the 1-minute load average and
 * how many x264 processes ran.
 *
 *   npm run bench -- transcode-limits
 */
import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { readdirSync, readFileSync } from 'node:fs';
import { createTestHost } from '../../sdk/testing.js';
import { makeClip } from '../../plugins/vod/sample-media.js';
import { FFMPEG } from '../helpers/upstream.js';
import { load1, sleep } from './stats.js';
import { execFile } from 'node:child_process';

const LOAD_SECONDS = Number(process.env.LIMITS_BENCH_SECONDS ?? 10);
const CLIENTS = 8;

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
function request(base: string, p: string, headers: Record<string, string> = {}): Promise<{ status: number; body: Buffer; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${base}${p}`, { agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks), headers: res.headers }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

/** CLIENTS loops over the JSON routes for `seconds`; latency percentiles in ms. */
async function jsonLoad(base: string, paths: string[], tokens: string[], seconds: number) {
  const latencies: number[] = [];
  let errors = 0;
  const end = performance.now() + seconds * 1000;
  await Promise.all(Array.from({ length: CLIENTS }, async (_, c) => {
    for (let i = c; performance.now() < end; i++) {
      const t0 = performance.now();
      const r = await request(base, paths[i % paths.length]!, { authorization: `Bearer ${tokens[c % tokens.length]}` });
      latencies.push(performance.now() - t0);
      if (r.status !== 200) errors++;
    }
  }));
  latencies.sort((a, b) => a - b);
  const ms = (x: number) => Math.round(x * 100) / 100;
  return { requests: latencies.length, errors, p50ms: ms(percentile(latencies, 50)), p95ms: ms(percentile(latencies, 95)), p99ms: ms(percentile(latencies, 99)), load1: load1() };
}

function x264Processes(): number {
  let n = 0;
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const m = /^\d+ \((.*)\) (\S) (\d+)/.exec(readFileSync(`/proc/${d}/stat`, 'utf8'));
      if (m && Number(m[3]) === process.pid && m[1]!.startsWith('ffmpeg') && readFileSync(`/proc/${d}/cmdline`, 'utf8').includes('libx264')) n++;
    } catch { /* gone */ }
  }
  return n;
}

export async function run(): Promise<Record<string, unknown>> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-bench-limits-'));
  const movies = path.join(dir, 'movies');
  await mkdir(movies);
  const runFfmpeg = (args: string[]) => new Promise<void>((resolve, reject) => execFile(FFMPEG, args, (err) => (err ? reject(err) : resolve())));
  const titles = ['Alpha', 'Bravo', 'Charlie', 'Delta', 'Echo', 'Foxtrot'];
  // 720p at 8 Mb/s: a 720p transcode at the ladder's 3.5 Mb/s keeps x264 busy at real time and beyond.
  await makeClip(runFfmpeg, path.join(dir, 'clip.mp4'), { width: 1280, height: 720, fps: 25, seconds: 60, videoBitrate: '8M' });
  for (const [i, title] of titles.entries()) await copyFile(path.join(dir, 'clip.mp4'), path.join(movies, `${title} (${2001 + i}).mp4`));
  const host = await createTestHost({ listen: true, plugins: { vod: { libraries: [{ name: 'Movies', type: 'movies', paths: [movies] }], initialScan: 'await' } } });
  try {
    const base = host.url;
    const admin = host.authHeaders;
    const libs = (await host.inject({ method: 'GET', url: '/libraries', headers: admin })).json().libraries as { id: number }[];
    const items = ((await host.inject({ method: 'GET', url: `/library/${libs[0]!.id}?limit=100`, headers: admin })).json().items as { id: string }[]).map((x) => x.id);
    const tokens: string[] = [];
    for (let u = 0; u < titles.length; u++) {
      await host.createUser(`viewer${u}`, 'viewer-password');
      tokens.push(await host.login(`viewer${u}`, 'viewer-password', { 'device-id': `tv-${u}` }));
    }
    const paths = ['/libraries', `/library/${libs[0]!.id}?limit=50`, ...items.slice(0, 3).map((id) => `/item/${id}`), `/watch/vod/${items[0]}/play-info`];
    const limit = host.host.transcodes.limits.max;

    await jsonLoad(base, paths, tokens, 2); // warm-up
    const idle = { ...(await jsonLoad(base, paths, tokens, LOAD_SECONDS)), x264: x264Processes() };

    // Ordinary users start transcodes until one is refused; a player per transcode keeps fetching its segments.
    let stopPlayers = false;
    const players: Promise<void>[] = [];
    const answers: number[] = [];
    for (let u = 0; u < titles.length; u++) {
      const r = await request(base, `/watch/vod/${items[u]}/master.m3u8?maxBitrate=4000000&api_key=${tokens[u]}`);
      answers.push(r.status);
      if (r.status !== 200) continue;
      const list = new URL(/^(?!#)(.+video\.m3u8.*)$/m.exec(r.body.toString())![1]!, `${base}/watch/vod/${items[u]}/master.m3u8`);
      const playlist = (await request(base, list.pathname + list.search)).body.toString();
      const segments = playlist.split('\n').filter((l) => l && !l.startsWith('#')).map((s) => { const x = new URL(s, list); return x.pathname + x.search; });
      players.push((async () => {
        for (const s of segments) {
          if (stopPlayers) return;
          await request(base, s).catch(() => undefined);
        }
      })());
    }
    await sleep(2000);
    const loaded = { ...(await jsonLoad(base, paths, tokens, LOAD_SECONDS)), x264: x264Processes(), transcodes: host.host.transcodes.usage().total };
    stopPlayers = true;
    await Promise.all(players);
    return {
      maxTranscodes: limit,
      manifestAnswers: answers,
      idle,
      loaded,
      p95Ratio: Math.round((loaded.p95ms / idle.p95ms) * 100) / 100,
      target: 'loaded p95 ≤ 2 × idle p95',
    };
  } finally {
    await host.close();
    agent.destroy();
    await rm(dir, { recursive: true, force: true });
  }
}
