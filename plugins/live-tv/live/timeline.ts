/**
 * A live session's own record of its finished segments, across its runs: the
 * files (linked out of ffmpeg's output under the session's names), what each
 * representation is (codecs, measured peak bit rate), the target duration, and
 * the presentation players get. Each run is a period: its own timeline and
 * init segments.
 *
 * The window players are offered is the time-shift window: the last
 * `timeshiftSeconds` of segments, no more than `maxBytes` of them, and never
 * less than live playback needs (30 s, or six target durations). Segments
 * leave it oldest first, and their files go with them.
 */
import { copyFile, link, mkdir, rm, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { LiveRepresentation, LiveSegment, Logger, Presentation, PresentationPeriod, PresentationSegment } from 'antenna/sdk';
import type { SegmenterSegment } from './segmenter.js';

/** The minimum a media playlist holds before players are answered (RFC 8216 §6.3.3: three target durations from its end). */
const START_TARGETS = 3;
/** The window live playback needs: this long, or six target durations when those are longer. */
const LIVE_WINDOW_SECONDS = 30;
/** While a holder listens, a segment's files stay this long after it was announced, whatever the window (holders link or read them meanwhile). */
const KEEP_ANNOUNCED_MS = 60_000;
/** Declared bit rates sit this much above the measured peak. */
const BANDWIDTH_MARGIN = 1.1;

export interface TimelineOptions {
  segmentSeconds: number;
  /** Seconds of media kept behind the live edge for pausing and seeking back (0: only what live playback needs). */
  timeshiftSeconds: number;
  /** The most bytes the window's segments may hold, every representation counted. */
  maxBytes: number;
  now: () => number;
  log: Logger;
  channelId: number;
}

interface Rep extends Omit<LiveRepresentation, 'bandwidth'> {
  /** Peak bit rate of the run's segments so far. */
  peak: number;
  init: string;
}

/** One representation's file of a segment. */
interface Part {
  start: number;
  duration: number;
  file: string;
}

/** One segment number of a run: a part per representation (in the order of `run.reps`). */
interface Slot {
  sequence: number;
  announcedAt: number;
  /** Every part's size together. */
  bytes: number;
  /** Seconds, by the run's main representation. */
  seconds: number;
  parts: (Part | undefined)[];
}

interface Run {
  index: number;
  dir: string;
  reps: Rep[];
  slots: Slot[];
  /** Presentation time (s) of the period, and the media time (s) it stands for. */
  start: number;
  mediaStart: number;
  /** Periods before this one in the session. */
  sequence: number;
  /** Same codecs in every representation: a player can go on from one run to the next. */
  signature: string;
  /** Files players may ask for, by name. */
  files: Map<string, { path: string; kind: 'video' | 'audio' }>;
}

export interface Links {
  init(run: number, repId: string): string;
  /** With `$Number$` where the segment's number goes. */
  media(run: number, repId: string): string;
}

export class LiveTimeline {
  /**
   * Wall-clock time (ms) presentation time 0 stands for: dated by the first run, so that its period
   * starts at 0. GStreamer's DASH demuxers (1.22 up to 1.29) read `<S t="0">` as "no t" and place that
   * segment at presentation time 0 whatever the Period's start; the first run's audio starts at t=0.
   */
  private availabilityStartMs: number;
  private readonly runs: Run[] = [];
  private periods = 0;
  private nextSequence = 1;
  /** The first sequence number players are offered (the window's start). */
  private first = 1;
  private target: number | undefined;
  private warnedTarget = false;
  private readonly listeners = new Set<(segment: LiveSegment) => void>();
  private wake: (() => void) | undefined;
  private woken: Promise<void> | undefined;

  constructor(private readonly dir: string, private readonly options: TimelineOptions) {
    this.availabilityStartMs = options.now();
  }

  get availabilityStart(): number {
    return this.availabilityStartMs;
  }

  /** Settles at the next change (a segment added, a run failed): for waiters that re-check their condition. */
  changed(): Promise<void> {
    this.woken ??= new Promise<void>((resolve) => { this.wake = resolve; });
    return this.woken;
  }

  notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    this.woken = undefined;
    wake?.();
  }

  /** The media sequence number the next segment gets. */
  get sequence(): number {
    return this.nextSequence;
  }

  /** The sequence number of the oldest segment players are offered. */
  get firstSequence(): number {
    return this.first;
  }

  /** The target duration: chosen once the first playlist can be answered, never changed afterwards. */
  targetDuration(): number {
    return this.target ?? this.candidateTarget();
  }

  /** The indexes of the runs players are given now. */
  listed(): number[] {
    return this.listedRuns().map((r) => r.index);
  }

  /** The latest run with segments. */
  private get current(): Run | undefined {
    return this.runs[this.runs.length - 1];
  }

  /**
   * Takes one finished segment number of a run (every representation): links its files under the
   * session's names, measures it, and announces it. A slot whose files are gone already is dropped.
   */
  async add(runIndex: number, segments: SegmenterSegment[]): Promise<void> {
    const now = this.options.now();
    let run = this.current;
    if (!run || run.index !== runIndex) {
      run = await this.startRun(runIndex, segments, now);
      if (!run) return;
    }
    const sequence = this.nextSequence;
    const slot: Slot = { sequence, announcedAt: now, bytes: 0, seconds: 0, parts: run.reps.map(() => undefined) };
    const placed: { file: string; kind: 'video' | 'audio' }[] = [];
    for (const s of segments) {
      const i = run.reps.findIndex((r) => r.kind === s.rep.kind);
      if (i < 0) continue;
      const rep = run.reps[i];
      const file = path.join(run.dir, `${rep.id}-${sequence}.m4s`);
      const bytes = await place(s.file, file);
      if (bytes === undefined) {
        // ffmpeg's window moved on: the number is skipped in every representation.
        for (const p of placed) await unlink(p.file).catch(() => {});
        return;
      }
      placed.push({ file, kind: rep.kind });
      rep.peak = Math.max(rep.peak, (bytes * 8) / Math.max(0.001, s.duration / rep.timescale));
      slot.parts[i] = { start: s.start, duration: s.duration, file };
      slot.bytes += bytes;
    }
    const main = mainIndex(run);
    const mainPart = slot.parts[main];
    slot.seconds = mainPart ? mainPart.duration / run.reps[main].timescale : 0;
    for (const p of placed) run.files.set(path.basename(p.file), { path: p.file, kind: p.kind });
    this.nextSequence++;
    run.slots.push(slot);
    if (this.target === undefined && this.playable()) this.target = this.candidateTarget();
    this.checkTarget(run, slot);
    this.announce(run, slot);
    await this.slide(now);
    this.notify();
  }

  /** Whether the presentation can be answered: every representation has three target durations listed. */
  playable(): boolean {
    return this.holdsStart(this.listedRuns());
  }

  /** The codec signature players are being given (the latest run's), or undefined before any. */
  signature(): string | undefined {
    return this.current?.signature;
  }

  /** Seconds of media in the window now. */
  windowSeconds(): number {
    let total = 0;
    for (const run of this.listedRuns()) for (const slot of run.slots) if (slot.sequence >= this.first) total += slot.seconds;
    return total;
  }

  /** Bytes of media in the window now (every representation). */
  windowBytes(): number {
    let total = 0;
    for (const run of this.listedRuns()) for (const slot of run.slots) if (slot.sequence >= this.first) total += slot.bytes;
    return total;
  }

  /** The wall-clock time (ms) the window starts at, or undefined before any segment. */
  windowStart(): number | undefined {
    for (const run of this.listedRuns()) {
      const slot = run.slots.find((s) => s.sequence >= this.first);
      const part = slot && slot.parts[mainIndex(run)];
      if (part) return this.wallClock(run, run.reps[mainIndex(run)], part);
    }
    return undefined;
  }

  /** The presentation as players get it now. */
  presentation(links: Links): Presentation {
    const runs = this.listedRuns();
    const periods: PresentationPeriod[] = [];
    for (const run of runs) {
      const slots = run.slots.filter((s) => s.sequence >= this.first);
      if (!slots.length) continue;
      periods.push({
        id: String(run.index),
        sequence: run.sequence,
        start: run.start,
        mediaStart: run.mediaStart,
        representations: run.reps.map((rep, i) => {
          // A plain loop: a time-shift window has thousands of parts, and this runs at every new segment.
          const segments: PresentationSegment[] = [];
          for (const s of slots) {
            const part = s.parts[i];
            if (part) segments.push({ number: s.sequence, start: part.start, duration: part.duration });
          }
          return {
            id: rep.id, kind: rep.kind, codecs: rep.codecs, bandwidth: declared(rep), width: rep.width, height: rep.height,
            frameRate: rep.frameRate, sampleRate: rep.sampleRate, channels: rep.channels, timescale: rep.timescale,
            init: links.init(run.index, rep.id), media: links.media(run.index, rep.id), segments,
          };
        }),
      });
    }
    const seconds = periods.length ? this.windowSeconds() : 0;
    return {
      type: 'live', targetDuration: this.targetDuration(), availabilityStart: this.availabilityStart, now: this.options.now(),
      // DASH players count the window back from the clock: one target duration more than what is listed.
      windowSeconds: seconds + this.targetDuration(), mediaSequence: this.first, periods,
    };
  }

  /** A file of a run players may fetch, or undefined. */
  file(runIndex: number, name: string): { path: string; kind: 'video' | 'audio' } | undefined {
    return this.runs.find((r) => r.index === runIndex)?.files.get(name);
  }

  /** Calls `listener` with every kept segment (oldest first), then with each new one; returns how to stop. */
  subscribe(listener: (segment: LiveSegment) => void): () => void {
    for (const run of this.runs) for (const slot of run.slots) for (const event of this.events(run, slot)) listener(event);
    this.listeners.add(listener);
    return () => { this.listeners.delete(listener); };
  }

  private async startRun(index: number, slot: SegmenterSegment[], now: number): Promise<Run | undefined> {
    const dir = path.join(this.dir, String(index));
    await mkdir(dir, { recursive: true });
    const reps: Rep[] = [];
    for (const s of slot) {
      if (reps.some((r) => r.kind === s.rep.kind)) continue;
      const id = s.rep.kind;
      const init = path.join(dir, `init-${id}.mp4`);
      if ((await place(s.init, init)) === undefined) return undefined;
      const { id: _ffmpegId, ...info } = s.rep;
      reps.push({ ...info, id, peak: 0, init });
    }
    // The newest segment has just been finished: that dates the run's media times.
    const mediaEnd = Math.max(...slot.map((s) => (s.start + s.duration) / s.rep.timescale));
    const mediaStart = Math.min(...slot.map((s) => s.start / s.rep.timescale));
    const previous = this.current;
    if (this.periods === 0) this.availabilityStartMs = now - (mediaEnd - mediaStart) * 1000;
    const previousEnd = previous ? previous.start + runSeconds(previous) : 0;
    const run: Run = {
      index, dir, reps, slots: [],
      start: Math.max(previousEnd, (now - this.availabilityStart) / 1000 - (mediaEnd - mediaStart)),
      mediaStart,
      sequence: this.periods++,
      signature: reps.map((r) => `${r.id}:${r.codecs}`).sort().join(','),
      files: new Map(reps.map((r) => [path.basename(r.init), { path: r.init, kind: r.kind }])),
    };
    this.runs.push(run);
    return run;
  }

  /**
   * The runs players are given: the latest and the ones before it with the same codecs. After a
   * switch of codecs (to transcoding) the runs before it stay listed until the new ones alone hold
   * three target durations, so no playlist ever shrinks below that; a viewer who needs the new
   * codecs waits till then.
   */
  private listedRuns(): Run[] {
    const groupStart = (end: number) => {
      let from = end;
      while (from > 0 && this.runs[from - 1].signature === this.runs[end].signature) from--;
      return from;
    };
    const last = this.runs.length - 1;
    if (last < 0) return [];
    const latest = groupStart(last);
    if (latest === 0 || this.holdsStart(this.runs.slice(latest))) return this.runs.slice(latest);
    return this.runs.slice(groupStart(latest - 1));
  }

  /** Whether every representation of the last run has three target durations in these runs. */
  private holdsStart(runs: Run[]): boolean {
    if (!runs.length) return false;
    const need = START_TARGETS * this.targetDuration() - 0.05;
    const last = runs[runs.length - 1];
    return last.reps.every((rep) => runs.reduce((sum, run) => sum + repSeconds(run, rep.id), 0) >= need);
  }

  /**
   * The first sequence number of the window: walking back from the newest segment, everything
   * live playback needs, then older segments while they fit the time-shift window and the bytes.
   */
  private windowFirst(runs: Run[]): number {
    const live = Math.max(LIVE_WINDOW_SECONDS, 2 * START_TARGETS * this.targetDuration());
    let seconds = 0;
    let bytes = 0;
    let first = this.nextSequence;
    for (let i = runs.length - 1; i >= 0; i--) {
      const slots = runs[i].slots;
      for (let j = slots.length - 1; j >= 0; j--) {
        const slot = slots[j];
        if (seconds >= live && (seconds + slot.seconds > this.options.timeshiftSeconds + 0.05 || bytes + slot.bytes > this.options.maxBytes)) return first;
        seconds += slot.seconds;
        bytes += slot.bytes;
        first = slot.sequence;
      }
    }
    return first;
  }

  /**
   * The longest segment so far, rounded up, with a twentieth of a second forgiven (a 2.02 s segment
   * of a 2 s keyframe interval is 2): never below the configured segment length.
   */
  private candidateTarget(): number {
    let longest = 0;
    for (const run of this.runs) {
      for (const slot of run.slots) {
        slot.parts.forEach((part, i) => { if (part) longest = Math.max(longest, part.duration / run.reps[i].timescale); });
      }
    }
    return Math.max(this.options.segmentSeconds, Math.ceil(longest - 0.05));
  }

  private checkTarget(run: Run, slot: Slot): void {
    if (this.target === undefined || this.warnedTarget) return;
    const i = slot.parts.findIndex((part, k) => part && Math.round(part.duration / run.reps[k].timescale) > this.target!);
    if (i < 0) return;
    this.warnedTarget = true;
    this.options.log.warn({ channel: this.options.channelId, seconds: slot.parts[i]!.duration / run.reps[i].timescale, target: this.target },
      'live: a segment is longer than the target duration (the source\'s keyframes came further apart than at the start)');
  }

  private announce(run: Run, slot: Slot): void {
    if (!this.listeners.size) return;
    for (const event of this.events(run, slot)) {
      for (const listener of this.listeners) {
        try {
          listener(event);
        } catch (err) {
          this.options.log.warn({ err, channel: this.options.channelId }, 'live: a segment listener failed');
        }
      }
    }
  }

  private events(run: Run, slot: Slot): LiveSegment[] {
    const out: LiveSegment[] = [];
    run.reps.forEach((rep, i) => {
      const part = slot.parts[i];
      if (!part) return;
      const { peak: _peak, init, ...info } = rep;
      out.push({
        run: run.index,
        representation: { ...info, bandwidth: declared(rep) },
        initPath: init,
        path: part.file,
        sequence: slot.sequence,
        start: part.start,
        duration: part.duration,
        wallClock: this.wallClock(run, rep, part),
        targetDuration: this.targetDuration(),
      });
    });
    return out;
  }

  private wallClock(run: Run, rep: Rep, part: Part): number {
    return this.availabilityStart + (run.start + part.start / rep.timescale - run.mediaStart) * 1000;
  }

  /**
   * Moves the window's start on, and removes the files of segments before it (once announced long
   * enough ago, while a holder listens); runs left empty go. Without holders nothing outlives the
   * window, so a burst of segments (a provider's backlog) never holds more than the cap on disk.
   */
  private async slide(now: number): Promise<void> {
    const listed = this.listedRuns();
    this.first = Math.max(this.first, this.windowFirst(listed));
    const keepMs = this.listeners.size ? KEEP_ANNOUNCED_MS : 0;
    for (const run of [...this.runs]) {
      while (run.slots.length && (run.slots[0].sequence < this.first || !listed.includes(run)) && now - run.slots[0].announcedAt >= keepMs) {
        const gone = run.slots.shift()!;
        for (const part of gone.parts) {
          if (!part) continue;
          run.files.delete(path.basename(part.file));
          await unlink(part.file).catch(() => {});
        }
      }
      if (run !== this.current && !run.slots.length) {
        this.runs.splice(this.runs.indexOf(run), 1);
        await rm(run.dir, { recursive: true, force: true }).catch(() => {});
      }
    }
  }
}

