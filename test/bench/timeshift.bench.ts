/**
 * Time-shift figures (#30), the server in a child process, an upstream and viewers here:
 *
 *  1. Seek back 30 minutes: from a request for the window's oldest segment (30 min behind
 *     the live edge) to its last byte, beside the newest segment, alternating, in the same
 *     session; the media playlist that lists them, too. Target: ≤ 100 ms.
 *  2. Server CPU (node's utime+stime, ffmpeg not included) with 10 viewers of one channel
 *     polling their video and audio playlists every second and fetching every new segment:
 *     a server with a full 30-minute window beside one with `timeshift: 0` (the 30 s live
 *     playback needs), both running all along; viewers that take gzip (browsers, hls.js)
 *     and viewers that do not (some TV players). Each case gets SECONDS, in ROUNDS turns
 *     that alternate the cases. Target: the window costs ≤ 5 % more.
 *  3. Disk use at steady state against `timeshiftMaxBytes` (each file once: ffmpeg's names
 *     and the session's are links of one file), sampled every 2 s from 65 s to 125 s after
 *     the restart that follows the fill: the window (~100 s) slides past the fill's last
 *     segments meanwhile. Target: within 5 %.
 *
 * A 30-minute window would take 30 minutes to build: each session is filled first by an
 * upstream that runs faster than real time (no -re: 30 min of media in about a minute),
 * which then ends; the session restarts on the same upstream in real time (a new period,
 * as when a provider restarts), and the measurements run on the real-time part. The old
 * segments were written a minute or two before they are read (the page cache holds them).
 *
 *   node dist/test/bench/run.js timeshift
 *   TIMESHIFT_BENCH_SECONDS=120 TIMESHIFT_BENCH_ROUNDS=6 TIMESHIFT_BENCH_VIEWERS=10 TIMESHIFT_BENCH_ONLY=seek,cpu,disk
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { gunzipSync } from 'node:zlib';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { diskBytes } from '../helpers/disk.js';
import { unusedPort } from '../helpers/env.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';
import { load1, median, sleep } from './stats.js';
import { signIn, untilAnswering } from './server.js';

const REPO = path.resolve(__dirname, '../../..');
const CLI = path.join(REPO, 'dist/core/cli/main.js');
const PASSWORD = 'bench-password';
const CLK_TCK = 100;
const SECONDS = Number(process.env.TIMESHIFT_BENCH_SECONDS ?? 120);
const ROUNDS = Number(process.env.TIMESHIFT_BENCH_ROUNDS ?? 6);
const VIEWERS = Number(process.env.TIMESHIFT_BENCH_VIEWERS ?? 10);
const ONLY = new Set((process.env.TIMESHIFT_BENCH_ONLY ?? 'seek,cpu,disk').split(','));
const FILL_SECONDS = 31 * 60;
const SEEK_RUNS = 20;
/** The disk cap of part 3: ~100 s of the upstream below, more than the minute files stay after they were announced. */
const DISK_CAP = 5 * 2 ** 20;

/** 320x180 H.264 at 250 kb/s, keyframes every second, and a tone. */
const encoder = (realtime: boolean, seconds?: number) => [
  ...(realtime ? ['-re'] : []), '-f', 'lavfi', '-i', 'testsrc2=size=320x180:rate=25',
  ...(realtime ? ['-re'] : []), '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000',
  ...(seconds ? ['-t', String(seconds)] : []),
  '-c:v', 'libx264', '-preset', 'ultrafast', '-tune', 'zerolatency', '-pix_fmt', 'yuv420p', '-g', '25',
  '-b:v', '250k', '-maxrate', '250k', '-bufsize', '250k', '-c:a', 'aac',
];

const round = (n: number, d = 1): number => Math.round(n * 10 ** d) / 10 ** d;
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

function get(url: string, token?: string, gzip = false): Promise<{ status: number; body: Buffer; ms: number; bytes: number }> {
  const t0 = performance.now();
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (gzip) headers['accept-encoding'] = 'gzip';
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const ms = performance.now() - t0;
        const raw = Buffer.concat(chunks);
        const body = res.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
        resolve({ status: res.statusCode ?? 0, body, ms, bytes: raw.length });
      });
      res.on('error', reject);
    });
    req.setTimeout(30_000, () => req.destroy(new Error('no answer within 30 s')));
    req.on('error', reject);
  });
}

