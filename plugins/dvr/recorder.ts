/**
 * A recording runs as a job of the core job manager (`dvr:<id>`, kind
 * `recording`): it holds the channel's live session (the job viewers use: one
 * ffmpeg, one upstream connection, one tuner slot) and links each segment the
 * session announces into the recording's current part, until the window
 * (programme plus padding) is over.
 *
 * - A new run of the session (ffmpeg restarted, upstream dropped, codecs
 *   switched) or of the server starts a new part; the time between parts is a
 *   gap, noted on the recording. A part's media times go on after the
 *   previous part's (see mediaShift).
 * - An upstream that fails is retried until the stop time (the live session
 *   restarts with backoff; a hold that cannot be had is asked again).
 * - At shutdown the job stops and the row stays `recording`: the next start
 *   resumes it into a new part while its stop time is ahead.
 * - A full disk or an unwritable path fails it with the reason; what was
 *   recorded stays playable.
 */
import { copyFile, link, mkdir, readFile, stat, statfs, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Cluster, Job, JobContext, JobManager, LiveHold, LiveSegment, LiveTvAccess, Logger } from 'antenna/sdk';
import { segmentStart, shiftedSegment } from './media-times.js';
import type { Gap, Recording } from './model.js';
import { createPart, initFile, nextPartIndex, partDir, partEnd, partSeconds, readParts, recordedSeconds, segmentFile, type Part, type PartWriter, type RepInfo } from './parts.js';
import type { RecordingStore } from './store.js';

export interface RecorderOptions {
  prePaddingMs: number;
  postPaddingMs: number;
  /** How often the recording checks its window, its row and the disk while no segment comes. */
  pollMs: number;
  /** Below this much free space where recordings are written, a recording fails (disk full). */
  minFreeBytes: number;
}

/** A running recording, shared by its job and the routes (manifests, listings). */
export interface ActiveRecording {
  id: number;
  parts: Part[];
  /** The recording's window as last read (the guide may move its stop). */
  from: number;
  to: number;
  /** The last reason nothing was recorded (upstream failure), for the error if nothing ever is. */
  lastError?: string;
}

const PROGRESS_SAVE_MS = 30_000;
const ROW_CHECK_MS = 10_000;
const DISK_CHECK_MS = 10_000;
/** A part that begins this much after the previous one ended leaves a gap worth noting. */
const GAP_MIN_MS = 1000;
/** Tuning takes a few seconds: a first part beginning later than this after the start is a gap. */
const LEAD_SLACK_MS = 15_000;
/** The last segment ends up to a segment before the window does: later than this is a gap. */
const TRAIL_SLACK_MS = 10_000;
const HOLD_RETRY_MS = { initial: 1000, max: 15_000 };
/** How long after the window's end the media up to it is waited for. */
const TAIL_WAIT_MS = 30_000;
/** Errors that mean the recording's folder cannot take more data. */
const DISK_ERRORS = new Set(['ENOSPC', 'EDQUOT', 'EROFS', 'EACCES', 'EPERM', 'ENOTDIR', 'EISDIR', 'EFBIG']);

class DiskError extends Error {}

function diskError(err: unknown, what: string): Error {
  const e = err as NodeJS.ErrnoException;
  if (e instanceof DiskError) return e;
  if (e?.code && DISK_ERRORS.has(e.code)) {
    const reason = e.code === 'ENOSPC' || e.code === 'EDQUOT' ? 'disk full' : 'cannot write';
    return new DiskError(`${reason}: ${what} (${e.code})`);
  }
  return e instanceof Error ? e : new Error(String(e));
}

