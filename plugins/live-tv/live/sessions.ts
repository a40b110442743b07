import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import {
  errors, type AuthUser, type FfmpegService, type Job, type JobManager, type LiveHold, type Logger, type TranscodeBudget, type TranscodeRequest,
  type TranscodeSlot, type Tuner, type TunerChannel,
} from 'antenna/sdk';
import type { Channel } from '../channel-store.js';
import type { LiveTvRegistry } from '../registry.js';
import { canCopy, parseInputStreamLine, type ClientCaps } from './codecs.js';
import { failureError, ffmpegFailure, notReady, tunerFailure, type LiveFailure } from './failures.js';
import { segmenterArgs, SegmenterOutput } from './segmenter.js';
import { LiveTimeline } from './timeline.js';

export interface LiveOptions {
  workDir: string;
  segmentSeconds: number;
  idleTimeoutMs: number;
  readyTimeoutMs: number;
  /** Seconds of each session kept for pausing and seeking back (0: none beyond live playback). */
  timeshiftSeconds: number;
  /** The most bytes a session's time-shift window holds. */
  timeshiftMaxBytes: number;
}

/** Who watches: the user's device session, whose position is the last segment it fetched. */
export interface Viewer {
  id: string;
  user: Pick<AuthUser, 'id' | 'admin'>;
}

/** A viewer's decoding abilities, and whose CPU budget a transcode for them counts against. */
interface ViewerCaps {
  caps: ClientCaps;
  owner: TranscodeRequest['owner'];
}

/** The shared state of one channel's live job; every viewer's request reads it. */
export interface LiveSession {
  channelId: number;
  /** The channel's name, for messages. */
  name: string;
  tunerId: string;
  dir: string;
  /** The current run of ffmpeg (0, 1, … over the session's life; -1 before the first). */
  run: number;
  mode: 'copy' | 'transcode';
  /** What each run produces: a viewer waits for runs it can decode. */
  runs: Map<number, { mode: 'copy' | 'transcode'; video?: string }>;
  /** The session's finished segments, files and manifests. */
  timeline: LiveTimeline;
  /** Why the last run failed before it produced anything; cleared when a run starts. */
  failure?: LiveFailure;
  /** The current ffmpeg (for tests and diagnostics). */
  pid: number;
  lastError?: LiveFailure;
  /** Whether any run has produced a segment. */
  started: boolean;
  /** Requests waiting in open() for the session to become playable. */
  waiting: number;
  /** Input codecs learnt from ffmpeg, kept for the channel's next session. */
  input: { video?: string; audio?: string };
  /** What every viewer so far can decode; transcoding starts when one cannot take the input. */
  viewers: ViewerCaps[];
  /** Per viewer, the sequence number of the last segment it fetched: where it is in the window. */
  positions: Map<string, number>;
  /** Whose the session is first: the viewer who started it, or 'system' for a recording. */
  owner: TranscodeRequest['owner'];
  /** The transcode slot held while the session encodes video: kept across runs, released when the session ends. */
  transcode?: TranscodeSlot;
  /** Why a switch to transcoding was refused (the CPU budget), for the viewers who need it. */
  refused?: LiveFailure;
  /** Where the runs' timeline has reached, in wall-clock seconds (the offset the next run's init segments carry). */
  timelineEnd: number;
  /** Stops the current ffmpeg (to switch modes). */
  stopRun?: () => Promise<unknown>;
}

const SEGMENT_POLL_MS = 100;
/** Viewers whose positions a session remembers (the latest ones). */
const MAX_POSITIONS = 500;
/** ffmpeg's complaints when -analyzeduration ended before a stream's codec parameters were found. */
const PROBE_TOO_SHORT = /Could not find codec parameters|dimensions not set|unspecified (size|pixel format|sample format)|sample rate not set/i;

/**
 * One ffmpeg (one upstream connection) per channel, shared by all its viewers,
 * run as a job `live:<channelId>`: restarted with backoff when it dies,
 * stopped when nobody has asked for it for idleTimeout, its files removed.
 * The tuner slot ledger counts these jobs per tuner. A session that transcodes
 * holds a slot of the server's transcode budget for its whole life.
 */
