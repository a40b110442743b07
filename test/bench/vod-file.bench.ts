/**
 * VOD /file throughput: 32 keep-alive connections asking for random 1 MiB-
 * aligned 1 MiB ranges of one large file (a generated clip looped to ~512 MiB,
 * so the scan sees real media), against
 *   - raw: a minimal Node server (http + fs.createReadStream with its default
 *     64 KiB reads + pipeline), and
 *   - antenna: the real server (CLI `serve`, vod plugin, the library scanned),
 *     requests authenticated with the signed key play-info hands out, as
 *     players do.
 * Each server runs in its own child process, the load generator here. Within
 * each run (VOD_BENCH_RUNS, default 3; VOD_BENCH_SECONDS per server, default
 * 10) the two alternate in 2-second slices, after a warm-up each (JIT, page
 * cache). Target: antenna ≥ 90 % of raw req/s. Besides req/s and
 * MB/s, each figure has the server process's CPU time per request, which a
 * busy shared machine disturbs far less than throughput.
 *
 *   node dist/test/bench/run.js vod-file
 *   VOD_BENCH_RUNS=3 VOD_BENCH_SECONDS=10 VOD_BENCH_MIB=512 VOD_BENCH_CONNECTIONS=32 VOD_BENCH_RANGE_BYTES=1048576 VOD_BENCH_SLICE_SECONDS=2 node dist/test/bench/run.js vod-file
 *   VOD_BENCH_RANGE_BYTES=4096 (the fixed cost of a request rather than copying)
 *   VOD_BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" (profile the server), VOD_BENCH_DEBUG=1 (each slice on stderr)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { FFMPEG } from '../helpers/upstream.js';
import { load1, median, sleep } from './stats.js';
import { unusedPort } from '../helpers/env.js';

const REPO = path.resolve(__dirname, '../../..');
const CLI = path.join(REPO, 'dist/core/cli/main.js');
const PASSWORD = 'bench-password';
const MiB = 2 ** 20;

const round = (n: number, d = 0): number => Math.round(n * 10 ** d) / 10 ** d;


function ffmpeg(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(FFMPEG, ['-hide_banner', '-nostdin', '-loglevel', 'error', '-y', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (s: string) => { stderr += s; });
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`ffmpeg ${args.join(' ')}: ${stderr}`))));
  });
}

/** A real clip of about `mib` MiB: 10 s of lossless testsrc2 (large per second), looped by copying. */
async function bigClip(dir: string, mib: number): Promise<string> {
  const seed = path.join(dir, 'seed.mkv');
  await ffmpeg(['-f', 'lavfi', '-i', 'testsrc2=size=640x360:rate=25:duration=10', '-f', 'lavfi', '-i', 'sine=frequency=440:duration=10',
    '-c:v', 'libx264', '-preset', 'ultrafast', '-qp', '0', '-g', '50', '-c:a', 'aac', seed]);
  const loops = Math.max(0, Math.ceil((mib * MiB) / (await stat(seed)).size) - 1);
  const file = path.join(dir, 'media', 'Bench Clip (2024).mkv');
  await mkdir(path.dirname(file), { recursive: true });
  await ffmpeg(['-stream_loop', String(loops), '-i', seed, '-map', '0', '-c', 'copy', file]);
  await rm(seed);
  return file;
}

// ---------------------------------------------------------------------------
// The servers

/** The baseline: what a few lines of Node do (one range, no validators, no auth). */
const RAW_SERVER = `
const http = require('node:http');
const fs = require('node:fs');
const { pipeline } = require('node:stream');
const [file, port] = process.argv.slice(1);
const size = fs.statSync(file).size;
http.createServer((req, res) => {
  const m = /^bytes=(\\d+)-(\\d*)$/.exec(req.headers.range || '');
  const start = m ? Number(m[1]) : 0;
  const end = m && m[2] ? Math.min(Number(m[2]), size - 1) : size - 1;
  const headers = { 'content-type': 'video/x-matroska', 'accept-ranges': 'bytes', 'content-length': end - start + 1 };
  if (m) headers['content-range'] = 'bytes ' + start + '-' + end + '/' + size;
  res.writeHead(m ? 206 : 200, headers);
  pipeline(fs.createReadStream(file, { start, end }), res, () => {});
}).listen(Number(port), '127.0.0.1', () => console.log('ready'));
`;

