/**
 * One transcode job's state: its files, the current ffmpeg run and the
 * requests waiting for segments.
 *
 * A run is one ffmpeg from a segment boundary to the end of the file. Its
 * stdout (one fragmented MP4 stream) is cut into per-track segment files along
 * the plan: a segment is written (to a temp name, then renamed) once it is
 * complete, i.e. its samples start at its boundary and reach the next one
 * (or the file's end, when ffmpeg ended cleanly), and it is never written
 * again: a run stopped on purpose, whose last fragment ffmpeg flushes half
 * made, cannot replace a whole segment with a part of one. A request for a
 * segment the run will reach soon waits; one far ahead of it, or behind its
 * start, restarts ffmpeg there. A run that reaches segments an earlier run
 * already wrote stops; one far ahead of what the player asks for is held back
 * (its output is left unread, so ffmpeg waits on the pipe without using CPU).
 *
 * A transcode holds a slot of the server's transcode budget while it has an
 * ffmpeg: taken when a run starts (a refusal is the request's 503), kept
 * across restarts, given back once the last ffmpeg has exited.
 */
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { errors, type FfmpegProcess, type FfmpegService, type Logger, type TranscodeSlot } from 'antenna/sdk';
import type { MediaFile } from '../model.js';
import { runArgs } from './ffmpeg-args.js';
import { BoxReader, buildFragment, splitFragment, splitInit, type InitInfo, type Sample, type TrackFragment, type TrackInfo } from './fmp4.js';
import { FILES } from './manifests.js';
import { nextKeyframe, segmentAt, segmentCount } from './segment-plan.js';
import { tokenOf, type Variant } from './variant.js';

export interface Plan {
  /** Segment boundaries in seconds, [0, …, duration]. */
  bounds: number[];
  /** Keyframe times, for copied video. */
  keyframes?: number[];
}

export interface Tracks { video?: TrackInfo; audio?: TrackInfo }

export interface SessionOptions {
  ffmpeg: FfmpegService;
  log: Logger;
  segmentSeconds: number;
  preset: string;
  /** How often a waiting request refreshes the job's idle timer. */
  keepAliveMs: number;
  /** A transcode budget slot for a run that encodes video; throws the 503 of a refusal. */
  admit: () => TranscodeSlot;
  /** Cluster mode: the job's place in the cluster-wide limits (given back by `release`); throws the 503 of a refusal. */
  reserve?: () => Promise<{ release(): Promise<void> }>;
}

interface Run {
  id: number;
  /** First segment this run makes. */
  start: number;
  /** The next segment it will complete. */
  position: number;
  proc?: FfmpegProcess;
  ended: boolean;
  outcome?: 'eof' | 'stopped' | 'failed';
  error?: string;
  produced: number;
  /** Asked to stop: whatever it still writes (a half fragment, flushed at SIGTERM) is not read. */
  stopping?: boolean;
}

/**
 * A segment being assembled: the video fragments that start in it, and the audio samples that start
 * in it (ffmpeg puts the last audio frames before a keyframe into the next fragment, and a restarted run
 * starts elsewhere: sample by sample, every run gives a segment the same frames). `start` and `end`
 * (seconds) are the reference track's (video, or audio without video).
 */
interface Pending { index: number; video: Buffer[]; audio: Sample[]; start?: number; end: number }

/** The segments a run has open (in order) and how far its audio has come (seconds). */
interface Assembly { open: Pending[]; audioEnd: number }

/** Requests wait for segments up to this long (then 503 with Retry-After; players retry). */
const SEGMENT_WAIT_MS = 60_000;
/** A request at most this many segments beyond a run's position waits for it instead of restarting ffmpeg. */
const AHEAD_SEGMENTS = 3;
/**
 * ffmpeg works at most this far (seconds of the title) beyond the last segment a player asked for:
 * further on, its output is left unread, the pipe fills and ffmpeg waits (no CPU) until the player
 * comes closer. Players buffer 30–60 s ahead (hls.js, dash.js for long titles).
 */
const RUN_AHEAD_SECONDS = 120;
/** Timestamps are rounded to the stream's time base: boundaries match within this (seconds). */
const TOLERANCE = 0.004;
/** Audio samples start exactly on their track's time base: a sample starting this close before a boundary is after it. */
const SAMPLE_TOLERANCE = 1e-6;
/** A segment's samples must reach its end boundary within this (a millisecond time base rounds every frame's duration). */
const END_TOLERANCE = 0.015;
/** After this many runs in a row failed without a segment, requests get 503 for a while instead of another start. */
const MAX_FAILURES = 3;
const FAILURE_COOLDOWN_MS = 10_000;