/** Gaps of a recording: between parts, and before the first / after the last when they are late or early. */
export function gapsOf(parts: readonly Part[], from: number, to: number, complete: boolean): Gap[] {
  const gaps: Gap[] = [];
  if (!parts.length) return gaps;
  if (parts[0].startedAt - from > LEAD_SLACK_MS) gaps.push({ start: from, stop: parts[0].startedAt });
  for (let i = 1; i < parts.length; i++) {
    const end = parts[i - 1].startedAt + partSeconds(parts[i - 1]) * 1000;
    if (parts[i].startedAt - end > GAP_MIN_MS) gaps.push({ start: Math.round(end), stop: parts[i].startedAt });
  }
  const last = parts[parts.length - 1];
  const lastEnd = Math.round(last.startedAt + partSeconds(last) * 1000);
  if (complete && to - lastEnd > TRAIL_SLACK_MS) gaps.push({ start: lastEnd, stop: to });
  return gaps;
}

/** What one run of the live session has given the current part so far. */
interface RunState {
  run: number;
  /** Representations of the run. */
  reps: number;
  writer?: PartWriter;
  /** Segments placed in the part per representation (the next file index - 1). */
  placed: Map<string, number>;
  /** Representations that have announced a segment beginning after the window: the end is recorded. */
  pastEnd: Set<string>;
  /** Whole seconds the part's segments' times are moved on by (see mediaShift); none: linked as they are. */
  shift?: Shift;
}

interface Shift { tfdt: number; sidx: number }

export class Recorder {
  private readonly finishedListeners: ((id: number) => void)[] = [];

  constructor(
    private readonly jobs: JobManager,
    private readonly live: LiveTvAccess,
    private readonly store: RecordingStore,
    private readonly log: Logger,
    private readonly now: () => number,
    private readonly options: RecorderOptions,
    /** Cluster mode: a recording runs on the node holding its lease. */
    private readonly cluster?: Cluster,
  ) {}

  active(id: number): ActiveRecording | undefined {
    return this.jobs.get<ActiveRecording>(`dvr:${id}`)?.data;
  }

  /** The recording's window: the programme with its paddings (its own, in seconds, else the configured ones). */
  window(rec: Pick<Recording, 'start' | 'stop'> & Partial<Pick<Recording, 'prePadding' | 'postPadding'>>): { from: number; to: number } {
    const pre = rec.prePadding == null ? this.options.prePaddingMs : rec.prePadding * 1000;
    const post = rec.postPadding == null ? this.options.postPaddingMs : rec.postPadding * 1000;
    return { from: rec.start - pre, to: rec.stop + post };
  }

  /** Called when a recording has finished (completed or failed), after its row says so. */
  onFinished(listener: (id: number) => void): void {
    this.finishedListeners.push(listener);
  }

  /**
   * Starts the recording's job here unless another node records it (cluster mode: this node
   * must take the recording's lease; it gives it up when the job ends, and stops the job if
   * it loses it). Whether it runs here. The row must say `recording`.
   */
  async claim(rec: Recording): Promise<boolean> {
    if (this.active(rec.id)) return true;
    if (!this.cluster?.enabled) {
      this.start(rec);
      return true;
    }
    const lease = await this.cluster.take(`recording:${rec.id}`);
    if (!lease) return false;
    const job = this.start(rec);
    lease.lost.addEventListener('abort', () => void job.stop('lease lost'), { once: true });
    void job.done.then(() => lease.release()).catch((err) => this.log.warn({ recording: rec.id, error: (err as Error).message }, 'dvr: could not release a lease'));
    return true;
  }

  /** Starts (or finds) the recording's job on this node. The row must say `recording`. */
  start(rec: Recording): Job<ActiveRecording> {
    const { from, to } = this.window(rec);
    return this.jobs.ensure<ActiveRecording>(`dvr:${rec.id}`, () => ({
      kind: 'recording',
      data: { id: rec.id, parts: [], from: Math.max(from, rec.createdAt), to },
      run: (ctx) => this.run(ctx),
    }));
  }

  /** Stops a recording's job (cancel or shutdown); what the row says decides what it means. */
  async stop(id: number, reason: string): Promise<void> {
    await this.jobs.get(`dvr:${id}`)?.stop(reason);
  }

