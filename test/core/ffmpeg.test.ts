import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { resolveBinaries } from '../../core/ffmpeg/resolve.js';
import { FfmpegSupervisor, findSetpriv } from '../../core/ffmpeg/supervisor.js';
import { createTestHost } from '../../sdk/testing.js';
import { makeRedactor, secretsInArgs } from '../../core/redact.js';
import type { ExitInfo, FfmpegProcess } from '../../sdk/services.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const NPM_FFMPEG: string = require('@ffmpeg-installer/ffmpeg').path;
// eslint-disable-next-line @typescript-eslint/no-require-imports
const NPM_FFPROBE: string = require('@ffprobe-installer/ffprobe').path;
import { REPO_ROOT } from '../helpers/repo.js';

/* ---------------------------------------------------------------- helpers */

function captureLogger() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString('utf8').split('\n')) if (l) lines.push(l);
      cb();
    },
  });
  const logger = pino({ level: 'debug' }, stream);
  return { logger, lines, records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

function tmpDir(t: { teardown(fn: () => void): void }, prefix: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}


function isGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH' || isZombie(pid);
  }
  return isZombie(pid);
}

function procStat(pid: number): { state: string; ppid: number; pgid: number } | undefined {
  try {
    const raw = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = raw.slice(raw.lastIndexOf(')') + 2).split(' ');
    return { state: rest[0]!, ppid: Number(rest[1]), pgid: Number(rest[2]) };
  } catch {
    return undefined;
  }
}

function isZombie(pid: number): boolean {
  return procStat(pid)?.state === 'Z';
}

/** Living (non-zombie) processes whose process group is `pgid`. */
function groupMembers(pgid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const st = procStat(Number(name));
    if (st && st.pgid === pgid && st.state !== 'Z') out.push(Number(name));
  }
  return out;
}

function childrenOf(pid: number): number[] {
  const r = spawnSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' });
  return r.stdout.split('\n').map((s) => s.trim()).filter(Boolean).map(Number)
    .filter((p) => !isZombie(p));
}

