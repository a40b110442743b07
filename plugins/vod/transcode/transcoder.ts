/**
 * VOD transcodes and remuxes as jobs: one per item, version, variant (method,
 * height, bitrate, audio track) and device, `vod:<item>:<token>:<user>:<device>`
 * in the job list. The first manifest request starts it (ffmpeg from segment
 * 0); segment requests keep it alive; idle for idleTimeout, it stops, its
 * ffmpeg exits and its files go. A segment request for a job that idled away
 * recreates it from the token in its URL.
 *
 * Transcodes (video encoded) run within the server's transcode budget
 * (coreServices.transcodes): a job takes a slot when its ffmpeg starts. A user
 * at their own limit who opens a transcode on a device that already runs one
 * has the oldest of those stopped (the player moved on: another title, audio track
 * or quality), as Jellyfin and Plex do per device. In cluster mode a transcode job
 * also holds leases that count it against the same limits across all nodes.
 */
import { createHash, randomBytes } from 'node:crypto';
import path from 'node:path';
import { errors, type AuthUser, type Cluster, type FfmpegService, type Job, type JobManager, type Logger, type TranscodeBudget, type TranscodeSlot } from 'antenna/sdk';
import type { MediaFile } from '../model.js';
import type { VodStore } from '../store.js';
import { readKeyframes } from './keyframes.js';
import { fixedPlan, keyframePlan } from './segment-plan.js';
import { VodSession, type Plan } from './session.js';
import { tokenOf, type Variant } from './variant.js';

export interface TranscoderOptions {
  workDir: string;
  segmentSeconds: number;
  idleTimeoutMs: number;
  /** x264 preset for transcodes. */
  preset: string;
}

export interface SessionRequest {
  itemId: string;
  file: MediaFile;
  variant: Variant;
  user: Pick<AuthUser, 'id' | 'admin' | 'deviceId'>;
}

export const JOB_KIND = 'vod-transcode';

export class Transcoder {
  /** Keyframe scans in flight or done, per file version: concurrent manifests of one file scan once. */
  private readonly keyframeScans = new Map<string, Promise<number[]>>();

  /** The last admission queued per device (`<user>:<device>`). */
  private readonly admissions = new Map<string, Promise<void>>();

  /** Refusals because the user is at their own limit (another job of theirs may make room). */
  private readonly userRefusals = new WeakSet<Error>();

  constructor(
    private readonly jobs: JobManager,
    private readonly budget: TranscodeBudget,
    private readonly ffmpeg: FfmpegService,
    private readonly store: VodStore,
    private readonly log: Logger,
    readonly options: TranscoderOptions,
    /** Cluster mode: the limits are counted across nodes too (see `reserve`). */
    private readonly cluster?: Cluster,
  ) {}

  /** The job key of a request: the device is hashed (Device-Id headers are free text). */
  jobKey(r: SessionRequest): string {
    return `vod:${r.itemId}:${tokenOf(r.variant)}:${this.owner(r)}`;
  }

  /** `<user>:<device>` at the end of a job key. */
  private owner(r: SessionRequest): string {
    return `${r.user.id}:${createHash('sha256').update(r.user.deviceId).digest('hex').slice(0, 12)}`;
  }

  /**
   * The job for a manifest request with its first run under way; 503 when the transcode budget
   * refuses it (a job it created for nothing is dropped at once). A device's admissions run one at
   * a time, so the transcode a replacement makes room for is the one that takes the room.
   */
  async open(r: SessionRequest): Promise<VodSession> {
    const key = this.jobKey(r);
    const session = this.session(r);
    const start = async () => {
      await session.reserve();
      session.ensureStarted();
    };
    return this.oneAtATime(this.owner(r), async () => {
      try {
        try {
          await start();
        } catch (err) {
          if (!this.userRefusals.has(err as Error) || !(await this.stopOtherTranscodes(r, key))) throw err;
          await start();
        }
      } catch (err) {
        await this.dropIfUnused(r);
        throw err;
      }
      return session;
    });
  }

  /** Runs `task` after the tasks queued before it under the same name. */
  private async oneAtATime<T>(name: string, task: () => Promise<T>): Promise<T> {
    const before = this.admissions.get(name) ?? Promise.resolve();
    const mine = before.then(task, task);
    const settled = mine.then(() => {}, () => {});
    this.admissions.set(name, settled);
    settled.then(() => { if (this.admissions.get(name) === settled) this.admissions.delete(name); });
    return mine;
  }

  /** Stops the request's job if no ffmpeg ever ran in it (its first start was refused): nothing to keep. */
  async dropIfUnused(r: SessionRequest): Promise<void> {
    const job = this.jobs.get<VodSession>(this.jobKey(r));
    if (job && job.state === 'running' && !job.data.run) await job.stop('refused by the transcode budget');
  }

