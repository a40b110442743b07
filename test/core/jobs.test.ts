import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { FfmpegSupervisor } from '../../core/ffmpeg/supervisor.js';
import { JobManagerImpl } from '../../core/jobs/job-manager.js';
import type { FfmpegProcess, JobContext, JobSpec, SpawnOptions } from '../../sdk/services.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const NPM_FFMPEG: string = require('@ffmpeg-installer/ffmpeg').path;
// eslint-disable-next-line @typescript-eslint/no-require-imports
const NPM_FFPROBE: string = require('@ffprobe-installer/ffprobe').path;

/* ---------------------------------------------------------------- helpers */

function captureLogger() {
  const records: Record<string, unknown>[] = [];
  const waiters: { pred: (r: Record<string, unknown>) => boolean; resolve: (r: Record<string, unknown>) => void }[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString('utf8').split('\n')) {
        if (!l) continue;
        const r = JSON.parse(l) as Record<string, unknown>;
        records.push(r);
        for (const w of [...waiters]) if (w.pred(r)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(r); }
      }
      cb();
    },
  });
  const logger = pino({ level: 'debug' }, stream);
  /** Resolves with the first (past or future) record matching pred. */
  const waitFor = (pred: (r: Record<string, unknown>) => boolean) =>
    new Promise<Record<string, unknown>>((resolve) => {
      const past = records.find(pred);
      if (past) return resolve(past);
      waiters.push({ pred, resolve });
    });
  return { logger, records, waitFor };
}

/** Pids of living processes whose command line contains `marker`. */
function pidsWithMarker(marker: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue;
      const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
      if (cmd.some((a) => a.includes(marker))) out.push(Number(name));
    } catch { /* exited meanwhile */ }
  }
  return out;
}

const sleep = (ms: number) => new Promise<void>((res) => setTimeout(res, ms));

