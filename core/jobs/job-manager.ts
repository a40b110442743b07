/**
 * The core job manager: at most one live job per key, restart with backoff,
 * idle timeout, orderly stop.
 *
 * Semantics (see JobManager / Job in sdk/services.ts):
 * - ensure(key, spec) is synchronous: it returns the live job for `key` (and
 *   refreshes its idle timer) or calls spec() once and starts a new job, so
 *   concurrent callers can never start two jobs for one key.
 * - A job runs spec.run(ctx). Resolves → `completed`. Rejects (not aborted) →
 *   the restart policy: wait initialDelayMs, doubling up to maxDelayMs, start
 *   again, at most maxRestarts times in a row; then `failed` with `error`.
 *   Without a restart policy a rejection fails the job at once.
 * - Backoff reset: a run that stayed up for at least `stableRunMs` (default
 *   30 s) before failing counts as healthy: the consecutive-restart count and
 *   the delay start over (a live stream that drops once an hour restarts
 *   forever; one that dies at once fails after maxRestarts). `ctx.attempt`
 *   is NOT reset: it is the index of the run (0, 1, 2, …) over the job's life.
 * - stop(reason), the idle timeout (idleTimeoutMs without touch()/ensure())
 *   and stopAll() abort ctx.signal and wait for run to settle → `stopped`
 *   (even if run then resolves or rejects). A job waiting in backoff stops at
 *   once.
 * - `done` resolves with the final state and never rejects. An ended job
 *   leaves the live map at once (the next ensure() starts a fresh job) and is
 *   kept in a "recent" list (last 50) that list() shows after the live jobs.
 * - ensure() while the key's job is stopping (aborted, run not settled yet)
 *   returns a NEW job whose first run starts only after the old one ended, so
 *   two runs for one key never overlap. The stopping job is no longer
 *   returned by get()/ensure() but still appears in list() until it ends.
 * - get(key) returns only the live (not stopping) job.
 */
import type {
  Job,
  JobContext,
  JobManager,
  JobSpec,
  JobState,
  JobSummary,
  Logger,
  RestartPolicy,
} from '../../sdk/services.js';

export interface JobManagerOptions {
  /** How many ended jobs list() keeps. Default 50. */
  recentLimit?: number;
  /** A run that stayed up this long before failing resets the backoff. Default 30 000 ms. */
  stableRunMs?: number;
  /** Warn when a stopped job's run has not settled after this long. Default 10 000 ms. */
  slowStopWarnMs?: number;
}

const NO_RESTART: RestartPolicy = { maxRestarts: 0, initialDelayMs: 0, maxDelayMs: 0 };

function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  if (typeof err === 'string') return err;
  try { return JSON.stringify(err) ?? String(err); } catch { return String(err); }
}

function abortReason(reason: string): Error {
  const err = new Error(`job stopped: ${reason}`);
  err.name = 'AbortError';
  return err;
}

class JobImpl<D> implements Job<D> {
  readonly key: string;
  readonly kind: string;
  readonly data: D;
  readonly startedAt: number;
  readonly done: Promise<JobState>;

  private _state: JobState = 'running';
  private _progress = 0;
  private _message: string | undefined;
  private _error: string | undefined;
  private endedAt: number | undefined;
  private stopReason: string | undefined;
  private readonly controller = new AbortController();
  private idleTimer: NodeJS.Timeout | undefined;
  private wakeBackoff: (() => void) | undefined;
  private resolveDone!: (state: JobState) => void;
  private readonly log: Logger;

  constructor(
    key: string,
    private readonly spec: JobSpec<D>,
    logger: Logger,
    private readonly clock: { now(): number },
    private readonly options: Required<JobManagerOptions>,
    private readonly onEnd: (job: JobImpl<D>) => void,
  ) {
    this.key = key;
    this.kind = spec.kind;
    this.data = spec.data;
    this.startedAt = clock.now();
    this.log = logger.child({ job: key, kind: spec.kind });
    this.done = new Promise<JobState>((resolve) => { this.resolveDone = resolve; });
  }

  get state(): JobState { return this._state; }
  get progress(): number { return this._progress; }
  get message(): string | undefined { return this._message; }
  get error(): string | undefined { return this._error; }
  get signal(): AbortSignal { return this.controller.signal; }

  touch(): void {
    if (this.idleTimer) this.idleTimer.refresh();
  }

  async stop(reason = 'stopped'): Promise<void> {
    if (this._state === 'running' && !this.controller.signal.aborted) {
      this.stopReason = reason;
      this.clearIdle();
      this.controller.abort(abortReason(reason));
      this.wakeBackoff?.();
      const warn = setTimeout(() => {
        this.log.warn({ reason, waitedMs: this.options.slowStopWarnMs }, 'job run has not settled after stop; it must honour ctx.signal');
      }, this.options.slowStopWarnMs);
      warn.unref();
      void this.done.then(() => clearTimeout(warn));
    }
    await this.done;
  }

  summary(): JobSummary {
    const s: JobSummary = {
      key: this.key,
      kind: this.kind,
      state: this._state,
      progress: this._progress,
      startedAt: new Date(this.startedAt).toISOString(),
    };
    if (this._message !== undefined) s.message = this._message;
    if (this._error !== undefined) s.error = this._error;
    return s;
  }