  private async run(ctx: JobContext<ActiveRecording>): Promise<void> {
    const state = ctx.data;
    const { signal } = ctx;
    let rec = await this.store.get(state.id);
    if (!rec || rec.status !== 'recording') return;
    try {
      try {
        await mkdir(rec.dir, { recursive: true, mode: 0o700 });
      } catch (err) {
        throw diskError(err, `${rec.dir}: ${(err as Error).message}`);
      }
      state.parts = await readParts(rec.dir);
      if (this.now() >= state.to) state.lastError ??= 'the server was not running during the programme';
      const nextIndex = { value: await nextPartIndex(rec.dir) };
      let retry = HOLD_RETRY_MS.initial;
      this.log.info({ recording: rec.id, channel: rec.channelId, resumed: state.parts.length > 0, until: new Date(state.to).toISOString() }, 'recording started');
      while (!signal.aborted) {
        rec = (await this.store.get(state.id)) ?? rec;
        if (rec.status !== 'recording') return await this.saveProgress(state); // cancelled
        state.to = this.window(rec).to;
        if (this.now() >= state.to) break;
        let hold: LiveHold;
        try {
          hold = await this.live.hold(rec.channelId, `recording ${rec.id}`);
        } catch (err) {
          state.lastError = (err as Error).message;
          this.log.warn({ recording: rec.id, channel: rec.channelId, error: state.lastError, retryMs: retry }, 'recording: channel unavailable; retrying');
          await sleep(Math.min(retry, Math.max(0, state.to - this.now())), signal);
          retry = Math.min(retry * 2, HOLD_RETRY_MS.max);
          continue;
        }
        retry = HOLD_RETRY_MS.initial;
        try {
          await this.follow(state, rec, hold, nextIndex, signal);
        } finally {
          hold.release();
        }
      }
      if (signal.aborted) {
        await this.saveProgress(state);
        return; // cancelled (the row says so) or shutdown (the row still says recording: resumed at start)
      }
      const done = state.parts.length > 0;
      await this.store.update(state.id, {
        ...this.progress(state, true),
        status: done ? 'completed' : 'failed',
        error: done ? null : `nothing was recorded: ${state.lastError ?? 'the channel sent no media'}`,
      });
      this.log.info({ recording: state.id, status: done ? 'completed' : 'failed', parts: state.parts.length, seconds: Math.round(recordedSeconds(state.parts)), error: done ? undefined : state.lastError }, 'recording finished');
      for (const listener of this.finishedListeners) listener(state.id);
    } catch (err) {
      if (signal.aborted && !(err instanceof DiskError)) {
        await this.saveProgress(state).catch(() => {});
        return;
      }
      const message = (err as Error).message;
      this.log.error({ recording: state.id, error: message }, 'recording failed');
      await this.store.update(state.id, { ...this.progress(state, true), status: 'failed', error: message });
    }
  }

  /** Size, length and gaps as the row should show them. */
  progress(state: ActiveRecording, complete = false): { sizeBytes: number; duration: number; gaps: Gap[] } {
    return {
      sizeBytes: state.parts.reduce((n, p) => n + p.bytes, 0),
      duration: recordedSeconds(state.parts),
      gaps: gapsOf(state.parts, state.from, state.to, complete),
    };
  }

  private async saveProgress(state: ActiveRecording): Promise<void> {
    const row = await this.store.get(state.id);
    if (row) await this.store.update(state.id, this.progress(state));
  }

