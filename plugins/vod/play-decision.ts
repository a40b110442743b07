/**
 * The play decision of PRODUCT.md §2, in its order: `transcode` when the video
 * does not fit (codec, height, HDR, bitrate over maxBitrate); else
 * `audio-only` (video copied, audio made AAC stereo) when the audio codec or
 * channel count does not fit; else `remux` when only the container does not
 * fit; else `direct`.
 */
import type { DeviceCaps } from 'antenna/sdk';
import type { AudioInfo, MediaInfo } from './model.js';

export type PlayMethod = 'direct' | 'remux' | 'audio-only' | 'transcode';

export interface PlayOptions {
  /** bits per second the client asks not to exceed. */
  maxBitrate?: number;
  /** Audio stream to play: its position among the file's audio streams (0 = first). */
  audioTrack?: number;
}

export interface PlayDecision {
  method: PlayMethod;
  /** Why it is not `direct` (for logs and the API's curious). */
  reasons: string[];
  /** The audio stream played (undefined for a file without audio). */
  audio: AudioInfo | undefined;
  /** Output height when transcoding (never above the source). */
  height: number | undefined;
  /** Video bitrate when transcoding (bits per second). */
  videoBitrate: number | undefined;
}

/** Video codecs that fragmented MP4 (our HLS and DASH) can carry when copied. */
const FMP4_VIDEO = new Set(['h264', 'hevc', 'av1', 'vp9']);
/** Audio codecs fragmented MP4 can carry when copied; anything else is re-encoded. */
const FMP4_AUDIO = new Set(['aac', 'mp3', 'ac3', 'eac3', 'opus', 'flac', 'alac']);

/** Containers served as they are; `format` of a direct play-info is `directFormat(container)`. */
const DIRECT_CONTAINERS = new Set(['mp4', 'mkv', 'webm']);

export function directFormat(container: string): 'mp4' | 'mkv' {
  return container === 'mp4' ? 'mp4' : 'mkv';
}

/** A rough bitrate for H.264 at a height, used when the client sets no cap (bits per second). */
export function defaultVideoBitrate(height: number): number {
  if (height <= 360) return 1_000_000;
  if (height <= 480) return 1_800_000;
  if (height <= 720) return 3_500_000;
  if (height <= 1080) return 7_000_000;
  return 16_000_000;
}

export function decide(info: MediaInfo, caps: DeviceCaps, options: PlayOptions = {}): PlayDecision {
  const reasons: string[] = [];
  const audio = info.audio[options.audioTrack ?? defaultAudioIndex(info)];
  const video = info.video;

  const videoReasons: string[] = [];
  if (video) {
    if (!caps.video.has(video.codec)) videoReasons.push(`video codec ${video.codec} not supported`);
    if (caps.maxHeight && video.height > caps.maxHeight) videoReasons.push(`height ${video.height} over ${caps.maxHeight}`);
    if (video.hdr && !caps.hdr) videoReasons.push('HDR not supported');
    if (options.maxBitrate && info.bitrate > options.maxBitrate) videoReasons.push(`bitrate ${info.bitrate} over ${options.maxBitrate}`);
  }
  const audioReasons: string[] = [];
  if (audio) {
    if (!caps.audio.has(audio.codec)) audioReasons.push(`audio codec ${audio.codec} not supported`);
    if (audio.channels > caps.audioChannels) audioReasons.push(`${audio.channels} audio channels over ${caps.audioChannels}`);
  }
  const containerReasons: string[] = [];
  if (!caps.containers.has(info.container)) containerReasons.push(`container ${info.container} not supported`);
  // Play info names a direct file's format as mkv or mp4 (webm is Matroska); anything else is repackaged.
  else if (!DIRECT_CONTAINERS.has(info.container)) containerReasons.push(`container ${info.container} is not played directly`);
  // A direct file plays its default audio; another track needs a stream we make.
  if (options.audioTrack !== undefined && audio && audio !== info.audio[defaultAudioIndex(info)]) containerReasons.push('another audio track was chosen');
  // Anything but direct play copies into fragmented MP4, which not every codec fits.
  if (containerReasons.length || audioReasons.length) {
    if (video && !videoReasons.length && !FMP4_VIDEO.has(video.codec)) videoReasons.push(`video codec ${video.codec} cannot be repackaged`);
    if (audio && !audioReasons.length && !FMP4_AUDIO.has(audio.codec)) audioReasons.push(`audio codec ${audio.codec} cannot be repackaged`);
  }

  let method: PlayMethod;
  if (videoReasons.length) method = 'transcode';
  else if (audioReasons.length) method = 'audio-only';
  else if (containerReasons.length) method = 'remux';
  else method = 'direct';
  reasons.push(...videoReasons, ...audioReasons, ...containerReasons);

  let height: number | undefined;
  let videoBitrate: number | undefined;
  if (method === 'transcode' && video) {
    height = Math.min(video.height || 720, caps.maxHeight ?? Infinity);
    height -= height % 2; // H.264 wants even dimensions
    videoBitrate = defaultVideoBitrate(height);
    // Leave room for the audio (AAC stereo at 160 kb/s) under the client's cap.
    if (options.maxBitrate) videoBitrate = Math.max(200_000, Math.min(videoBitrate, options.maxBitrate - 192_000));
  }
  return { method, reasons, audio, height, videoBitrate };
}

/** The default audio stream: the one flagged default, else the first. */
export function defaultAudioIndex(info: MediaInfo): number {
  const i = info.audio.findIndex((a) => a.default);
  return i >= 0 ? i : 0;
}
