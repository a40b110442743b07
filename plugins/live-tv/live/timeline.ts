/**
 * A live session's own record of its finished segments, across its runs: the
 * files (linked out of ffmpeg's output under the session's names, removed as
 * the window slides on), what each representation is (codecs, measured peak
 * bit rate), the target duration, and the presentation players get. Each run
 * is a period: its own timeline and init segments.
 */
import { copyFile, link, mkdir, rm, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { LiveRepresentation, LiveSegment, Logger, Presentation, PresentationPeriod } from 'antenna/sdk';
import type { SegmenterSegment } from './segmenter.js';

/** The minimum a media playlist holds before players are answered (RFC 8216 §6.3.3: three target durations from its end). */
const START_TARGETS = 3;
/** The window players are offered: this long, or six target durations when those are longer. */
const WINDOW_SECONDS = 30;
/** A segment's files stay this long after it was announced, whatever the window (holders link them meanwhile). */
const KEEP_ANNOUNCED_MS = 60_000;
/** Declared bit rates sit this much above the measured peak. */
const BANDWIDTH_MARGIN = 1.1;

interface Rep extends Omit<LiveRepresentation, 'bandwidth'> {
  /** Peak bit rate of the run's segments so far. */
  peak: number;
  init: string;
}

interface Segment {
  sequence: number;
  start: number;
  duration: number;
  file: string;
  announcedAt: number;
}

interface Run {
  index: number;
  dir: string;
  reps: Rep[];
  segments: Map<string, Segment[]>;
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
  /** Wall-clock time (ms) presentation time 0 stands for. */
  readonly availabilityStart: number;
  private readonly runs: Run[] = [];
  private periods = 0;
  private nextSequence = 1;
  private target: number | undefined;
  private warnedTarget = false;
  private readonly listeners = new Set<(segment: LiveSegment) => void>();
  private wake: (() => void) | undefined;
  private woken: Promise<void> | undefined;

  constructor(
    private readonly dir: string,
    private readonly options: { segmentSeconds: number; now: () => number; log: Logger; channelId: number },
  ) {
    this.availabilityStart = options.now();
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
  async add(runIndex: number, slot: SegmenterSegment[]): Promise<void> {
    const now = this.options.now();
    let run = this.current;
    if (!run || run.index !== runIndex) {
      run = await this.startRun(runIndex, slot, now);
      if (!run) return;
    }
    const sequence = this.nextSequence;
    const taken: { rep: Rep; segment: Segment }[] = [];
    for (const s of slot) {
      const rep = run.reps.find((r) => r.kind === s.rep.kind);
      if (!rep) continue;
      const name = `${rep.id}-${sequence}.m4s`;
      const file = path.join(run.dir, name);
      const bytes = await place(s.file, file);
      if (bytes === undefined) return; // ffmpeg's window moved on: the number is skipped in every representation
      rep.peak = Math.max(rep.peak, (bytes * 8) / Math.max(0.001, s.duration / rep.timescale));
      taken.push({ rep, segment: { sequence, start: s.start, duration: s.duration, file, announcedAt: now } });
      run.files.set(name, { path: file, kind: rep.kind });
    }
    this.nextSequence++;
    for (const { rep, segment } of taken) run.segments.get(rep.id)!.push(segment);
    if (this.target === undefined && this.playable()) this.target = this.candidateTarget();
    this.checkTarget(taken);
    for (const { rep, segment } of taken) this.announce(run, rep, segment);
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

  /** The presentation as players get it now. */
  presentation(links: Links): Presentation {
    const runs = this.listedRuns();
    const target = this.targetDuration();
    const window = this.windowSeconds();
    const first = this.firstListed(runs, window);
    const periods: PresentationPeriod[] = runs.map((run) => ({
      id: String(run.index),
      sequence: run.sequence,
      start: run.start,
      mediaStart: run.mediaStart,
      representations: run.reps.map((rep) => ({
        id: rep.id, kind: rep.kind, codecs: rep.codecs, bandwidth: declared(rep), width: rep.width, height: rep.height,
        frameRate: rep.frameRate, sampleRate: rep.sampleRate, channels: rep.channels, timescale: rep.timescale,
        init: links.init(run.index, rep.id), media: links.media(run.index, rep.id),
        segments: run.segments.get(rep.id)!.filter((s) => s.sequence >= first).map((s) => ({ number: s.sequence, start: s.start, duration: s.duration })),
      })),
    })).filter((p) => p.representations.some((r) => r.segments.length));
    return {
      type: 'live', targetDuration: target, availabilityStart: this.availabilityStart, now: this.options.now(),
      windowSeconds: window, mediaSequence: first, periods,
    };
  }

  /** A file of a run players may fetch, or undefined. */
  file(runIndex: number, name: string): { path: string; kind: 'video' | 'audio' } | undefined {
    return this.runs.find((r) => r.index === runIndex)?.files.get(name);
  }

  /** Calls `listener` with every kept segment (oldest first), then with each new one; returns how to stop. */
  subscribe(listener: (segment: LiveSegment) => void): () => void {
    const kept = this.runs.flatMap((run) => run.reps.flatMap((rep) => run.segments.get(rep.id)!.map((segment) => ({ run, rep, segment }))));
    kept.sort((a, b) => a.segment.sequence - b.segment.sequence);
    for (const k of kept) listener(this.event(k.run, k.rep, k.segment));
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
    const previousEnd = previous ? previous.start + Math.max(...previous.reps.map((r) => seconds(previous, r.id))) : 0;
    const run: Run = {
      index, dir, reps,
      segments: new Map(reps.map((r) => [r.id, []])),
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
    return runs[runs.length - 1].reps.every((rep) => runs.reduce((sum, run) => sum + seconds(run, rep.id), 0) >= need);
  }

  private windowSeconds(): number {
    return Math.max(WINDOW_SECONDS, 2 * START_TARGETS * this.targetDuration());
  }

  /** The sequence number of the first segment in the window (measured on the main representation, the same for all). */
  private firstListed(runs: Run[], window: number): number {
    let total = 0;
    let first = this.nextSequence;
    for (let i = runs.length - 1; i >= 0; i--) {
      const run = runs[i];
      const main = run.reps.find((r) => r.kind === 'video') ?? run.reps[0];
      const list = run.segments.get(main.id)!;
      for (let j = list.length - 1; j >= 0; j--) {
        if (total >= window) return first;
        total += list[j].duration / main.timescale;
        first = list[j].sequence;
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
    for (const run of this.runs) for (const rep of run.reps) for (const s of run.segments.get(rep.id)!) longest = Math.max(longest, s.duration / rep.timescale);
    return Math.max(this.options.segmentSeconds, Math.ceil(longest - 0.05));
  }

  private checkTarget(taken: { rep: Rep; segment: Segment }[]): void {
    if (this.target === undefined || this.warnedTarget) return;
    const over = taken.find(({ rep, segment }) => Math.round(segment.duration / rep.timescale) > this.target!);
    if (!over) return;
    this.warnedTarget = true;
    this.options.log.warn({ channel: this.options.channelId, seconds: over.segment.duration / over.rep.timescale, target: this.target },
      'live: a segment is longer than the target duration (the source\'s keyframes came further apart than at the start)');
  }

  private announce(run: Run, rep: Rep, segment: Segment): void {
    if (!this.listeners.size) return;
    const event = this.event(run, rep, segment);
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (err) {
        this.options.log.warn({ err, channel: this.options.channelId }, 'live: a segment listener failed');
      }
    }
  }

  private event(run: Run, rep: Rep, segment: Segment): LiveSegment {
    const { peak: _peak, init, ...info } = rep;
    return {
      run: run.index,
      representation: { ...info, bandwidth: declared(rep) },
      initPath: init,
      path: segment.file,
      sequence: segment.sequence,
      start: segment.start,
      duration: segment.duration,
      wallClock: this.availabilityStart + (run.start + segment.start / rep.timescale - run.mediaStart) * 1000,
      targetDuration: this.targetDuration(),
    };
  }

  /** Removes the files of segments that left the window and were announced long enough ago; runs left empty go. */
  private async slide(now: number): Promise<void> {
    const listed = this.listedRuns();
    const first = this.firstListed(listed, this.windowSeconds());
    for (const run of [...this.runs]) {
      for (const rep of run.reps) {
        const list = run.segments.get(rep.id)!;
        while (list.length && (list[0].sequence < first || !listed.includes(run)) && now - list[0].announcedAt >= KEEP_ANNOUNCED_MS) {
          const gone = list.shift()!;
          run.files.delete(path.basename(gone.file));
          await unlink(gone.file).catch(() => {});
        }
      }
      if (run !== this.current && run.reps.every((r) => !run.segments.get(r.id)!.length)) {
        this.runs.splice(this.runs.indexOf(run), 1);
        await rm(run.dir, { recursive: true, force: true }).catch(() => {});
      }
    }
  }
}

/** Seconds of media a run holds for one representation. */
function seconds(run: Run, repId: string): number {
  const rep = run.reps.find((r) => r.id === repId);
  if (!rep) return 0;
  return run.segments.get(repId)!.reduce((sum, s) => sum + s.duration, 0) / rep.timescale;
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