/** Resolves once a stderr line matches (ffmpeg is really encoding), rejects after 20 s. */
function waitForLine(register: (fn: (line: string) => void) => void, re: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no stderr line matching ${re}`)), 20_000);
    register((line) => {
      if (re.test(line)) { clearTimeout(timer); resolve(line); }
    });
  });
}

function longRunning(label: string, onLine?: (line: string) => void) {
  return {
    args: ['-re', '-f', 'lavfi', '-i', 'testsrc2=size=160x120:rate=25', '-t', '600', '-f', 'null', '-'],
    opts: { label, onStderrLine: onLine },
  };
}

function spawnLong(sup: FfmpegSupervisor, label: string, signal?: AbortSignal): { proc: FfmpegProcess; running: Promise<string> } {
  let listener: ((line: string) => void) | undefined;
  const running = waitForLine((fn) => { listener = fn; }, /frame=\s*\d+/);
  const { args } = longRunning(label);
  const proc = sup.spawn(args, { label, signal, onStderrLine: (l) => listener?.(l) });
  return { proc, running };
}

const paths = { ffmpegPath: NPM_FFMPEG, ffprobePath: NPM_FFPROBE, source: { ffmpeg: 'npm' as const, ffprobe: 'npm' as const } };

/* ---------------------------------------------------------------- resolve */

function thrown(fn: () => unknown): Error | undefined {
  try { fn(); } catch (err) { return err as Error; }
  return undefined;
}

t.test('resolveBinaries', async (t) => {
  const savedPath = process.env.PATH;
  t.teardown(() => { process.env.PATH = savedPath; });
  const dir = tmpDir(t, 'antenna-resolve-');
  const binDir = path.join(dir, 'bin');
  mkdirSync(binDir, { recursive: true });
  for (const name of ['ffmpeg', 'ffprobe']) {
    writeFileSync(path.join(binDir, name), '#!/bin/sh\necho fake\n');
    chmodSync(path.join(binDir, name), 0o755);
  }

  t.test('config path wins over PATH and npm', async (t) => {
    process.env.PATH = binDir;
    const r = resolveBinaries({ ffmpegPath: NPM_FFMPEG, ffprobePath: NPM_FFPROBE });
    t.equal(r.ffmpegPath, NPM_FFMPEG);
    t.equal(r.ffprobePath, NPM_FFPROBE);
    t.same(r.source, { ffmpeg: 'config', ffprobe: 'config' });
  });

  t.test('PATH is used when config is auto', async (t) => {
    process.env.PATH = `${path.join(dir, 'nothing-here')}${path.delimiter}${binDir}`;
    const r = resolveBinaries({ ffmpegPath: 'auto', ffprobePath: '' });
    t.equal(r.ffmpegPath, path.join(binDir, 'ffmpeg'));
    t.equal(r.ffprobePath, path.join(binDir, 'ffprobe'));
    t.same(r.source, { ffmpeg: 'path', ffprobe: 'path' });
  });

  t.test('a non-executable file on PATH is skipped', async (t) => {
    const plain = path.join(dir, 'plain');
    mkdirSync(plain, { recursive: true });
    writeFileSync(path.join(plain, 'ffmpeg'), 'not a program');
    chmodSync(path.join(plain, 'ffmpeg'), 0o644);
    process.env.PATH = plain;
    const r = resolveBinaries({ ffmpegPath: 'auto', ffprobePath: 'auto' });
    t.equal(r.source.ffmpeg, 'npm');
    t.equal(r.ffmpegPath, NPM_FFMPEG);
  });

  t.test('with PATH emptied the npm binaries are found', async (t) => {
    process.env.PATH = '';
    const r = resolveBinaries({ ffmpegPath: 'auto', ffprobePath: 'auto' });
    t.equal(r.ffmpegPath, NPM_FFMPEG);
    t.equal(r.ffprobePath, NPM_FFPROBE);
    t.same(r.source, { ffmpeg: 'npm', ffprobe: 'npm' });
    t.ok(statSync(r.ffmpegPath).isFile());
  });

  t.test('a bogus config path errors naming the key and value', async (t) => {
    process.env.PATH = binDir;
    const bogus = path.join(dir, 'no-such-ffmpeg');
    const e1 = thrown(() => resolveBinaries({ ffmpegPath: bogus, ffprobePath: 'auto' }));
    t.ok(e1, 'throws');
    t.match(e1?.message, 'ffmpegPath');
    t.match(e1?.message, bogus);
    const notExec = path.join(dir, 'not-exec');
    writeFileSync(notExec, 'x');
    chmodSync(notExec, 0o644);
    const e2 = thrown(() => resolveBinaries({ ffmpegPath: 'auto', ffprobePath: notExec }));
    t.ok(e2, 'throws');
    t.match(e2?.message, 'ffprobePath');
    t.match(e2?.message, notExec);
  });

  t.test('nothing anywhere: a clear error', async (t) => {
    t.throws(
      () => resolveBinaries({ ffmpegPath: 'auto', ffprobePath: 'auto' }, { env: { PATH: '' }, loadNpm: () => undefined }),
      /ffmpeg not found.*@ffmpeg-installer\/ffmpeg/s,
    );
  });
});

/* ---------------------------------------------------------------- redaction unit */

t.test('redaction helpers', async (t) => {
  const args = ['-i', 'http://bob:s3cr3t@example.com/live?api_key=AK123&channel=4&token=TK9', '-headers', 'Authorization: Bearer BEARERX\r\n'];
  const found = secretsInArgs(args);
  t.ok(found.includes('AK123'));
  t.ok(found.includes('TK9'));
  t.ok(found.includes('s3cr3t'));
  const redact = makeRedactor(['extra']);
  const out = args.map(redact).join(' ') + redact(' extra more');
  for (const s of ['AK123', 'TK9', 's3cr3t', 'bob:', 'BEARERX', 'extra']) t.notOk(out.includes(s), `${s} redacted`);
  t.match(out, /channel=4/, 'non-secret query values are kept');
});

/* ---------------------------------------------------------------- real ffmpeg */

t.test('real ffmpeg: run, probe, version, describe', async (t) => {
  const dir = tmpDir(t, 'antenna-ffmpeg-');
  const { logger, records } = captureLogger();
  const sup = new FfmpegSupervisor(logger, paths);
  t.teardown(() => sup.stopAll());
  const out = path.join(dir, 'out.mp4');

  await sup.run([
    '-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=25',
    '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100',
    '-t', '2', '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-y', out,
  ], { label: 'test:encode' });
  t.ok(existsSync(out) && statSync(out).size > 1000, 'output written');

  const spawnLog = records().find((r) => r.msg === 'ffmpeg spawned' && r.label === 'test:encode');
  t.ok(spawnLog, 'spawn logged');
  t.equal((spawnLog!.args as string[])[0], '-hide_banner', '-hide_banner prepended');
  t.ok((spawnLog!.args as string[]).includes('-nostdin'), '-nostdin prepended');
  t.ok(typeof spawnLog!.childPid === 'number', 'child pid logged');
  const exitLog = records().find((r) => r.msg === 'ffmpeg exited' && r.label === 'test:encode');
  t.ok(exitLog, 'exit logged');
  t.equal(exitLog!.code, 0);
  t.equal(exitLog!.expected, false);

  const probe = await sup.probe(out);
  const video = probe.streams.find((s) => s.codec_type === 'video');
  const audio = probe.streams.find((s) => s.codec_type === 'audio');
  t.equal(video?.codec_name, 'h264');
  t.equal(video?.width, 320);
  t.equal(video?.height, 240);
  t.equal(audio?.codec_name, 'aac');
  const duration = Number(probe.format.duration);
  t.ok(duration > 1.5 && duration < 2.5, `duration ~2 s (got ${probe.format.duration})`);

  await t.rejects(sup.probe(path.join(dir, 'missing.mp4')), /No such file or directory/);

  const version = await sup.version();
  t.match(version, /^ffmpeg version \S+/);
  t.equal(await sup.version(), version, 'cached');
  const desc = await sup.describe();
  t.match(desc, /^ffmpeg \S+ from npm package/);
  t.equal(sup.liveCount, 0, 'nothing left running');
});

t.test('run() of an invalid command rejects with the stderr tail', async (t) => {
  const { logger, records } = captureLogger();
  const sup = new FfmpegSupervisor(logger, paths);
  const err = await sup.run(['-f', 'lavfi', '-i', 'nosuchfilter_xyz', '-f', 'null', '-'], { label: 'bad' }).then(
    () => undefined,
    (e: Error) => e,
  );
  t.ok(err instanceof Error, 'rejected');
  t.match(err!.message, /exited with code [1-9]/);
  t.match(err!.message, /No such filter/i, 'message holds the stderr tail');
  const warn = records().find((r) => r.msg === 'ffmpeg exited unexpectedly' && r.label === 'bad');
  t.ok(warn, 'unexpected exit logged');
  t.match(String(warn!.stderrTail), /No such filter/i);
});

t.test('a missing binary fails cleanly', async (t) => {
  const { logger } = captureLogger();
  const sup = new FfmpegSupervisor(logger, { ffmpegPath: '/nonexistent/ffmpeg', ffprobePath: '/nonexistent/ffprobe' });
  await t.rejects(sup.run(['-version']), /could not be started.*ENOENT/s);
  await t.rejects(sup.probe('x'), /ENOENT/);
});

t.test('stop() kills ffmpeg and its whole process group', async (t) => {
  const dir = tmpDir(t, 'antenna-group-');
  // A wrapper that leaves a background child in the group, then becomes ffmpeg:
  // stop() must kill both (signalling only the pid would leave the sleep behind).
  const wrapper = path.join(dir, 'ffmpeg-wrapper');
  writeFileSync(wrapper, `#!/bin/sh\nsleep 300 &\nexec "${NPM_FFMPEG}" "$@"\n`);
  chmodSync(wrapper, 0o755);
  const { logger, records } = captureLogger();
  const sup = new FfmpegSupervisor(logger, { ffmpegPath: wrapper, ffprobePath: NPM_FFPROBE }, { stopGraceMs: 3000 });
  t.teardown(() => sup.stopAll());

  const { proc, running } = spawnLong(sup, 'test:group');
  await running;
  const pid = proc.pid;
  t.equal(procStat(pid)?.pgid, pid, 'ffmpeg leads its own process group');
  const members = groupMembers(pid);
  t.ok(members.length >= 2, `group has ffmpeg and the sleep child (${members.join(',')})`);
  const kids = childrenOf(pid);
  t.equal(kids.length, 1, 'ps sees the child of ffmpeg');
  t.same(sup.livePids(), [pid]);

  const info: ExitInfo = await proc.stop();
  t.equal(info.expected, true, 'expected exit');
  t.ok(isGone(pid), 'ffmpeg is gone');
  t.throws(() => process.kill(pid, 0), { code: 'ESRCH' }, 'kill(pid, 0) throws ESRCH');
  for (const k of kids) t.ok(isGone(k), `child ${k} is gone`);
  t.same(groupMembers(pid), [], 'no process left in the group');
  t.same(childrenOf(pid), [], 'no child left');
  t.equal(sup.liveCount, 0);
  t.same(await proc.exited, info, 'exited resolves with the same info');
  t.same(await proc.stop(), info, 'stop() again is harmless');
  const exitLog = records().find((r) => r.msg === 'ffmpeg exited' && r.label === 'test:group');
  t.equal(exitLog?.expected, true);
  t.equal(exitLog?.stderrTail, undefined, 'no stderr tail logged on an expected exit');
});