  /** Stops the oldest transcode holding a slot that this user runs on this device (but `keep`); whether there was one. */
  private async stopOtherTranscodes(r: SessionRequest, keep: string): Promise<boolean> {
    const oldest = this.jobs.list()
      .filter((j) => j.kind === JOB_KIND && j.state === 'running' && j.key !== keep && j.key.endsWith(`:${this.owner(r)}`) && (this.jobs.get<VodSession>(j.key)?.data.holdsSlot || this.jobs.get<VodSession>(j.key)?.data.reserved))
      .sort((a, b) => a.startedAt.localeCompare(b.startedAt))[0];
    if (!oldest) return false;
    this.log.info({ event: 'transcode_replaced', job: oldest.key, by: keep }, 'vod transcode: replaced by a newer one of the same device');
    await this.jobs.get(oldest.key)?.stop('replaced by a newer transcode of the same device');
    return true;
  }

  private admit(r: SessionRequest): () => TranscodeSlot {
    return () => {
      const answer = this.budget.reserve({ owner: r.user, label: `vod:${r.itemId}` });
      if ('slot' in answer) return answer.slot;
      const err = errors.unavailable(answer.message, answer.retryAfter);
      if (answer.refused === 'user') this.userRefusals.add(err);
      throw err;
    };
  }

  /**
   * Cluster mode: a transcode job's place in the limits of all nodes (budget.share: leases held
   * while the job lives, the job key recorded so that other nodes send its requests here).
   */
  private reserve(r: SessionRequest, key: string): (() => Promise<{ release(): Promise<void> }>) | undefined {
    if (!this.cluster?.enabled) return undefined;
    return async () => {
      const answer = await this.budget.share({ owner: r.user, label: `vod:${r.itemId}`, job: key });
      if ('share' in answer) return answer.share;
      const err = errors.unavailable(answer.message, answer.retryAfter);
      if (answer.refused === 'user') this.userRefusals.add(err);
      throw err;
    };
  }

  /**
   * Cluster mode: the node a request should go to instead of this one: the node running its
   * job, else (`place`, a play request that would start a transcode here) one with spare
   * capacity when this node has none. Undefined: here.
   */
  async elsewhere(r: SessionRequest, place: boolean): Promise<{ node: string; url: string } | undefined> {
    if (!this.cluster?.enabled) return undefined;
    const key = this.jobKey(r);
    if (this.jobs.get(key)?.state === 'running') return undefined;
    if (r.variant.method !== 'transcode') return undefined;
    return (await this.budget.runner(key)) ?? (place ? this.budget.placement() : undefined);
  }

  /** The running job for the request, or a new one (without ffmpeg yet). Synchronous: one job per key. */
  session(r: SessionRequest): VodSession {
    const key = this.jobKey(r);
    const job: Job<VodSession> = this.jobs.ensure<VodSession>(key, () => {
      const dir = path.join(this.options.workDir, `${r.itemId}-${randomBytes(6).toString('hex')}`);
      const session = new VodSession(r.itemId, r.file, r.variant, dir, this.plan(r.file, r.variant), {
        ffmpeg: this.ffmpeg, log: this.log, segmentSeconds: this.options.segmentSeconds, preset: this.options.preset,
        keepAliveMs: Math.max(100, Math.min(1000, this.options.idleTimeoutMs / 3)), admit: this.admit(r), reserve: this.reserve(r, key),
      });
      return {
        kind: JOB_KIND,
        data: session,
        idleTimeoutMs: this.options.idleTimeoutMs,
        run: async (ctx) => {
          session.progress = (f) => ctx.progress(f);
          // The job lives until it is stopped (idle timeout, shutdown); ffmpeg runs come and go inside it.
          await new Promise<void>((resolve) => {
            if (ctx.signal.aborted) resolve();
            else ctx.signal.addEventListener('abort', () => resolve(), { once: true });
          });
          await session.close().catch((err: Error) => this.log.warn({ err: err.message, item: r.itemId }, 'vod transcode: could not remove its files'));
        },
      };
    });
    job.touch();
    job.data.touch = () => job.touch();
    return job.data;
  }

  /** Segment boundaries: fixed-length for transcodes, at the source's keyframes when the video is copied. */
  private async plan(file: MediaFile, variant: Variant): Promise<Plan> {
    const info = file.info!;
    if (variant.method === 'transcode' || !info.video) return { bounds: fixedPlan(info.duration, this.options.segmentSeconds) };
    const keyframes = await this.keyframes(file, info.video.index);
    return { bounds: keyframePlan(keyframes, info.duration, this.options.segmentSeconds), keyframes };
  }

  private keyframes(file: MediaFile, streamIndex: number): Promise<number[]> {
    const id = `${file.id}:${file.size}:${file.mtimeMs}`;
    let scan = this.keyframeScans.get(id);
    if (!scan) {
      scan = (async () => {
        const cached = await this.store.keyframes(file);
        if (cached?.length) return cached;
        const started = Date.now();
        const times = await readKeyframes(this.ffmpeg, file.path, streamIndex);
        this.log.info({ event: 'keyframes_read', file: file.id, keyframes: times.length, ms: Date.now() - started }, 'vod: keyframes read');
        await this.store.saveKeyframes(file, times);
        return times;
      })();
      this.keyframeScans.set(id, scan);
      // Kept in memory only while in flight (the database holds them after), and forgotten on failure.
      scan.then(() => this.keyframeScans.delete(id), () => this.keyframeScans.delete(id));
    }
    return scan;
  }
}
