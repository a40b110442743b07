/**
 * Figures of the client outputs (hdhomerun, iptv-output), the server in a child
 * process, the upstream and the clients here:
 *
 *  1. Tune time to the first decoded video frame: a player (`ffmpeg -i URL -map 0:v:0
 *     -frames:v 1 -f null -`) on `auto/v<n>` of a channel not running (cold; a new
 *     channel and upstream connection each run) and of one already running (warm),
 *     beside the same player reading plain ffmpeg remuxing the same upstream to
 *     MPEG-TS (`ffmpeg -i <upstream> -c copy -f mpegts pipe:1`), alternating which
 *     goes first. The upstream: test/helpers/upstream.ts (realtime H.264/AAC MPEG-TS,
 *     1 s keyframes); live-tv segmentSeconds 2.
 *  2. 20 TS clients on one channel for 30 s: upstream connections, the server's own CPU
 *     time (node, /proc/<pid>/stat; ffmpeg not included) as % of one core.
 *  3. guide.xml.gz for 2,000 channels × 14 days: time to download it and the server's
 *     RSS growth while it is served (sampled every 50 ms).
 *
 *   node dist/test/bench/run.js hdhomerun
 *   HDHR_BENCH_RUNS=5 HDHR_BENCH_ONLY=tune,clients,guide node dist/test/bench/run.js hdhomerun
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { FFMPEG, killGroup, startUpstream } from '../helpers/upstream.js';
import { unusedPort } from '../helpers/env.js';
import { generateGuide, generateGuidePlaylist } from './guide-generator.js';
import { load1, median, sleep } from './stats.js';

const REPO = path.resolve(__dirname, '../../..');
const CLI = path.join(REPO, 'dist/core/cli/main.js');
const PASSWORD = 'bench-password';
const round = (n: number, d = 0) => Math.round(n * 10 ** d) / 10 ** d;

interface Server { child: ChildProcess; base: string; key: string; stop(): Promise<void> }

function request(url: string, options: http.RequestOptions = {}, body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, options, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (s) => { text += s; }).on('end', () => resolve({ status: res.statusCode!, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function startServer(dir: string, plugins: Record<string, unknown>, readyMs = 120_000): Promise<Server> {
  const port = await unusedPort();
  await mkdir(dir, { recursive: true });
  const config = path.join(dir, 'config.yaml');
  await writeFile(config, JSON.stringify({ server: { host: '127.0.0.1', port, dataDir: path.join(dir, 'data') }, logging: { level: 'warn' }, plugins }));
  const child = spawn(process.execPath, [CLI, 'serve', '--config', config], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ANTENNA_ADMIN_PASSWORD: PASSWORD } });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (s: string) => { if (stderr.length < 8000) stderr += s; });
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + readyMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited: ${stderr}`);
    if ((await request(`${base}/api/version`).catch(() => undefined))?.status === 200) break;
    if (Date.now() > deadline) throw new Error(`server did not answer: ${stderr}`);
    await sleep(100);
  }
  const login = await request(`${base}/login`, { method: 'POST', headers: { 'content-type': 'application/json' } }, JSON.stringify({ username: 'admin', password: PASSWORD }));
  const token = JSON.parse(login.body).auth.token as string;
  const created = await request(`${base}/api/admin/access-keys`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` } }, JSON.stringify({ name: 'bench' }));
  const key = JSON.parse(created.body).access_key.key as string;
  return {
    child, base, key,
    async stop() {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(10_000)]);
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}

/** ms from now until a player has decoded the first video frame of `input` (fed `stdin` when given). */
function firstFrame(input: string, feed?: () => ChildProcess): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const source = feed?.();
    const player = spawn(FFMPEG, ['-hide_banner', '-nostdin', '-loglevel', 'error', '-i', input, '-map', '0:v:0', '-frames:v', '1', '-f', 'null', '-'], {
      detached: true, stdio: [source ? 'pipe' : 'ignore', 'ignore', 'pipe'],
    });
    if (source) source.stdout!.pipe(player.stdin!).on('error', () => {});
    player.stdin?.on('error', () => {});
    let err = '';
    player.stderr!.setEncoding('utf8').on('data', (s: string) => { err += s; });
    const timer = setTimeout(() => killGroup(player.pid), 60_000);
    player.on('close', (code) => {
      clearTimeout(timer);
      const ms = performance.now() - t0;
      if (source) killGroup(source.pid);
      if (code === 0) resolve(ms); else reject(new Error(`player exited ${code}: ${err.slice(0, 500)}`));
    });
  });
}

async function cpuTicks(pid: number): Promise<number> {
  const text = await readFile(`/proc/${pid}/stat`, 'utf8');
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return Number(f[11]) + Number(f[12]);
}

