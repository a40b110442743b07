/**
 * The ffmpeg command of one transcoder run: from `start` seconds into the file
 * to its end, as ONE fragmented MP4 stream on stdout (a fragment at every
 * video keyframe, video and audio muxed), which the segmenter splits into
 * per-track CMAF segments along the plan.
 *
 * Why not ffmpeg's hls or dash muxer: measured with ffmpeg 4.1, the hls muxer
 * cuts at the first keyframe after hls_time × (start_number + n) counted from
 * the run's first packet, so a run restarted at segment k cuts elsewhere than
 * the first run did, and it writes every run's first fragment with tfdt 0 (the
 * real start goes into an edit list). Here the cut points are ours and the
 * timestamps are the file's own, in every run:
 *
 * - timestamps: without -copyts ffmpeg maps the input to (t − file start −
 *   ss); `-output_ts_offset ss` maps it back to (t − file start) whatever ss
 *   was. `frag_discont` with `-use_editlist 0 -avoid_negative_ts disabled`
 *   makes the mp4 muxer write those as the fragments' tfdt (measured: a run
 *   from 12 s starts at tfdt 12.0 s, the same fragment of a run from 0 s too).
 *   The timeline starts at 0, as players that wait for the clock to reach
 *   the first timestamp (GStreamer's playbin) need. Decode times must not go
 *   below 0 (tfdt is unsigned): negative_cts_offsets starts B-frame video at
 *   its first presentation time, and encoded AAC, whose encoder delay (1024
 *   samples of priming) would start it 21 ms before 0, is delayed by that
 *   much in every run.
 * - encoded audio (48 kHz AAC) is on one grid of 1024-sample frames from the
 *   file's start in every run: a run from a segment boundary reads the audio
 *   (a second opening of the file) from a frame of that grid a little before
 *   it (audioLeadIn), and the segmenter gives each segment the frames that
 *   start within it, so segments from different runs meet without a gap or
 *   an overlap.
 * - transcoding forces keyframes at multiples of segmentSeconds counted from
 *   the run's first segment, which is always such a multiple: every run puts
 *   them at the same frames (the first frame at or after k × segmentSeconds).
 */
import type { MediaInfo } from '../model.js';
import type { Variant } from './variant.js';

/** AAC stereo made for audio-only and transcode (bits per second, as play-decision assumes). */
export const AUDIO_BITRATE = 160_000;

/** Samples of encoder delay ffmpeg's AAC encoder puts before the first input sample. */
const AAC_PRIMING = 1024;

/** Encoded AAC's sample rate: fixed, so its 1024-sample frames fall on one grid known before a run starts. */
export const AAC_RATE = 48_000;

/** Seconds of one AAC frame (1024 samples). */
const AAC_FRAME = 1024 / AAC_RATE;

/** x264's VBV buffer, in seconds at maxrate: over any stretch of t seconds a transcode holds at most maxrate × (t + this). */
export const VBV_SECONDS = 1;

export interface RunArgs {
  input: string;
  info: MediaInfo;
  variant: Variant;
  /** Seconds into the file where this run starts (a segment boundary). */
  start: number;
  /** Copied video: the first keyframe after `start`. */
  nextKeyframe?: number;
  segmentSeconds: number;
  preset: string;
}

/**
 * ffmpeg's input seek goes to the last keyframe at or before -ss, less 3/23 s when the video has
 * B-frames (ffmpeg_opt.c), and stream copy passes on everything from there; the segmenter drops what
 * comes before the run's first segment.
 */
const SEEK_BACK = 3 / 23;

/**
 * -ss for a run from `start` (a segment boundary). Transcoding: exactly there (frames before it are
 * decoded and dropped). Remux: just past ffmpeg's step back, yet before the next keyframe, so the seek
 * lands on the segment's own keyframe rather than the one before (a GOP less to copy before the first
 * segment). Audio-only (video copied, audio decoded): a hair before the keyframe. Encoded audio after a seek is
 * read from its own opening of the file (audioLeadIn).
 */
export function seekOf(variant: Variant, start: number, nextKeyframe = Number.POSITIVE_INFINITY): number {
  if (start <= 0) return 0;
  if (variant.method === 'transcode') return start;
  if (variant.method === 'remux') return Math.min(start + SEEK_BACK + 0.01, Math.max(start, nextKeyframe - 0.01));
  return Math.max(0, start - 0.01);
}

/**
 * The AAC frame (of 1024 samples at AAC_RATE, counted from the file's start) where a run that
 * encodes audio from segment boundary `start` begins reading it: two frames before the first one at or
 * after the boundary. The encoder's packets then fall on the same grid as a run from 0's, so the
 * segmenter gives each segment the same frames whichever run made it; the two lead-in packets (the
 * encoder's priming, then a real frame that primes its overlap) belong to the segment before and are
 * dropped.
 */
export function audioLeadIn(start: number): number {
  return Math.max(0, Math.ceil(start / AAC_FRAME - 1e-6) - 2);
}

export function runArgs(o: RunArgs): string[] {
  const parts = runArgParts(o);
  return [...parts.input, ...parts.codecs, ...parts.output];
}