export class LiveSessions {
  /** Input codecs per channel from earlier sessions, so a second tune decides copy/transcode up front. */
  private readonly known = new Map<number, { video?: string; audio?: string }>();
  /** The tuner slot ledger: per tuner, the channels whose jobs hold a slot (until they have ended). */
  private readonly slots = new Map<string, Map<number, Job<LiveSession>>>();
  /** Channels whose codecs one segment's worth of input did not reveal. */
  private readonly fullProbe = new Set<number>();
  /** Holders (recordings) per channel: a held session never idles out and never gives its slot away. */
  private readonly holders = new Map<number, number>();

  constructor(
    private readonly jobs: JobManager,
    private readonly ffmpeg: FfmpegService,
    private readonly registry: LiveTvRegistry,
    private readonly budget: TranscodeBudget,
    private readonly log: Logger,
    private readonly options: LiveOptions,
  ) {}

  /**
   * The running session of a channel, for a viewer's request of a playlist or segment (`sequence`:
   * the segment's number). The request keeps the session alive unless the viewer's position (the
   * last segment it fetched) has left the window: a paused player that keeps reloading its playlist
   * holds the session only while it could still resume where it was.
   */
  touch(channelId: number, viewer: string, sequence?: number): LiveSession | undefined {
    const job = this.jobs.get<LiveSession>(`live:${channelId}`);
    if (!job) return undefined;
    this.use(job, viewer, sequence);
    return job.data;
  }

  /** The running session for the channel, or a new one; waits until this viewer can play it. */
  async open(channel: Channel, caps: ClientCaps, viewer: Viewer): Promise<LiveSession> {
    const tuner = this.registry.tuners.get(channel.tunerId);
    if (!tuner) throw errors.notFound(`No channel ${channel.id}`);
    const key = `live:${channel.id}`;
    let job = this.jobs.get<LiveSession>(key);
    if (job) {
      job.touch();
      job.data.positions.delete(viewer.id); // a new start: no position yet
    } else {
      if (this.usedSlots(tuner).size >= tuner.maxStreams) throw tunerFull(tuner);
      job = this.startInSlot(key, channel, tuner, viewer.user);
    }
    const session = job.data;
    if (!canCopy(caps, session.input) && session.mode === 'copy' && session.input.video) {
      const refused = this.reserveTranscode(session, viewer.user);
      if (refused) throw failureError(session.name, refused, viewer.user.admin);
      this.switchToTranscode(session, 'a viewer cannot decode the channel as it is');
    }
    session.viewers.push({ caps, owner: viewer.user });
    if (session.viewers.length > 50) session.viewers.splice(0, session.viewers.length - 50);
    await this.whenPlayable(job, caps, viewer.user.admin);
    return job.data;
  }

