/**
 * ffmpeg's CMAF segmenter as a live run uses it: the output arguments, and a
 * reader of the MPD it keeps rewriting that reports each segment number once
 * every representation has finished it. ffmpeg writes one shape
 * (SegmentTemplate + SegmentTimeline per Representation); this is the only
 * place that knows it. The session publishes what it reports under its own
 * names and manifests.
 */
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { hevcCodecOfInit, type MediaRepresentation } from 'antenna/sdk';

/**
 * Output arguments writing `manifest.mpd`, `init-stream<n>.mp4` and
 * `chunk-stream<n>-<number>.mp4` into `dir`, one representation per stream.
 * `offsetSeconds` (whole seconds, at least 1) goes into the init segments' edit
 * list: the times inside the segments still start at 0 in every run, and
 * players that honour edit lists (ffmpeg) see one timeline across runs.
 */
export function segmenterArgs(options: { dir: string; segmentSeconds: number; offsetSeconds: number }): string[] {
  return [
    '-output_ts_offset', String(options.offsetSeconds),
    '-f', 'dash',
    '-seg_duration', String(options.segmentSeconds),
    // ffmpeg removes its own files after a dozen segments; the session has linked them by then.
    '-window_size', '6', '-extra_window_size', '6',
    '-use_template', '1', '-use_timeline', '1',
    '-remove_at_exit', '0',
    path.join(options.dir, 'manifest.mpd'),
  ];
}

/** A representation as ffmpeg's MPD describes it (`id` is ffmpeg's: "0", "1"). */
export type SegmenterRep = Omit<MediaRepresentation, 'bandwidth' | 'language' | 'name'>;

/** One finished segment of one representation. */
export interface SegmenterSegment {
  rep: SegmenterRep;
  /** ffmpeg's number, from 1 in each run. */
  number: number;
  /** Media time and duration, in the representation's timescale: the times inside the file. */
  start: number;
  duration: number;
  file: string;
  init: string;
}

interface ParsedRep extends SegmenterRep {
  initialization: string;
  media: string;
  segments: { number: number; t: number; d: number }[];
}

/** Segments the other representations may have before a run starts without one that has none. */
const FIRST_WAIT_SEGMENTS = 3;

/** Reports the segments ffmpeg has finished in every representation, each number once. */
export class SegmenterOutput {
  private version = '';
  private taken = 0;
  /** Codec strings read from init segments, by init file (ffmpeg names HEVC bare). */
  private readonly codecs = new Map<string, string>();

  constructor(private readonly dir: string, private readonly offsetSeconds: number) {}

  /** The segment numbers every representation has finished since the last call, in order, each with all its representations. */
  async next(): Promise<SegmenterSegment[][]> {
    const file = path.join(this.dir, 'manifest.mpd');
    const st = await stat(file).catch(() => undefined);
    if (!st || `${st.mtimeMs}:${st.size}` === this.version) return [];
    const text = await readFile(file, 'utf8').catch(() => undefined);
    if (text === undefined) return [];
    this.version = `${st.mtimeMs}:${st.size}`;
    const listed = parseMpd(text);
    const reps = listed.filter((r) => r.segments.length);
    if (!reps.length) return [];
    // The run's representations are those of its first segment: wait for all of them (a loaded
    // machine's video can finish after the audio), unless the others are well ahead of one that never comes.
    if (this.taken === 0 && reps.length < listed.length && Math.min(...reps.map((r) => r.segments.length)) < FIRST_WAIT_SEGMENTS) return [];
    // A number is finished when every representation lists it (ffmpeg cuts audio with the video).
    const upTo = Math.min(...reps.map((r) => r.segments[r.segments.length - 1].number));
    const slots: SegmenterSegment[][] = [];
    for (let number = this.taken + 1; number <= upTo; number++) {
      const slot: SegmenterSegment[] = [];
      for (const rep of reps) {
        const s = rep.segments.find((x) => x.number === number);
        if (!s) continue; // scrolled out of ffmpeg's window before it was seen: passed over
        const { initialization, media, segments: _s, ...info } = rep;
        const init = path.join(this.dir, templateFile(initialization, rep.id));
        // ffmpeg's MPD counts the offset in, and starts the first segment before 0 by what the
        // init segment's edit list trims (AAC priming, B-frame delay); the files' times start at 0.
        const t = s.t - this.offsetSeconds * rep.timescale;
        slot.push({
          rep: { ...info, codecs: await this.codecOf(info.codecs, init) }, number, duration: s.d + Math.min(0, t),
          start: Math.max(0, t),
          file: path.join(this.dir, templateFile(media, rep.id, number)),
          init,
        });
      }
      if (slot.length === reps.length) slots.push(slot);
    }
    this.taken = Math.max(this.taken, upTo);
    return slots;
  }

