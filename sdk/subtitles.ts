/**
 * Subtitle providers: where the `subtitles` plugin finds the subtitle tracks
 * of a VOD item (modelled on Jellyfin's ISubtitleProvider: list the tracks of
 * an item, fetch one). A plugin that lists `subtitles` in `dependsOn` adds
 * providers through `subtitlesExtensionPoint`:
 *
 *   env.registerInit({ deps: { subtitles: subtitlesExtensionPoint }, init({ subtitles }) { subtitles.addProvider(myProvider); } })
 *
 * The built-in providers are `embedded` (text streams inside the media file,
 * extracted with ffmpeg) and `external` (sidecar files next to it). Every
 * provider's tracks are served at /api/items/{id}/subtitle/<provider id>/<track id>
 * as WebVTT, listed by GET /api/items/{id}/subtitle-tracks and in the HLS and
 * DASH manifests of transcoded titles.
 */
import { createExtensionPoint } from './refs.js';
import type { AuthUser } from './services.js';
import type { CatalogFile, CatalogItem } from './vod.js';

/** A subtitle track as a provider describes it. */
export interface SubtitleTrack {
  /** Stable for this file: the last segment of the track's URL. 1-64 of [A-Za-z0-9_.-]. */
  id: string;
  /** ISO 639-1/-2 or BCP 47 code (`en`, `eng`, `pt-BR`), or null when unknown. */
  language: string | null;
  /** The track's own name, if it has one ("Commentary"); the label shown to users is built from it or the language. */
  title?: string | null;
  /** The source format, named as ffprobe names it: `subrip`, `ass`, `ssa`, `mov_text`, `webvtt`. */
  codec: string;
  forced?: boolean;
  default?: boolean;
  /** SDH / closed captions for the deaf and hard of hearing. */
  hearingImpaired?: boolean;
  /** True when the track is not inside the media file (a sidecar, a download). */
  external: boolean;
}

/** What a provider is asked about: one file (version) of one item, for one user. */
export interface SubtitleRequest {
  user: AuthUser;
  item: CatalogItem;
  file: CatalogFile;
  /** Aborted when the client goes away (or a listing takes too long): stop work and reject. */
  signal: AbortSignal;
}

export interface SubtitleProvider {
  /** URL segment and unique name: 1-32 of [a-z0-9-]. `embedded` and `external` are taken by the built-ins. */
  id: string;
  name: string;
  /** The file's tracks, in the order users should see them. A provider that fails is left out of the listing (and logged). */
  listTracks(request: SubtitleRequest): Promise<SubtitleTrack[]>;
  /**
   * One track as WebVTT text (`WEBVTT` header, then cues), or undefined when
   * this provider has no such track (the client gets 404). Use
   * `toWebVtt()` of the extension point to convert SubRip, ASS/SSA or raw bytes.
   * Throw `errors.*` for other answers.
   */
  fetchTrack(request: SubtitleRequest, trackId: string): Promise<string | undefined>;
}

/** Formats toWebVtt() reads. */
export type SubtitleFormat = 'srt' | 'vtt' | 'ass' | 'ssa';

export interface SubtitleRegistry {
  /** Adds a provider (during init; the registry closes once every plugin has initialised). */
  addProvider(provider: SubtitleProvider): void;
  /**
   * Subtitle text in any supported format → WebVTT. Bytes are decoded as
   * UTF-8 (or UTF-16 with a BOM), else as Windows-1252; styling beyond
   * italic/bold/underline is dropped; cue text and timings are kept exactly.
   */
  toWebVtt(data: Uint8Array | string, format: SubtitleFormat): string;
}

export const subtitlesExtensionPoint = createExtensionPoint<SubtitleRegistry>({ id: 'subtitles.providers', owner: 'subtitles' });
