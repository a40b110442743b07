/**
 * Generated subtitle media for the subtitle tests and benchmark: cue lists
 * written as SubRip or ASS, a PGS (image-based) stream built by hand, and a
 * Matroska file muxing them with a small test-pattern video.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

export interface SourceCue {
  /** ms; multiples of 10 for cues that go into ASS (centiseconds). */
  start: number;
  end: number;
  lines: string[];
}

const two = (n: number) => String(n).padStart(2, '0');
const hms = (ms: number) => `${two(Math.floor(ms / 3_600_000))}:${two(Math.floor(ms / 60_000) % 60)}:${two(Math.floor(ms / 1000) % 60)}`;

export function srtText(cues: SourceCue[], eol = '\n'): string {
  return cues.map((c, i) => [String(i + 1), `${hms(c.start)},${String(c.start % 1000).padStart(3, '0')} --> ${hms(c.end)},${String(c.end % 1000).padStart(3, '0')}`, ...c.lines, ''].join(eol)).join(eol);
}

/** Cue lines are WebVTT cue text here (escaped). */
export function vttText(cues: SourceCue[]): string {
  const t = (ms: number) => `${hms(ms)}.${String(ms % 1000).padStart(3, '0')}`;
  return ['WEBVTT', '', ...cues.flatMap((c) => [`${t(c.start)} --> ${t(c.end)}`, ...c.lines, ''])].join('\n');
}

export function assText(cues: SourceCue[]): string {
  const t = (ms: number) => `${Math.floor(ms / 3_600_000)}:${hms(ms).slice(3)}.${two(Math.floor((ms % 1000) / 10))}`;
  return [
    '[Script Info]', 'ScriptType: v4.00+', 'PlayResX: 384', 'PlayResY: 288', '',
    '[V4+ Styles]',
    'Format: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, BackColour, Bold, Italic, Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, BorderStyle, Outline, Shadow, Alignment, MarginL, MarginR, MarginV, Encoding',
    'Style: Default,Arial,16,&Hffffff,&Hffffff,&H0,&H0,0,0,0,0,100,100,0,0,1,1,0,2,10,10,10,0',
    '',
    '[Events]',
    'Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text',
    // Styling overrides that WebVTT cannot carry: the text must come through without them.
    ...cues.map((c) => `Dialogue: 0,${t(c.start)},${t(c.end)},Default,,0,0,0,,{\\an8\\c&H00FFFF&}${c.lines.join('\\N')}`),
    '',
  ].join('\n');
}

/** A PGS (.sup) stream: one empty display set per time (ms). Image-based, so never listed as WebVTT. */
export function supBytes(times: number[]): Buffer {
  const segment = (pts: number, type: number, data: Buffer) => {
    const h = Buffer.alloc(13);
    h.write('PG', 0);
    h.writeUInt32BE(pts, 2);
    h.writeUInt8(type, 10);
    h.writeUInt16BE(data.length, 11);
    return Buffer.concat([h, data]);
  };
  return Buffer.concat(times.flatMap((ms, i) => {
    const pcs = Buffer.alloc(11);
    pcs.writeUInt16BE(320, 0);
    pcs.writeUInt16BE(180, 2);
    pcs.writeUInt8(0x10, 4);
    pcs.writeUInt16BE(i, 5);
    pcs.writeUInt8(0x80, 7);
    return [segment(ms * 90, 0x16, pcs), segment(ms * 90, 0x80, Buffer.alloc(0))];
  }));
}

export interface EmbeddedTrack {
  kind: 'srt' | 'ass' | 'vtt' | 'pgs';
  cues?: SourceCue[];
  /** PGS display times, ms. */
  times?: number[];
  language?: string;
  title?: string;
  forced?: boolean;
}

/**
 * An MKV: `seconds` of a small test pattern (or `videoFrom`, copied and looped
 * to `seconds`) with these subtitle tracks, in order.
 */
export async function muxSubtitled(run: (args: string[]) => Promise<void>, out: string, options: {
  seconds: number; tracks: EmbeddedTrack[]; size?: string; fps?: number; videoFrom?: string; audio?: boolean;
}): Promise<void> {
  await mkdir(path.dirname(out), { recursive: true });
  const work = `${out}.parts`;
  await mkdir(work, { recursive: true });
  try {
    const args = ['-hide_banner', '-loglevel', 'error', '-nostdin', '-y'];
    if (options.videoFrom) args.push('-stream_loop', '-1', '-i', options.videoFrom);
    else args.push('-f', 'lavfi', '-i', `testsrc2=size=${options.size ?? '320x180'}:rate=${options.fps ?? 10}:duration=${options.seconds}`);
    const maps = ['-map', '0:v'];
    if (options.videoFrom && options.audio) maps.push('-map', '0:a');
    const codecs: string[] = [];
    for (const [i, track] of options.tracks.entries()) {
      const file = path.join(work, `t${i}.${track.kind === 'pgs' ? 'sup' : track.kind}`);
      const data = { srt: srtText, ass: assText, vtt: vttText }[track.kind as 'srt'] ?? (() => supBytes(track.times!));
      await writeFile(file, data(track.cues!));
      args.push('-i', file);
      maps.push('-map', `${i + 1}:0`);
      codecs.push(`-c:s:${i}`, { srt: 'srt', ass: 'ass', vtt: 'webvtt', pgs: 'copy' }[track.kind]);
      if (track.language) codecs.push(`-metadata:s:s:${i}`, `language=${track.language}`);
      if (track.title) codecs.push(`-metadata:s:s:${i}`, `title=${track.title}`);
      if (track.forced) codecs.push(`-disposition:s:${i}`, 'forced');
    }
    args.push(...maps);
    if (options.videoFrom) args.push('-c:v', 'copy', ...(options.audio ? ['-c:a', 'copy'] : []), '-t', String(options.seconds));
    else args.push('-c:v', 'libx264', '-preset', 'ultrafast', '-crf', '35', '-g', String((options.fps ?? 10) * 2));
    args.push(...codecs, out);
    await run(args);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