  /** Takes the held session's segments until the window ends, the session ends or the job stops. */
  private async follow(state: ActiveRecording, rec: Recording, hold: LiveHold, nextIndex: { value: number }, signal: AbortSignal): Promise<void> {
    const queue: LiveSegment[] = [];
    let arrived: (() => void) | undefined;
    const stop = hold.onSegment((segment) => {
      queue.push(segment);
      arrived?.();
    });
    let run: RunState | undefined;
    let ended = false;
    void hold.ended.then(() => { ended = true; });
    let savedAt = this.now();
    let checkedAt = this.now();
    let diskAt = 0;
    try {
      for (;;) {
        const now = this.now();
        if (now - diskAt >= DISK_CHECK_MS) {
          diskAt = now;
          await this.checkSpace(rec.dir);
        }
        if (queue.length) run = await this.take(state, rec, queue.splice(0), run, nextIndex);
        if (signal.aborted || ended) return;
        // Past the window's end, the media up to it is waited for (a session behind real time
        // delivers it late), for TAIL_WAIT_MS at most.
        if (this.now() >= state.to && (!run?.writer || run.pastEnd.size >= run.reps || this.now() >= state.to + TAIL_WAIT_MS)) return;
        if (now - checkedAt >= ROW_CHECK_MS) {
          checkedAt = now;
          const row = await this.store.get(state.id);
          if (!row || row.status !== 'recording') return;
          state.to = this.window(row).to; // the guide moved its stop
        }
        if (now - savedAt >= PROGRESS_SAVE_MS) {
          savedAt = now;
          await this.store.update(state.id, this.progress(state));
        }
        if (!run?.writer) state.lastError = hold.lastError() ?? state.lastError;
        if (!queue.length) await Promise.race([new Promise<void>((r) => { arrived = r; }), sleep(this.options.pollMs, signal), hold.ended]);
        arrived = undefined;
      }
    } finally {
      stop();
      await run?.writer?.close();
    }
  }

  private async checkSpace(dir: string): Promise<void> {
    const fs = await statfs(dir).catch(() => undefined);
    if (!fs) return;
    const free = Number(fs.bavail) * Number(fs.bsize);
    if (free < this.options.minFreeBytes) throw new DiskError(`disk full: ${Math.round(free / 2 ** 20)} MiB left at ${dir}`);
  }

  /**
   * Places announced segments that fall in the window into the current part; a new run of
   * the session starts a new part. Segments of one number come together, every representation.
   */
  private async take(state: ActiveRecording, rec: Recording, batch: LiveSegment[], run: RunState | undefined, nextIndex: { value: number }): Promise<RunState | undefined> {
    for (const segment of batch) {
      const rep = segment.representation;
      if (!run || segment.run !== run.run) {
        await run?.writer?.close();
        const reps = new Set(batch.filter((s) => s.run === segment.run && s.sequence === segment.sequence).map((s) => s.representation.id));
        run = { run: segment.run, reps: reps.size, placed: new Map(), pastEnd: new Set() };
      }
      if (segment.wallClock + (segment.duration / rep.timescale) * 1000 <= state.from) continue; // before the window
      if (segment.wallClock >= state.to || run.pastEnd.has(rep.id)) { run.pastEnd.add(rep.id); continue; } // after it
      if (!run.writer) {
        const first = batch.filter((s) => s.run === segment.run && s.sequence === segment.sequence);
        run.shift = await this.mediaShift(state, rec, first);
        run.writer = await this.newPart(state, rec, first, nextIndex);
      }
      const index = (run.placed.get(rep.id) ?? 0) + 1;
      const target = path.join(partDir(rec.dir, run.writer.part.index), segmentFile(rep.id, index));
      try {
        const bytes = run.shift ? await placeShifted(segment.path, target, rep.timescale, run.shift) : await place(segment.path, target);
        if (bytes === undefined) continue; // the session removed it already
        await run.writer.add(rep.id, { index, t: segment.start + (run.shift?.tfdt ?? 0) * rep.timescale, d: segment.duration, bytes });
      } catch (err) {
        throw diskError(err, `${target}: ${(err as Error).message}`);
      }
      run.placed.set(rep.id, index);
    }
    return run;
  }