  /** ffmpeg's codec string, completed from the init segment where it is a bare `hvc1`/`hev1`. */
  private async codecOf(codecs: string, init: string): Promise<string> {
    if (!/^(hvc1|hev1)$/.test(codecs)) return codecs;
    let full = this.codecs.get(init);
    if (!full) {
      full = hevcCodecOfInit(await readFile(init).catch(() => Buffer.alloc(0)), codecs);
      if (!full) return codecs;
      this.codecs.set(init, full);
    }
    return full;
  }
}

const attrs = (tag: string): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const m of tag.matchAll(/([\w:]+)="([^"]*)"/g)) out[m[1]] = m[2];
  return out;
};

const num = (v: string | undefined): number | undefined => (v !== undefined && /^\d+(\.\d+)?$/.test(v) ? Number(v) : undefined);

export function parseMpd(text: string): ParsedRep[] {
  const reps: ParsedRep[] = [];
  for (const set of text.matchAll(/<AdaptationSet\b([^>]*)>([\s\S]*?)<\/AdaptationSet>/g)) {
    const setAttrs = attrs(set[1]);
    for (const rep of set[2].matchAll(/<Representation\b([^>]*)>([\s\S]*?)<\/Representation>/g)) {
      const a = attrs(rep[1]);
      const body = rep[2];
      const template = /<SegmentTemplate\b([^>]*)>/.exec(body);
      if (!template || a.id === undefined) continue;
      const ta = attrs(template[1]);
      const kind = setAttrs.contentType ?? (a.mimeType ?? setAttrs.mimeType ?? '').split('/')[0];
      if (kind !== 'video' && kind !== 'audio') continue;
      const channels = /<AudioChannelConfiguration\b[^>]*\bvalue="(\d+)"/.exec(body);
      const segments: ParsedRep['segments'] = [];
      let number = num(ta.startNumber) ?? 1;
      let time = 0;
      for (const s of body.matchAll(/<S\b([^>]*)\/?>/g)) {
        const sa = attrs(s[1]);
        const d = num(sa.d);
        if (d === undefined) continue;
        if (sa.t !== undefined) time = num(sa.t) ?? time;
        for (let i = 0; i <= Math.max(0, num(sa.r) ?? 0); i++) {
          segments.push({ number: number++, t: time, d });
          time += d;
        }
      }
      reps.push({
        id: a.id, kind, codecs: a.codecs ?? '', width: num(a.width), height: num(a.height), frameRate: a.frameRate,
        sampleRate: num(a.audioSamplingRate), channels: channels ? Number(channels[1]) : undefined, timescale: num(ta.timescale) ?? 1,
        initialization: ta.initialization ?? '', media: ta.media ?? '', segments,
      });
    }
  }
  return reps;
}

/** A SegmentTemplate's file name for one representation and number ($RepresentationID$, $Number$, $Number%05d$). */
function templateFile(template: string, repId: string, number?: number): string {
  return template
    .replace(/\$RepresentationID\$/g, repId)
    .replace(/\$Number(?:%0(\d+)d)?\$/g, (_, width: string | undefined) => String(number ?? 0).padStart(width ? Number(width) : 0, '0'));
}
