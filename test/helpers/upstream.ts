/**
 * A test IPTV upstream on 127.0.0.1 (node:http, random port):
 *
 *  - `/live/<name>.ts`: realtime MPEG-TS (testsrc2 640x360@25 + 440 Hz sine,
 *    H.264 + AAC). Every request spawns its own ffmpeg, whose stdout is the
 *    response; the ffmpeg's process group is killed when the client goes away.
 *    `connections(path)` counts requests per path, `openConnections(path)` the
 *    ones still open, `peakConnections(path)` the most open at once;
 *    `fail(path, 404)` makes a path answer with that status instead;
 *    `encode(path, args)` serves that path from other encoder arguments
 *    (`sourceArgs({ keyframes })` builds them).
 *  - `/hls/index.m3u8` (after `startHls()`): one ffmpeg writing a live HLS
 *    playlist of 1 s segments into a temp dir, served from there.
 *  - `close()` kills every ffmpeg it started (process groups), closes the server
 *    and removes the temp dir, and throws if any of them is still alive;
 *    `alivePids()` lists the processes that have not exited.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

// eslint-disable-next-line @typescript-eslint/no-require-imports
export const FFMPEG: string = require('@ffmpeg-installer/ffmpeg').path;

const SOURCE_ARGS = sourceArgs();

/**
 * The test source's encoder arguments: H.264 with keyframes every second, or at the given times
 * (seconds, e.g. an irregular pattern of long GOPs as many IPTV sources have); or HEVC (320x180,
 * keyframes every second), which browsers cannot play copied.
 */
export function sourceArgs(options: { keyframes?: number[]; hevc?: boolean } = {}): string[] {
  const gop = options.keyframes ? ['-g', '1000', '-sc_threshold', '0', '-force_key_frames', options.keyframes.join(',')] : ['-g', '25'];
  const video = options.hevc
    ? ['-c:v', 'libx265', '-preset', 'ultrafast', '-x265-params', 'keyint=25:min-keyint=25:scenecut=0:log-level=error', '-pix_fmt', 'yuv420p']
    : ['-c:v', 'libx264', '-preset', 'ultrafast', '-tune', 'zerolatency', '-pix_fmt', 'yuv420p', ...gop];
  return [
    '-re', '-f', 'lavfi', '-i', `testsrc2=size=${options.hevc ? '320x180' : '640x360'}:rate=25`,
    '-re', '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000',
    ...video,
    '-c:a', 'aac',
  ];
}

export interface Upstream {
  base: string;
  port: number;
  /** Requests received for a path (query ignored), failed ones included. */
  connections(urlPath: string): number;
  /** Requests for a path whose response is still open. */
  openConnections(urlPath: string): number;
  /** The most requests for a path open at the same time. */
  peakConnections(urlPath: string): number;
  /** Answer `status` for this path from now on (undefined: serve normally again). */
  fail(urlPath: string, status: number | undefined): void;
  /** Serve this /live/ path from these encoder arguments (see sourceArgs). */
  encode(urlPath: string, args: string[]): void;
  /** Starts the HLS upstream (once) and resolves when its playlist has two segments. */
  startHls(): Promise<void>;
  /** Pids of the ffmpeg processes this upstream started that have not exited. */
  alivePids(): number[];
  close(): Promise<void>;
}

interface Proc { child: ChildProcess; exited: Promise<void>; alive: boolean }

/** Signals a whole process group; never throws, never signals pid ≤ 1. */
export function killGroup(pid: number | undefined, signal: NodeJS.Signals = 'SIGKILL'): void {
  if (!pid || pid <= 1) return;
  try { process.kill(-pid, signal); } catch { /* gone */ }
}

