/**
 * Packaging: ffmpeg writes CMAF (fMP4) segments once, with an HLS and a DASH
 * manifest beside them (its dash muxer with hls_playlist); a packager turns the
 * manifest ffmpeg wrote into the one a player gets, every URL in it made by
 * the caller (so it can carry a signed key). The hls-packager and
 * dash-packager plugins offer theirs as services.
 */
import { createServiceRef } from './refs.js';

export type PackageFormat = 'hls' | 'dash';

export interface Packager {
  format: PackageFormat;
  contentType: string;
  /** The manifest ffmpeg's segmenter writes for this format, relative to its output dir. */
  entry: string;
  /**
   * The manifest as players get it. `link(file)` turns a file name ffmpeg wrote
   * (a media playlist, an init or media segment) into the URL to hand out.
   */
  rewrite(manifest: string, link: (file: string) => string): string;
}

export const hlsPackagerService = createServiceRef<Packager>({ id: 'hls-packager.packager', owner: 'hls-packager' });
export const dashPackagerService = createServiceRef<Packager>({ id: 'dash-packager.packager', owner: 'dash-packager' });

/**
 * ffmpeg output arguments for a live CMAF segmenter writing `manifest.mpd`,
 * `master.m3u8`, `media_<n>.m3u8`, `init-stream<n>.mp4` and
 * `chunk-stream<n>-<number>.mp4` into `dir`. Each stream gets its own
 * adaptation set / rendition, as dash.js and Shaka require.
 */
export function liveSegmenterArgs(options: { dir: string; segmentSeconds: number; windowSegments?: number }): string[] {
  const window = options.windowSegments ?? 10;
  return [
    '-f', 'dash',
    '-seg_duration', String(options.segmentSeconds),
    '-window_size', String(window),
    '-extra_window_size', String(window),
    '-use_template', '1', '-use_timeline', '1',
    '-hls_playlist', '1',
    '-remove_at_exit', '0',
    `${options.dir}/manifest.mpd`,
  ];
}
