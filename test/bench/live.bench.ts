/**
 * Live TV streaming figures (server in a child process, upstream and viewers here):
 *
 *  1. Tune time, REMUXED realtime upstream (test/helpers/upstream.ts: H.264/AAC MPEG-TS
 *     over HTTP, testsrc2 640x360@25 + sine, x264 ultrafast zerolatency, 1 s keyframes),
 *     `live-tv: { segmentSeconds: 2 }`: from `GET /watch/live/{id}` sent (t0) to
 *       - the master playlist answered,
 *       - the first media playlist listing a segment,
 *       - that segment answering 200 (first segment servable);
 *     beside plain ffmpeg run with exactly the server's arguments (taken from its
 *     "ffmpeg spawned" log line: m3u-tuner's input args, video copy, the segmenter's output)
 *     on another upstream URL: spawn to its first video segment file renamed into
 *     place; and, when the server passes -analyzeduration, the same without it
 *     (ffmpeg's default probing).
 *     5 runs each, alternating which goes first, a new channel (and upstream
 *     connection) every run; the session's ffmpeg must run in copy mode (from the
 *     server's "ffmpeg spawned" log line). The master is answered once three segments
 *     exist (RFC 8216's start rule), so ours is about two segments behind plain
 *     ffmpeg's first segment by design.
 *  2. 50 viewers of one channel for ~60 s: each polls its media playlists (video and
 *     audio) every second and downloads every new segment; gaps in sequence numbers,
 *     non-200s, the number of ffmpeg processes under the server, and the server's own
 *     CPU time (/proc/<pid>/stat utime+stime of the node process, ffmpeg not included)
 *     over the window as % of one core. Target ≤ 25 %.
 *  3. Failover: a channel of two streams (`merge: tvg-id`, each on its own upstream server),
 *     tuned (its tune time as in 1), then its playing upstream server is closed (connections
 *     cut, encoder killed): the time from that to the first segment after the new
 *     EXT-X-DISCONTINUITY answering 200 on the same media playlist URL, against that run's
 *     tune time + one segment duration (the target). 3 runs (LIVE_BENCH_FAILOVER_RUNS).
 *
 * Every figure carries the 1-minute load average (2-core machine, shared).
 *
 *   node dist/test/bench/run.js live
 *   LIVE_BENCH_RUNS=3 LIVE_BENCH_VIEWERS=50 LIVE_BENCH_SECONDS=60 LIVE_BENCH_ONLY=tune,viewers,failover node dist/test/bench/run.js live
 *   LIVE_BENCH_DEBUG=1 (server log on stderr), LIVE_BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" (profile the server)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import { FFMPEG, killGroup, startUpstream, type Upstream } from '../helpers/upstream.js';
import { load1, median, sleep } from './stats.js';
import { signIn, untilAnswering } from './server.js';
import { unusedPort } from '../helpers/env.js';

const REPO = path.resolve(__dirname, '../../..');
const CLI = path.join(REPO, 'dist/core/cli/main.js');
const PASSWORD = 'bench-password';
const SEGMENT_SECONDS = 2;
const CLK_TCK = 100;

const round = (n: number, d = 0): number => Math.round(n * 10 ** d) / 10 ** d;
const pct = (xs: number[], p: number): number => {
  if (!xs.length) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
};

// ---------------------------------------------------------------------------
// HTTP: a keep-alive agent (players keep their connections), plain node:http.

const agent = new http.Agent({ keepAlive: true, maxSockets: 512 });

interface Res { status: number; body: Buffer; ms: number }

function get(url: string, timeoutMs = 30_000): Promise<Res> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), ms: performance.now() - t0 }));
      res.on('error', reject);
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
  });
}


// ---------------------------------------------------------------------------
// The server, in a child process; its log lines are kept for the copy/transcode check.

interface LogLine { msg?: string; label?: string; args?: string[]; childPid?: number; level?: number; [k: string]: unknown }

interface Server {
  child: ChildProcess;
  base: string;
  token: string;
  logs: LogLine[];
  channels: Map<string, number>;
  stop(): Promise<void>;
}

/** `backups`: a second playlist, whose entries are further streams of the first one's channels of the same tvg-id. */
async function startServer(dir: string, playlist: string, backups: string): Promise<Server> {
  const port = await unusedPort();
  const config = path.join(dir, 'config.yaml');
  await writeFile(config, JSON.stringify({
    server: { host: '127.0.0.1', port, dataDir: path.join(dir, 'data') },
    logging: { level: 'info' },
    plugins: {
      'hls-packager': {}, 'dash-packager': {},
      // idleTimeout: a tuned channel nobody watches any more stops (and drops its upstream) soon.
      // merge: the failover channels' two entries (one tvg-id) are one channel; the others' tvg-ids are their own.
      'live-tv': { initialImport: 'await', idleTimeout: '5s', segmentSeconds: SEGMENT_SECONDS, readyTimeout: '20s', merge: 'tvg-id' },
      'm3u-tuner': { sources: [{ name: 'bench', url: playlist, maxStreams: 50, refresh: '1000d' }, { name: 'backups', url: backups, maxStreams: 50, refresh: '1000d' }] },
    },
  }));
  // LIVE_BENCH_NODE_ARGS: e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile the server.
  const nodeArgs = (process.env.LIVE_BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, CLI, 'serve', '--config', config], {
    cwd: dir, stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ANTENNA_ADMIN_PASSWORD: PASSWORD },
  });
  const logs: LogLine[] = [];
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (s: string) => { if (stderr.length < 8000) stderr += s; });
  createInterface({ input: child.stdout! }).on('line', (line) => {
    try {
      const o = JSON.parse(line) as LogLine;
      if (process.env.LIVE_BENCH_DEBUG) process.stderr.write(line.replace(/(api_key|key)=[^&"\s]*/g, '$1=***') + '\n');
      // Keep what the bench reads (ffmpeg spawns/exits, live sessions, warnings) and drop the rest.
      if ((o.level ?? 0) >= 40 || /ffmpeg|live/.test(String(o.msg)) || String(o.label ?? '').startsWith('live:')) logs.push(o);
    } catch { /* not JSON */ }
  });
  const base = `http://127.0.0.1:${port}`;
  await untilAnswering(base, child, () => stderr);
  const token = await signIn(base, 'admin', PASSWORD);
  const list = await new Promise<{ channels: { id: number; name: string }[] }>((resolve, reject) => {
    http.get(`${base}/channels`, { headers: { authorization: `Bearer ${token}` } }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (s) => { body += s; }).on('end', () => resolve(JSON.parse(body)));
    }).on('error', reject);
  });
  const channels = new Map(list.channels.map((c) => [c.name, c.id]));
  return {
    child, base, token, logs, channels,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(10_000)]);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}

