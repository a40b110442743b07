/**
 * Puts a source into the page's <video>: a file the browser plays itself
 * (direct play), or HLS through hls.js (loaded on first use, its own chunk),
 * or the browser's own HLS where hls.js cannot run (older iOS Safari). Owns
 * everything that needs cleaning up: the hls.js instance, <track> elements
 * and their blob: URLs.
 */
import type HlsType from 'hls.js';
import type { ErrorData } from 'hls.js';
import { ApiError, authHeaders, blobUrl } from '../api.js';

export interface Source {
  /** Path to play; VOD and recording URLs carry a signed key, live ones need the Authorization header. */
  url: string;
  hls: boolean;
  live: boolean;
  /** Seconds to start at; undefined = the start (VOD) or the live edge. */
  start?: number;
  /** Load without playing (a track changed while paused stays paused). */
  paused?: boolean;
}

/** A subtitle track the player can show: a rendition of the HLS manifest, or a WebVTT file. */
export interface SubtitleChoice {
  key: string;
  label: string;
  language: string;
  hlsIndex?: number;
  vttUrl?: string;
}

export interface EngineEvents {
  /** Playback cannot go on (trying again may help). */
  fatal(error: Error): void;
  /** The browser wants a click before it plays: the native controls offer it. */
  blocked(): void;
  /** hls.js has read the manifest: its audio and subtitle renditions are known. */
  tracks(): void;
}

let hlsModule: Promise<typeof HlsType> | undefined;
/** hls.js is ~150 KB gzip: only the player loads it, and only once. */
export function loadHls(): Promise<typeof HlsType> {
  hlsModule ??= import('hls.js').then((m) => m.default);
  return hlsModule;
}

/** The server's `{"error"}` text of a failed playlist request, when hls.js kept it. */
function serverMessage(data: ErrorData): string | undefined {
  const xhr = data.networkDetails as XMLHttpRequest | undefined;
  try {
    if (xhr && typeof xhr.responseText === 'string' && xhr.responseText) {
      const body = JSON.parse(xhr.responseText) as { error?: unknown };
      if (typeof body.error === 'string') return body.error;
    }
  } catch { /* not JSON, or a binary response */ }
  return undefined;
}

function hlsFailure(data: ErrorData): Error {
  const status = data.response?.code ?? 0;
  const message = serverMessage(data);
  if (message) return new ApiError(status, message);
  if (data.type === 'networkError') {
    return new ApiError(status, status ? `The stream could not be loaded (HTTP ${status}).` : 'The stream could not be loaded: the server cannot be reached.');
  }
  if (data.type === 'mediaError') return new Error('This browser could not decode the stream.');
  return new Error(`Playback failed (${data.details}).`);
}

export class Engine {
  hls?: HlsType;
  private readonly trackElements: HTMLTrackElement[] = [];
  private readonly blobs = new Map<string, string>();
  private readonly cueKeys = new WeakMap<HTMLTrackElement, Set<string>>();
  private recoveredMedia = false;
  private destroyed = false;

  constructor(readonly video: HTMLVideoElement, private readonly events: EngineEvents) {}

  async load(source: Source, signal: AbortSignal): Promise<void> {
    this.detach();
    const { video } = this;
    if (!source.hls) {
      video.src = source.url;
      this.startAt(source.start);
      if (!source.paused) this.play();
      return;
    }
    const Hls = await loadHls();
    if (signal.aborted || this.destroyed) return;
    if (!Hls.isSupported()) {
      if (!video.canPlayType('application/vnd.apple.mpegurl')) throw new Error('This browser cannot play HLS streams.');
      // The browser's own HLS cannot send headers: only URLs that carry a signed key work here.
      if (!/[?&]key=/.test(source.url)) throw new Error('This browser cannot play this stream: try a current Chrome, Firefox, Edge or Safari.');
      video.src = source.url;
      this.startAt(source.start);
      if (!source.paused) this.play();
      return;
    }
    const hls = new Hls({
      // The token goes in a header, never in a URL; media URLs from the server carry their own keys too.
      xhrSetup: (xhr) => { for (const [name, value] of Object.entries(authHeaders())) xhr.setRequestHeader(name, value); },
      startPosition: source.start ?? -1,
      // A whole-title transcode produces segments on demand: give slow ones time rather than failing.
      fragLoadPolicy: { default: { maxTimeToFirstByteMs: 30_000, maxLoadTimeMs: 60_000, timeoutRetry: { maxNumRetry: 4, retryDelayMs: 0, maxRetryDelayMs: 0 }, errorRetry: { maxNumRetry: 6, retryDelayMs: 1000, maxRetryDelayMs: 8000 } } },
      backBufferLength: 60,
      renderTextTracksNatively: false,
    });
    this.hls = hls;
    hls.on(Hls.Events.MANIFEST_PARSED, () => { this.events.tracks(); if (!source.paused) this.play(); });
    hls.on(Hls.Events.SUBTITLE_TRACKS_UPDATED, () => this.events.tracks());
    hls.on(Hls.Events.AUDIO_TRACKS_UPDATED, () => this.events.tracks());
    hls.on(Hls.Events.CUES_PARSED, (_event, data) => {
      if (data.type !== 'subtitles') return;
      const index = data.subtitleTrack ? hls.subtitleTracks.indexOf(data.subtitleTrack) : -1;
      this.addCues(index >= 0 ? index : hls.subtitleTrack, data.cues as VTTCue[]);
    });
    hls.on(Hls.Events.ERROR, (_event, data) => {
      if (!data.fatal || this.hls !== hls) return;
      // A decode hiccup is often recoverable once; a second one is not.
      if (data.type === Hls.ErrorTypes.MEDIA_ERROR && !this.recoveredMedia) {
        this.recoveredMedia = true;
        hls.recoverMediaError();
        return;
      }
      this.events.fatal(hlsFailure(data));
    });
    hls.loadSource(source.url);
    hls.attachMedia(video);
  }