/** The representation the window is measured on: the video, else the first. */
function mainIndex(run: Run): number {
  const video = run.reps.findIndex((r) => r.kind === 'video');
  return video < 0 ? 0 : video;
}

/** Seconds of media a run holds for one representation. */
function repSeconds(run: Run, repId: string): number {
  const i = run.reps.findIndex((r) => r.id === repId);
  if (i < 0) return 0;
  let units = 0;
  for (const slot of run.slots) units += slot.parts[i]?.duration ?? 0;
  return units / run.reps[i].timescale;
}

/** Seconds of media a run holds, its longest representation. */
function runSeconds(run: Run): number {
  return Math.max(...run.reps.map((r) => repSeconds(run, r.id)));
}

const declared = (rep: Rep) => Math.max(1, Math.ceil(rep.peak * BANDWIDTH_MARGIN));

/** Links ffmpeg's file under the session's name (a copy across filesystems); its size, or undefined when it is gone. */
async function place(source: string, target: string): Promise<number | undefined> {
  try {
    try {
      await link(source, target);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') return (await stat(target)).size;
      if (code !== 'EXDEV' && code !== 'EPERM' && code !== 'EMLINK' && code !== 'ENOTSUP') throw err;
      await copyFile(source, target);
    }
    return (await stat(target)).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}