/** The server's ffmpeg runs for a channel: pid and whether it copies. */
function runsOf(server: Server, channelId: number): { pid?: number; mode: 'copy' | 'transcode' }[] {
  return server.logs
    .filter((l) => l.msg === 'ffmpeg spawned' && l.label === `live:${channelId}`)
    .map((l) => {
      // Copy mode copies the video (`-c copy` or `-c:v copy`); audio may be encoded either way.
      const args = l.args ?? [];
      const copies = args.some((a, i) => (a === '-c' || a === '-c:v') && args[i + 1] === 'copy');
      return { pid: l.childPid, mode: copies ? 'copy' as const : 'transcode' as const };
    });
}

// ---------------------------------------------------------------------------
// /proc: CPU time of one process, ffmpeg processes under a parent.

async function procStat(pid: number): Promise<{ ppid: number; comm: string; cpuTicks: number } | undefined> {
  try {
    const text = await readFile(`/proc/${pid}/stat`, 'utf8');
    const close = text.lastIndexOf(')');
    const comm = text.slice(text.indexOf('(') + 1, close);
    const f = text.slice(close + 2).split(' ');
    // f[0] = state (field 3); utime = field 14, stime = field 15.
    return { ppid: Number(f[1]), comm, cpuTicks: Number(f[11]) + Number(f[12]) };
  } catch {
    return undefined;
  }
}

async function childrenNamed(ppid: number, comm: string): Promise<{ pid: number; cpuTicks: number }[]> {
  const out: { pid: number; cpuTicks: number }[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const s = await procStat(Number(name));
    if (s && s.ppid === ppid && s.comm === comm) out.push({ pid: Number(name), cpuTicks: s.cpuTicks });
  }
  return out;
}

// ---------------------------------------------------------------------------
// HLS helpers