  /**
   * How far a new part's media times must move to go on after the previous part's: each run of
   * the live session starts its segments' times at 0 (and ffmpeg 4.1's `sidx` at the run's
   * wall-clock start, behind the previous part's when that session's had run ahead of the clock),
   * and players built on ffmpeg drop what goes back (see media-times.ts). Whole seconds, the
   * same for every representation; undefined when nothing needs to move.
   */
  private async mediaShift(state: ActiveRecording, rec: Recording, first: LiveSegment[]): Promise<Shift | undefined> {
    const previous = state.parts[state.parts.length - 1];
    if (!previous) return undefined;
    const end = await partEnd(rec.dir, previous);
    const files = await Promise.all(first.map((s) => readFile(s.path).catch(() => undefined)));
    if (files.some((f) => !f)) return undefined; // gone: the segments are passed over anyway
    const starts = first.map((s, i) => segmentStart(files[i]!, s.representation.timescale));
    const shift = { tfdt: secondsAfter(end.tfdt, starts.map((x) => x.tfdt)), sidx: secondsAfter(end.sidx, starts.map((x) => x.sidx)) };
    if (!shift.tfdt && !shift.sidx) return undefined;
    if (first.some((s, i) => !shiftedSegment(files[i]!, s.representation.timescale, shift))) {
      this.log.warn({ recording: rec.id, shift }, 'recording: the new part\'s media times cannot be moved after the previous part\'s (32-bit fields)');
      return undefined;
    }
    this.log.info({ recording: rec.id, shift }, 'recording: the new part\'s media times are moved after the previous part\'s');
    return shift;
  }

  /** A new part for a run of the session, beginning with these segments (one of each representation). */
  private async newPart(state: ActiveRecording, rec: Recording, first: LiveSegment[], nextIndex: { value: number }): Promise<PartWriter> {
    const index = nextIndex.value++;
    const reps: RepInfo[] = first.map(({ representation: r }) => ({
      id: r.id, contentType: r.kind, mimeType: `${r.kind}/mp4`, codecs: r.codecs, bandwidth: r.bandwidth, width: r.width, height: r.height,
      frameRate: r.frameRate, sampleRate: r.sampleRate, channels: r.channels, timescale: r.timescale,
    }));
    const startedAt = Math.round(Math.min(...first.map((s) => s.wallClock)));
    let writer: PartWriter;
    try {
      writer = await createPart(rec.dir, index, startedAt, reps, async (at) => {
        let bytes = 0;
        for (const s of first) bytes += (await place(s.initPath, path.join(at, initFile(s.representation.id)))) ?? 0;
        return bytes;
      }, Math.max(...first.map((s) => s.targetDuration)));
    } catch (err) {
      throw diskError(err, `${partDir(rec.dir, index)}: ${(err as Error).message}`);
    }
    state.parts.push(writer.part);
    if (state.parts.length > 1) this.log.info({ recording: rec.id, part: index }, 'recording continues in a new part');
    await this.store.update(state.id, this.progress(state));
    return writer;
  }
}

/**
 * Puts a live file into the recording: a hard link (no copy; the session's later removal
 * of its name leaves ours), else a copy (another filesystem). Returns its size, or
 * undefined when the file is gone already.
 */
async function place(source: string, target: string): Promise<number | undefined> {
  try {
    try {
      await link(source, target);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EXDEV' || code === 'EPERM' || code === 'EMLINK' || code === 'ENOTSUP') await copyFile(source, target);
      else throw err;
    }
    return (await stat(target)).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' && !(await exists(path.dirname(target)))) throw err;
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Whole seconds that move media beginning at `starts` (one per representation) to `end` or later; 0 when a time is unknown. */
function secondsAfter(end: number | undefined, starts: (number | undefined)[]): number {
  if (end === undefined || starts.some((x) => x === undefined)) return 0;
  return Math.max(0, Math.ceil(end - Math.min(...(starts as number[]))));
}

/** Writes a copy of a live segment with its times moved on (see Recorder.mediaShift); its size, or undefined when it is gone. */
async function placeShifted(source: string, target: string, timescale: number, shift: Shift): Promise<number | undefined> {
  const data = await readFile(source).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
  if (!data) return undefined;
  const shifted = shiftedSegment(data, timescale, shift) ?? data;
  await writeFile(target, shifted);
  return shifted.length;
}

async function exists(p: string): Promise<boolean> {
  return stat(p).then(() => true, () => false);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() { clearTimeout(timer); signal.removeEventListener('abort', done); resolve(); }
    signal.addEventListener('abort', done, { once: true });
  });
}
