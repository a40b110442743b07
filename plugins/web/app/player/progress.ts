/**
 * Reports playback progress to continue-watching: every ~10 s while playing,
 * on pause, after a seek, at the end and when the player is left. Nothing is
 * reported before playback has started, so opening and leaving the player
 * does not move the saved position.
 */
import { api } from '../api.js';
import type { ContinueEntry } from '../types.js';
import { remember } from './watch-state.js';

const INTERVAL_MS = 10_000;

export class ProgressReporter {
  private started = false;
  private lastSent = -1;
  /** The position as last played: a <video> being emptied (a reload, leaving) reads 0. */
  private position = -1;
  private duration = 0;
  private readonly timer: ReturnType<typeof setInterval>;
  private readonly onPlaying = () => { this.started = true; };
  private readonly onTime = () => {
    if (this.video.readyState < 1 || this.video.seeking) return;
    this.position = this.video.currentTime;
    // A growing recording has no duration yet (Infinity): 0 tells the server to use its own.
    this.duration = Number.isFinite(this.video.duration) ? this.video.duration : 0;
  };
  private readonly onEvent = () => { this.onTime(); this.send(); };
  private readonly onHide = () => this.send(true);

  constructor(private readonly videoId: string, private readonly video: HTMLVideoElement) {
    video.addEventListener('playing', this.onPlaying);
    video.addEventListener('timeupdate', this.onTime);
    for (const name of ['pause', 'seeked', 'ended']) video.addEventListener(name, this.onEvent);
    window.addEventListener('pagehide', this.onHide);
    this.timer = setInterval(() => { if (!video.paused && !video.ended) this.send(); }, INTERVAL_MS);
  }

  /** Sends the position now; `leaving` uses a keepalive request, which outlives the page. */
  send(leaving = false): void {
    const { position, duration } = this;
    if (!this.started || position < 0 || Math.abs(position - this.lastSent) < 0.5) return;
    this.lastSent = position;
    const path = `/api/continue-watching/${encodeURIComponent(this.videoId)}/progress`;
    const body = { position: Math.round(position * 1000) / 1000, duration: Math.round(duration * 1000) / 1000 };
    // Leaving: sendBeacon cannot carry the Authorization header; a keepalive request can, and outlives the page.
    api<ContinueEntry>(path, { method: 'POST', body, keepalive: leaving }).then(remember, () => {
      // A lost report is replaced by the next one.
      if (!leaving) this.lastSent = -1;
    });
  }

  /** A reload (another audio track, a retry) is not progress: wait for playback again. */
  pause(): void {
    this.send();
    this.started = false;
  }

  stop(): void {
    this.send(true);
    clearInterval(this.timer);
    this.video.removeEventListener('playing', this.onPlaying);
    this.video.removeEventListener('timeupdate', this.onTime);
    for (const name of ['pause', 'seeked', 'ended']) this.video.removeEventListener(name, this.onEvent);
    window.removeEventListener('pagehide', this.onHide);
  }
}