/** Whether a pid still exists (signal 0). */
export function pidAlive(pid: number): boolean {
  if (!(pid > 1)) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export async function startUpstream(): Promise<Upstream> {
  const procs = new Set<Proc>();
  const total = new Map<string, number>();
  const open = new Map<string, number>();
  const peak = new Map<string, number>();
  const failures = new Map<string, number>();
  const encoders = new Map<string, string[]>();
  const hlsDir = await mkdtemp(path.join(os.tmpdir(), 'antenna-upstream-hls-'));
  let hls: Proc | undefined;
  let closed = false;

  const run = (args: string[], options: { stdout: 'pipe' | 'ignore'; cwd?: string }): Proc => {
    const child = spawn(FFMPEG, ['-hide_banner', '-nostdin', '-loglevel', 'error', ...args], {
      detached: true,
      stdio: ['ignore', options.stdout, 'ignore'],
      cwd: options.cwd,
    });
    const proc: Proc = { child, alive: child.pid !== undefined, exited: Promise.resolve() };
    proc.exited = new Promise<void>((resolve) => {
      const done = () => { proc.alive = false; procs.delete(proc); resolve(); };
      child.once('exit', done);
      child.once('error', done);
    });
    procs.add(proc);
    return proc;
  };

  const bump = (map: Map<string, number>, key: string, by: number) => {
    const n = (map.get(key) ?? 0) + by;
    map.set(key, n);
    return n;
  };

  const server = http.createServer((req, res) => {
    const urlPath = (req.url ?? '/').split('?')[0]!;
    bump(total, urlPath, 1);
    const status = failures.get(urlPath);
    if (status !== undefined) {
      res.writeHead(status, { 'content-type': 'text/plain' }).end(`status ${status}`);
      return;
    }
    if (/^\/live\/[\w.-]+\.ts$/.test(urlPath)) {
      if (closed) { res.writeHead(503).end(); return; }
      const now = bump(open, urlPath, 1);
      if (now > (peak.get(urlPath) ?? 0)) peak.set(urlPath, now);
      const proc = run([...(encoders.get(urlPath) ?? SOURCE_ARGS), '-f', 'mpegts', 'pipe:1'], { stdout: 'pipe' });
      let ended = false;
      const end = () => {
        if (ended) return;
        ended = true;
        bump(open, urlPath, -1);
        killGroup(proc.child.pid);
      };
      res.writeHead(200, { 'content-type': 'video/mp2t' });
      proc.child.stdout!.pipe(res);
      proc.child.stdout!.on('error', () => {});
      res.on('close', end);
      void proc.exited.then(() => { if (!res.writableEnded) res.end(); });
      return;
    }
    const hlsMatch = /^\/hls\/([\w-]+\.(m3u8|ts))$/.exec(urlPath);
    if (hlsMatch) {
      const file = path.join(hlsDir, hlsMatch[1]!);
      stat(file).then(
        (st) => {
          res.writeHead(200, {
            'content-type': hlsMatch[2] === 'm3u8' ? 'application/vnd.apple.mpegurl' : 'video/mp2t',
            'content-length': st.size,
            'cache-control': 'no-cache',
          });
          createReadStream(file).on('error', () => res.destroy()).pipe(res);
        },
        () => res.writeHead(404, { 'content-type': 'text/plain' }).end('no such file'),
      );
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  const startHls = async () => {
    if (!hls) {
      hls = run([
        ...SOURCE_ARGS,
        '-f', 'hls', '-hls_time', '1', '-hls_list_size', '6',
        '-hls_flags', 'delete_segments+omit_endlist',
        '-hls_segment_filename', 'seg-%05d.ts', 'index.m3u8',
      ], { stdout: 'ignore', cwd: hlsDir });
    }
    const deadline = Date.now() + 20_000;
    for (;;) {
      const text = await readFile(path.join(hlsDir, 'index.m3u8'), 'utf8').catch(() => '');
      if ((text.match(/^seg-\d+\.ts$/gm) ?? []).length >= 2) return;
      if (!hls.alive) throw new Error('the HLS upstream ffmpeg exited');
      if (Date.now() > deadline) throw new Error('the HLS upstream produced no playlist within 20 s');
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  return {
    base: `http://127.0.0.1:${port}`,
    port,
    connections: (p) => total.get(p) ?? 0,
    openConnections: (p) => open.get(p) ?? 0,
    peakConnections: (p) => peak.get(p) ?? 0,
    fail: (p, status) => { if (status === undefined) failures.delete(p); else failures.set(p, status); },
    encode: (p, args) => { encoders.set(p, args); },
    startHls,
    alivePids: () => [...procs].filter((p) => p.alive && p.child.pid).map((p) => p.child.pid!),
    async close() {
      if (closed) return;
      closed = true;
      const all = [...procs];
      for (const p of all) killGroup(p.child.pid, 'SIGKILL');
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await Promise.race([
        Promise.all(all.map((p) => p.exited)),
        new Promise((r) => setTimeout(r, 5000)),
      ]);
      await rm(hlsDir, { recursive: true, force: true });
      const orphans = all.map((p) => p.child.pid ?? 0).filter(pidAlive);
      if (orphans.length) throw new Error(`upstream ffmpeg still running after close(): ${orphans.join(', ')}`);
    },
  };
}