  /** Shows a subtitle choice, or none. */
  async showSubtitles(choice: SubtitleChoice | undefined, signal: AbortSignal): Promise<void> {
    const { hls } = this;
    if (hls && (choice === undefined || choice.hlsIndex !== undefined)) {
      hls.subtitleTrack = choice?.hlsIndex ?? -1;
      hls.subtitleDisplay = choice !== undefined;
      this.showOnly(choice && this.trackElement(choice));
      return;
    }
    if (!choice?.vttUrl) {
      this.showOnly(undefined);
      return;
    }
    let element = this.trackElements.find((t) => t.dataset.key === choice.key);
    if (!element) {
      // <track> cannot send the Authorization header: it gets a blob: copy of the WebVTT file.
      let url = this.blobs.get(choice.vttUrl);
      if (!url) {
        url = await blobUrl(choice.vttUrl, signal);
        if (signal.aborted || this.destroyed) { URL.revokeObjectURL(url); return; }
        this.blobs.set(choice.vttUrl, url);
      }
      element = this.trackElement(choice, url);
    }
    this.showOnly(element);
  }

  /**
   * The <track> of a choice. hls.js renditions get one without a file: hls.js hands over their
   * cues (CUES_PARSED) instead of rendering them, since its own tracks load a data: URL the
   * page's policy (media-src 'self' blob:) refuses.
   */
  private trackElement(choice: SubtitleChoice, src?: string): HTMLTrackElement {
    let element = this.trackElements.find((t) => t.dataset.key === choice.key);
    if (element) return element;
    element = document.createElement('track');
    element.kind = 'subtitles';
    element.label = choice.label;
    if (choice.language !== 'und') element.srclang = choice.language;
    if (src) element.src = src;
    element.dataset.key = choice.key;
    this.video.appendChild(element);
    element.track.mode = 'hidden';
    this.trackElements.push(element);
    return element;
  }

  private showOnly(element: HTMLTrackElement | undefined): void {
    for (const t of this.trackElements) t.track.mode = t === element ? 'showing' : 'disabled';
  }

  private addCues(index: number, cues: VTTCue[]): void {
    const choice = this.hlsSubtitles()[index];
    if (!choice) return;
    const element = this.trackElement(choice);
    let seen = this.cueKeys.get(element);
    if (!seen) this.cueKeys.set(element, (seen = new Set()));
    // A rendition's file may be parsed again (after a seek): each cue once.
    for (const cue of cues) {
      const key = `${cue.startTime}|${cue.endTime}|${cue.text}`;
      if (seen.has(key)) continue;
      seen.add(key);
      element.track.addCue(cue);
    }
  }

  /** The HLS manifest's subtitle renditions, as choices. */
  hlsSubtitles(): SubtitleChoice[] {
    return (this.hls?.subtitleTracks ?? []).map((t, i) => ({ key: `hls-${i}`, label: t.name || t.lang || `Track ${i + 1}`, language: t.lang ?? 'und', hlsIndex: i }));
  }

  private startAt(start: number | undefined): void {
    if (!start) return;
    const { video } = this;
    const seek = () => { video.currentTime = start; };
    if (video.readyState >= 1) seek();
    else video.addEventListener('loadedmetadata', seek, { once: true });
  }

  private play(): void {
    this.video.play().catch((err: Error) => {
      // AbortError: replaced by another load.
      if (err.name === 'NotAllowedError') this.events.blocked();
      else if (err.name !== 'AbortError') this.events.fatal(err);
    });
  }

  /** Stops whatever plays, keeping the fetched subtitle files for a reload of the same title. */
  private detach(): void {
    this.hls?.destroy();
    this.hls = undefined;
    this.recoveredMedia = false;
    for (const t of this.trackElements) t.remove();
    this.trackElements.length = 0;
    this.video.removeAttribute('src');
    this.video.load();
  }

  destroy(): void {
    this.destroyed = true;
    this.detach();
    for (const url of this.blobs.values()) URL.revokeObjectURL(url);
    this.blobs.clear();
  }
}
