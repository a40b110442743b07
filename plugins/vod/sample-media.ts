/**
 * Short clips made with ffmpeg's test sources (testsrc2 picture, sine tone):
 * the demo library, and the media tests and benchmarks work on. Nothing here
 * is downloaded; everything is generated on the machine.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

export interface ClipSpec {
  seconds: number;
  width?: number;
  height?: number;
  fps?: number;
  video?: 'h264' | 'hevc' | 'none';
  audio?: 'aac' | 'ac3' | 'mp3' | 'opus' | 'none';
  /** 1, 2 or 6 (5.1). */
  channels?: number;
  /** Second audio stream (language `fre`), for audioTrack tests. */
  secondAudio?: boolean;
  /** An embedded text subtitle stream (SubRip in mkv, mov_text in mp4), language `eng`. */
  subtitle?: boolean;
  /** Keyframe interval in seconds (default 2). */
  gopSeconds?: number;
  /** Video bitrate, e.g. '1M'; default: x264 CRF 30 at ultrafast (small files). */
  videoBitrate?: string;
  /** HDR-tagged (PQ transfer) HEVC, 10-bit. */
  hdr?: boolean;
}

/** Runs ffmpeg with these arguments to completion (the core's FfmpegService.run, or a plain spawn in tests). */
export type RunFfmpeg = (args: string[]) => Promise<void>;

const SRT = (seconds: number) => {
  const out: string[] = [];
  const ts = (s: number) => `${String(Math.floor(s / 3600)).padStart(2, '0')}:${String(Math.floor(s / 60) % 60).padStart(2, '0')}:${String(s % 60).padStart(2, '0')},000`;
  // At least one cue, however short the clip (an empty SubRip file makes ffmpeg fail).
  for (let i = 0, s = 0; s < Math.max(1, Math.floor(seconds)); i++, s += 2) out.push(`${i + 1}\n${ts(s)} --> ${ts(s + 1)}\nLine ${i + 1}: the tone is ${440 + i} Hz\n`);
  return out.join('\n');
};

/** A SubRip file with a line every two seconds. */
export async function writeSrt(file: string, seconds: number): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, SRT(seconds));
}

export async function makeClip(run: RunFfmpeg, file: string, spec: ClipSpec): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const { seconds, width = 640, height = 360, fps = 25, video = 'h264', audio = 'aac', channels = 2, gopSeconds = 2 } = spec;
  const ext = path.extname(file).slice(1).toLowerCase();
  const args = ['-hide_banner', '-loglevel', 'error', '-y'];
  const maps: string[] = [];
  let inputs = 0;
  if (video !== 'none') {
    args.push('-f', 'lavfi', '-i', `testsrc2=size=${width}x${height}:rate=${fps}:duration=${seconds}`);
    maps.push('-map', `${inputs++}:v`);
  }
  if (audio !== 'none') {
    const layout = channels === 6 ? '5.1' : channels === 1 ? 'mono' : 'stereo';
    // pan copies the tone into every channel of the layout.
    const pan = `pan=${layout}|${Array.from({ length: channels }, (_, i) => `c${i}=c0`).join('|')}`;
    args.push('-f', 'lavfi', '-i', `sine=frequency=440:sample_rate=48000:duration=${seconds},${pan}`);
    maps.push('-map', `${inputs++}:a`);
    if (spec.secondAudio) {
      args.push('-f', 'lavfi', '-i', `sine=frequency=880:sample_rate=48000:duration=${seconds}`);
      maps.push('-map', `${inputs++}:a`);
    }
  }
  let srtFile: string | undefined;
  if (spec.subtitle) {
    srtFile = `${file}.tmp.srt`;
    await writeSrt(srtFile, seconds);
    args.push('-i', srtFile);
    maps.push('-map', `${inputs++}:s`);
  }
  args.push(...maps);
  if (video === 'h264') {
    args.push('-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-g', String(Math.round(gopSeconds * fps)), '-keyint_min', String(Math.round(gopSeconds * fps)), '-sc_threshold', '0');
    args.push(...(spec.videoBitrate ? ['-b:v', spec.videoBitrate] : ['-crf', '30']));
  } else if (video === 'hevc') {
    const params = [`keyint=${Math.round(gopSeconds * fps)}`, `min-keyint=${Math.round(gopSeconds * fps)}`, 'scenecut=0', 'log-level=error'];
    if (spec.hdr) params.push('colorprim=bt2020', 'transfer=smpte2084', 'colormatrix=bt2020nc');
    args.push('-c:v', 'libx265', '-preset', 'ultrafast', '-pix_fmt', spec.hdr ? 'yuv420p10le' : 'yuv420p', '-x265-params', params.join(':'));
    if (spec.hdr) args.push('-color_primaries', 'bt2020', '-color_trc', 'smpte2084', '-colorspace', 'bt2020nc');
    args.push(...(spec.videoBitrate ? ['-b:v', spec.videoBitrate] : ['-crf', '32']));
    if (ext === 'mp4') args.push('-tag:v', 'hvc1');
  }
  const audioCodec = { aac: 'aac', ac3: 'ac3', mp3: 'libmp3lame', opus: 'libopus', none: '' }[audio];
  if (audio !== 'none') args.push('-c:a', audioCodec, '-b:a', channels === 6 ? '384k' : '128k');
  if (spec.secondAudio) args.push('-metadata:s:a:1', 'language=fre', '-metadata:s:a:0', 'language=eng');
  if (spec.subtitle) args.push('-c:s', ext === 'mp4' ? 'mov_text' : 'srt', '-metadata:s:s:0', 'language=eng');
  if (ext === 'mp4') args.push('-movflags', '+faststart');
  args.push(file);
  try {
    await run(args);
  } finally {
    if (srtFile) await import('node:fs/promises').then((fs) => fs.rm(srtFile!, { force: true }));
  }
}
