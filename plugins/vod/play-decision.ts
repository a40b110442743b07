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
  /** Output height when transcoding (a ladder height, never above the source). */
  height: number | undefined;
  /** Video bitrate when transcoding (a ladder bitrate, bits per second). */
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

/**
 * The transcode ladder, best first: H.264 is made only at these heights and
 * video bitrates (kb/s), so however a client words its request (maxBitrate,
 * Device-Max-Height) it names one of a dozen variants per audio track.
 */
export const LADDER: readonly { height: number; kbps: number }[] = [
  { height: 2160, kbps: 16_000 }, { height: 1440, kbps: 10_000 }, { height: 1080, kbps: 7_000 }, { height: 1080, kbps: 4_500 },
  { height: 720, kbps: 3_500 }, { height: 720, kbps: 2_200 }, { height: 480, kbps: 1_500 }, { height: 360, kbps: 1_000 },
  { height: 360, kbps: 700 }, { height: 240, kbps: 450 }, { height: 180, kbps: 300 }, { height: 180, kbps: 200 },
];

/** Room left for the AAC stereo audio under a client's maxBitrate (bits per second). */
const AUDIO_ALLOWANCE = 192_000;

/**
 * The ladder rung for a source of `sourceHeight` lines, a device cap and a
 * maxBitrate: the best rung no taller than the cap (the lowest rungs when the
 * cap is below them) whose bitrate leaves room for the audio, else the lowest.
 * The output is never taller than the source.
 */
export function ladderRung(sourceHeight: number, maxHeight: number | undefined, maxBitrate: number | undefined): { height: number; kbps: number } {
  const cap = Math.min(sourceHeight || 720, maxHeight ?? Infinity);
  const lowest = LADDER[LADDER.length - 1]!.height;
  const eligible = LADDER.filter((r) => r.height <= Math.max(cap, lowest));
  const budget = maxBitrate ? maxBitrate - AUDIO_ALLOWANCE : Infinity;
  const rung = eligible.find((r) => r.kbps * 1000 <= budget) ?? LADDER[LADDER.length - 1]!;
  const source = (sourceHeight || rung.height) - ((sourceHeight || rung.height) % 2); // H.264 wants even dimensions
  return { height: Math.min(rung.height, source), kbps: rung.kbps };
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
    const rung = ladderRung(video.height, caps.maxHeight, options.maxBitrate);
    height = rung.height;
    videoBitrate = rung.kbps * 1000;
  }
  return { method, reasons, audio, height, videoBitrate };
}

/** The default audio stream: the one flagged default, else the first. */
export function defaultAudioIndex(info: MediaInfo): number {
  const i = info.audio.findIndex((a) => a.default);
  return i >= 0 ? i : 0;
}