export class VodSession {
  tracks: Tracks | undefined;
  /** Segments written, both tracks. */
  readonly done = new Set<number>();
  run: Run | undefined;
  /** Set by the transcoder: refreshes the job's idle timer. */
  touch: () => void = () => {};
  /** Set by the transcoder: progress of the job (0..1) for the job list. */
  progress: (fraction: number) => void = () => {};
  private planValue: Plan | undefined;
  private runs = 0;
  private failures = 0;
  private lastFailureAt = 0;
  private closed = false;
  /** The segment a player asked for last (ffmpeg is held back when far beyond it). */
  private wanted = 0;
  private readonly live = new Set<FfmpegProcess>();
  /** Segments a run went past without making them whole: a restart for one begins a segment earlier. */
  private readonly missed = new Set<number>();
  /** The transcode budget slot, held while a run that encodes video is under way. */
  private slot: TranscodeSlot | undefined;
  /** Cluster mode: the place in the cluster-wide limits, from the first encoding run until the job ends. */
  private reservation: Promise<{ release(): Promise<void> }> | undefined;
  private readonly listeners = new Set<() => void>();
  private dirReady: Promise<unknown> | undefined;
  /** Aborted when the job ends: stops ffmpeg. */
  private readonly stopped = new AbortController();
  private readonly plan: Promise<Plan>;

  constructor(
    readonly itemId: string,
    readonly file: MediaFile,
    readonly variant: Variant,
    readonly dir: string,
    plan: Promise<Plan>,
    private readonly options: SessionOptions,
  ) {
    // A plan that cannot be made (the keyframe scan failed) fails every request of the job with 503.
    this.plan = plan.then((p) => {
      this.planValue = p;
      return p;
    }, (err: Error) => {
      options.log.warn({ item: itemId, err: err.message }, 'vod transcode: no segment plan');
      throw errors.unavailable(`Cannot segment this file: ${this.withoutPath(err.message)}`, 30);
    });
    this.plan.catch(() => {});
  }

  /** The segment plan (rejects with 503 when the file cannot be segmented). */
  planReady(): Promise<Plan> {
    return this.plan;
  }

  /** Number of segments (Infinity until the plan is known). */
  get count(): number {
    return this.planValue ? segmentCount(this.planValue.bounds) : Number.POSITIVE_INFINITY;
  }

  /**
   * Cluster mode: takes the job's place in the cluster-wide limits before its first encoding
   * run (a run starts synchronously, so its callers wait for this first). Kept until the job
   * ends: a job between runs (a seek, the end reached) is still a viewer's transcode.
   */
  async reserve(): Promise<void> {
    if (this.variant.method !== 'transcode' || !this.options.reserve || this.closed) return;
    this.reservation ??= this.options.reserve().catch((err: Error) => {
      this.reservation = undefined;
      throw err;
    });
    await this.reservation;
  }

  /** Whether this job holds its place in the cluster-wide limits (cluster mode). */
  get reserved(): boolean {
    return this.reservation !== undefined;
  }

  /** Starts the first run at segment 0, unless one ran already. */
  ensureStarted(): void {
    if (!this.runs && !this.closed) this.startRun(0);
  }

  /** The tracks (codecs, sizes) once the first init segment exists; starts a run if none ever did. */
  async ready(abort?: AbortSignal): Promise<{ plan: Plan; tracks: Tracks }> {
    await this.reserve();
    const deadline = Date.now() + SEGMENT_WAIT_MS;
    let waitedOn: Run | undefined;
    for (;;) {
      this.check();
      if (this.tracks) return { plan: await this.plan, tracks: this.tracks };
      const run = this.run;
      if (waitedOn && run === waitedOn && run.ended) throw this.failure(run);
      if (!run || run.ended) {
        this.guardFailures();
        this.startRun(0);
      }
      waitedOn = this.run;
      await this.changed(deadline, abort);
    }
  }

  /** The path of a track's init segment. */
  async initFile(track: 'v' | 'a', abort?: AbortSignal): Promise<string> {
    const { tracks } = await this.ready(abort);
    if (!(track === 'v' ? tracks.video : tracks.audio)) throw errors.notFound(`This stream has no ${track === 'v' ? 'video' : 'audio'}`);
    return path.join(this.dir, FILES.init(track));
  }

