/**
 * Keyframe times of a file's video stream, read once per file and kept in
 * vod_keyframes: copied video can only be cut at keyframes, and the manifest
 * must list every segment before ffmpeg has produced any.
 *
 * ffmpeg copies the video packets into its framecrc muxer (one line per
 * packet: stream, dts, pts, duration, size, crc and `F=0x…` when the flags are
 * not just "key"); `-discard:v nokey` makes the demuxer skip non-key packets.
 * Measured on a 10-minute 720p file (150 keyframes): mp4 0.04 s (the mp4
 * demuxer skips the samples unread), mkv 0.21 s, MPEG-TS 0.29 s; ffprobe's
 * `-show_entries packet=pts_time,flags` took 0.21–0.29 s and crashed on the
 * TS file, `-skip_frame nokey -show_entries frame=…` took 0.8 s (it decodes
 * every keyframe). Timestamps come out relative to the file's start, as in
 * the transcoder's runs (the same ffmpeg, without -copyts).
 */
import type { FfmpegService } from 'antenna/sdk';

/** Parses framecrc output into sorted, distinct keyframe times (seconds, ≥ 0). */
export function parseFramecrc(text: string): number[] {
  let unit = 0;
  const times: number[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) {
      const tb = /^#tb 0: (\d+)\/(\d+)/.exec(line);
      if (tb) unit = Number(tb[1]) / Number(tb[2]);
      continue;
    }
    const f = line.split(',');
    if (f.length < 6 || f[0]!.trim() !== '0') continue;
    const flags = /F=0x([0-9A-Fa-f]+)/.exec(line);
    if (flags && !(parseInt(flags[1]!, 16) & 1)) continue;
    const pts = Number(f[2]);
    if (!Number.isFinite(pts) || !unit) continue;
    times.push(Math.max(0, pts * unit));
  }
  times.sort((a, b) => a - b);
  return times.filter((t, i) => i === 0 || t - times[i - 1]! > 1e-6);
}

/** Reads the keyframe times of stream `streamIndex` of `file`. */
export async function readKeyframes(ffmpeg: FfmpegService, file: string, streamIndex: number, signal?: AbortSignal): Promise<number[]> {
  const proc = ffmpeg.spawn([
    '-loglevel', 'error', '-discard:v', 'nokey', '-i', file,
    '-map', `0:${streamIndex}`, '-c', 'copy', '-f', 'framecrc', '-',
  ], { signal, stdout: 'pipe', label: 'vod-keyframes' });
  const chunks: Buffer[] = [];
  proc.stdout?.on('data', (c: Buffer) => chunks.push(c));
  const exit = await proc.exited;
  if (signal?.aborted) throw new Error('keyframe scan aborted');
  if (exit.code !== 0) throw new Error(`keyframe scan failed: ${exit.stderrTail.split('\n').filter(Boolean).pop() ?? `exit code ${exit.code}`}`);
  const times = parseFramecrc(Buffer.concat(chunks).toString('latin1'));
  if (!times.length) throw new Error('keyframe scan found no keyframe');
  return times;
}