t.test('SIGKILL after the grace period when SIGTERM is ignored', async (t) => {
  const dir = tmpDir(t, 'antenna-stubborn-');
  const stubborn = path.join(dir, 'stubborn');
  writeFileSync(stubborn, `#!/bin/sh\ntrap '' TERM\necho started >&2\nwhile :; do sleep 0.05; done\n`);
  chmodSync(stubborn, 0o755);
  const { logger } = captureLogger();
  const sup = new FfmpegSupervisor(logger, { ffmpegPath: stubborn, ffprobePath: NPM_FFPROBE }, { stopGraceMs: 200 });
  t.teardown(() => sup.stopAll());
  let listener: ((l: string) => void) | undefined;
  const started = waitForLine((fn) => { listener = fn; }, /started/);
  const proc = sup.spawn([], { onStderrLine: (l) => listener?.(l) });
  await started;
  const info = await proc.stop();
  t.equal(info.signal, 'SIGKILL', 'killed by SIGKILL');
  t.equal(info.expected, true);
  t.ok(isGone(proc.pid));
  t.same(groupMembers(proc.pid), []);
});

t.test('secrets never appear in logs nor in the stderr tail', async (t) => {
  const { logger, lines } = captureLogger();
  const sup = new FfmpegSupervisor(logger, paths);
  const extra = 'extra-secret-value-42';
  const url = `http://alice:hunter2pass@127.0.0.1:9/${extra}/stream.ts?api_key=SEKRETKEY77&token=TOKEN88&x=1`;
  const seen: string[] = [];
  const err = await sup.run(['-rw_timeout', '2000000', '-i', url, '-f', 'null', '-'], {
    label: 'test:secret',
    secrets: [extra],
    onStderrLine: (l) => seen.push(l),
  }).then(() => undefined, (e: Error) => e);
  t.ok(err, 'run rejected');
  const fileErr = await sup.run(['-i', `/nonexistent/${extra}.mp4`, '-f', 'null', '-'], { label: 'test:secret2', secrets: [extra] })
    .then(() => undefined, (e: Error) => e);
  t.ok(fileErr, 'file run rejected');
  t.match(fileErr!.message, /\*\*\*\.mp4: No such file or directory/, 'the stderr tail is there, redacted');
  t.match(err!.message, /\*\*\*/, 'redaction marker present in the URL error');

  const everything = [...lines, err!.message, fileErr!.message, ...seen].join('\n');
  for (const secret of [extra, 'hunter2pass', 'alice:', 'SEKRETKEY77', 'TOKEN88']) {
    t.notOk(everything.includes(secret), `${secret} not leaked`);
  }
  const spawnLine = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((r) => r.label === 'test:secret' && r.msg === 'ffmpeg spawned');
  const loggedUrl = (spawnLine!.args as string[]).find((a) => a.includes('127.0.0.1'));
  t.equal(loggedUrl, 'http://***@127.0.0.1:9/***/stream.ts?api_key=***&token=***&x=1', 'args logged, redacted');
});