  /** The path of segment k of a track, once written; restarts ffmpeg at k when the current run will not reach it soon. */
  async segmentFile(track: 'v' | 'a', k: number, abort?: AbortSignal): Promise<string> {
    const plan = await this.plan;
    if (k >= segmentCount(plan.bounds)) throw errors.notFound(`No segment ${k} (there are ${segmentCount(plan.bounds)})`);
    await this.reserve();
    const deadline = Date.now() + SEGMENT_WAIT_MS;
    if (this.wanted !== k) {
      this.wanted = k;
      this.notify();
    }
    let started = false;
    let waitedOn: Run | undefined;
    for (;;) {
      this.check();
      if (this.done.has(k)) {
        const { tracks } = await this.ready(abort);
        if (!(track === 'v' ? tracks.video : tracks.audio)) throw errors.notFound(`This stream has no ${track === 'v' ? 'video' : 'audio'}`);
        return path.join(this.dir, FILES.segment(track, k));
      }
      const run = this.run;
      const passed = run && k >= run.start && k < run.position;
      const reachable = run && !run.ended && !passed && k >= run.start && k <= run.position + AHEAD_SEGMENTS;
      if (!reachable) {
        // The run this request waited on failed: say so (the next request starts another).
        if (waitedOn && run === waitedOn && run.outcome === 'failed') throw this.failure(run);
        // This request already moved ffmpeg once and something moved it elsewhere since: let the player ask again.
        if (started) throw errors.unavailable('The transcoder moved on to another position; try again', 1);
        this.guardFailures();
        this.startRun(this.missed.has(k) ? Math.max(0, k - 1) : k);
        started = true;
      }
      waitedOn = this.run;
      await this.changed(deadline, abort);
    }
  }

  /** Stops ffmpeg and removes the files (the job ended). */
  async close(): Promise<void> {
    this.closed = true;
    this.stopped.abort();
    this.notify();
    await Promise.all([...this.live].map((p) => p.stop()));
    this.releaseSlot();
    // Given back at once; a release that fails (the database away) runs out with its lease time.
    await this.reservation?.then((r) => r.release(), () => {}).catch(() => {});
    // A run being launched may be creating the directory right now: remove it after that.
    await this.dirReady?.catch(() => {});
    await rm(this.dir, { recursive: true, force: true });
  }

  /* ------------------------------------------------------------ runs */

  private startRun(k: number): void {
    if (this.variant.method === 'transcode') this.slot ??= this.options.admit();
    const run: Run = { id: ++this.runs, start: k, position: k, ended: false, produced: 0 };
    this.run = run;
    this.notify();
    void this.launch(run).catch((err: Error) => {
      this.endRun(run, 'failed', err.message);
    });
  }

  private async launch(run: Run): Promise<void> {
    // The run this one replaces is told to stop; its output is no longer read (see consume), so it ends
    // at once (10–30 ms). Waiting for that keeps the job at one ffmpeg, as its budget slot counts.
    await Promise.all([...this.live].map((p) => p.stop()));
    if (this.run !== run || this.closed) return this.endRun(run, 'stopped');
    this.dirReady ??= mkdir(this.dir, { recursive: true, mode: 0o700 });
    await this.dirReady;
    // A run from the start needs no plan to begin: ffmpeg starts while the keyframes are still being read.
    const plan = run.start === 0 ? undefined : await this.plan;
    const start = plan ? plan.bounds[run.start]! : 0;
    if (this.run !== run || this.closed) return this.endRun(run, 'stopped');
    const { variant, itemId } = this;
    const proc = this.options.ffmpeg.spawn(runArgs({
      input: this.file.path, info: this.file.info!, variant, start, segmentSeconds: this.options.segmentSeconds, preset: this.options.preset,
      nextKeyframe: plan?.keyframes && nextKeyframe(plan.keyframes, start, TOLERANCE),
    }), { signal: this.stopped.signal, stdout: 'pipe', label: `vod:${itemId}` });
    run.proc = proc;
    this.live.add(proc);
    this.options.log.info({ event: 'transcode_start', item: itemId, variant: tokenOf(variant), method: variant.method, startSegment: run.start, startSeconds: start, pid: proc.pid }, 'vod transcode started');
    let consumeError: Error | undefined;
    let assembly: Assembly | undefined;
    try {
      assembly = await this.consume(run, proc.stdout!);
    } catch (err) {
      consumeError = err as Error;
      void proc.stop();
    }
    const exit = await proc.exited;
    this.live.delete(proc);
    if (this.run !== run || this.closed) return this.endRun(run, 'stopped');
    if (consumeError) return this.endRun(run, 'failed', consumeError.message);
    // Stopped on purpose: it caught up with segments an earlier run made.
    if (exit.expected) return this.endRun(run, 'stopped');
    if (exit.code !== 0) return this.endRun(run, 'failed', summarize(exit.stderrTail, exit.code, exit.signal));
    // The last segment ends where the file does: complete when ffmpeg ended cleanly (and so is the audio of any before it).
    for (const seg of assembly?.open ?? []) {
      if ((seg.index === this.count - 1 || this.videoReached(seg)) && this.starts(seg)) await this.write(run, seg);
    }
    this.endRun(run, 'eof');
  }