interface Server { name: string; child: ChildProcess; base: string; path: string; stop(): Promise<void> }

function stopper(child: ChildProcess): () => Promise<void> {
  return async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await Promise.race([exited, sleep(10_000)]);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
}

async function waitFor(child: ChildProcess, url: string, stderr: () => string): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited (${child.exitCode}): ${stderr()}`);
    const status = await request(url).then((r) => r.status, () => 0);
    if (status === 200) return;
    if (Date.now() > deadline) throw new Error(`server did not answer within 120 s: ${stderr()}`);
    await sleep(100);
  }
}

function request(url: string, options: http.RequestOptions = {}, body?: string): Promise<{ status: number; body: Buffer; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { agent: false, ...options }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), headers: res.headers }));
      res.on('error', reject);
    });
    req.setTimeout(30_000, () => req.destroy(new Error('no answer within 30 s')));
    req.on('error', reject);
    req.end(body);
  });
}

async function startRaw(file: string): Promise<Server> {
  const port = await unusedPort();
  const child = spawn(process.execPath, ['-e', RAW_SERVER, file, String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (s: string) => { stderr += s; });
  const base = `http://127.0.0.1:${port}`;
  await waitFor(child, `${base}/`, () => stderr);
  return { name: 'raw', child, base, path: '/file', stop: stopper(child) };
}

async function startAntenna(dir: string, mediaDir: string): Promise<Server> {
  const port = await unusedPort();
  const config = path.join(dir, 'config.yaml');
  await writeFile(config, JSON.stringify({
    server: { host: '127.0.0.1', port, dataDir: path.join(dir, 'data') },
    logging: { level: 'warn' },
    plugins: { vod: { libraries: [{ name: 'Bench', type: 'movies', paths: [mediaDir] }], initialScan: 'await' } },
  }));
  // VOD_BENCH_NODE_ARGS: e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile the server.
  const nodeArgs = (process.env.VOD_BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, CLI, 'serve', '--config', config], {
    cwd: dir, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ANTENNA_ADMIN_PASSWORD: PASSWORD },
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (s: string) => { if (stderr.length < 8000) stderr += s; });
  const base = `http://127.0.0.1:${port}`;
  await waitFor(child, `${base}/api/version`, () => stderr);
  const login = await request(`${base}/login`, { method: 'POST', headers: { 'content-type': 'application/json' } }, JSON.stringify({ username: 'admin', password: PASSWORD }));
  if (login.status !== 200) throw new Error(`login: ${login.status} ${login.body}`);
  const auth = { authorization: `Bearer ${JSON.parse(login.body.toString()).auth.token}` };
  const lib = JSON.parse((await request(`${base}/libraries`, { headers: auth })).body.toString()).libraries[0];
  const item = JSON.parse((await request(`${base}/library/${lib.id}`, { headers: auth })).body.toString()).items[0];
  if (!item) throw new Error('the scan found no item');
  // The URL a player gets: /file with a signed key (Device-Containers mkv, so play-info says direct).
  const info = JSON.parse((await request(`${base}/watch/vod/${item.id}/play-info`, { headers: { ...auth, 'device-containers': 'mkv' } })).body.toString());
  if (info.method !== 'direct') throw new Error(`play-info: ${JSON.stringify(info)}`);
  return { name: 'antenna', child, base, path: info.url, stop: stopper(child) };
}

// ---------------------------------------------------------------------------
// Load

interface Figures {
  /** bad: responses other than 206 with 1 MiB. */
  reqPerSec: number; MBps: number; bad: number; p50ms: number; p99ms: number;
  /** The server process's own CPU time per request (user + system): steadier than req/s on a shared machine. */
  serverCpuMsPerReq: number;
  /** The load generator's, for comparison (it shares the two cores). */
  clientCpuMsPerReq: number;
  loadavg: number;
}

const CLK_TCK = 100;

/** utime + stime of a process, in ms. */
async function cpuMs(pid: number): Promise<number> {
  const text = await readFile(`/proc/${pid}/stat`, 'utf8');
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK;
}

