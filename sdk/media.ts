/**
 * Packaging: a stream is described once as a presentation (periods of
 * representations with their segments) and the hls-packager and dash-packager
 * plugins write it as the manifests players get. Live TV and recordings use
 * them; every URL in a presentation is the caller's (so it can carry a signed key).
 *
 *   env.registerInit({ deps: { hls: hlsPackagerService, dash: dashPackagerService }, init({ hls, dash }) { … } })
 */
import { createServiceRef } from './refs.js';

export type PackageFormat = 'hls' | 'dash';

/** What a player is told about a stream, the same for HLS and DASH. */
export interface Presentation {
  /**
   * live: a window sliding along a running stream (dynamic MPD; HLS without a playlist type);
   * event: growing from its start (dynamic MPD; HLS EVENT); vod: complete (static MPD; HLS VOD with ENDLIST).
   */
  type: 'live' | 'event' | 'vod';
  /**
   * Seconds: HLS EXT-X-TARGETDURATION for every media playlist, and the DASH update period. Chosen
   * once for the presentation's life: every segment's duration, rounded, is at most this.
   */
  targetDuration: number;
  /** live and event: the wall-clock time (ms since epoch) presentation time 0 stands for (DASH availabilityStartTime, HLS EXT-X-PROGRAM-DATE-TIME). */
  availabilityStart?: number;
  /** live and event: when the document is written (ms since epoch): DASH publishTime and the clock players sync to. */
  now?: number;
  /** live: seconds of media available behind the live edge (DASH timeShiftBufferDepth). */
  windowSeconds?: number;
  /** HLS EXT-X-MEDIA-SEQUENCE: the number of the first segment listed, when segments have left the front (live). Default 0. */
  mediaSequence?: number;
  /**
   * live: the wall-clock time (ms since epoch) players should start at rather than near the live
   * edge (start over): HLS EXT-X-START in the media playlists, DASH a suggestedPresentationDelay
   * reaching back to it. Since SDK 1.1.
   */
  startAt?: number;
  /** live and event: the URL players fetch updates of the MPD from (DASH Location). Since SDK 1.1. */
  location?: string;
  /** In order, not overlapping; each is one unbroken timeline (a discontinuity in HLS, a Period in DASH). */
  periods: PresentationPeriod[];
}

export interface PresentationPeriod {
  /** Stable for the period's life (DASH Period@id). */
  id: string;
  /** Discontinuities before this period since the presentation began (HLS EXT-X-DISCONTINUITY-SEQUENCE of a playlist starting here). */
  sequence: number;
  /** Presentation time (seconds) the period starts at. */
  start: number;
  /** Media time (seconds, the same in every representation) that `start` stands for (DASH presentationTimeOffset). */
  mediaStart: number;
  representations: PresentationRepresentation[];
}

/** What a manifest says of one representation (a rendition of the stream). */
export interface MediaRepresentation {
  /**
   * Names the same rendition in every period ('video', 'audio'): an HLS media playlist
   * covers one id across periods, and a DASH AdaptationSet keeps it.
   */
  id: string;
  kind: 'video' | 'audio';
  /** RFC 6381 codec string, as the init segment says (e.g. avc1.64001f, mp4a.40.2). */
  codecs: string;
  /** Bits per second: at least the peak of its segments' bit rates (players size buffers and choose by it). */
  bandwidth: number;
  width?: number;
  height?: number;
  /** e.g. "25" or "30000/1001". */
  frameRate?: string;
  sampleRate?: number;
  channels?: number;
  /** BCP 47 language tag. */
  language?: string;
  /** Shown to users (HLS NAME). */
  name?: string;
  /** Units per second of the segments' times. */
  timescale: number;
}

export interface PresentationRepresentation extends MediaRepresentation {
  /** URL of the init segment. */
  init: string;
  /** URL of a media segment, with `$Number$` (or `$Number%05d$`) for the segment's number. */
  media: string;
  /** Finished segments in order, with consecutive numbers. */
  segments: PresentationSegment[];
}

export interface PresentationSegment {
  number: number;
  /** Media time and duration, in the representation's timescale. */
  start: number;
  duration: number;
}

/** HLS: a master playlist naming one media playlist per representation id. */
export interface HlsPackager {
  contentType: string;
  /** The master playlist, from the last period's representations; `playlistUrl(id)` is the media playlist's URL. */
  master(presentation: Presentation, playlistUrl: (representationId: string) => string): string;
  /** The media playlist of one representation id across the periods that have it. */
  media(presentation: Presentation, representationId: string): string;
}

/** DASH: one MPD for the whole presentation. */
export interface DashPackager {
  contentType: string;
  mpd(presentation: Presentation): string;
}

export const hlsPackagerService = createServiceRef<HlsPackager>({ id: 'hls-packager.packager', owner: 'hls-packager' });
export const dashPackagerService = createServiceRef<DashPackager>({ id: 'dash-packager.packager', owner: 'dash-packager' });