interface Server { child: ChildProcess; base: string; token: string; dataDir: string; stop(): Promise<void> }

async function startServer(dir: string, playlist: string, liveTv: Record<string, unknown>): Promise<Server> {
  const port = await unusedPort();
  const dataDir = path.join(dir, 'data');
  const config = path.join(dir, 'config.yaml');
  await writeFile(config, JSON.stringify({
    server: { host: '127.0.0.1', port, dataDir },
    logging: { level: 'warn' },
    plugins: {
      'hls-packager': {}, 'dash-packager': {},
      'live-tv': { initialImport: 'await', idleTimeout: '20s', segmentSeconds: 2, readyTimeout: '30s', ...liveTv },
      'm3u-tuner': { sources: [{ name: 'bench', url: playlist, maxStreams: 5, refresh: '1000d' }] },
    },
  }));
  const child = spawn(process.execPath, [CLI, 'serve', '--config', config], {
    cwd: dir, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ANTENNA_ADMIN_PASSWORD: PASSWORD },
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (s: string) => { if (stderr.length < 8000) stderr += s; });
  const base = `http://127.0.0.1:${port}`;
  await untilAnswering(base, child, () => stderr);
  const token = await signIn(base, 'admin', PASSWORD);
  return {
    child, base, token, dataDir,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(10_000)]);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}

async function cpuTicks(pid: number): Promise<number> {
  const text = await readFile(`/proc/${pid}/stat`, 'utf8');
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return Number(f[11]) + Number(f[12]);
}

interface Playlist { mediaSequence: number; segments: { uri: string; seconds: number }[] }

function parsePlaylist(text: string, base: string): Playlist {
  const lines = text.split('\n');
  const mediaSequence = Number(/#EXT-X-MEDIA-SEQUENCE:(\d+)/.exec(text)?.[1] ?? 0);
  const segments: Playlist['segments'] = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^#EXTINF:([\d.]+)/.exec(lines[i]!);
    if (m) segments.push({ uri: new URL(lines[i + 1]!, base).href, seconds: Number(m[1]) });
  }
  return { mediaSequence, segments };
}

/** A session of one channel: tuned, filled faster than real time to FILL_SECONDS (or `fill`), then real time. */
async function filledSession(upstream: Upstream, name: string, liveTv: Record<string, unknown>, fill = FILL_SECONDS) {
  const dir = await mkdtemp(path.join(os.tmpdir(), `antenna-bench-timeshift-${name}-`));
  const urlPath = `/live/${name}.ts`;
  upstream.encode(urlPath, encoder(false, fill));
  const playlist = path.join(dir, 'tv.m3u');
  await writeFile(playlist, `#EXTM3U\n#EXTINF:-1 tvg-id="${name}",${name}\n${upstream.base}${urlPath}\n`);
  const server = await startServer(dir, playlist, liveTv);
  const channels = JSON.parse((await get(`${server.base}/channels`, server.token)).body.toString()) as { channels: { id: number }[] };
  const id = channels.channels[0]!.id;
  const master = await get(`${server.base}/watch/live/${id}`, server.token);
  if (master.status !== 200) throw new Error(`tune: ${master.status} ${master.body}`);
  const variant = master.body.toString().split('\n').find((l) => l.startsWith('/watch/'))!;
  const videoUrl = new URL(variant, server.base).href;
  // The fast upstream ends after `fill` s of media; the next connection plays in real time.
  upstream.encode(urlPath, encoder(true));
  const t0 = Date.now();
  let listed = 0;
  const keepAlive = setInterval(() => void get(`${server.base}/watch/live/${id}`, server.token).catch(() => {}), 5000);
  try {
    for (;;) {
      const p = parsePlaylist((await get(videoUrl)).body.toString(), server.base);
      listed = p.segments.reduce((n, s) => n + s.seconds, 0);
      // Filled: the fast run has ended and the real-time one has begun (a second period).
      if (/DISCONTINUITY/.test((await get(videoUrl)).body.toString())) break;
      if (Date.now() - t0 > 15 * 60_000) throw new Error(`the window reached only ${listed} s in 15 min`);
      await sleep(2000);
    }
  } finally {
    clearInterval(keepAlive);
  }
  return {
    server, id, videoUrl, fillSeconds: round((Date.now() - t0) / 1000), listed: round(listed, 0),
    async close() { await server.stop(); await rm(dir, { recursive: true, force: true }); },
  };
}