  private endRun(run: Run, outcome: NonNullable<Run['outcome']>, error?: string): void {
    if (run.ended) return;
    run.ended = true;
    run.outcome = outcome;
    run.error = error;
    // The job's last run is over (its ffmpeg has exited): the budget slot goes back.
    if (this.run === run) this.releaseSlot();
    if (outcome === 'failed') {
      this.failures = run.produced ? 1 : this.failures + 1;
      this.lastFailureAt = Date.now();
    }
    if (run.proc) {
      const fields = { event: 'transcode_stop', item: this.itemId, variant: tokenOf(this.variant), method: this.variant.method, startSegment: run.start, outcome, segments: run.produced, pid: run.proc.pid };
      if (outcome === 'failed') this.options.log.warn({ ...fields, error }, 'vod transcode failed');
      else this.options.log.info(fields, 'vod transcode stopped');
    }
    this.notify();
  }

  /** Reads a run's stdout into segments; returns the segments still open at the end. */
  private async consume(run: Run, stdout: Readable): Promise<Assembly | undefined> {
    const reader = new BoxReader();
    let ftyp: Buffer = Buffer.alloc(0);
    let init: InitInfo | undefined;
    let moof: Buffer | undefined;
    const assembly: Assembly = { open: [], audioEnd: 0 };
    const ahead = Math.ceil(RUN_AHEAD_SECONDS / this.options.segmentSeconds);
    for await (const chunk of stdout as AsyncIterable<Buffer>) {
      while (this.run === run && !this.closed && !run.stopping && run.position > this.wanted + ahead) await this.nextChange();
      if (this.run !== run || this.closed || run.stopping) return undefined;
      reader.push(chunk);
      for (let b = reader.next(); b; b = reader.next()) {
        if (b.type === 'ftyp') ftyp = b.bytes;
        else if (b.type === 'moov') init = await this.saveInit(ftyp, b.bytes);
        else if (b.type === 'moof') moof = b.bytes;
        else if (b.type === 'mdat') {
          if (!moof || !init) throw new Error('ffmpeg wrote media data before its headers');
          const plan = await this.plan;
          await this.fragment(run, plan, init, splitFragment(Buffer.concat([moof, b.bytes]), init.defaults), assembly);
          moof = undefined;
        }
        if (this.run !== run || this.closed || run.stopping) return undefined;
      }
    }
    return assembly;
  }

  private async saveInit(ftyp: Buffer, moov: Buffer): Promise<InitInfo> {
    const init = splitInit(ftyp, moov);
    if (!this.tracks) {
      // Every run writes the same headers (no edit lists, same codec setup): the first one is kept.
      const video = init.tracks.find((t) => t.kind === 'video');
      const audio = init.tracks.find((t) => t.kind === 'audio');
      if (video) await this.atomicWrite(FILES.init('v'), [init.segments.get(video.id)!]);
      if (audio) await this.atomicWrite(FILES.init('a'), [init.segments.get(audio.id)!]);
      this.tracks = { video, audio };
      this.notify();
    }
    return init;
  }