const absolute = (base: string, uri: string) => new URL(uri, base).href;

/** Media playlist URLs of a master: the variants, then the renditions (audio). */
function mediaPlaylists(master: string, masterUrl: string): string[] {
  const variants: string[] = [];
  const renditions: string[] = [];
  const lines = master.split('\n').map((l) => l.trim());
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    if (l.startsWith('#EXT-X-MEDIA:')) {
      const m = /URI="([^"]+)"/.exec(l);
      if (m) renditions.push(absolute(masterUrl, m[1]!));
    } else if (l.startsWith('#EXT-X-STREAM-INF')) {
      const next = lines.slice(i + 1).find((x) => x && !x.startsWith('#'));
      if (next) variants.push(absolute(masterUrl, next));
    }
  }
  return [...new Set([...variants, ...renditions])];
}

interface MediaPlaylist { sequence: number; init?: string; segments: string[] }

function parseMedia(text: string, url: string): MediaPlaylist {
  let sequence = 0;
  let init: string | undefined;
  const segments: string[] = [];
  for (const raw of text.split('\n')) {
    const l = raw.trim();
    if (!l) continue;
    const seq = /^#EXT-X-MEDIA-SEQUENCE:(\d+)/.exec(l);
    if (seq) sequence = Number(seq[1]);
    const map = /^#EXT-X-MAP:.*URI="([^"]+)"/.exec(l);
    if (map) init = absolute(url, map[1]!);
    if (!l.startsWith('#')) segments.push(absolute(url, l));
  }
  return { sequence, init, segments };
}

// ---------------------------------------------------------------------------
// 1. Tune time

interface OursRun { channel: string; masterMs: number; listedMs: number; servableMs: number; mode: string; ffmpegRuns: number; loadavg: number }
interface PlainRun { manifestMs?: number; firstSegmentMs: number; loadavg: number }

async function tuneOurs(server: Server, name: string): Promise<OursRun> {
  const id = server.channels.get(name)!;
  const loadavg = load1();
  const masterUrl = `${server.base}/watch/live/${id}?api_key=${encodeURIComponent(server.token)}`;
  const t0 = performance.now();
  const master = await get(masterUrl, 30_000);
  const masterMs = performance.now() - t0;
  if (master.status !== 200) throw new Error(`${name}: master ${master.status} ${master.body}`);
  const [video] = mediaPlaylists(master.body.toString('utf8'), masterUrl);
  if (!video) throw new Error(`${name}: no media playlist in ${master.body}`);
  let listedMs = 0;
  let servableMs = 0;
  while (performance.now() - t0 < 30_000) {
    const res = await get(video);
    if (res.status === 200) {
      const media = parseMedia(res.body.toString('utf8'), video);
      if (media.segments.length) {
        listedMs ||= performance.now() - t0;
        const seg = await get(media.segments[0]!);
        if (seg.status === 200 && seg.body.length > 0) {
          servableMs = performance.now() - t0;
          break;
        }
      }
    }
    await sleep(20);
  }
  if (!servableMs) throw new Error(`${name}: no segment servable within 30 s`);
  await sleep(200); // the spawn log line is written before the answer; let it arrive
  const runs = runsOf(server, id);
  return { channel: name, masterMs: round(masterMs), listedMs: round(listedMs), servableMs: round(servableMs), mode: runs.map((r) => r.mode).join(',') || 'unknown', ffmpegRuns: runs.length, loadavg };
}

/** The arguments of the server's ffmpeg for a channel (from its log), to run the same thing by hand. */
function serverArgs(server: Server, channelId: number): string[] {
  const line = server.logs.find((l) => l.msg === 'ffmpeg spawned' && l.label === `live:${channelId}`);
  if (!line?.args) throw new Error(`no ffmpeg spawn logged for channel ${channelId}`);
  return line.args;
}

/** `template` with another input URL and output dir; without -analyzeduration when `defaultProbe`. */
function plainArgs(template: string[], url: string, out: string, defaultProbe: boolean): string[] {
  const args = [...template];
  args[args.indexOf('-i') + 1] = url;
  args[args.length - 1] = path.join(out, path.basename(template[template.length - 1]!));
  if (defaultProbe) {
    const i = args.indexOf('-analyzeduration');
    if (i >= 0) args.splice(i, 2);
  }
  return args;
}

