/**
 * A recording runs as a job of the core job manager (`dvr:<id>`, kind
 * `recording`): it holds the channel's live session (the job viewers use: one
 * ffmpeg, one upstream connection, one tuner slot) and copies each finished
 * segment of the session into the recording's current part, until the window
 * (programme plus padding) is over.
 *
 * - A new run of the session (ffmpeg restarted, upstream dropped, codecs
 *   switched) or of the server starts a new part; the time between parts is a
 *   gap, noted on the recording.
 * - An upstream that fails is retried until the stop time (the live session
 *   restarts with backoff; a hold that cannot be had is asked again).
 * - At shutdown the job stops and the row stays `recording`: the next start
 *   resumes it into a new part while its stop time is ahead.
 * - A full disk or an unwritable path fails it with the reason; what was
 *   recorded stays playable.
 */
import { copyFile, link, mkdir, readFile, stat, statfs, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Job, JobContext, JobManager, LiveHold, LiveTvAccess, Logger } from 'antenna/sdk';
import { shiftMediaTimes } from './fmp4.js';
import { parseLiveMpd, templateFile, type LiveRep, type RepInfo } from './live-mpd.js';
import type { Gap, Recording } from './model.js';
import { createPart, initFile, nextPartIndex, partDir, partSeconds, readParts, recordedSeconds, segmentFile, type Part, type PartWriter } from './parts.js';
import type { RecordingStore } from './store.js';

export interface RecorderOptions {
  prePaddingMs: number;
  postPaddingMs: number;
  /** How often the live session's manifest is read for new segments. */
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

/** What one run of the live session has given so far. */
interface RunState {
  id: string;
  dir: string;
  /** The last live segment number taken (or passed over) per representation. */
  taken: Map<string, number>;
  /** Segments placed in the part per representation (the next file index - 1). */
  placed: Map<string, number>;
  /** Added to the run's media times (per representation, in its timescale) so the part continues the previous one. */
  shift: Map<string, number>;
  writer?: PartWriter;
  lastText?: string;
  /**
   * Per representation, the wall-clock time its media time stands for: taken when the run
   * is first seen (its newest segment has just been finished). Later segments are dated
   * from it, so a session that falls behind real time (an overloaded machine) is not
   * mistaken for a shorter one.
   */
  anchors: Map<string, { wall: number; t: number }>;
  /** Representations that have listed a segment beginning after the window: the end is recorded. */
  pastEnd: Set<string>;
  reps: number;
}

export class Recorder {
  constructor(
    private readonly jobs: JobManager,
    private readonly live: LiveTvAccess,
    private readonly store: RecordingStore,
    private readonly log: Logger,
    private readonly now: () => number,
    private readonly options: RecorderOptions,
  ) {}

  active(id: number): ActiveRecording | undefined {
    return this.jobs.get<ActiveRecording>(`dvr:${id}`)?.data;
  }

  /** The recording's window: the programme with its padding. */
  window(rec: Pick<Recording, 'start' | 'stop'>): { from: number; to: number } {
    return { from: rec.start - this.options.prePaddingMs, to: rec.stop + this.options.postPaddingMs };
  }

  /** Starts (or finds) the recording's job. The row must say `recording`. */
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