  /**
   * Adds a fragment to the segments it belongs to: its video to the one its start falls in, each audio
   * sample to the one it starts in. Writes segments, in order, once their video and the run's audio
   * have reached their end.
   */
  private async fragment(run: Run, plan: Plan, init: InitInfo, parts: TrackFragment[], assembly: Assembly): Promise<void> {
    const video = init.tracks.find((t) => t.kind === 'video');
    const audio = init.tracks.find((t) => t.kind === 'audio');
    const { bounds } = plan;
    const open = (k: number, at: number | undefined): Pending | undefined => {
      // Before the run's first segment (the seek landed earlier, audio's lead-in), or one it finished.
      if (k < run.position) return undefined;
      let seg = assembly.open.find((x) => x.index === k);
      if (!seg) {
        const expected = (assembly.open[assembly.open.length - 1]?.index ?? run.position - 1) + 1;
        if (k < expected) return undefined;
        if (k > expected) this.options.log.warn({ item: this.itemId, missing: [expected, k - 1] }, 'vod transcode: segments without a keyframe at their start');
        seg = { index: k, video: [], audio: [], start: at, end: at ?? 0 };
        assembly.open.push(seg);
      }
      seg.start ??= at;
      return seg;
    };
    const v = video && parts.find((p) => p.trackId === video.id);
    if (v && video) {
      const startPts = (v.baseTime + v.firstOffset) / video.timescale;
      const k = segmentAt(bounds, startPts, TOLERANCE);
      if (assembly.open.some((x) => x.index > k && x.video.length)) {
        this.options.log.warn({ item: this.itemId, segment: k }, 'vod transcode: a fragment went back in time; dropped');
      } else {
        // Video moving on to a later segment leaves the ones before it without the rest of their frames.
        for (const seg of assembly.open.filter((x) => x.index < k && !this.videoReached(x))) {
          this.incomplete(seg, 'its samples stop before its end');
          assembly.open.splice(assembly.open.indexOf(seg), 1);
        }
        const seg = open(k, startPts);
        if (seg) {
          seg.video.push(v.bytes);
          seg.end = Math.max(seg.end, (v.baseTime + v.duration + v.firstOffset) / video.timescale);
        }
      }
    }
    const a = audio && parts.find((p) => p.trackId === audio.id);
    if (a && audio) {
      for (const sample of a.list) {
        const t = sample.time / audio.timescale;
        const end = t + sample.duration / audio.timescale;
        assembly.audioEnd = Math.max(assembly.audioEnd, end);
        const seg = open(segmentAt(bounds, t, SAMPLE_TOLERANCE), video ? undefined : t);
        if (!seg) continue;
        seg.audio.push(sample);
        if (!video) seg.end = Math.max(seg.end, end);
      }
    }
    // Complete segments go out in order; the last one waits for the end of the file.
    while (assembly.open.length) {
      const seg = assembly.open[0]!;
      const next = bounds[seg.index + 1]!;
      if (seg.index + 1 >= bounds.length - 1 || !this.videoReached(seg) || (audio && assembly.audioEnd < next - END_TOLERANCE)) break;
      assembly.open.shift();
      if (this.starts(seg)) await this.write(run, seg);
      else this.incomplete(seg, 'its samples start after its boundary');
      if (this.run !== run || run.stopping) return;
    }
  }

  /** Whether a segment's reference track (video, or audio without video) reaches its end boundary. */
  private videoReached(seg: Pending): boolean {
    const bounds = this.planValue?.bounds;
    return !!bounds && seg.start !== undefined && seg.end >= bounds[seg.index + 1]! - END_TOLERANCE;
  }

  /**
   * Whether a segment's samples begin at its boundary. Copied video: at the keyframe there (ffmpeg may
   * put a seek's first two GOPs in one fragment, which belongs to the segment before, so the next one
   * begins a GOP late). Encoded video has a keyframe forced at every boundary.
   */
  private starts(seg: Pending): boolean {
    const plan = this.planValue;
    if (!plan?.keyframes || this.variant.method === 'transcode') return true;
    return seg.start !== undefined && seg.start <= nextKeyframe(plan.keyframes, plan.bounds[seg.index]! - 2 * TOLERANCE, 0) + TOLERANCE;
  }

  /** A segment this run could not make whole is left unwritten: the next request for it restarts ffmpeg there. */
  private incomplete(seg: Pending, why: string): void {
    if (this.done.has(seg.index)) return;
    this.missed.add(seg.index);
    this.options.log.warn({ item: this.itemId, segment: seg.index, start: seg.start, end: seg.end }, `vod transcode: segment left unwritten, ${why}`);
  }