t.test('abort signal stops a process; run() rejects with an AbortError', async (t) => {
  const { logger } = captureLogger();
  const sup = new FfmpegSupervisor(logger, paths);
  t.teardown(() => sup.stopAll());

  const ac = new AbortController();
  const { proc, running } = spawnLong(sup, 'test:abort', ac.signal);
  await running;
  ac.abort();
  const info = await proc.exited;
  t.equal(info.expected, true);
  t.ok(isGone(proc.pid), 'process gone after abort');

  const ac2 = new AbortController();
  let listener: ((l: string) => void) | undefined;
  const started = waitForLine((fn) => { listener = fn; }, /frame=\s*\d+/);
  const runP = sup.run(longRunning('x').args, { label: 'test:abort-run', signal: ac2.signal, onStderrLine: (l) => listener?.(l) });
  await started;
  const pids = sup.livePids();
  t.equal(pids.length, 1);
  ac2.abort();
  await t.rejects(runP, { name: 'AbortError' });
  t.ok(isGone(pids[0]!), 'run() process gone after abort');

  const ac3 = new AbortController();
  ac3.abort();
  await t.rejects(sup.run(longRunning('y').args, { signal: ac3.signal }), { name: 'AbortError' }, 'already aborted');
  await t.rejects(sup.probe('whatever', { signal: ac3.signal }), { name: 'AbortError' });
  t.equal(sup.liveCount, 0);
});