/**
 * The load generator: `connections` keep-alive sockets, each asking for one
 * random 1 MiB-aligned MiB after another. Hand-made on net rather than
 * autocannon, whose JavaScript HTTP parser spends ~30 ms of CPU per 1 MiB
 * body (it, not the server, was the bottleneck); here each socket reads into
 * one reused 1 MiB buffer and only the headers are parsed.
 */
function ranges(server: Server, size: number, seconds: number, connections: number, rangeBytes: number): Promise<{ done: number; bytes: number; bad: number; elapsedMs: number; latencies: number[] }> {
  const u = new URL(server.base);
  const chunks = Math.floor(size / MiB);
  const stopAt = performance.now() + seconds * 1000;
  const t0 = performance.now();
  let done = 0;
  let bytes = 0;
  let bad = 0;
  const latencies: number[] = [];
  const one = () => new Promise<void>((resolve, reject) => {
    let pending: Buffer | null = null;
    let remaining = -1; // -1: reading headers
    let sentAt = 0;
    const send = () => {
      const start = Math.floor(Math.random() * chunks) * MiB;
      sentAt = performance.now();
      socket.write(`GET ${server.path} HTTP/1.1\r\nHost: ${u.host}\r\nRange: bytes=${start}-${start + rangeBytes - 1}\r\n\r\n`);
    };
    const finished = () => {
      done++;
      latencies.push(performance.now() - sentAt);
      if (performance.now() < stopAt) send();
      else socket.end(resolve);
    };
    const socket = net.connect({
      host: u.hostname, port: Number(u.port),
      onread: {
        buffer: Buffer.allocUnsafe(MiB),
        callback: (n: number, buf: Uint8Array) => {
          const b = buf as Buffer;
          let off = 0;
          while (off < n) {
            if (remaining < 0) {
              const head: Buffer = pending ? Buffer.concat([pending, b.subarray(0, Math.min(n, 16_384))]) : b.subarray(off, n);
              const end = head.indexOf('\r\n\r\n');
              if (end < 0) {
                pending = Buffer.from(head.subarray(0, Math.min(head.length, 16_384)));
                off = n;
                break;
              }
              const text = head.toString('latin1', 0, end);
              const used = end + 4 - (pending ? pending.length : 0);
              off = pending ? used : off + used;
              pending = null;
              const length = Number(/\r\ncontent-length: *(\d+)/i.exec(text)?.[1] ?? NaN);
              if (!text.startsWith('HTTP/1.1 206') || length !== rangeBytes) bad++;
              remaining = Number.isFinite(length) ? length : 0;
              if (remaining === 0) { remaining = -1; finished(); }
              continue;
            }
            const take = Math.min(remaining, n - off);
            remaining -= take;
            bytes += take;
            off += take;
            if (remaining === 0) { remaining = -1; finished(); }
          }
          return true;
        },
      },
    } as net.NetConnectOpts, send);
    socket.on('error', reject);
    socket.on('close', () => resolve()); // a server that drops the connection ends this socket's share
  });
  return Promise.all(Array.from({ length: connections }, one)).then(() => ({ done, bytes, bad, elapsedMs: performance.now() - t0, latencies }));
}

interface Totals { done: number; bytes: number; bad: number; elapsedMs: number; latencies: number[]; serverCpuMs: number; clientCpuMs: number; loads: number[] }

const emptyTotals = (): Totals => ({ done: 0, bytes: 0, bad: 0, elapsedMs: 0, latencies: [], serverCpuMs: 0, clientCpuMs: 0, loads: [] });

/** One slice of load on one server, added to its totals. */
async function slice(server: Server, totals: Totals, size: number, seconds: number, connections: number, rangeBytes: number): Promise<void> {
  totals.loads.push(load1());
  const cpuBefore = await cpuMs(server.child.pid!);
  const clientBefore = process.cpuUsage();
  const r = await ranges(server, size, seconds, connections, rangeBytes);
  const client = process.cpuUsage(clientBefore);
  totals.serverCpuMs += (await cpuMs(server.child.pid!)) - cpuBefore;
  totals.clientCpuMs += (client.user + client.system) / 1000;
  totals.done += r.done;
  totals.bytes += r.bytes;
  totals.bad += r.bad;
  totals.elapsedMs += r.elapsedMs;
  totals.latencies.push(...r.latencies);
  if (process.env.VOD_BENCH_DEBUG) process.stderr.write(`${server.name}: ${round((r.done * 1000) / r.elapsedMs)} req/s, load ${load1()}\n`);
}