/** VIEWERS viewers polling both playlists every second and fetching each new segment, for `seconds`; the server's CPU meanwhile. */
async function viewers(server: Server, videoUrl: string, gzip: boolean, seconds: number) {
  const audioUrl = videoUrl.replace('/video.m3u8', '/audio.m3u8');
  let stop = false;
  let segments = 0;
  let errors = 0;
  const playlistMs: number[] = [];
  const playlistBytes: number[] = [];
  const viewer = async () => {
    const seen = new Map<string, number>();
    while (!stop) {
      for (const url of [videoUrl, audioUrl]) {
        const r = await get(url, undefined, gzip).catch(() => undefined);
        if (!r || r.status !== 200) { errors++; continue; }
        playlistMs.push(r.ms);
        playlistBytes.push(r.bytes);
        const p = parsePlaylist(r.body.toString(), server.base);
        const last = p.segments[p.segments.length - 1];
        const newest = p.mediaSequence + p.segments.length - 1;
        if (last && newest > (seen.get(url) ?? newest - 1)) {
          const s = await get(last.uri).catch(() => undefined);
          if (s?.status === 200) segments++; else errors++;
        }
        seen.set(url, newest);
      }
      await sleep(1000);
    }
  };
  const before = await cpuTicks(server.child.pid!);
  const t0 = performance.now();
  const running = Array.from({ length: VIEWERS }, () => viewer());
  await sleep(seconds * 1000);
  stop = true;
  await Promise.all(running);
  return { ticks: (await cpuTicks(server.child.pid!)) - before, wall: (performance.now() - t0) / 1000, playlistMs, playlistBytes, segments, errors };
}

interface CpuCase { name: string; server: Server; videoUrl: string; gzip: boolean }

/**
 * Each case's server CPU over SECONDS, measured in ROUNDS turns that alternate the cases (their
 * order reversed every other round): the machine's load drifts, and every case sees the same.
 */
async function cpuRounds(cases: CpuCase[]) {
  const totals = new Map(cases.map((c) => [c.name, { ticks: 0, wall: 0, playlistMs: [] as number[], playlistBytes: [] as number[], segments: 0, errors: 0 }]));
  const loads: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (const c of round % 2 ? [...cases].reverse() : cases) {
      const r = await viewers(c.server, c.videoUrl, c.gzip, SECONDS / ROUNDS);
      const total = totals.get(c.name)!;
      total.ticks += r.ticks;
      total.wall += r.wall;
      total.playlistMs.push(...r.playlistMs);
      total.playlistBytes.push(...r.playlistBytes);
      total.segments += r.segments;
      total.errors += r.errors;
    }
    loads.push(load1());
  }
  const out: Record<string, unknown> = { rounds: ROUNDS, secondsPerCase: SECONDS, load1: loads };
  for (const [name, t] of totals) {
    out[name] = {
      cpuPercent: round((100 * t.ticks) / CLK_TCK / t.wall, 2), playlistMs: round(median(t.playlistMs), 2),
      playlistBytes: round(median(t.playlistBytes), 0), segments: t.segments, errors: t.errors,
    };
  }
  return out;
}

