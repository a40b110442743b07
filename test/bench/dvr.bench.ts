/**
 * DVR figures: 20 recordings at once, remuxed (video copied), on 20 channels.
 *
 * The upstream serves a pre-encoded MPEG-TS clip (H.264 640x360@25, 1 s keyframes,
 * AAC) in real time and in a loop, copied (`ffmpeg -re -stream_loop -1 … -c copy`),
 * so the upstream costs next to nothing; the server runs as `antenna serve` in a
 * child process with a guide of 1-minute programmes and `dvr: { prePadding: 10s,
 * postPadding: 10s }`. The same programme is recorded on every channel.
 *
 * Figures: every recording's status, length and gaps (complete: `completed`, no
 * gap, its media on disk covering the whole programme, its VOD playlist at least
 * 60 s); the server's own
 * CPU time (/proc/<pid>/stat utime+stime of the node process; its ffmpeg children
 * are separate processes) over the recording window, as % of one core (target
 * ≤ 10 %); the ffmpeg children's CPU beside it; and the 1-minute load average.
 *
 *   node dist/test/bench/run.js dvr
 *   DVR_BENCH_RECORDINGS=20 node dist/test/bench/run.js dvr
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { unusedPort } from '../helpers/env.js';
import { FFMPEG, killGroup } from '../helpers/upstream.js';
import { m3u } from '../plugins/live-tv/fixtures.js';
import { ADMIN_PASSWORD, logTail, MINUTE, slotAt, slotGuide, startServer, waitListening } from '../plugins/dvr/fixtures.js';
import { partSeconds, readParts } from '../../plugins/dvr/parts.js';
import { load1, sleep } from './stats.js';

const RECORDINGS = Number(process.env.DVR_BENCH_RECORDINGS ?? 20);
const PAD_S = 10;
const CLK_TCK = 100;
const round = (n: number, d = 1): number => Math.round(n * 10 ** d) / 10 ** d;

async function procStat(pid: number): Promise<{ ppid: number; comm: string; cpuTicks: number } | undefined> {
  try {
    const text = await readFile(`/proc/${pid}/stat`, 'utf8');
    const close = text.lastIndexOf(')');
    const f = text.slice(close + 2).split(' ');
    return { ppid: Number(f[1]), comm: text.slice(text.indexOf('(') + 1, close), cpuTicks: Number(f[11]) + Number(f[12]) };
  } catch {
    return undefined;
  }
}

/** CPU ticks of each ffmpeg child of a process. */
async function ffmpegTicks(ppid: number): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const s = await procStat(Number(name));
    if (s && s.ppid === ppid && s.comm === 'ffmpeg') out.set(Number(name), s.cpuTicks);
  }
  return out;
}