/** Waits until cond() holds (polling), failing after 20 s. */
async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (cond()) return;
    await sleep(20);
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** A run that waits for its signal (and resolves when aborted). */
function waitForAbort(ctx: JobContext<unknown>): Promise<void> {
  return new Promise<void>((resolve) => {
    if (ctx.signal.aborted) return resolve();
    ctx.signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

/** Races p against a 10 s timer: true when p settled first. */
async function settlesSoon(p: Promise<unknown>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const r = await Promise.race([p.then(() => true), new Promise<boolean>((res) => { timer = setTimeout(() => res(false), 10_000); })]);
  clearTimeout(timer);
  return r;
}

/* ---------------------------------------------------------------- tests */

t.test('20 concurrent ensure() calls start exactly one real ffmpeg', async (t) => {
  const { logger } = captureLogger();
  const sup = new FfmpegSupervisor(logger, { ffmpegPath: NPM_FFMPEG, ffprobePath: NPM_FFPROBE });
  const jobs = new JobManagerImpl(logger);
  t.teardown(async () => { await jobs.stopAll(); await sup.stopAll(); });

  const marker = `antenna-job-${randomUUID()}`;
  let specCalls = 0;
  let spawns = 0;
  const procs: FfmpegProcess[] = [];
  const spawnCounted = (args: string[], opts: SpawnOptions) => { spawns++; const p = sup.spawn(args, opts); procs.push(p); return p; };

  const spec = (): JobSpec<{ viewers: number }> => {
    specCalls++;
    return {
      kind: 'live',
      data: { viewers: 0 },
      async run(ctx) {
        const proc = spawnCounted(
          ['-re', '-f', 'lavfi', '-i', 'testsrc2=size=160x120:rate=25', '-t', '600', '-metadata', `comment=${marker}`, '-f', 'null', '-'],
          { label: ctx.key, signal: ctx.signal },
        );
        const info = await proc.exited;
        if (!info.expected) throw new Error(`ffmpeg exited: ${info.stderrTail}`);
      },
    };
  };

  const results = await Promise.all(Array.from({ length: 20 }, async (_, i) => {
    await sleep(i % 3); // interleave the callers over a few ticks
    const job = jobs.ensure('live:1', spec);
    job.data.viewers++;
    return job;
  }));

  t.equal(specCalls, 1, 'spec() called once');
  t.equal(spawns, 1, 'one spawn');
  t.ok(results.every((j) => j === results[0]), 'every caller got the same job');
  t.equal(results[0]!.data.viewers, 20, 'shared data');
  await until(() => pidsWithMarker(marker).length > 0, 'ffmpeg to start');
  await sleep(200); // would a second ffmpeg show up?
  const pids = pidsWithMarker(marker);
  t.same(pids, [procs[0]!.pid], 'exactly one ffmpeg process for the job, the one spawned');
  t.equal(results[0]!.state, 'running');
  t.equal(jobs.get('live:1'), results[0]);

  await results[0]!.stop('test over');
  t.equal(results[0]!.state, 'stopped');
  t.equal(await results[0]!.done, 'stopped');
  t.same(pidsWithMarker(marker), [], 'ffmpeg is gone once the job stopped');
  t.equal(jobs.get('live:1'), undefined, 'job left the live map');
  t.equal(sup.liveCount, 0);
});

t.test('ensure() after completion starts a new job', async (t) => {
  const { logger, records } = captureLogger();
  const jobs = new JobManagerImpl(logger);
  let specCalls = 0;
  const spec = (): JobSpec<{ n: number }> => {
    const n = ++specCalls;
    return { kind: 'import', data: { n }, async run(ctx) { ctx.progress(0.5, 'half'); await sleep(5); } };
  };
  const first = jobs.ensure('import:a', spec);
  t.equal(await first.done, 'completed');
  t.equal(first.state, 'completed');
  t.equal(first.progress, 1, 'completed jobs are at 100%');
  t.equal(jobs.get('import:a'), undefined, 'completed job left the live map');
  const second = jobs.ensure('import:a', spec);
  t.not(second, first, 'a fresh job');
  t.equal(specCalls, 2);
  t.equal(second.data.n, 2);
  t.equal(second.state, 'running');
  t.equal(await second.done, 'completed');
  const list = jobs.list().filter((j) => j.key === 'import:a');
  t.equal(list.length, 2, 'both kept in the recent list');
  t.ok(list.every((j) => j.state === 'completed'));
  t.ok(records.some((r) => r.msg === 'job started' && r.job === 'import:a'));
  t.ok(records.some((r) => r.msg === 'job completed' && r.job === 'import:a'));
});

t.test('a failing run restarts with backoff, then fails after maxRestarts', async (t) => {
  const { logger, records } = captureLogger();
  const jobs = new JobManagerImpl(logger);
  const attempts: number[] = [];
  const job = jobs.ensure('rec:1', () => ({
    kind: 'recording',
    data: {},
    restart: { maxRestarts: 4, initialDelayMs: 10, maxDelayMs: 25 },
    async run(ctx) {
      attempts.push(ctx.attempt);
      throw new Error(`boom ${ctx.attempt}`);
    },
  }));
  t.equal(await job.done, 'failed');
  t.equal(job.state, 'failed');
  t.equal(job.error, 'boom 4', 'error is the last failure message');
  t.same(attempts, [0, 1, 2, 3, 4], 'ran 1 + maxRestarts times');
  const restarts = records.filter((r) => r.msg === 'job run failed, restarting' && r.job === 'rec:1');
  t.same(restarts.map((r) => r.delayMs), [10, 20, 25, 25], 'delay doubles up to maxDelayMs');
  t.same(restarts.map((r) => r.error), ['boom 0', 'boom 1', 'boom 2', 'boom 3']);
  const failed = records.find((r) => r.msg === 'job failed' && r.job === 'rec:1');
  t.equal(failed?.error, 'boom 4');
  t.same(jobs.list().find((j) => j.key === 'rec:1'), { key: 'rec:1', kind: 'recording', state: 'failed', progress: 0, error: 'boom 4', startedAt: new Date(job.startedAt).toISOString() });

  // Without a restart policy a failure is final at once; a non-Error rejection is reported too.
  const once = jobs.ensure('once', () => ({ kind: 'x', data: {}, run: () => Promise.reject('plain string') }));
  t.equal(await once.done, 'failed');
  t.equal(once.error, 'plain string');
  // A run that throws synchronously is a failure, not a crash.
  const sync = jobs.ensure('sync', () => ({ kind: 'x', data: {}, run: () => { throw new Error('sync boom'); } }));
  t.equal(await sync.done, 'failed');
  t.equal(sync.error, 'sync boom');
});

t.test('a run that stayed up long enough resets the backoff', async (t) => {
  const { logger, records } = captureLogger();
  let now = 1_000_000;
  const jobs = new JobManagerImpl(logger, { now: () => now }, { stableRunMs: 30_000 });
  const attempts: number[] = [];
  const job = jobs.ensure('live:stable', () => ({
    kind: 'live',
    data: {},
    restart: { maxRestarts: 1, initialDelayMs: 10, maxDelayMs: 1000 },
    async run(ctx) {
      attempts.push(ctx.attempt);
      if (ctx.attempt === 1) now += 31_000; // this run "stayed up" 31 s
      throw new Error(`fail ${ctx.attempt}`);
    },
  }));
  t.equal(await job.done, 'failed');
  // Without the reset, maxRestarts 1 would allow only runs 0 and 1.
  t.same(attempts, [0, 1, 2], 'the stable run earned a new restart');
  t.equal(job.error, 'fail 2');
  const delays = records.filter((r) => r.msg === 'job run failed, restarting').map((r) => r.delayMs);
  t.same(delays, [10, 10], 'the delay started over');
});

t.test('idle timeout stops a job whose run honours the signal; touch() keeps it alive', async (t) => {
  const { logger, records } = captureLogger();
  const jobs = new JobManagerImpl(logger);
  let sawAbort = false;
  const spec = (): JobSpec<object> => ({
    kind: 'live',
    data: {},
    idleTimeoutMs: 300,
    async run(ctx) { await waitForAbort(ctx); sawAbort = ctx.signal.aborted; },
  });
  const job = jobs.ensure('live:idle', spec);
  for (let i = 0; i < 10; i++) {
    await sleep(30);
    if (i % 2) job.touch(); else t.equal(jobs.ensure('live:idle', spec), job, 'ensure returns the live job');
  }
  t.equal(job.state, 'running', 'kept alive by touch()/ensure()');
  t.equal(await job.done, 'stopped', 'stopped once idle');
  t.ok(sawAbort, 'run saw its signal aborted');
  t.ok(job.signal.aborted);
  const end = records.find((r) => r.msg === 'job stopped' && r.job === 'live:idle');
  t.equal(end?.reason, 'idle timeout');
  t.equal(jobs.get('live:idle'), undefined);
});

t.test('stop() during backoff ends the job at once', async (t) => {
  const { logger, waitFor } = captureLogger();
  const jobs = new JobManagerImpl(logger);
  let runs = 0;
  const job = jobs.ensure('live:backoff', () => ({
    kind: 'live',
    data: {},
    restart: { maxRestarts: Infinity, initialDelayMs: 60_000, maxDelayMs: 60_000 },
    async run() { runs++; throw new Error('source down'); },
  }));
  await waitFor((r) => r.msg === 'job run failed, restarting' && r.job === 'live:backoff');
  t.equal(job.state, 'running', 'still running while waiting to restart');
  const stopped = job.stop('user');
  t.ok(await settlesSoon(stopped), 'stop() did not wait for the 60 s backoff');
  t.equal(job.state, 'stopped');
  t.equal(runs, 1, 'no restart after stop');
  t.equal(job.error, undefined);
});

t.test('stopAll() stops every job, including a real ffmpeg one', async (t) => {
  const { logger } = captureLogger();
  const sup = new FfmpegSupervisor(logger, { ffmpegPath: NPM_FFMPEG, ffprobePath: NPM_FFPROBE });
  const jobs = new JobManagerImpl(logger);
  t.teardown(async () => { await jobs.stopAll(); await sup.stopAll(); });
  const marker = `antenna-stopall-${randomUUID()}`;
  const a = jobs.ensure('a', () => ({ kind: 'live', data: {}, run: waitForAbort }));
  const b = jobs.ensure('b', () => ({
    kind: 'live',
    data: {},
    restart: { maxRestarts: 3, initialDelayMs: 5, maxDelayMs: 5 },
    async run(ctx) {
      await sup.run(['-re', '-f', 'lavfi', '-i', 'testsrc2=size=160x120:rate=25', '-t', '600', '-metadata', `comment=${marker}`, '-f', 'null', '-'], { signal: ctx.signal, label: 'b' });
    },
  }));
  const c = jobs.ensure('c', () => ({ kind: 'transcode', data: {}, run: async (ctx) => { ctx.progress(0.25); await waitForAbort(ctx); throw new Error('aborted'); } }));
  await until(() => pidsWithMarker(marker).length === 1, 'ffmpeg of job b');
  t.same(jobs.list().map((j) => j.state), ['running', 'running', 'running']);

  await jobs.stopAll('shutdown');
  t.same([a.state, b.state, c.state], ['stopped', 'stopped', 'stopped'], 'stopped, even when run rejected on abort');
  t.equal(b.error, undefined, 'the abort is not a failure');
  t.same(pidsWithMarker(marker), [], 'no ffmpeg left');
  t.equal(sup.liveCount, 0);
  t.same([jobs.get('a'), jobs.get('b'), jobs.get('c')], [undefined, undefined, undefined]);
  t.same(jobs.list().map((j) => `${j.key}:${j.state}`).sort(), ['a:stopped', 'b:stopped', 'c:stopped']);
});

t.test('list() shows state and progress', async (t) => {
  let now = Date.parse('2030-01-02T03:04:05.000Z');
  const { logger, records } = captureLogger();
  const jobs = new JobManagerImpl(logger, { now: () => now });
  let report: ((f: number, m?: string) => void) | undefined;
  const job = jobs.ensure('scan:lib1', () => ({
    kind: 'scan',
    data: {},
    async run(ctx) { report = (f, m) => ctx.progress(f, m); await waitForAbort(ctx); },
  }));
  await until(() => report !== undefined, 'run to start');
  report!(0.5, 'halfway');
  t.same(jobs.list(), [{ key: 'scan:lib1', kind: 'scan', state: 'running', progress: 0.5, message: 'halfway', startedAt: '2030-01-02T03:04:05.000Z' }]);
  report!(0.75);
  t.equal(job.progress, 0.75);
  t.equal(job.message, 'halfway', 'message kept when none given');
  report!(7, 'overshoot');
  t.equal(job.progress, 1, 'clamped to 1');
  t.notOk(records.some((r) => typeof r.msg === 'string' && /progress/i.test(r.msg)), 'no log line per progress tick');
  now += 1000;
  await job.stop();
  report!(0.1, 'late');
  t.same(jobs.list(), [{ key: 'scan:lib1', kind: 'scan', state: 'stopped', progress: 1, message: 'overshoot', startedAt: '2030-01-02T03:04:05.000Z' }], 'progress after the end is ignored');
});

t.test('ensure() while the job is stopping starts a new job after the old one ended', async (t) => {
  const { logger } = captureLogger();
  const jobs = new JobManagerImpl(logger);
  const events: string[] = [];
  let n = 0;
  const spec = (): JobSpec<{ n: number }> => {
    const id = ++n;
    return {
      kind: 'live',
      data: { n: id },
      async run(ctx) {
        events.push(`start ${id}`);
        await waitForAbort(ctx);
        await sleep(50); // slow teardown
        events.push(`end ${id}`);
      },
    };
  };
  const first = jobs.ensure('k', spec);
  await until(() => events.length === 1, 'first run');
  const stopping = first.stop();
  t.equal(jobs.get('k'), undefined, 'a stopping job is not returned by get()');
  const second = jobs.ensure('k', spec);
  t.not(second, first);
  t.equal(second.data.n, 2);
  t.equal(jobs.ensure('k', spec), second, 'further callers get the new job');
  t.same(jobs.list().map((j) => j.state), ['running', 'running'], 'both listed while the first is stopping');
  await stopping;
  await until(() => events.length === 3, 'second run');
  t.same(events, ['start 1', 'end 1', 'start 2'], 'runs never overlap');
  await second.stop();
  t.equal(second.state, 'stopped');
});

t.test('the recent list is bounded', async (t) => {
  const { logger } = captureLogger();
  const jobs = new JobManagerImpl(logger, undefined, { recentLimit: 5 });
  for (let i = 0; i < 12; i++) await jobs.ensure(`j${i}`, () => ({ kind: 'x', data: {}, run: async () => {} })).done;
  t.same(jobs.list().map((j) => j.key), ['j11', 'j10', 'j9', 'j8', 'j7'], 'newest first, at most recentLimit');
});