  /** Copies the held session's segments until the window ends, the session ends or the job stops. */
  private async follow(state: ActiveRecording, rec: Recording, hold: LiveHold, nextIndex: { value: number }, signal: AbortSignal): Promise<void> {
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
        const current = hold.current();
        if (run && current?.run !== run.id) {
          await this.harvest(state, rec, run, nextIndex); // what the old run finished last
          await run.writer?.close();
          run = undefined;
        }
        if (current && !run) run = { id: current.run, dir: current.dir, taken: new Map(), placed: new Map(), shift: new Map(), anchors: new Map(), pastEnd: new Set(), reps: 0 };
        if (run) await this.harvest(state, rec, run, nextIndex);
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
        await Promise.race([sleep(this.options.pollMs, signal), hold.ended]);
      }
    } finally {
      await run?.writer?.close();
    }
  }

  private async checkSpace(dir: string): Promise<void> {
    const fs = await statfs(dir).catch(() => undefined);
    if (!fs) return;
    const free = Number(fs.bavail) * Number(fs.bsize);
    if (free < this.options.minFreeBytes) throw new DiskError(`disk full: ${Math.round(free / 2 ** 20)} MiB left at ${dir}`);
  }

  /** Takes the run's newly listed segments that fall in the window into the current part. */
  private async harvest(state: ActiveRecording, rec: Recording, run: RunState, nextIndex: { value: number }): Promise<void> {
    const text = await readFile(path.join(run.dir, 'manifest.mpd'), 'utf8').catch(() => undefined);
    if (text === undefined || text === run.lastText) return;
    run.lastText = text;
    const reps = parseLiveMpd(text).filter((r) => r.contentType !== 'text' && r.segments.length);
    if (!reps.length) return;
    const now = this.now();
    run.reps = reps.length;
    const pending: { rep: LiveRep; number: number; t: number; d: number; startedAt: number }[] = [];
    for (const rep of reps) {
      let anchor = run.anchors.get(rep.id);
      if (!anchor) run.anchors.set(rep.id, (anchor = { wall: now, t: Math.max(...rep.segments.map((s) => s.t + s.d)) }));
      const wallOf = (t: number) => anchor!.wall + ((t - anchor!.t) / rep.timescale) * 1000;
      const taken = run.taken.get(rep.id) ?? 0;
      for (const s of rep.segments) {
        if (s.number <= taken) continue;
        const startedAt = wallOf(s.t);
        if (wallOf(s.t + s.d) <= state.from) { run.taken.set(rep.id, s.number); continue; } // before the window
        if (startedAt >= state.to) { run.pastEnd.add(rep.id); break; } // after it
        pending.push({ rep, number: s.number, t: s.t, d: s.d, startedAt });
      }
    }
    if (!pending.length) return;
    if (!run.writer) {
      const main = reps.find((r) => r.contentType === 'video') ?? reps[0];
      const startedAt = Math.round(Math.min(...pending.filter((p) => p.rep === main).map((p) => p.startedAt), ...pending.map((p) => p.startedAt)));
      const index = nextIndex.value++;
      const infos: RepInfo[] = reps.map(({ initialization: _i, media: _m, segments: _s, ...info }) => info);
      // The part's timeline continues where the previous part ended: one shift (in seconds) for
      // all its representations, which keeps their sync as the session had it.
      const previous = state.parts[state.parts.length - 1];
      if (previous) {
        const end = Math.max(...previous.reps.map((r) => { const l = previous.segments.get(r.id)?.at(-1); return l ? (l.t + l.d) / r.timescale : 0; }));
        const first = Math.min(...pending.map((p) => p.t / p.rep.timescale));
        for (const rep of reps) run.shift.set(rep.id, Math.round((end - first) * rep.timescale));
      }
      try {
        run.writer = await createPart(rec.dir, index, startedAt, infos, async (at) => {
          let bytes = 0;
          for (const rep of reps) bytes += (await place(path.join(run.dir, templateFile(rep.initialization, rep.id)), path.join(at, initFile(rep.id)), true)) ?? 0;
          return bytes;
        });
      } catch (err) {
        throw diskError(err, `${partDir(rec.dir, index)}: ${(err as Error).message}`);
      }
      state.parts.push(run.writer.part);
      if (state.parts.length > 1) this.log.info({ recording: rec.id, part: index }, 'recording continues in a new part');
      await this.store.update(state.id, this.progress(state));
    }
    for (const p of pending) {
      const index = (run.placed.get(p.rep.id) ?? 0) + 1;
      const target = path.join(partDir(rec.dir, run.writer.part.index), segmentFile(p.rep.id, index));
      const shift = run.shift.get(p.rep.id) ?? 0;
      let bytes: number | undefined;
      try {
        bytes = await place(path.join(run.dir, templateFile(p.rep.media, p.rep.id, p.number)), target, false, shift);
        if (bytes !== undefined) await run.writer.add(p.rep.id, { index, t: p.t + shift, d: p.d, bytes });
      } catch (err) {
        throw diskError(err, `${target}: ${(err as Error).message}`);
      }
      run.taken.set(p.rep.id, p.number);
      if (bytes !== undefined) run.placed.set(p.rep.id, index);
    }
  }
}

/**
 * Puts a finished live file into the recording: a hard link (no copy; the session's
 * later removal of its name leaves ours), else a copy (another filesystem, or media times
 * to shift: the session's file is never changed). Returns its size, or undefined when the
 * file is gone already (the session's window moved on).
 */
async function place(source: string, target: string, copy: boolean, shift = 0): Promise<number | undefined> {
  try {
    if (shift) {
      const data = shiftMediaTimes(await readFile(source), shift);
      await writeFile(target, data);
      return data.length;
    }
    if (copy) await copyFile(source, target);
    else {
      try {
        await link(source, target);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EXDEV' || code === 'EPERM' || code === 'EMLINK' || code === 'ENOTSUP') await copyFile(source, target);
        else throw err;
      }
    }
    return (await stat(target)).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' && !(await exists(path.dirname(target)))) throw err;
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
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