/** The run's arguments in three parts: input (with the seek), codecs, and the fMP4-on-stdout output (benchmarks swap the last). */
export function runArgParts(o: RunArgs): { input: string[]; codecs: string[]; output: string[] } {
  const { info, variant } = o;
  const video = info.video;
  const audio = variant.audio === null ? undefined : info.audio[variant.audio];
  const ss = seekOf(variant, o.start, o.nextKeyframe);
  // The file was probed at scan time: a short probe gets the first packets out sooner.
  const open = (at: number) => ['-analyzeduration', '2000000', '-probesize', '5000000', ...(at > 0 ? ['-ss', seconds(at)] : []), '-i', o.input];
  const encodesAudio = !!audio && variant.method !== 'remux';
  // Encoded audio after a seek is read from a second opening of the file, from its lead-in frame.
  const leadIn = encodesAudio && ss > 0 ? audioLeadIn(o.start) : undefined;
  const input = ['-loglevel', 'warning', ...open(ss), ...(leadIn !== undefined ? open(leadIn * AAC_FRAME) : [])];
  const codecs = [
    ...(video ? ['-map', `0:${video.index}`] : []),
    ...(audio ? ['-map', `${leadIn !== undefined ? 1 : 0}:${audio.index}`] : []),
    // Chapters would become a text track, metadata is of no use to a player.
    '-map_metadata', '-1', '-map_chapters', '-1',
  ];
  if (video) codecs.push(...(variant.method === 'transcode' ? videoTranscodeArgs(o) : videoCopyArgs(video.codec)));
  if (audio) {
    if (variant.method === 'remux') codecs.push('-c:a', 'copy', ...(audio.codec === 'aac' ? ['-bsf:a', 'aac_adtstoasc'] : []));
    // -ac 2 downmixes with swresample's default matrix (centre and surrounds at −3 dB, LFE dropped).
    else {
      // Samples from the first one read, resampled to AAC_RATE with timestamps counted sample by sample
      // (a stream starting a little after the file's start is padded to it), then put where that sample
      // goes on the output's timeline (which -output_ts_offset moves by ss, rounded to a sample), behind
      // the encoder's priming.
      const first = (leadIn ?? 0) * 1024 - Math.round(Math.round(ss * 1e6) * AAC_RATE / 1e6);
      codecs.push('-af', `aresample=${AAC_RATE}:async=1:first_pts=0,asetpts=PTS+${AAC_PRIMING + first}`, '-c:a', 'aac', '-b:a', String(AUDIO_BITRATE), '-ac', '2');
    }
  }
  codecs.push(
    '-max_muxing_queue_size', '4096',
    // Opus and FLAC in MP4 are still "experimental" to ffmpeg 4.1.
    '-strict', 'experimental',
  );
  // negative_cts_offsets: decode times shifted to the presentation times (trun v1, signed composition
  // offsets, as CMAF has it), so a fragment's tfdt is its first frame's time. hls.js places fragments by
  // tfdt: with B-frames and plain offsets it saw a hole of two frames at the start of every segment.
  const movflags = ['frag_keyframe', 'empty_moov', 'default_base_moof', 'frag_discont', 'negative_cts_offsets'];
  // Copied streams may only get their codec configuration from the first packets (ADTS AAC from
  // MPEG-TS, measured): the moov waits for the first fragment, which copying reaches at once.
  if (variant.method !== 'transcode') movflags.push('delay_moov');
  const output = [
    '-f', 'mp4', '-movflags', movflags.map((f) => `+${f}`).join(''),
    '-use_editlist', '0', '-avoid_negative_ts', 'disabled', '-flush_packets', '1',
    '-output_ts_offset', seconds(ss),
    // Without video nothing cuts fragments at keyframes: cut often, the segmenter groups them.
    ...(video ? [] : ['-frag_duration', '250000']),
    'pipe:1',
  ];
  return { input, codecs, output };
}

function videoCopyArgs(codec: string): string[] {
  // hvc1 (parameter sets in the sample entry) is what Safari and MSE want; ffmpeg's default is hev1.
  const tag = { h264: 'avc1', hevc: 'hvc1' }[codec];
  return ['-c:v', 'copy', ...(tag ? ['-tag:v', tag] : [])];
}

function videoTranscodeArgs(o: RunArgs): string[] {
  const video = o.info.video!;
  const { height, videoKbps } = o.variant;
  const fps = video.fps && video.fps > 0 ? video.fps : 30;
  const filters: string[] = [];
  if (height && height !== video.height) filters.push(`scale=-2:${height}`);
  // HDR (PQ/HLG) to SDR BT.709: linearise, tone-map, back to 8-bit 4:2:0.
  if (video.hdr) filters.push('zscale=t=linear:npl=100', 'format=gbrpf32le', 'zscale=p=bt709', 'tonemap=tonemap=hable:desat=0', 'zscale=t=bt709:m=bt709:r=tv');
  filters.push('format=yuv420p');
  const kbps = videoKbps;
  return [
    '-vf', filters.join(','),
    '-c:v', 'libx264', '-preset', o.preset, '-profile:v', 'high', '-level:v', h264Level(height || video.height, fps),
    '-b:v', `${kbps}k`, '-maxrate', `${kbps}k`, '-bufsize', `${kbps * VBV_SECONDS}k`,
    '-force_key_frames', `expr:gte(t,n_forced*${o.segmentSeconds})`,
    // Keyframes only where forced: no scene-cut keyframes, x264's own interval beyond two segments.
    '-sc_threshold', '0', '-g', String(Math.ceil(fps * o.segmentSeconds * 2)),
    // The source's frames as they are: the mp4 muxer's default (constant frame rate) adds a frame at the end.
    '-vsync', 'passthrough',
  ];
}

/** An H.264 level that holds the picture size and frame rate (the codec string in the manifests says it). */
export function h264Level(height: number, fps: number): string {
  const fast = fps > 30.5;
  if (height <= 360) return fast ? '3.1' : '3.0';
  if (height <= 480) return fast ? '3.2' : '3.1';
  if (height <= 720) return fast ? '3.2' : '3.1';
  if (height <= 1080) return fast ? '4.2' : '4.0';
  if (height <= 1440) return fast ? '5.1' : '5.0';
  return fast ? '5.2' : '5.1';
}

/** Seconds as ffmpeg reads them, to the microsecond. */
const seconds = (s: number): string => s.toFixed(6);