  /**
   * Keeps the channel's session running for a holder (a recording) until release(): the
   * job viewers use, started when none runs. When the tuner is full, a session that no
   * holder keeps gives way (a recording comes before live viewing). Does not wait for the
   * stream: the holder is told of each segment as it finishes.
   */
  async hold(channel: Channel, label: string, options: { viewer?: boolean } = {}): Promise<LiveHold> {
    const tuner = this.registry.tuners.get(channel.tunerId);
    if (!tuner) throw errors.notFound(`No channel ${channel.id}`);
    const key = `live:${channel.id}`;
    let job = this.jobs.get<LiveSession>(key);
    if (!job && options.viewer) {
      if (this.usedSlots(tuner).size >= tuner.maxStreams) throw tunerFull(tuner);
      // A client of another protocol (HDHomeRun's MPEG-TS) has no user: its session's transcode counts as the system's.
      job = this.startInSlot(key, channel, tuner, 'system');
    }
    while (!job) {
      const used = this.usedSlots(tuner);
      if (used.size < tuner.maxStreams) {
        job = this.startInSlot(key, channel, tuner, 'system');
        break;
      }
      // Full: wait for a session that is stopping anyway, else stop one that only viewers use.
      const entries = [...used];
      const stopping = entries.find(([, j]) => j.signal.aborted);
      const victim = stopping ?? entries.find(([id]) => !this.holders.get(id));
      if (!victim) throw tunerFull(tuner);
      if (!stopping) this.log.warn({ channel: victim[0], for: channel.id, holder: label }, 'live: stopping a watched channel to free a tuner slot for a recording');
      await victim[1].stop('tuner slot needed by a recording');
      job = this.jobs.get<LiveSession>(key);
    }
    const held = job;
    // A viewer's hold keeps the session running but does not shield it from a recording.
    const holder = !options.viewer;
    if (holder) this.holders.set(channel.id, (this.holders.get(channel.id) ?? 0) + 1);
    // A held session is touched like a watched one, so it never reaches its idle timeout.
    const keepAlive = setInterval(() => held.touch(), Math.max(100, Math.min(1000, this.options.idleTimeoutMs / 2)));
    keepAlive.unref();
    const subscriptions = new Set<() => void>();
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      clearInterval(keepAlive);
      for (const stop of subscriptions) stop();
      if (holder) {
        const n = (this.holders.get(channel.id) ?? 1) - 1;
        if (n > 0) this.holders.set(channel.id, n);
        else this.holders.delete(channel.id);
      }
      held.touch(); // viewers (or the idle timeout) decide from here
    };
    const ended = held.done.then(() => release());
    held.touch();
    return {
      onSegment(listener) {
        if (released) return () => {};
        const stop = held.data.timeline.subscribe(listener);
        subscriptions.add(stop);
        return () => { subscriptions.delete(stop); stop(); };
      },
      // Recordings show it to every user: the kind of failure, never the upstream's detail.
      lastError: () => held.data.lastError?.kind,
      ended,
      release,
    };
  }

  /** A viewer's request keeps the session alive while the viewer's position is inside the window (or not known yet). */
  private use(job: Job<LiveSession>, viewer: string, sequence?: number): void {
    const { positions, timeline } = job.data;
    if (sequence !== undefined) {
      positions.delete(viewer); // Map order: the latest viewers last
      positions.set(viewer, sequence);
      if (positions.size > MAX_POSITIONS) positions.delete(positions.keys().next().value!);
    }
    const at = positions.get(viewer);
    if (at === undefined || at >= timeline.firstSequence) job.touch();
  }

  /**
   * Waits until the session's manifests can be answered to this viewer: three target durations
   * of segments it can decode. A viewer waiting keeps the session alive (idleTimeout may be
   * shorter than a start). A stream that never started and that nobody waits for any more ends
   * at once, freeing its tuner slot.
   */
  private async whenPlayable(job: Job<LiveSession>, caps: ClientCaps, admin: boolean): Promise<void> {
    const keepAlive = setInterval(() => job.touch(), Math.max(100, Math.min(1000, this.options.idleTimeoutMs / 2)));
    let deadline = Date.now() + this.options.readyTimeoutMs;
    let progress = job.data.timeline.sequence;
    job.data.waiting++;
    try {
      for (;;) {
        const session = job.data;
        if (session.timeline.playable() && decodable(session, caps)) return;
        // A stream that keeps producing segments has started: long GOPs make the start rule take a while.
        if (session.timeline.sequence !== progress) {
          progress = session.timeline.sequence;
          deadline = Date.now() + this.options.readyTimeoutMs;
        }
        const failure = session.failure ?? (session.refused && !decodable(session, caps) ? session.refused : undefined);
        if (failure) throw failureError(session.name, failure, admin);
        if (job.state !== 'running') throw failureError(session.name, session.lastError ?? ffmpegFailure('', null), admin);
        let timer: NodeJS.Timeout | undefined;
        const outcome = await Promise.race([
          session.timeline.changed().then(() => 'changed' as const),
          job.done.then(() => 'ended' as const),
          new Promise<'timeout'>((r) => { timer = setTimeout(() => r('timeout'), Math.max(0, deadline - Date.now())); }),
        ]).finally(() => clearTimeout(timer));
        if (outcome === 'timeout') throw failureError(session.name, notReady(Math.round(this.options.readyTimeoutMs / 1000), session.lastError), admin);
      }
    } finally {
      clearInterval(keepAlive);
      job.data.waiting--;
      job.touch();
      if (this.abandoned(job.data) && job.state === 'running') void job.stop('the stream failed before it started and nobody waits for it');
    }
  }

  /** A session that never produced a segment, that no viewer waits for and no recording holds: ended rather than retried. */
  private abandoned(session: LiveSession): boolean {
    return !session.started && session.waiting === 0 && !this.holders.get(session.channelId) && (!!session.failure || !!session.lastError);
  }

  /** Takes a transcode slot for the session unless it has one; the refusal when the budget has none. */
  private reserveTranscode(session: LiveSession, owner: TranscodeRequest['owner']): LiveFailure | undefined {
    if (session.transcode) return undefined;
    const reserved = this.budget.reserve({ owner: this.holders.get(session.channelId) ? 'system' : owner, label: `live:${session.channelId}` });
    if ('refused' in reserved) {
      const reason = reserved.message.charAt(0).toLowerCase() + reserved.message.slice(1);
      return { status: 503, kind: reason, detail: reason, retryAfter: reserved.retryAfter };
    }
    session.transcode = reserved.slot;
    session.refused = undefined;
    return undefined;
  }

  private switchToTranscode(session: LiveSession, why: string): void {
    session.mode = 'transcode';
    this.log.info({ channel: session.channelId, why, input: session.input }, 'live: switching to transcode');
    void session.stopRun?.();
  }

  /** The channels holding a slot of the tuner (their jobs have not ended). */
  private usedSlots(tuner: Tuner): Map<number, Job<LiveSession>> {
    let used = this.slots.get(tuner.id);
    if (!used) this.slots.set(tuner.id, (used = new Map()));
    for (const [id, job] of used) if (job.state !== 'running') used.delete(id);
    return used;
  }

  /** Starts the channel's job in a slot of its tuner, which the job gives back when it ends. */
  private startInSlot(key: string, channel: Channel, tuner: Tuner, owner: TranscodeRequest['owner']): Job<LiveSession> {
    const used = this.usedSlots(tuner);
    const job = this.start(key, channel, tunerChannelOf(channel), owner);
    used.set(channel.id, job);
    void job.done.then(() => {
      // A new job of the channel may hold the slot already (started while this one was stopping).
      if (used.get(channel.id) === job) used.delete(channel.id);
    });
    return job;
  }

  private start(key: string, channel: Channel, tunerChannel: TunerChannel, owner: TranscodeRequest['owner']): Job<LiveSession> {
    const { workDir, segmentSeconds, idleTimeoutMs, timeshiftSeconds, timeshiftMaxBytes } = this.options;
    const dir = path.join(workDir, `${channel.id}-${randomBytes(4).toString('hex')}`);
    const tuner = this.registry.tuners.get(channel.tunerId)!;
    const job = this.jobs.ensure<LiveSession>(key, () => ({
      kind: 'live',
      idleTimeoutMs,
      restart: { maxRestarts: Number.POSITIVE_INFINITY, initialDelayMs: 1000, maxDelayMs: 15_000 },
      data: {
        channelId: channel.id, name: channel.name, tunerId: channel.tunerId, dir, run: -1, mode: 'copy', runs: new Map(), pid: 0, timelineEnd: 0,
        timeline: new LiveTimeline(dir, {
          segmentSeconds, timeshiftSeconds, maxBytes: timeshiftMaxBytes, now: () => Date.now(), log: this.log, channelId: channel.id,
        }),
        input: { ...(this.known.get(channel.id) ?? {}) }, viewers: [], positions: new Map(), owner, started: false, waiting: 0,
      },
      run: async (ctx) => {
        // Loops only to switch from copy to transcode; a failure goes to the job's restart policy.
        for (;;) {
          let switched: boolean;
          try {
            switched = await this.runOnce(key, ctx.data, tuner, tunerChannel, ctx.signal);
          } catch (err) {
            // Nobody to retry for: the job ends, and its tuner slot (and transcode slot) with it.
            if (this.abandoned(ctx.data)) {
              this.log.info({ channel: channel.id, error: ctx.data.lastError?.detail }, 'live: the stream failed before it started and nobody waits for it; stopping');
              return;
            }
            throw err;
          }
          if (!switched || ctx.signal.aborted) return;
        }
      },
    }));
    void job.done.then(() => {
      job.data.transcode?.release();
      job.data.timeline.notify();
      return rm(dir, { recursive: true, force: true }).catch((err) => this.log.warn({ err, dir }, 'live: could not remove session files'));
    });
    return job;
  }

  /** One ffmpeg run. Resolves true when it was stopped to switch to transcoding; throws when it failed. */
  private async runOnce(key: string, session: LiveSession, tuner: Tuner, tunerChannel: TunerChannel, signal: AbortSignal): Promise<boolean> {
    const { segmentSeconds } = this.options;
    session.failure = undefined;
    const run = ++session.run;
    let produced = false;
    const failed = (failure: LiveFailure): Error => {
      if (!signal.aborted) {
        session.lastError = failure;
        if (!produced) session.failure = failure;
      }
      session.timeline.notify();
      return new RunFailure(failure);
    };
    let source;
    try {
      source = await tuner.openStream({ channel: tunerChannel, signal });
    } catch (err) {
      throw failed(tunerFailure(err));
    }
    const needing = session.input.video ? session.viewers.find((v) => !canCopy(v.caps, session.input)) : undefined;
    if (/^(rawvideo|pcm)/.test(source.videoCodec ?? '') || needing) session.mode = 'transcode';
    const mode = session.mode;
    if (mode === 'transcode') {
      const refused = this.reserveTranscode(session, needing?.owner ?? session.owner);
      if (refused) throw failed(refused);
    }
    const guessed = session.input.video;
    const fullProbe = this.fullProbe.has(session.channelId);
    try {
      const out = path.join(session.dir, String(run), 'ffmpeg');
      await mkdir(out, { recursive: true });
      // Wall-clock seconds, never behind where the previous run ended: see segmenterArgs.
      const offsetSeconds = Math.max(Math.floor(Date.now() / 1000), Math.ceil(session.timelineEnd));
      const args = [
        '-loglevel', 'info', '-fflags', '+genpts',
        // MPEG-TS has no header: ffmpeg reads all of -analyzeduration (5 s by default) before it
        // writes anything. One segment's worth finds the codecs of any stream with a keyframe at
        // least that often, and costs nothing (the first segment takes that long anyway).
        ...(fullProbe ? [] : ['-analyzeduration', String(segmentSeconds * 1_000_000)]),
        ...source.inputArgs,
        ...(source.maps ?? ['0:v:0?', '0:a:0?']).flatMap((m) => ['-map', m]),
        ...(mode === 'copy' ? copyArgs(session.input) : transcodeArgs(segmentSeconds)),
        ...segmenterArgs({ dir: out, segmentSeconds, offsetSeconds }),
      ];
      let inInput = false;
      const proc = this.ffmpeg.spawn(args, {
        signal, label: key, secrets: source.secrets,
        onStderrLine: (line) => {
          if (/^Input #0/.test(line)) inInput = true;
          else if (/^(Output #0|Stream mapping:)/.test(line)) inInput = false;
          else if (inInput) {
            const parsed = parseInputStreamLine(line);
            if (parsed && !session.input[parsed[0]]) session.input[parsed[0]] = parsed[1];
          }
        },
      });
      session.pid = proc.pid;
      session.stopRun = () => proc.stop();
      const output = new SegmenterOutput(out, offsetSeconds);
      const take = async () => {
        for (const slot of await output.next()) {
          if (!produced) {
            produced = true;
            session.started = true;
            session.runs.set(run, { mode, video: session.input.video });
            this.known.set(session.channelId, { ...session.input });
            session.lastError = undefined;
          }
          await session.timeline.add(run, slot);
          for (const s of slot) session.timelineEnd = Math.max(session.timelineEnd, offsetSeconds + (s.start + s.duration) / s.rep.timescale);
        }
      };
      let exited = false;
      const exit = proc.exited.finally(() => { exited = true; });
      try {
        while (!exited) {
          const needs = session.mode === 'copy' && session.input.video ? session.viewers.find((v) => !canCopy(v.caps, session.input)) : undefined;
          if (needs) {
            this.known.set(session.channelId, { ...session.input });
            session.refused = this.reserveTranscode(session, needs.owner);
            if (!session.refused) this.switchToTranscode(session, 'a viewer cannot decode the channel as it is');
            else {
              // Those viewers are told (503) and ask again; the others go on watching the copy.
              session.viewers = session.viewers.filter((v) => canCopy(v.caps, session.input));
              session.timeline.notify();
            }
          }
          await take();
          await Promise.race([exit, new Promise((r) => setTimeout(r, SEGMENT_POLL_MS))]);
        }
        await take(); // what the run finished last
      } catch (err) {
        await proc.stop(); // the session's files cannot be written: this run is over
        throw err;
      } finally {
        session.stopRun = undefined;
        // The session has linked what it took; ffmpeg's own names of the run's last segments would
        // otherwise stay on disk, outside the window's count, until the window has passed the run.
        await rm(out, { recursive: true, force: true }).catch((err) => this.log.warn({ err, dir: out }, 'live: could not remove a run\'s ffmpeg files'));
      }
      const result = await exit;
      if (signal.aborted) return false;
      if (result.expected && session.mode !== mode) return true;
      if (!fullProbe && !produced && PROBE_TOO_SHORT.test(result.stderrTail)) {
        // Keyframes further apart than a segment: probe as long as ffmpeg likes, now (viewers keep
        // waiting) and for the channel's next sessions.
        this.fullProbe.add(session.channelId);
        this.log.info({ channel: session.channelId }, 'live: codecs not found within one segment; probing longer');
        return this.runOnce(key, session, tuner, tunerChannel, signal);
      }
      if (mode === 'copy' && !produced && session.input.video !== guessed) {
        // Copied on the guess that the video is H.264, which it was not: again at once, knowing it.
        this.log.info({ channel: session.channelId, video: session.input.video }, 'live: the video is not what was guessed; copying it as it is');
        return this.runOnce(key, session, tuner, tunerChannel, signal);
      }
      throw failed(ffmpegFailure(result.stderrTail, result.code, source.failure?.()));
    } catch (err) {
      if (err instanceof RunFailure) throw err;
      throw failed({ status: 502, kind: 'the stream stopped', detail: (err as Error).message, retryAfter: 5 });
    }
  }
}

/** A run that failed, and why. */
class RunFailure extends Error {
  constructor(readonly failure: LiveFailure) {
    super(`${failure.kind}: ${failure.detail}`);
  }
}

/** Whether every run the viewer would be given is one it can decode. */
function decodable(session: LiveSession, caps: ClientCaps): boolean {
  return session.timeline.listed().every((index) => {
    const run = session.runs.get(index);
    return !!run && (run.mode === 'transcode' || canCopy(caps, { video: run.video }));
  });
}

function tunerFull(tuner: Tuner): Error {
  return errors.conflict(`Tuner limit reached for ${tuner.name}: all ${tuner.maxStreams} stream${tuner.maxStreams === 1 ? '' : 's'} in use`);
}

function tunerChannelOf(c: Channel): TunerChannel {
  return { key: c.key, name: c.name, number: c.number, tvgId: c.tvgId ?? undefined, tvgName: c.tvgName ?? undefined, logo: c.logo ?? undefined, groups: c.groups, extra: c.extra, data: c.data };
}

/**
 * Copy mode: the video is copied (the costly part); the audio is always encoded
 * to AAC, which every client decodes and which gives complete codec strings
 * (ffmpeg 4.1's segmenter writes a bare "mp4a.40" for copied ADTS audio, which
 * players reject). On copy the segmenter passes MPEG-TS codec tags through and
 * its mp4 writer refuses them, so the video tag is set by codec; an input not
 * known yet is taken as H.264, and a wrong guess fails at once and the restart
 * knows the codec.
 */
const VIDEO_TAGS: Record<string, string> = { h264: 'avc1', hevc: 'hvc1', mpeg2video: 'mp4v', mpeg4: 'mp4v' };

function copyArgs(input: { video?: string }): string[] {
  const tag = VIDEO_TAGS[input.video ?? 'h264'];
  return ['-c:v', 'copy', ...(tag ? ['-tag:v', tag] : []), ...audioArgs()];
}

function audioArgs(): string[] {
  return ['-c:a', 'aac', '-b:a', '128k', '-ac', '2'];
}

/** H.264/AAC that every client plays, with keyframes on segment boundaries. */
function transcodeArgs(segmentSeconds: number): string[] {
  return [
    '-c:v', 'libx264', '-preset', 'veryfast', '-tune', 'zerolatency', '-pix_fmt', 'yuv420p', '-profile:v', 'high',
    '-force_key_frames', `expr:gte(t,n_forced*${segmentSeconds})`, '-sc_threshold', '0',
    ...audioArgs(),
  ];
}