function figures(t: Totals): Figures {
  const sorted = t.latencies.sort((a, b) => a - b);
  const at = (p: number) => round(sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0, 1);
  return {
    reqPerSec: round((t.done * 1000) / t.elapsedMs, 1),
    MBps: round(t.bytes / 1e3 / t.elapsedMs, 1),
    bad: t.bad, p50ms: at(0.5), p99ms: at(0.99),
    serverCpuMsPerReq: round(t.serverCpuMs / Math.max(1, t.done), 3),
    clientCpuMsPerReq: round(t.clientCpuMs / Math.max(1, t.done), 3),
    loadavg: round(t.loads.reduce((a, b) => a + b, 0) / Math.max(1, t.loads.length), 2),
  };
}

/** Both servers answer a range with the same bytes (else the comparison means nothing). */
async function sameBytes(servers: Server[], size: number): Promise<void> {
  const start = Math.floor(size / MiB / 2) * MiB;
  const bodies = await Promise.all(servers.map((s) => request(`${s.base}${s.path}`, { headers: { range: `bytes=${start}-${start + MiB - 1}` } })));
  for (const [i, r] of bodies.entries()) if (r.status !== 206 || r.body.length !== MiB) throw new Error(`${servers[i]!.name}: ${r.status}, ${r.body.length} bytes`);
  if (!bodies[0]!.body.equals(bodies[1]!.body)) throw new Error('the servers answer different bytes');
}

export async function run(): Promise<Record<string, unknown>> {
  const runs = Number(process.env.VOD_BENCH_RUNS ?? 3);
  const seconds = Number(process.env.VOD_BENCH_SECONDS ?? 10);
  const mib = Number(process.env.VOD_BENCH_MIB ?? 512);
  const connections = Number(process.env.VOD_BENCH_CONNECTIONS ?? 32);
  const rangeBytes = Number(process.env.VOD_BENCH_RANGE_BYTES ?? MiB);
  const sliceSeconds = Number(process.env.VOD_BENCH_SLICE_SECONDS ?? 2);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-bench-vod-'));
  const servers: Server[] = [];
  try {
    const file = await bigClip(dir, mib);
    const size = (await stat(file).then((s) => s.size));
    const raw = await startRaw(file);
    servers.push(raw);
    const antenna = await startAntenna(dir, path.dirname(file));
    servers.push(antenna);
    await sameBytes([raw, antenna], size);
    for (const s of servers) await slice(s, emptyTotals(), size, 2, connections, rangeBytes); // warm-up: JIT, page cache

    const out: { run: number; raw: Figures; antenna: Figures; ratio: number; cpuPerReqRatio: number }[] = [];
    for (let i = 0; i < runs; i++) {
      // Short slices, alternating (and which goes first alternates too), so both servers see the
      // same share of whatever else the machine is doing.
      const totals = { raw: emptyTotals(), antenna: emptyTotals() };
      const slices = Math.max(1, Math.round(seconds / sliceSeconds));
      for (let k = 0; k < slices; k++) {
        for (const s of (i + k) % 2 ? [antenna, raw] : [raw, antenna]) {
          await slice(s, totals[s.name as 'raw' | 'antenna'], size, sliceSeconds, connections, rangeBytes);
        }
      }
      const f = { raw: figures(totals.raw), antenna: figures(totals.antenna) };
      out.push({
        run: i + 1, raw: f.raw, antenna: f.antenna,
        ratio: round(f.antenna.reqPerSec / f.raw.reqPerSec, 3),
        cpuPerReqRatio: round(f.antenna.serverCpuMsPerReq / f.raw.serverCpuMsPerReq, 3),
      });
    }
    const ratios = out.map((r) => r.ratio);
    return {
      file: { MiB: round(size / MiB, 1), rangeBytes, connections, secondsPerServerAndRun: seconds, sliceSeconds },
      runs: out,
      medianRatio: median(ratios),
      medianCpuPerReqRatio: median(out.map((r) => r.cpuPerReqRatio)),
      target: 'antenna req/s ≥ 0.9 × raw',
      met: median(ratios) >= 0.9,
      loadavg: load1(),
    };
  } finally {
    for (const s of servers) await s.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