/** An upstream serving one clip, in real time and in a loop, to any number of channels (copied: cheap). */
async function loopUpstream(clip: string): Promise<{ base: string; close(): Promise<void> }> {
  const procs = new Set<ChildProcess>();
  const server = http.createServer((req, res) => {
    const child = spawn(FFMPEG, ['-hide_banner', '-nostdin', '-loglevel', 'error', '-re', '-stream_loop', '-1', '-i', clip, '-c', 'copy', '-f', 'mpegts', 'pipe:1'], {
      detached: true, stdio: ['ignore', 'pipe', 'ignore'],
    });
    procs.add(child);
    child.once('exit', () => procs.delete(child));
    res.writeHead(200, { 'content-type': 'video/mp2t' });
    child.stdout!.pipe(res);
    res.once('close', () => killGroup(child.pid));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      for (const p of procs) killGroup(p.pid);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export async function run(): Promise<Record<string, unknown>> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-dvr-bench-'));
  const clip = path.join(dir, 'clip.ts');
  await new Promise<void>((resolve, reject) => {
    const p = spawn(FFMPEG, ['-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc2=size=640x360:rate=25', '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000',
      '-t', '20', '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-g', '25', '-c:a', 'aac', '-f', 'mpegts', clip], { stdio: 'ignore' });
    p.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`clip: ffmpeg exited ${code}`))));
  });
  const upstream = await loopUpstream(clip);
  const names = Array.from({ length: RECORDINGS }, (_, i) => `ch${i + 1}`);
  await writeFile(path.join(dir, 'tv.m3u'), m3u(names.map((n, i) => ({ name: n, tvgId: n, chno: String(i + 1), url: `${upstream.base}/live/${n}.ts` }))));
  const t0 = Date.now();
  await writeFile(path.join(dir, 'guide.xml'), slotGuide(names, t0, -5, 20));
  const port = await unusedPort();
  const base = `http://127.0.0.1:${port}`;
  await writeFile(path.join(dir, 'antenna.yaml'), [
    `server: { host: 127.0.0.1, port: ${port}, dataDir: ./data }`,
    'logging: { level: info }',
    'plugins:',
    '  live-tv: { initialImport: await, idleTimeout: 60s }',
    `  m3u-tuner: { sources: [ { name: Bench, url: ./tv.m3u, maxStreams: ${RECORDINGS} } ] }`,
    '  xmltv-guide: { sources: [ { url: ./guide.xml } ], maxAge: 100000d }',
    `  dvr: { path: ./recordings, prePadding: ${PAD_S}s, postPadding: ${PAD_S}s }`,
  ].join('\n') + '\n');
  const logFile = path.join(dir, 'server.log');
  const server = startServer(dir, path.join(dir, 'antenna.yaml'), logFile);
  try {
    await waitListening(base, server);
    const login = await fetch(`${base}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }) });
    const headers = { authorization: `Bearer ${((await login.json()) as any).auth.token}`, 'content-type': 'application/json' };
    const guide = (await (await fetch(`${base}/programs`, { headers })).json()) as any;
    // The first programme whose padded start is at least 10 s away: every recording starts together.
    let offset = 1;
    while (slotAt(Date.now(), offset) - PAD_S * 1000 < Date.now() + 10_000) offset++;
    const start = slotAt(Date.now(), offset);
    const ids: number[] = [];
    for (const c of guide.channels) {
      const p = c.programs.find((x: any) => Date.parse(x.start) === start);
      const res = await fetch(`${base}/recordings`, { method: 'POST', headers, body: JSON.stringify({ channel_id: c.id, program_id: p.id }) });
      if (res.status !== 201) throw new Error(`POST /recordings: ${res.status} ${await res.text()}`);
      ids.push(((await res.json()) as any).id);
    }
    const pid = server.proc.pid!;
    const from = start - PAD_S * 1000;
    const to = start + MINUTE + PAD_S * 1000;
    await sleep(Math.max(0, from - Date.now()));
    const cpu0 = (await procStat(pid))!.cpuTicks;
    const ff0 = await ffmpegTicks(pid);
    const wall0 = Date.now();
    const loadAtStart = load1();
    // Until every recording has finished (its window plus a poll or two).
    let recs: any[] = [];
    let ffEnd = new Map<number, number>();
    for (const deadline = to + 60_000; Date.now() < deadline; await sleep(1000)) {
      recs = ((await (await fetch(`${base}/recordings`, { headers })).json()) as any[]).filter((r) => ids.includes(r.id));
      if (Date.now() >= to - 2000 && ffEnd.size === 0) ffEnd = await ffmpegTicks(pid); // the sessions still run
      if (recs.every((r) => r.status !== 'scheduled' && r.status !== 'recording')) break;
    }
    const cpu1 = (await procStat(pid))!.cpuTicks;
    const wall = (Date.now() - wall0) / 1000;
    const loadAtEnd = load1();
    let ffTicks = 0;
    for (const [p, ticks] of ffEnd) ffTicks += ticks - (ff0.get(p) ?? 0);
    // Playable: each VOD playlist as long as the recording.
    const playlistSeconds: number[] = [];
    for (const id of ids) {
      const text = await (await fetch(`${base}/watch/recording/${id}/hls/video.m3u8`, { headers })).text();
      playlistSeconds.push(round([...text.matchAll(/#EXTINF:([\d.]+)/g)].reduce((n, m) => n + Number(m[1]), 0)));
    }
    // Complete: the media on disk covers the whole programme, in one part, and plays as long.
    const lead: number[] = [];
    const trail: number[] = [];
    for (const r of recs) {
      const parts = await readParts(path.join(dir, 'recordings', String(r.id)));
      const first = parts[0];
      const last = parts[parts.length - 1];
      lead.push(first ? (start - first.startedAt) / 1000 : -Infinity);
      trail.push(last ? (last.startedAt + partSeconds(last) * 1000 - (start + MINUTE)) / 1000 : -Infinity);
    }
    const complete = recs.filter((r, i) => r.status === 'completed' && r.gaps.length === 0 && lead[i]! >= 0 && trail[i]! >= 0 && playlistSeconds[i]! >= 60).length;
    const durations = recs.map((r) => r.duration);
    return {
      recordings: RECORDINGS,
      complete,
      statuses: [...new Set(recs.map((r) => r.status))],
      gaps: recs.reduce((n, r) => n + r.gaps.length, 0),
      seconds: { programme: 60, window: 60 + 2 * PAD_S, min: Math.min(...durations), max: Math.max(...durations) },
      playlistSecondsMin: Math.min(...playlistSeconds),
      /** How much before the programme's start the media began, and after its stop it ended (s; padding is 10). */
      coverage: { leadMin: round(Math.min(...lead)), trailMin: round(Math.min(...trail)) },
      megabytes: round(recs.reduce((n, r) => n + r.size_bytes, 0) / 2 ** 20),
      serverCpuPercentOfOneCore: round(((cpu1 - cpu0) / CLK_TCK / wall) * 100, 2),
      ffmpegCpuPercentOfOneCore: round((ffTicks / CLK_TCK / wall) * 100, 1),
      ffmpegProcesses: ffEnd.size,
      measuredSeconds: round(wall),
      loadavg1: { start: loadAtStart, end: loadAtEnd },
      target: { serverCpuPercentOfOneCore: 10, complete: RECORDINGS },
    };
  } catch (err) {
    (err as Error).message += `\nserver log:\n${logTail(logFile, 20)}`;
    throw err;
  } finally {
    server.proc.kill('SIGTERM');
    await Promise.race([server.exited, sleep(20_000)]);
    if (server.proc.exitCode === null) server.proc.kill('SIGKILL');
    await upstream.close();
    await rm(dir, { recursive: true, force: true });
  }
}