  private async write(run: Run, seg: Pending): Promise<void> {
    const tracks = this.tracks ?? {};
    // A segment is written once: another run's copy of it is the same frames, or fewer.
    if (!this.done.has(seg.index)) {
      for (const [track, info] of [['v', tracks.video], ['a', tracks.audio]] as const) {
        if (info) await this.atomicWrite(FILES.segment(track, seg.index), track === 'v' ? seg.video : seg.audio.length ? [buildFragment(info.id, seg.index + 1, seg.audio)] : []);
      }
      this.done.add(seg.index);
      run.produced++;
    }
    if (run.position <= seg.index) run.position = seg.index + 1;
    this.failures = 0;
    this.progress(this.done.size / this.count);
    this.notify();
    // Caught up with what an earlier run wrote: nothing left to do here.
    const next = seg.index + 1;
    if (this.run === run && next < this.count && this.done.has(next) && run.proc) {
      this.options.log.debug({ item: this.itemId, segment: next }, 'vod transcode: reached segments already made; stopping');
      run.stopping = true;
      void run.proc.stop();
    }
  }

  private async atomicWrite(name: string, data: Buffer[]): Promise<void> {
    const file = path.join(this.dir, name);
    const tmp = `${file}.${process.pid}.tmp`;
    await writeFile(tmp, data);
    await rename(tmp, file);
  }

  /* --------------------------------------------------------- waiting */

  private notify(): void {
    for (const l of [...this.listeners]) l();
  }

  /** Resolves at the next change, however long that takes. */
  private nextChange(): Promise<void> {
    return new Promise((resolve) => {
      const listener = () => {
        this.listeners.delete(listener);
        resolve();
      };
      this.listeners.add(listener);
    });
  }

  /** Resolves at the next change (a segment, a run's start or end, close), or throws at the deadline / abort. */
  private async changed(deadline: number, abort?: AbortSignal): Promise<void> {
    const left = deadline - Date.now();
    if (left <= 0) throw errors.unavailable('The transcoder has not produced this yet; try again', 2);
    if (abort?.aborted) throw errors.unavailable('Request aborted');
    // A waiting player keeps the job alive (idleTimeout may be shorter than a segment takes).
    const keepAlive = setInterval(() => this.touch(), this.options.keepAliveMs);
    let listener!: () => void;
    let onAbort!: () => void;
    let timer!: NodeJS.Timeout;
    try {
      await new Promise<void>((resolve, reject) => {
        listener = resolve;
        onAbort = () => reject(errors.unavailable('Request aborted'));
        timer = setTimeout(() => reject(errors.unavailable('The transcoder has not produced this yet; try again', 2)), left);
        this.listeners.add(listener);
        abort?.addEventListener('abort', onAbort, { once: true });
      });
    } finally {
      clearInterval(keepAlive);
      clearTimeout(timer);
      this.listeners.delete(listener);
      abort?.removeEventListener('abort', onAbort);
    }
    this.touch();
  }

  /** Whether this job holds a transcode budget slot (a run that encodes is under way). */
  get holdsSlot(): boolean {
    return this.slot !== undefined;
  }

  private releaseSlot(): void {
    this.slot?.release();
    this.slot = undefined;
  }

  private check(): void {
    if (this.closed) throw errors.unavailable('This transcode has stopped; request the manifest again', 1);
  }

  private guardFailures(): void {
    if (this.failures >= MAX_FAILURES && Date.now() - this.lastFailureAt < FAILURE_COOLDOWN_MS) {
      throw errors.unavailable(`The transcoder keeps failing: ${this.withoutPath(this.run?.error ?? 'unknown error')}`, Math.ceil(FAILURE_COOLDOWN_MS / 1000));
    }
  }

  private failure(run: Run) {
    return errors.unavailable(`The transcoder failed: ${this.withoutPath(run.error ?? 'ffmpeg stopped')}`, 2);
  }

  /** Error messages go to clients: the file's name, not where the server keeps it. */
  private withoutPath(message: string): string {
    return message.split(this.file.path).join(path.basename(this.file.path));
  }
}

/** The line of ffmpeg's stderr that says what went wrong. */
function summarize(tail: string, code: number | null, signal: NodeJS.Signals | null): string {
  const lines = tail.split('\n').map((l) => l.trim()).filter(Boolean);
  const telling = [...lines].reverse().find((l) => /error|invalid|failed|unable|not found|denied|no such/i.test(l));
  if (telling) return telling.replace(/^\[[^\]]+\]\s*/, '').slice(0, 300);
  return signal ? `ffmpeg was killed (${signal})` : `ffmpeg exited with code ${code}`;
}