  /** Starts the run loop; called once, after the job is in the live map. */
  start(after?: Promise<unknown>): void {
    const idleMs = this.spec.idleTimeoutMs;
    if (idleMs !== undefined && idleMs > 0 && Number.isFinite(idleMs)) {
      this.idleTimer = setTimeout(() => {
        this.log.info({ idleTimeoutMs: idleMs }, 'job idle, stopping');
        void this.stop('idle timeout');
      }, idleMs);
    }
    this.log.info({ waitingForPrevious: after !== undefined }, 'job started');
    void this.loop(after);
  }

  private setProgress(fraction: number, message?: string): void {
    if (this._state !== 'running') return;
    if (typeof fraction === 'number' && !Number.isNaN(fraction)) {
      this._progress = Math.min(1, Math.max(0, fraction));
    }
    if (message !== undefined) this._message = message;
  }

  private async loop(after?: Promise<unknown>): Promise<void> {
    const policy = this.spec.restart ?? NO_RESTART;
    const initial = Math.max(0, policy.initialDelayMs);
    const maxDelay = Math.max(initial, policy.maxDelayMs);
    let attempt = 0;
    let restarts = 0;
    let delay = initial;
    const signal = this.controller.signal;
    if (after) {
      await after;
      if (signal.aborted) return this.end('stopped');
    }

    for (;;) {
      const runStart = this.clock.now();
      const ctx: JobContext<D> = {
        key: this.key,
        signal,
        data: this.data,
        attempt,
        log: this.log,
        progress: (fraction, message) => this.setProgress(fraction, message),
      };
      try {
        await this.spec.run(ctx);
        if (signal.aborted) return this.end('stopped');
        this._progress = 1;
        return this.end('completed');
      } catch (err) {
        if (signal.aborted) return this.end('stopped');
        const message = errorMessage(err);
        const upMs = this.clock.now() - runStart;
        if (upMs >= this.options.stableRunMs) {
          restarts = 0;
          delay = initial;
        }
        if (!(restarts < policy.maxRestarts)) {
          this._error = message;
          return this.end('failed');
        }
        restarts += 1;
        attempt += 1;
        this.log.warn({ error: message, attempt, restarts, delayMs: delay, upMs }, 'job run failed, restarting');
        await this.sleep(delay);
        if (signal.aborted) return this.end('stopped');
        delay = Math.min(delay * 2, maxDelay);
      }
    }
  }

  /** Resolves after ms, or at once when the job is stopped. */
  private sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      if (this.controller.signal.aborted) return resolve();
      const timer = setTimeout(done, ms);
      function done() { clearTimeout(timer); resolve(); }
      this.wakeBackoff = () => { this.wakeBackoff = undefined; done(); };
    }).finally(() => { this.wakeBackoff = undefined; });
  }

  private clearIdle(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }

  private end(state: JobState): void {
    if (this._state !== 'running') return;
    this._state = state;
    this.endedAt = this.clock.now();
    this.clearIdle();
    const fields: Record<string, unknown> = { state, durationMs: this.endedAt - this.startedAt };
    if (state === 'stopped') fields.reason = this.stopReason;
    if (state === 'failed') {
      fields.error = this._error;
      this.log.error(fields, 'job failed');
    } else {
      this.log.info(fields, `job ${state}`);
    }
    try { this.onEnd(this); } finally { this.resolveDone(state); }
  }
}

export class JobManagerImpl implements JobManager {
  /** The current job of each key (possibly stopping). */
  private readonly live = new Map<string, JobImpl<unknown>>();
  /** Every job that has not ended yet, including stopping ones already replaced in `live`. */
  private readonly running = new Set<JobImpl<unknown>>();
  private recent: JobImpl<unknown>[] = [];
  private readonly options: Required<JobManagerOptions>;

  constructor(
    private readonly logger: Logger,
    private readonly clock: { now(): number } = { now: () => Date.now() },
    options: JobManagerOptions = {},
  ) {
    this.options = {
      recentLimit: options.recentLimit ?? 50,
      stableRunMs: options.stableRunMs ?? 30_000,
      slowStopWarnMs: options.slowStopWarnMs ?? 10_000,
    };
  }

  ensure<D>(key: string, spec: () => JobSpec<D>): Job<D> {
    const existing = this.live.get(key) as JobImpl<D> | undefined;
    if (existing && !existing.signal.aborted) {
      existing.touch();
      return existing;
    }
    const s = spec();
    const job: JobImpl<D> = new JobImpl<D>(key, s, this.logger, this.clock, this.options, (ended) => this.ended(ended as JobImpl<unknown>));
    this.live.set(key, job as JobImpl<unknown>);
    this.running.add(job as JobImpl<unknown>);
    // A job that is still stopping keeps its key busy: the new one runs once it has ended.
    job.start(existing?.done);
    return job;
  }

  get<D = unknown>(key: string): Job<D> | undefined {
    const job = this.live.get(key);
    return job && !job.signal.aborted ? (job as Job<D>) : undefined;
  }

  list(): JobSummary[] {
    return [...this.running, ...[...this.recent].reverse()].map((j) => j.summary());
  }

  async stopAll(reason = 'shutdown'): Promise<void> {
    await Promise.all([...this.running].map((j) => j.stop(reason)));
  }

  private ended(job: JobImpl<unknown>): void {
    if (this.live.get(job.key) === job) this.live.delete(job.key);
    this.running.delete(job);
    this.recent.push(job);
    if (this.recent.length > this.options.recentLimit) this.recent.splice(0, this.recent.length - this.options.recentLimit);
  }
}