t.test('probe timeout', async (t) => {
  const dir = tmpDir(t, 'antenna-probe-timeout-');
  const slow = path.join(dir, 'slow-ffprobe');
  writeFileSync(slow, '#!/bin/sh\nexec sleep 30\n');
  chmodSync(slow, 0o755);
  const { logger } = captureLogger();
  const sup = new FfmpegSupervisor(logger, { ffmpegPath: NPM_FFMPEG, ffprobePath: slow }, { stopGraceMs: 200 });
  await t.rejects(sup.probe('x', { timeoutMs: 100 }), /timed out after 100 ms/);
  t.equal(sup.liveCount, 0, 'the timed-out ffprobe was stopped');
});

t.test('stopAll() leaves no process', async (t) => {
  const { logger } = captureLogger();
  const sup = new FfmpegSupervisor(logger, paths);
  const procs = [spawnLong(sup, 'all:1'), spawnLong(sup, 'all:2'), spawnLong(sup, 'all:3')];
  await Promise.all(procs.map((p) => p.running));
  const pids = procs.map((p) => p.proc.pid);
  for (const pid of pids) t.notOk(isGone(pid), `${pid} running before stopAll`);
  t.equal(sup.liveCount, 3);
  await sup.stopAll();
  for (const pid of pids) {
    t.ok(isGone(pid), `${pid} gone`);
    t.same(groupMembers(pid), []);
  }
  t.equal(sup.liveCount, 0);
  for (const p of procs) t.equal((await p.proc.exited).expected, true);
});

t.test('the exit handler kills tracked ffmpeg groups when the server exits abruptly', async (t) => {
  const script = `
    const pino = require('pino');
    const { FfmpegSupervisor } = require(${JSON.stringify(path.join(__dirname, '../../core/ffmpeg/supervisor.js'))});
    const log = pino({ level: 'silent' });
    const before = process.listenerCount('exit');
    const sup = new FfmpegSupervisor(log, { ffmpegPath: ${JSON.stringify(NPM_FFMPEG)}, ffprobePath: ${JSON.stringify(NPM_FFPROBE)} });
    // A second instance must not install a second handler (nor break the first).
    new FfmpegSupervisor(log, { ffmpegPath: 'x', ffprobePath: 'y' });
    const added = process.listenerCount('exit') - before;
    const p = sup.spawn(['-re', '-f', 'lavfi', '-i', 'testsrc2=size=160x120:rate=25', '-t', '600', '-f', 'null', '-'], {
      onStderrLine: (l) => { if (/frame=/.test(l)) { console.log(p.pid + ' ' + added); process.exit(0); } },
    });
  `;
  const r = spawnSync(process.execPath, ['-e', script], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 30_000 });
  t.equal(r.status, 0, `child exited cleanly: ${r.stderr}`);
  const [pidStr, listeners] = r.stdout.trim().split(' ');
  const pid = Number(pidStr);
  t.ok(pid > 1, `got pid ${pid}`);
  t.equal(Number(listeners), 1, 'exactly one exit handler for two supervisors');
  // SIGKILL is delivered synchronously, but give the kernel a moment to tear it down.
  for (let i = 0; i < 50 && !isGone(pid); i++) await new Promise((res) => setTimeout(res, 20));
  const gone = isGone(pid);
  // Never signal pid 0 or 1: -0 is our own process group.
  if (!gone && pid > 1) { try { process.kill(-pid, 'SIGKILL'); } catch { /* already gone */ } }
  t.ok(gone, 'ffmpeg did not outlive the server');
});

