import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import {
  errors, type AuthUser, type FfmpegService, type Job, type JobManager, type LiveHold, type Logger, type TranscodeBudget, type TranscodeRequest,
  type TranscodeRefusal, type TranscodeShare, type TranscodeSlot, type Tuner, type TunerChannel,
  AppError, type Cluster, type Lease,
} from 'antenna/sdk';
import type { Channel } from '../channel-store.js';
import type { LiveTvRegistry } from '../registry.js';
import { canCopy, parseInputFrameRate, parseInputStreamLine, type ClientCaps } from './codecs.js';
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
  /** A playing stream that yields no new segment for this long (plus the segments' own length) has failed. */
  stallTimeoutMs: number;
  /** How long a failed stream is passed over while the channel has others. */
  failoverCooldownMs: number;
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
  /** The source (tuner) whose slot the session holds, and the stream (playlist entry) it plays. */
  tunerId: string;
  streamId: number;
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
  /** Per viewer, when it last asked for anything (ms): who watches now. */
  seen: Map<string, number>;
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
/** A viewer counts as watching while it has asked for something this recently (players reload every target duration). */
const WATCHING_MS = 30_000;
/** ffmpeg's line when the upstream's connection ended and it tries again (-reconnect): the stream ended. */
const RECONNECTING = /Will reconnect at/;
/** ffmpeg's complaints when -analyzeduration ended before a stream's codec parameters were found. */
const PROBE_TOO_SHORT = /Could not find codec parameters|dimensions not set|unspecified (size|pixel format|sample format)|sample rate not set/i;