export async function run(): Promise<Record<string, unknown>> {
  const upstream = await startUpstream();
  const result: Record<string, unknown> = { viewers: VIEWERS, seconds: SECONDS };
  try {
    if (ONLY.has('seek') || ONLY.has('cpu')) {
      // idleTimeout: the sessions wait for their turn in the CPU rounds.
      const windowed = await filledSession(upstream, 'windowed', { timeshift: '40m', idleTimeout: '1h' });
      let plain: Awaited<ReturnType<typeof filledSession>> | undefined;
      try {
        result.fill = { windowSeconds: windowed.listed, builtInSeconds: windowed.fillSeconds };
        if (windowed.listed < 30 * 60) throw new Error(`the window holds only ${windowed.listed} s`);
        if (ONLY.has('seek')) {
          const old: number[] = [];
          const edge: number[] = [];
          const playlistMs: number[] = [];
          for (let i = 0; i < SEEK_RUNS; i++) {
            const listed = await get(windowed.videoUrl);
            playlistMs.push(listed.ms);
            const p = parsePlaylist(listed.body.toString(), windowed.server.base);
            const first = p.segments[0]!;
            const newest = p.segments[p.segments.length - 1]!;
            const back = p.segments.reduce((n, s) => n + s.seconds, 0);
            if (back < 30 * 60) throw new Error(`the window holds only ${back} s`);
            // Alternating which goes first; each segment once (a player fetches a segment once).
            const pair = i % 2 ? [[newest, edge], [first, old]] as const : [[first, old], [newest, edge]] as const;
            for (const [segment, into] of pair) {
              const r = await get(segment.uri);
              if (r.status !== 200) throw new Error(`${segment.uri.split('?')[0]}: ${r.status}`);
              into.push(r.ms);
            }
            await sleep(2100); // the next pair: other segments
          }
          result.seek = {
            thirtyMinutesBackMs: { median: round(median(old), 2), max: round(Math.max(...old), 2) },
            liveEdgeMs: { median: round(median(edge), 2), max: round(Math.max(...edge), 2) },
            mediaPlaylistMs: { median: round(median(playlistMs), 2), segmentsListed: 'about 930' },
            runs: SEEK_RUNS, load1: load1(),
          };
        }
        if (ONLY.has('cpu')) {
          plain = await filledSession(upstream, 'plain', { timeshift: 0, idleTimeout: '1h' }, 120);
          const cpu = await cpuRounds([
            { name: 'windowGzip', server: windowed.server, videoUrl: windowed.videoUrl, gzip: true },
            { name: 'noWindowGzip', server: plain.server, videoUrl: plain.videoUrl, gzip: true },
            { name: 'windowIdentity', server: windowed.server, videoUrl: windowed.videoUrl, gzip: false },
            { name: 'noWindowIdentity', server: plain.server, videoUrl: plain.videoUrl, gzip: false },
          ]);
          const pct = (name: string) => (cpu[name] as { cpuPercent: number }).cpuPercent;
          result.cpu = {
            ...cpu, listedSeconds: { window: windowed.listed, noWindow: plain.listed },
            windowCostPercent: {
              gzip: round(100 * (pct('windowGzip') / pct('noWindowGzip') - 1)),
              identity: round(100 * (pct('windowIdentity') / pct('noWindowIdentity') - 1)),
            },
          };
        }
      } finally {
        await windowed.close();
        await plain?.close();
      }
    }
    if (ONLY.has('disk')) {
      const capped = await filledSession(upstream, 'capped', { timeshift: '2h', timeshiftMaxBytes: DISK_CAP }, 300);
      try {
        const live = path.join(capped.server.dataDir, 'plugins', 'live-tv', 'live');
        const keep = setInterval(() => void get(capped.videoUrl).catch(() => {}), 2000);
        await sleep(65_000); // steady state: the window holds the new run's minute, then slides past the fill's end
        const samples: number[] = [];
        for (let i = 0; i < 30; i++) {
          samples.push(await diskBytes(live));
          await sleep(2000);
        }
        clearInterval(keep);
        result.disk = {
          capBytes: DISK_CAP, samples: samples.length,
          minPercentOfCap: round((100 * Math.min(...samples)) / DISK_CAP), maxPercentOfCap: round((100 * Math.max(...samples)) / DISK_CAP),
          medianPercentOfCap: round((100 * median(samples)) / DISK_CAP), load1: load1(),
          percentOfCap: samples.map((b) => round((100 * b) / DISK_CAP)),
        };
      } finally {
        await capped.close();
      }
    }
  } finally {
    await upstream.close();
  }
  return result;
}