/* ---------------------------------------------------------------- a server killed with SIGKILL */

/**
 * A server process (node) whose supervisor runs a long ffmpeg; prints the ffmpeg's pid once it
 * encodes, then waits to be killed.
 */
function startServerWithFfmpeg(options: string): { server: ReturnType<typeof spawn>; pid: Promise<number> } {
  const script = `
    const pino = require('pino');
    const { FfmpegSupervisor } = require(${JSON.stringify(path.join(__dirname, '../../core/ffmpeg/supervisor.js'))});
    const sup = new FfmpegSupervisor(pino({ level: 'silent' }), { ffmpegPath: ${JSON.stringify(NPM_FFMPEG)}, ffprobePath: ${JSON.stringify(NPM_FFPROBE)} }, ${options});
    let told = false;
    const p = sup.spawn(['-re', '-f', 'lavfi', '-i', 'testsrc2=size=160x120:rate=25', '-t', '600', '-f', 'null', '-'], {
      onStderrLine: (l) => { if (!told && /frame=/.test(l)) { told = true; setTimeout(() => console.log(String(p.pid)), 200); } },
    });
    setInterval(() => {}, 1000);
  `;
  const server = spawn(process.execPath, ['-e', script], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  const pid = new Promise<number>((resolve, reject) => {
    let out = '';
    server.stdout!.on('data', (c: Buffer) => { out += c; if (out.includes('\n')) resolve(Number(out.trim())); });
    server.once('exit', () => reject(new Error('the server exited before its ffmpeg ran')));
  });
  return { server, pid };
}

async function gone(pid: number, ms: number): Promise<number | undefined> {
  const start = Date.now();
  while (Date.now() - start < ms) {
    if (isGone(pid)) return Date.now() - start;
    await new Promise((r) => setTimeout(r, 20));
  }
  return undefined;
}

t.test('ffmpeg dies with a server killed by SIGKILL (parent-death signal)', async (t) => {
  if (!findSetpriv()) {
    t.plan(0, 'setpriv (util-linux) is not installed');
    return;
  }
  const { server, pid: pidP } = startServerWithFfmpeg('{}');
  t.teardown(() => { server.kill('SIGKILL'); });
  const pid = await pidP;
  t.notOk(isGone(pid), `ffmpeg ${pid} runs`);
  t.match(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0], /ffmpeg$/, 'setpriv became ffmpeg: the process is ffmpeg itself');
  server.kill('SIGKILL');
  const after = await gone(pid, 5000);
  if (after === undefined) killGroupOf(pid);
  t.ok(after !== undefined, `ffmpeg was gone ${after} ms after the server's SIGKILL`);
});

t.test('without a parent-death signal, the next start kills what a SIGKILLed server left', async (t) => {
  const dataDir = tmpDir(t, 'antenna-leftovers-');
  const runDir = path.join(dataDir, 'run');
  const { server, pid: pidP } = startServerWithFfmpeg(`{ parentDeathSignal: false, runDir: ${JSON.stringify(runDir)} }`);
  t.teardown(() => { server.kill('SIGKILL'); });
  const pid = await pidP;
  t.teardown(() => killGroupOf(pid));
  const lists = readdirSync(runDir);
  t.equal(lists.length, 1, `the server lists its running children (${lists.join(', ')})`);
  server.kill('SIGKILL');
  await new Promise((r) => setTimeout(r, 1000));
  t.notOk(isGone(pid), 'ffmpeg outlives the SIGKILLed server');

  // A server starting on the same data dir kills it.
  const { lines, logger } = captureLogger();
  const host = await createTestHost({ dataDir, logger });
  t.teardown(() => host.close());
  t.ok(await gone(pid, 5000) !== undefined, 'the leftover ffmpeg is gone once the next server started');
  t.strictSame(readdirSync(runDir), [], 'its list is removed');
  t.ok(lines.some((l) => /"event":"ffmpeg_leftovers","killed":1/.test(l)), 'the start logs what it killed');
});

function killGroupOf(pid: number): void {
  if (pid > 1) { try { process.kill(-pid, 'SIGKILL'); } catch { /* gone */ } }
}
