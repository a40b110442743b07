/**
 * VOD transcodes and remuxes as jobs: one per item, version, variant (method,
 * height, bitrate, audio track) and device, `vod:<item>:<token>:<user>:<device>`
 * in the job list. The first manifest request starts it (ffmpeg from segment
 * 0); segment requests keep it alive; idle for idleTimeout, it stops, its
 * ffmpeg exits and its files go. A segment request for a job that idled away
 * recreates it from the token in its URL.
 */
import { createHash, randomBytes } from 'node:crypto';
import path from 'node:path';
import type { FfmpegService, Job, JobManager, Logger } from 'antenna/sdk';
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
  userId: number;
  deviceId: string;
}

export const JOB_KIND = 'vod-transcode';

export class Transcoder {
  /** Keyframe scans in flight or done, per file version: concurrent manifests of one file scan once. */
  private readonly keyframeScans = new Map<string, Promise<number[]>>();

  constructor(
    private readonly jobs: JobManager,
    private readonly ffmpeg: FfmpegService,
    private readonly store: VodStore,
    private readonly log: Logger,
    readonly options: TranscoderOptions,
  ) {}

  /** The job key of a request: the device is hashed (Device-Id headers are free text). */
  jobKey(r: SessionRequest): string {
    const device = createHash('sha256').update(r.deviceId).digest('hex').slice(0, 12);
    return `vod:${r.itemId}:${tokenOf(r.variant)}:${r.userId}:${device}`;
  }

  /** The running job for the request, or a new one (without ffmpeg yet). Synchronous: one job per key. */
  session(r: SessionRequest): VodSession {
    const key = this.jobKey(r);
    const job: Job<VodSession> = this.jobs.ensure<VodSession>(key, () => {
      const dir = path.join(this.options.workDir, `${r.itemId}-${randomBytes(6).toString('hex')}`);
      const session = new VodSession(r.itemId, r.file, r.variant, dir, this.plan(r.file, r.variant), {
        ffmpeg: this.ffmpeg, log: this.log, segmentSeconds: this.options.segmentSeconds, preset: this.options.preset,
        keepAliveMs: Math.max(100, Math.min(1000, this.options.idleTimeoutMs / 3)),
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