async function rssBytes(pid: number): Promise<number> {
  const m = /VmRSS:\s+(\d+) kB/.exec(await readFile(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0) * 1024;
}

export async function run(): Promise<Record<string, unknown>> {
  const only = (process.env.HDHR_BENCH_ONLY ?? 'tune,clients,guide').split(',');
  const runs = Number(process.env.HDHR_BENCH_RUNS ?? 5);
  const result: Record<string, unknown> = {};
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-bench-hdhr-'));
  const upstream = await startUpstream();
  try {
    if (only.includes('tune') || only.includes('clients')) {
      const entries = Array.from({ length: runs + 2 }, (_, i) => `#EXTINF:-1 tvg-id="c${i}" tvg-chno="${i + 1}",C${i}\n${upstream.base}/live/c${i}.ts`);
      await writeFile(path.join(dir, 'tv.m3u'), `#EXTM3U\n${entries.join('\n')}\n`);
      const server = await startServer(path.join(dir, 's1'), {
        'live-tv': { initialImport: 'await', idleTimeout: '5s', segmentSeconds: 2 },
        'm3u-tuner': { sources: [{ name: 'bench', url: path.join(dir, 'tv.m3u'), maxStreams: 50, refresh: '1000d' }] },
        hdhomerun: {},
      });
      try {
        if (only.includes('tune')) {
          const cold: number[] = [];
          const warm: number[] = [];
          const plain: number[] = [];
          for (let r = 0; r < runs; r++) {
            const ours = async () => {
              cold.push(await firstFrame(`${server.base}/hdhr/${server.key}/auto/v${r + 1}`));
              warm.push(await firstFrame(`${server.base}/hdhr/${server.key}/auto/v${r + 1}`));
            };
            const theirs = async () => {
              plain.push(await firstFrame('pipe:0', () => spawn(FFMPEG, ['-hide_banner', '-nostdin', '-loglevel', 'error', '-i', `${upstream.base}/live/plain${r}.ts`, '-c', 'copy', '-f', 'mpegts', 'pipe:1'], {
                detached: true, stdio: ['ignore', 'pipe', 'ignore'],
              })));
            };
            if (r % 2) { await ours(); await theirs(); } else { await theirs(); await ours(); }
          }
          result.tune = {
            coldMs: cold.map((x) => round(x)), warmMs: warm.map((x) => round(x)), plainRemuxMs: plain.map((x) => round(x)),
            medianColdMs: round(median(cold)), medianWarmMs: round(median(warm)), medianPlainMs: round(median(plain)),
            coldOverPlain: round(median(cold) / median(plain), 2), warmOverPlain: round(median(warm) / median(plain), 2), load1: load1(),
          };
        }
        if (only.includes('clients')) {
          const channel = runs + 1;
          const path0 = `/live/c${channel}.ts`;
          const before = upstream.connections(path0);
          const clients: http.ClientRequest[] = [];
          let bytes = 0;
          for (let i = 0; i < 20; i++) {
            clients.push(http.get(`${server.base}/hdhr/${server.key}/auto/v${channel + 1}`, (res) => res.on('data', (c: Buffer) => { bytes += c.length; })));
          }
          await sleep(10_000); // tuned and steady
          const pid = server.child.pid!;
          const t0 = await cpuTicks(pid);
          const b0 = bytes;
          await sleep(30_000);
          const t1 = await cpuTicks(pid);
          result.clients = {
            clients: 20, seconds: 30, upstreamConnections: upstream.connections(path0) - before, peakUpstream: upstream.peakConnections(path0),
            serverCpuPercentOfOneCore: round(((t1 - t0) / 100 / 30) * 100, 1), megabitsPerSecondOut: round(((bytes - b0) * 8) / 30 / 1e6, 1), load1: load1(),
          };
          for (const c of clients) c.destroy();
        }
      } finally {
        await server.stop();
      }
    }
    if (only.includes('guide')) {
      const begin = Math.floor(Date.now() / 3600_000) * 3600_000;
      await generateGuidePlaylist(path.join(dir, 'guide.m3u'), 2000);
      const generated = await generateGuide(path.join(dir, 'guide.xml'), 2000, 14, begin);
      const server = await startServer(path.join(dir, 's2'), {
        'live-tv': { initialImport: 'await' },
        'm3u-tuner': { sources: [{ name: 'bench', url: path.join(dir, 'guide.m3u'), refresh: '1000d' }] },
        'xmltv-guide': { sources: [{ url: path.join(dir, 'guide.xml'), refresh: '1000d' }], maxAge: '1000d' },
        'iptv-output': {},
      }, 1_800_000); // it listens once the 323 MB guide is imported
      try {
        const pid = server.child.pid!;
        await sleep(2000);
        const rss0 = await rssBytes(pid);
        let peak = rss0;
        const sampler = setInterval(() => { void rssBytes(pid).then((r) => { peak = Math.max(peak, r); }).catch(() => {}); }, 50);
        const t0 = performance.now();
        let gz = 0;
        await new Promise<void>((resolve, reject) => {
          http.get(`${server.base}/iptv/${server.key}/guide.xml.gz`, (res) => {
            res.on('data', (c: Buffer) => { gz += c.length; }).on('end', () => resolve()).on('error', reject);
          }).on('error', reject);
        });
        const ms = performance.now() - t0;
        clearInterval(sampler);
        result.guide = {
          channels: 2000, days: 14, importedProgrammes: generated.programmes, gzipBytes: gz, seconds: round(ms / 1000, 1),
          rssBeforeMB: round(rss0 / 2 ** 20), rssPeakMB: round(peak / 2 ** 20), rssGrowthMB: round((peak - rss0) / 2 ** 20), load1: load1(),
        };
      } finally {
        await server.stop();
      }
    }
  } finally {
    await upstream.close();
    await rm(dir, { recursive: true, force: true });
  }
  return result;
}