/**
 * One ffmpeg (one upstream connection) per channel, shared by all its viewers,
 * run as a job `live:<channelId>`: restarted with backoff when it dies,
 * stopped when nobody has asked for it for idleTimeout, its files removed.
 * The tuner slot ledger counts these jobs per tuner. A session that transcodes
 * holds a slot of the server's transcode budget for its whole life.
 *
 * Failover: a session plays one of the channel's streams at a time. When it fails (it cannot be
 * opened, ffmpeg exits, the upstream ends or stalls), the stream is marked failed and the
 * session moves at once to the next stream whose source has a free slot, giving back the old
 * source's slot; the new run is a new period (HLS discontinuity, DASH Period, recording part).
 * A failed stream is passed over for failoverCooldown; when every stream has failed, the
 * session fails as a channel of one stream does.
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
  /** Per stream (playlist entry id), its last failure: passed over for failoverCooldown after it. */
  private readonly failures = new Map<number, { reason: string; at: number }>();

  /** Cluster mode: takes of a channel's lease under way, shared by the requests that wait for them. */
  private readonly claiming = new Map<number, Promise<Lease | undefined>>();

  constructor(
    private readonly jobs: JobManager,
    private readonly ffmpeg: FfmpegService,
    private readonly registry: LiveTvRegistry,
    private readonly budget: TranscodeBudget,
    private readonly log: Logger,
    private readonly options: LiveOptions,
    /** Cluster mode: a channel's session runs on one node at a time (a lease), a tuner's streams are counted across the nodes. */
    private readonly cluster?: Cluster,
  ) {
    // A recording on another node needs a channel this node plays to viewers only: it gives way.
    cluster?.subscribe(YIELD_TOPIC, (message) => {
      const channelId = Number(message);
      const job = this.jobs.get<LiveSession>(`live:${channelId}`);
      if (job && !this.holders.get(channelId)) void job.stop('a recording on another node needs the channel');
    });
  }

  /** Cluster mode: the node running the channel's session now, when it is another one. */
  async elsewhere(channelId: number): Promise<{ node: string; url: string | null } | undefined> {
    if (!this.cluster?.enabled) return undefined;
    const holder = await this.cluster.holder(`live:${channelId}`);
    return holder && holder.node !== this.cluster.nodeId ? holder : undefined;
  }

  /**
   * Cluster mode: the channel's lease for this node, in its tuner's group (maxStreams across the
   * nodes); throws HeldElsewhere when another node runs the channel, 409 when the tuner is full.
   * Concurrent requests of one channel share one take (a second take would fence off the first).
   */
  private async claim(channel: Channel, tuner: Tuner): Promise<Lease | undefined> {
    const cluster = this.cluster;
    if (!cluster?.enabled) return undefined;
    let pending = this.claiming.get(channel.id);
    if (!pending) {
      pending = (async () => {
        const lease = await cluster.take(`live:${channel.id}`, { group: `tuner:${tuner.id}`, limit: tuner.maxStreams });
        if (lease) return lease;
        const holder = await this.elsewhere(channel.id);
        if (holder) throw new HeldElsewhere(channel.name, holder.node, holder.url);
        throw tunerFull(tuner);
      })().finally(() => this.claiming.delete(channel.id));
      this.claiming.set(channel.id, pending);
    }
    return pending;
  }

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
    const first = this.firstTuner(channel);
    const key = `live:${channel.id}`;
    let job = this.jobs.get<LiveSession>(key);
    if (job) {
      job.touch();
      job.data.positions.delete(viewer.id); // a new start: no position yet
    } else {
      const next = this.nextStream(channel);
      if (!next) throw tunerFull(first);
      const lease = this.cluster?.enabled ? await this.claim(channel, next.tuner) : undefined; // a single node decides at once, without yielding
      job = this.jobs.get<LiveSession>(key) ?? this.startInSlot(key, channel, next, viewer.user, lease);
    }
    job.data.seen.set(viewer.id, Date.now());
    const session = job.data;
    if (!canCopy(caps, session.input) && session.mode === 'copy' && session.input.video) {
      const refused = await this.reserveTranscode(session, viewer.user);
      if (refused) throw failureError(session.name, refused, viewer.user.admin);
      // Another viewer's request may have switched it while the cluster's limits were asked.
      if (session.mode === 'copy') this.switchToTranscode(session, 'a viewer cannot decode the channel as it is');
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
    const tuner = this.firstTuner(channel);
    const key = `live:${channel.id}`;
    let job = this.jobs.get<LiveSession>(key);
    if (!job && options.viewer) {
      const next = this.nextStream(channel);
      if (!next) throw tunerFull(tuner);
      const lease = this.cluster?.enabled ? await this.claim(channel, next.tuner) : undefined; // a single node decides at once, without yielding
      // A client of another protocol (HDHomeRun's MPEG-TS) has no user: its session's transcode counts as the system's.
      job = this.jobs.get<LiveSession>(key) ?? this.startInSlot(key, channel, next, 'system', lease);
    }
    while (!job) {
      const next = this.nextStream(channel);
      if (next) {
        let lease: Lease | undefined;
        try {
          if (this.cluster?.enabled) lease = await this.claim(channel, next.tuner);
        } catch (err) {
          // Viewers on another node give way to a recording; the recording asks again shortly.
          if (err instanceof HeldElsewhere) this.cluster!.publish(YIELD_TOPIC, String(channel.id));
          throw err;
        }
        job = this.jobs.get<LiveSession>(key) ?? this.startInSlot(key, channel, next, 'system', lease);
        break;
      }
      // Every source full: on the first stream's, wait for a session that is stopping anyway, else stop one that only viewers use.
      const entries = [...this.usedSlots(tuner.id)];
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
    const { positions, timeline, seen } = job.data;
    seen.delete(viewer); // Map order: the latest viewers last
    seen.set(viewer, Date.now());
    if (seen.size > MAX_POSITIONS) seen.delete(seen.keys().next().value!);
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

  /**
   * Takes a transcode slot for the session unless it has one; the refusal when the budget has none.
   * In cluster mode the slot also holds the session's share of the limits across the nodes, under
   * the leases VOD transcodes take (a single node decides at once, without yielding).
   */
  private async reserveTranscode(session: LiveSession, owner: TranscodeRequest['owner']): Promise<LiveFailure | undefined> {
    if (session.transcode) return undefined;
    const request = { owner: this.holders.get(session.channelId) ? 'system' as const : owner, label: `live:${session.channelId}` };
    const reserved = this.budget.reserve(request);
    if ('refused' in reserved) return refusal(reserved);
    session.refused = undefined;
    if (!this.cluster?.enabled) {
      session.transcode = reserved.slot;
      return undefined;
    }
    let share: TranscodeShare | undefined;
    let released = false;
    const slot: TranscodeSlot = {
      label: reserved.slot.label,
      release: () => {
        if (released) return;
        released = true;
        reserved.slot.release();
        void share?.release().catch((err: Error) => this.log.warn({ channel: session.channelId, error: err.message }, 'live: could not give back a transcode lease'));
      },
    };
    session.transcode = slot;
    const answer = await this.budget.share(request).catch((err: Error): TranscodeRefusal => ({
      refused: 'server', message: `The transcode limits of the cluster cannot be read: ${err.message}`, retryAfter: 5,
    }));
    if ('refused' in answer) {
      if (session.transcode === slot) session.transcode = undefined;
      slot.release();
      return refusal(answer);
    }
    share = answer.share;
    // The session ended while the share was taken: given back at once.
    if (released) await share.release().catch(() => {});
    return undefined;
  }

  private switchToTranscode(session: LiveSession, why: string): void {
    session.mode = 'transcode';
    this.log.info({ channel: session.channelId, why, input: session.input }, 'live: switching to transcode');
    void session.stopRun?.();
  }

  /** The channels holding a slot of the tuner (their jobs have not ended). */
  private usedSlots(tunerId: string): Map<number, Job<LiveSession>> {
    let used = this.slots.get(tunerId);
    if (!used) this.slots.set(tunerId, (used = new Map()));
    for (const [id, job] of used) if (job.state !== 'running') used.delete(id);
    return used;
  }

  /**
   * Per stream of the channel, in failover order: whether it plays now, is passed over after a
   * failure (cooldown) or waits its turn (standby); its last failure; who watches it.
   */
  streamHealth(channel: Channel): { id: number; state: 'playing' | 'cooldown' | 'standby'; lastFailure: { reason: string; at: number } | null; viewers: number }[] {
    const session = this.jobs.get<LiveSession>(`live:${channel.id}`)?.data;
    const now = Date.now();
    let watching = 0;
    if (session) for (const at of session.seen.values()) if (now - at < WATCHING_MS) watching++;
    return channel.streams.map((s) => {
      const playing = session?.streamId === s.id;
      return {
        id: s.id,
        state: playing ? 'playing' : this.coolingDown(s.id, now) ? 'cooldown' : 'standby',
        lastFailure: this.failures.get(s.id) ?? null,
        viewers: playing ? watching : 0,
      };
    });
  }

  private coolingDown(streamId: number, now: number): boolean {
    const failed = this.failures.get(streamId);
    return !!failed && now - failed.at < this.options.failoverCooldownMs;
  }

  /** The tuner of the channel's first stream: the one named when every source is full. */
  private firstTuner(channel: Channel): Tuner {
    const tuner = this.registry.tuners.get(channel.tunerId);
    if (!tuner) throw errors.notFound(`No channel ${channel.id}`);
    return tuner;
  }

  /**
   * The stream a session of the channel plays next: the first, in order, whose source has a free
   * slot (the one the session holds counts as free) and that has not failed within
   * failoverCooldown. When every stream with a slot has (`fallback`), the first of them is tried
   * again, as a channel of one stream is. `skip`: streams not to count (the one playing, those
   * tried already).
   */
  private nextStream(channel: Channel, session?: LiveSession, fallback = true, skip: ReadonlySet<number> = new Set()): { stream: Channel; tuner: Tuner } | undefined {
    const now = Date.now();
    let cooling: { stream: Channel; tuner: Tuner } | undefined;
    for (const stream of channel.streams) {
      if (skip.has(stream.id)) continue;
      const tuner = this.registry.tuners.get(stream.tunerId);
      if (!tuner) continue;
      const used = this.usedSlots(tuner.id);
      const free = (session !== undefined && used.get(channel.id)?.data === session) || used.size < tuner.maxStreams;
      if (!free) continue;
      if (!this.coolingDown(stream.id, now)) return { stream, tuner };
      cooling ??= { stream, tuner };
    }
    return fallback ? cooling : undefined;
  }

  /** Moves the session's slot to the tuner of the stream it plays next (the ledger stays exact across sources). */
  private moveSlot(session: LiveSession, to: Tuner): void {
    if (session.tunerId === to.id) return;
    const old = this.slots.get(session.tunerId);
    const job = old?.get(session.channelId);
    if (job?.data === session) {
      old!.delete(session.channelId);
      this.usedSlots(to.id).set(session.channelId, job);
    }
    session.tunerId = to.id;
  }

  /**
   * Starts the channel's job in a slot of the tuner of the stream it plays first (and with the
   * channel's lease, in cluster mode), which the job gives back when it ends.
   */
  private startInSlot(key: string, channel: Channel, first: { stream: Channel; tuner: Tuner }, owner: TranscodeRequest['owner'], lease?: Lease): Job<LiveSession> {
    const job = this.start(key, channel, first, owner);
    if (lease) {
      lease.lost.addEventListener('abort', () => void job.stop('lease lost'), { once: true });
      void job.done.then(() => lease.release()).catch((err) => this.log.warn({ channel: channel.id, error: (err as Error).message }, 'live: could not release a lease'));
    }
    // Under the tuner the session holds now: its first run may have moved on already.
    this.usedSlots(job.data.tunerId).set(channel.id, job);
    void job.done.then(() => {
      // A new job of the channel may hold the slot already (started while this one was stopping).
      const used = this.slots.get(job.data.tunerId);
      if (used?.get(channel.id) === job) used.delete(channel.id);
    });
    return job;
  }

  private start(key: string, channel: Channel, first: { stream: Channel; tuner: Tuner }, owner: TranscodeRequest['owner']): Job<LiveSession> {
    const { workDir, segmentSeconds, idleTimeoutMs, timeshiftSeconds, timeshiftMaxBytes } = this.options;
    const dir = path.join(workDir, `${channel.id}-${randomBytes(4).toString('hex')}`);
    const job = this.jobs.ensure<LiveSession>(key, () => ({
      kind: 'live',
      idleTimeoutMs,
      restart: { maxRestarts: Number.POSITIVE_INFINITY, initialDelayMs: 1000, maxDelayMs: 15_000 },
      data: {
        channelId: channel.id, name: channel.name, tunerId: first.tuner.id, streamId: first.stream.id, dir, run: -1, mode: 'copy', runs: new Map(), pid: 0, timelineEnd: 0,
        timeline: new LiveTimeline(dir, {
          segmentSeconds, timeshiftSeconds, maxBytes: timeshiftMaxBytes, now: () => Date.now(), log: this.log, channelId: channel.id,
        }),
        input: { ...(this.known.get(channel.id) ?? {}) }, viewers: [], positions: new Map(), seen: new Map(), owner, started: false, waiting: 0,
      },
      run: async (ctx) => {
        // Loops to switch from copy to transcode and to fail over to the next stream; when every
        // stream has failed, the failure goes to the job's restart policy.
        const session = ctx.data;
        // Streams that failed since one last played: each is tried once before the restart policy's backoff.
        const tried = new Set<number>();
        for (;;) {
          const next = this.nextStream(channel, session, true, tried);
          if (!next) throw new RunFailure(tunerFailure(tunerFull(this.firstTuner(channel))), false);
          this.moveSlot(session, next.tuner);
          session.streamId = next.stream.id;
          let switched: boolean;
          try {
            switched = await this.runOnce(key, session, next.tuner, tunerChannelOf(next.stream), ctx.signal, () => !!this.nextStream(channel, session, false, new Set([...tried, session.streamId])));
          } catch (err) {
            if (ctx.signal.aborted) throw err;
            const failure = err instanceof RunFailure ? err.failure : { status: 502 as const, kind: 'the stream stopped', detail: String(err), retryAfter: 5 };
            this.failures.set(next.stream.id, { reason: failure.kind, at: Date.now() });
            if (err instanceof RunFailure && err.produced) tried.clear();
            tried.add(next.stream.id);
            if (this.nextStream(channel, session, false, tried)) {
              this.log.warn({ channel: channel.id, stream: next.stream.id, reason: failure.kind, detail: failure.detail }, 'live: the stream failed; failing over to the next one');
              continue;
            }
            // Every stream has failed: viewers waiting for a first segment are told.
            if (err instanceof RunFailure && !err.produced) session.failure = failure;
            session.timeline.notify();
            // Nobody to retry for: the job ends, and its tuner slot (and transcode slot) with it.
            if (this.abandoned(session)) {
              this.log.info({ channel: channel.id, error: session.lastError?.detail }, 'live: the stream failed before it started and nobody waits for it; stopping');
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

  /**
   * One ffmpeg run of one stream. Resolves true when it was stopped to switch to transcoding;
   * throws when it failed: the stream could not be opened, ffmpeg exited, or the upstream ended
   * (while the channel has another stream to go to) or stalled.
   */
  private async runOnce(key: string, session: LiveSession, tuner: Tuner, tunerChannel: TunerChannel, signal: AbortSignal, canFailOver: () => boolean): Promise<boolean> {
    const { segmentSeconds, stallTimeoutMs, readyTimeoutMs } = this.options;
    session.failure = undefined;
    const run = ++session.run;
    let produced = false;
    const failed = (failure: LiveFailure): Error => {
      if (!signal.aborted) session.lastError = failure;
      session.timeline.notify();
      return new RunFailure(failure, produced);
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
      const refused = await this.reserveTranscode(session, needing?.owner ?? session.owner);
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
      // The first stream of each kind this run reads: another stream of the channel may carry other codecs.
      const found = new Set<string>();
      let ended = false;
      // ffmpeg's MPD names no frame rate when its probe averaged none (a short probe on a busy machine).
      let inputFrameRate: string | undefined;
      const proc = this.ffmpeg.spawn(args, {
        signal, label: key, secrets: source.secrets,
        onStderrLine: (line) => {
          if (RECONNECTING.test(line)) ended = true;
          else if (/^Input #0/.test(line)) inInput = true;
          else if (/^(Output #0|Stream mapping:)/.test(line)) inInput = false;
          else if (inInput) {
            const parsed = parseInputStreamLine(line);
            if (parsed && !found.has(parsed[0])) {
              found.add(parsed[0]);
              session.input[parsed[0]] = parsed[1];
              if (parsed[0] === 'video') inputFrameRate = parseInputFrameRate(line);
            }
          }
        },
      });
      session.pid = proc.pid;
      session.stopRun = () => proc.stop();
      const output = new SegmenterOutput(out, offsetSeconds);
      let lastSegment = Date.now();
      const take = async () => {
        for (const slot of await output.next()) {
          lastSegment = Date.now();
          if (!produced) {
            produced = true;
            session.started = true;
            session.runs.set(run, { mode, video: session.input.video });
            this.known.set(session.channelId, { ...session.input });
            session.lastError = undefined;
          }
          for (const s of slot) if (s.rep.kind === 'video' && !s.rep.frameRate) s.rep.frameRate = inputFrameRate;
          await session.timeline.add(run, slot);
          for (const s of slot) session.timelineEnd = Math.max(session.timelineEnd, offsetSeconds + (s.start + s.duration) / s.rep.timescale);
        }
      };
      let exited = false;
      const exit = proc.exited.finally(() => { exited = true; });
      let cut: LiveFailure | undefined;
      try {
        while (!exited) {
          // Stalled: no segment for stallTimeout beyond the segments' own length; no first one within
          // readyTimeout (what a viewer waits; long keyframe intervals and probing make a start slow).
          const target = session.timeline.targetDuration() * 1000;
          const allowed = produced ? stallTimeoutMs + target : Math.max(readyTimeoutMs, stallTimeoutMs + 2 * target);
          if (Date.now() - lastSegment > allowed) cut = stalled(Math.round(stallTimeoutMs / 1000));
          // The upstream ended and ffmpeg would connect again: another stream is better, when there is one.
          else if (ended && canFailOver()) cut = { status: 502, kind: 'the source ended the stream', detail: 'the upstream connection ended', retryAfter: 5 };
          if (cut) {
            await proc.stop();
            break;
          }
          const needs = session.mode === 'copy' && session.input.video ? session.viewers.find((v) => !canCopy(v.caps, session.input)) : undefined;
          if (needs) {
            this.known.set(session.channelId, { ...session.input });
            session.refused = await this.reserveTranscode(session, needs.owner);
            if (!session.refused) {
              if (session.mode === 'copy') this.switchToTranscode(session, 'a viewer cannot decode the channel as it is');
            }
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
      if (cut) throw failed(cut);
      if (result.expected && session.mode !== mode) return true;
      if (!fullProbe && !produced && PROBE_TOO_SHORT.test(result.stderrTail)) {
        // Keyframes further apart than a segment: probe as long as ffmpeg likes, now (viewers keep
        // waiting) and for the channel's next sessions.
        this.fullProbe.add(session.channelId);
        this.log.info({ channel: session.channelId }, 'live: codecs not found within one segment; probing longer');
        return this.runOnce(key, session, tuner, tunerChannel, signal, canFailOver);
      }
      if (mode === 'copy' && !produced && session.input.video !== guessed) {
        // Copied on the guess that the video is H.264, which it was not: again at once, knowing it.
        this.log.info({ channel: session.channelId, video: session.input.video }, 'live: the video is not what was guessed; copying it as it is');
        return this.runOnce(key, session, tuner, tunerChannel, signal, canFailOver);
      }
      throw failed(ffmpegFailure(result.stderrTail, result.code, source.failure?.()));
    } catch (err) {
      if (err instanceof RunFailure) throw err;
      throw failed({ status: 502, kind: 'the stream stopped', detail: (err as Error).message, retryAfter: 5 });
    }
  }
}

/** A run that failed, why, and whether it had produced segments. */
class RunFailure extends Error {
  constructor(readonly failure: LiveFailure, readonly produced: boolean) {
    super(`${failure.kind}: ${failure.detail}`);
  }
}

const stalled = (seconds: number): LiveFailure => ({
  status: 502, kind: `the source sent nothing for ${seconds} s`, detail: 'no new segment came from the upstream', retryAfter: 5,
});

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

const YIELD_TOPIC = 'live.yield';

/** Cluster mode: the channel's session runs on another node (`url`: its advertiseUrl); a viewer is sent there. */
export class HeldElsewhere extends AppError {
  constructor(channelName: string, readonly node: string, readonly url: string | null) {
    super(409, 'ANTENNA_CONFLICT', `${channelName} is playing on another node (${node})`);
  }
}

/** A refusal of the transcode budget as the failure viewers are told of. */
function refusal(refused: TranscodeRefusal): LiveFailure {
  const reason = refused.message.charAt(0).toLowerCase() + refused.message.slice(1);
  return { status: 503, kind: reason, detail: reason, retryAfter: refused.retryAfter };
}