/** Plain ffmpeg: spawn to its first video segment renamed into place (ffmpeg writes `<name>.tmp` first). */
async function tunePlain(upstream: Upstream, template: string[], urlPath: string, dir: string, defaultProbe = false): Promise<PlainRun> {
  const out = await mkdtemp(path.join(dir, 'plain-'));
  const args = plainArgs(template, upstream.base + urlPath, out, defaultProbe);
  const loadavg = load1();
  const t0 = performance.now();
  const child = spawn(FFMPEG, args, { detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (s: string) => { if (stderr.length < 20_000) stderr += s; });
  let manifestMs: number | undefined;
  let firstSegmentMs = 0;
  try {
    while (performance.now() - t0 < 30_000) {
      const names = await readdir(out);
      if (manifestMs === undefined && names.includes('master.m3u8')) manifestMs = performance.now() - t0;
      if (names.some((n) => /^chunk-stream0-\d+\.(m4s|mp4)$/.test(n))) {
        firstSegmentMs = performance.now() - t0;
        break;
      }
      if (child.exitCode !== null) throw new Error(`plain ffmpeg exited: ${stderr.slice(-2000)}`);
      await sleep(10);
    }
  } finally {
    const exited = new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
    killGroup(child.pid, 'SIGKILL');
    await exited;
    await rm(out, { recursive: true, force: true });
  }
  if (!firstSegmentMs) throw new Error(`plain ffmpeg wrote no segment within 30 s: ${stderr.slice(-2000)}`);
  return { manifestMs: manifestMs === undefined ? undefined : round(manifestMs), firstSegmentMs: round(firstSegmentMs), loadavg };
}

async function waitUpstreamClosed(upstream: Upstream, urlPath: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (upstream.openConnections(urlPath) > 0) {
    if (Date.now() > deadline) throw new Error(`${urlPath}: upstream connection still open after ${timeoutMs} ms`);
    await sleep(100);
  }
}

// ---------------------------------------------------------------------------
// 3. Failover

interface FailoverRun { channel: string; tuneMs: number; failoverMs: number; targetMs: number; met: boolean; loadavg: number }

/**
 * Tunes the channel, then kills its playing upstream (`kill`) and times until the first segment
 * after a new EXT-X-DISCONTINUITY of the media playlist it was playing answers 200.
 */
async function failoverOnce(server: Server, name: string, kill: () => Promise<void>): Promise<FailoverRun> {
  const tuned = await tuneOurs(server, name);
  const id = server.channels.get(name)!;
  const masterUrl = `${server.base}/watch/live/${id}?api_key=${encodeURIComponent(server.token)}`;
  const [video] = mediaPlaylists((await get(masterUrl)).body.toString('utf8'), masterUrl);
  const discontinuities = (text: string) => text.split('\n').filter((l) => l.trim() === '#EXT-X-DISCONTINUITY').length;
  const before = discontinuities((await get(video!)).body.toString('utf8'));
  const loadavg = load1();
  const t0 = performance.now();
  await kill();
  while (performance.now() - t0 < 60_000) {
    const res = await get(video!);
    const text = res.body.toString('utf8');
    if (res.status === 200 && discontinuities(text) > before) {
      const lines = text.split('\n').map((l) => l.trim());
      const after = lines.slice(lines.lastIndexOf('#EXT-X-DISCONTINUITY')).find((l) => l && !l.startsWith('#'));
      if (after && (await get(absolute(video!, after))).status === 200) {
        const failoverMs = performance.now() - t0;
        const targetMs = tuned.servableMs + SEGMENT_SECONDS * 1000;
        return { channel: name, tuneMs: tuned.servableMs, failoverMs: round(failoverMs), targetMs, met: failoverMs <= targetMs, loadavg };
      }
    }
    await sleep(20);
  }
  throw new Error(`${name}: no segment of the next stream within 60 s`);
}

// ---------------------------------------------------------------------------
// 2. Viewers

interface ViewerStats {
  playlistRequests: number;
  segmentRequests: number;
  segments: number;
  bytes: number;
  gaps: number;
  missed: number;
  backwards: number;
  non200: Record<string, number>;
  errors: string[];
  playlistMs: number[];
  segmentMs: number[];
}

function newStats(): ViewerStats {
  return { playlistRequests: 0, segmentRequests: 0, segments: 0, bytes: 0, gaps: 0, missed: 0, backwards: 0, non200: {}, errors: [], playlistMs: [], segmentMs: [] };
}

/** One player: polls each media playlist every second, downloads every segment it has not seen yet. */
async function viewer(server: Server, channelId: number, stopAt: () => number, stats: ViewerStats): Promise<{ seen: number[][] }> {
  const masterUrl = `${server.base}/watch/live/${channelId}?api_key=${encodeURIComponent(server.token)}`;
  const bad = (what: string, status: number) => { const k = `${what} ${status}`; stats.non200[k] = (stats.non200[k] ?? 0) + 1; };
  const master = await get(masterUrl);
  if (master.status !== 200) { bad('master', master.status); return { seen: [] }; }
  const lists = mediaPlaylists(master.body.toString('utf8'), masterUrl);
  const seen: number[][] = lists.map(() => []);
  await Promise.all(lists.map(async (listUrl, li) => {
    let last: number | undefined;
    let init: string | undefined;
    let next = performance.now();
    while (performance.now() < stopAt()) {
      try {
        const res = await get(listUrl);
        stats.playlistRequests++;
        stats.playlistMs.push(res.ms);
        if (res.status !== 200) bad('playlist', res.status);
        else {
          const media = parseMedia(res.body.toString('utf8'), listUrl);
          // By path: the signed key in every URL changes each second (a player keys segments by sequence number).
          const initPath = media.init && new URL(media.init).pathname;
          if (media.init && initPath !== init) {
            const r = await get(media.init);
            stats.segmentRequests++;
            if (r.status !== 200) bad('init', r.status);
            else init = initPath;
          }
          const lastListed = media.sequence + media.segments.length - 1;
          if (last !== undefined && lastListed < last) stats.backwards++;
          let from = last === undefined ? Math.max(media.sequence, lastListed) : last + 1; // a player starts at the live edge
          if (last !== undefined && from < media.sequence) {
            stats.gaps++;
            stats.missed += media.sequence - from;
            from = media.sequence;
          }
          for (let seq = from; seq <= lastListed; seq++) {
            const r = await get(media.segments[seq - media.sequence]!);
            stats.segmentRequests++;
            stats.segmentMs.push(r.ms);
            if (r.status !== 200) { bad('segment', r.status); continue; }
            stats.segments++;
            stats.bytes += r.body.length;
            seen[li]!.push(seq);
            last = seq;
          }
          if (last === undefined && lastListed >= media.sequence) last = lastListed; // nothing listed yet → keep waiting
        }
      } catch (err) {
        if (stats.errors.length < 20) stats.errors.push((err as Error).message);
      }
      next += 1000;
      await sleep(Math.max(0, next - performance.now()));
    }
  }));
  return { seen };
}

async function viewers(server: Server, name: string, count: number, seconds: number) {
  const id = server.channels.get(name)!;
  const serverPid = server.child.pid!;
  const stats = newStats();
  let stopAt = Infinity;
  const started = performance.now();
  // The first viewer tunes; the others join over the next second.
  const first = viewer(server, id, () => stopAt, stats);
  const tuneDeadline = Date.now() + 30_000;
  while (!runsOf(server, id).length && Date.now() < tuneDeadline) await sleep(50);
  while (stats.segments === 0 && Date.now() < tuneDeadline) await sleep(50);
  const tunedMs = performance.now() - started;
  const all = [first];
  for (let i = 1; i < count; i++) {
    all.push(viewer(server, id, () => stopAt, stats));
    await sleep(1000 / count);
  }
  await sleep(4000); // every viewer in its steady state

  // The measurement window.
  const loadBefore = load1();
  const s0 = (await procStat(serverPid))!;
  const ff0 = await childrenNamed(serverPid, 'ffmpeg');
  const w0 = performance.now();
  const statsAtStart = { playlist: stats.playlistRequests, segment: stats.segmentRequests };
  const ffmpegCounts: number[] = [];
  const loads: number[] = [];
  while (performance.now() - w0 < seconds * 1000) {
    ffmpegCounts.push((await childrenNamed(serverPid, 'ffmpeg')).length);
    loads.push(load1());
    await sleep(1000);
  }
  const s1 = (await procStat(serverPid))!;
  const ff1 = await childrenNamed(serverPid, 'ffmpeg');
  const wallS = (performance.now() - w0) / 1000;
  const requests = { playlist: stats.playlistRequests - statsAtStart.playlist, segment: stats.segmentRequests - statsAtStart.segment };
  const loadAfter = load1();
  stopAt = performance.now();
  const results = await Promise.all(all);

  const serverCpuS = (s1.cpuTicks - s0.cpuTicks) / CLK_TCK;
  const ffmpegCpuS = ff1.reduce((a, f) => a + f.cpuTicks - (ff0.find((g) => g.pid === f.pid)?.cpuTicks ?? 0), 0) / CLK_TCK;
  const perViewer = results.map((r) => r.seen.map((s) => s.length));
  const runs = runsOf(server, id);
  const bench = process.cpuUsage();
  return {
    viewers: count,
    windowSeconds: round(wallS, 1),
    firstViewerSegmentMs: round(tunedMs),
    serverCpu: { seconds: round(serverCpuS, 2), percentOfOneCore: round((serverCpuS / wallS) * 100, 1), target: '<= 25 %' },
    ffmpegCpuPercentOfOneCore: round((ffmpegCpuS / wallS) * 100, 1),
    ffmpegProcesses: { min: Math.min(...ffmpegCounts), max: Math.max(...ffmpegCounts), spawnedForChannel: runs.length, mode: runs.map((r) => r.mode).join(',') },
    requestsPerSecond: { playlist: round(requests.playlist / wallS, 1), segment: round(requests.segment / wallS, 1) },
    latencyMs: {
      playlist: { p50: round(pct(stats.playlistMs, 50), 1), p95: round(pct(stats.playlistMs, 95), 1), max: round(Math.max(0, ...stats.playlistMs), 1) },
      segment: { p50: round(pct(stats.segmentMs, 50), 1), p95: round(pct(stats.segmentMs, 95), 1), max: round(Math.max(0, ...stats.segmentMs), 1) },
    },
    segments: {
      downloaded: stats.segments, mb: round(stats.bytes / 2 ** 20, 1),
      perViewerPerPlaylist: { min: Math.min(...perViewer.flat()), max: Math.max(...perViewer.flat()) },
      gaps: stats.gaps, missed: stats.missed, sequenceWentBack: stats.backwards,
    },
    non200: stats.non200,
    errors: stats.errors,
    benchProcessCpuSeconds: round((bench.user + bench.system) / 1e6, 1),
    loadavg: { before: loadBefore, during: { min: Math.min(...loads), max: Math.max(...loads) }, after: loadAfter },
  };
}

// ---------------------------------------------------------------------------

export async function run(): Promise<Record<string, unknown>> {
  const runs = Number(process.env.LIVE_BENCH_RUNS ?? 5);
  const viewerCount = Number(process.env.LIVE_BENCH_VIEWERS ?? 50);
  const seconds = Number(process.env.LIVE_BENCH_SECONDS ?? 60);
  const only = new Set((process.env.LIVE_BENCH_ONLY ?? 'tune,viewers,failover').split(','));
  const failoverRuns = only.has('failover') ? Number(process.env.LIVE_BENCH_FAILOVER_RUNS ?? 3) : 0;
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-bench-live-'));
  const upstream = await startUpstream();
  // The failover channels' first streams, each on an upstream server of its own that the run closes.
  const doomed: Upstream[] = [];
  for (let i = 0; i < failoverRuns; i++) doomed.push(await startUpstream());
  let server: Server | undefined;
  const result: Record<string, unknown> = {};
  try {
    const entries = ['#EXTM3U'];
    const channel = (name: string, urlPath: string) => entries.push(`#EXTINF:-1 tvg-id="${name}",${name}`, upstream.base + urlPath);
    channel('warm', '/live/warm.ts');
    for (let i = 0; i < runs; i++) channel(`tune-${i}`, `/live/tune-${i}.ts`);
    channel('viewers', '/live/viewers.ts');
    const backups = ['#EXTM3U'];
    doomed.forEach((up, i) => {
      channel(`failover-${i}`, '');
      entries[entries.length - 1] = `${up.base}/live/failover-${i}.ts`;
      // The same tvg-id in the second playlist: the channel's second stream.
      backups.push(`#EXTINF:-1 tvg-id="failover-${i}",failover-${i} B`, `${upstream.base}/live/failover-${i}-b.ts`);
    });
    const playlist = path.join(dir, 'channels.m3u');
    await writeFile(playlist, entries.join('\n') + '\n');
    const backupList = path.join(dir, 'backups.m3u');
    await writeFile(backupList, backups.join('\n') + '\n');
    server = await startServer(dir, playlist, backupList);

    if (only.has('tune')) {
      // Warm-up (page cache, JIT), not counted; the server's ffmpeg arguments are what plain ffmpeg runs.
      const warm = await tuneOurs(server, 'warm');
      await waitUpstreamClosed(upstream, '/live/warm.ts');
      const template = serverArgs(server, server.channels.get('warm')!);
      const probeOption = template.includes('-analyzeduration');
      await tunePlain(upstream, template, '/live/warm-plain.ts', dir);
      await waitUpstreamClosed(upstream, '/live/warm-plain.ts');
      const ours: OursRun[] = [];
      const plain: PlainRun[] = [];
      const plainDefault: PlainRun[] = [];
      for (let i = 0; i < runs; i++) {
        const doOurs = async () => {
          ours.push(await tuneOurs(server!, `tune-${i}`));
          await waitUpstreamClosed(upstream, `/live/tune-${i}.ts`); // idle stop (5 s) drops the upstream
        };
        const doPlain = async () => {
          plain.push(await tunePlain(upstream, template, `/live/plain-${i}.ts`, dir));
          await waitUpstreamClosed(upstream, `/live/plain-${i}.ts`);
          if (probeOption) {
            plainDefault.push(await tunePlain(upstream, template, `/live/plain-default-${i}.ts`, dir, true));
            await waitUpstreamClosed(upstream, `/live/plain-default-${i}.ts`);
          }
        };
        if (i % 2) { await doOurs(); await doPlain(); } else { await doPlain(); await doOurs(); }
      }
      const oursMedian = median(ours.map((r) => r.servableMs));
      const plainMedian = median(plain.map((r) => r.firstSegmentMs));
      result.tune = {
        segmentSeconds: SEGMENT_SECONDS,
        serverFfmpegArgs: template.join(' '),
        ours: {
          medianMs: { masterAnswered: median(ours.map((r) => r.masterMs)), segmentListed: median(ours.map((r) => r.listedMs)), firstSegmentServable: oursMedian },
          runs: ours,
          warmUp: warm,
        },
        plainFfmpegSameArgs: {
          medianMs: { masterWritten: median(plain.filter((r) => r.manifestMs !== undefined).map((r) => r.manifestMs!)), firstSegmentFile: plainMedian },
          runs: plain,
        },
        ...(probeOption ? {
          plainFfmpegDefaultProbe: {
            medianMs: { firstSegmentFile: median(plainDefault.map((r) => r.firstSegmentMs)) },
            runs: plainDefault,
          },
        } : {}),
        ratio: round(oursMedian / plainMedian, 2),
        allCopyMode: ours.every((r) => r.mode === 'copy' && r.ffmpegRuns === 1),
        target: 'ratio <= 1.3 (about 2.5 s)',
      };
    }

    if (only.has('viewers')) result.viewers = await viewers(server, 'viewers', viewerCount, seconds);
    if (failoverRuns) {
      const runsDone: FailoverRun[] = [];
      for (let i = 0; i < failoverRuns; i++) runsDone.push(await failoverOnce(server, `failover-${i}`, () => doomed[i]!.close()));
      result.failover = {
        segmentSeconds: SEGMENT_SECONDS,
        medianMs: { failover: median(runsDone.map((r) => r.failoverMs)), tune: median(runsDone.map((r) => r.tuneMs)) },
        runs: runsDone,
        allMet: runsDone.every((r) => r.met),
        target: 'failover <= that run\'s tune time + one segment duration',
      };
    }
    const warnings = server.logs.filter((l) => (l.level ?? 0) >= 40).map((l) => `${l.msg}${l.label ? ` ${l.label}` : ''}`);
    result.serverWarnings = [...new Set(warnings)].slice(0, 10);
    return result;
  } finally {
    await server?.stop();
    await upstream.close();
    for (const up of doomed) await up.close();
    agent.destroy();
    await rm(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  run().then(
    (r) => console.log(JSON.stringify(r, null, 2)),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
