/**
 * Reads the MPD ffmpeg's CMAF segmenter writes for a live run (what
 * LiveHold.current() points at): per representation its attributes, its
 * templates and the finished segments it lists, with their media times.
 * ffmpeg writes one shape (SegmentTemplate + SegmentTimeline per
 * Representation); anything else yields no representations.
 */

export interface RepInfo {
  id: string;
  contentType: 'video' | 'audio' | 'text';
  mimeType: string;
  codecs: string;
  bandwidth: number;
  width?: number;
  height?: number;
  frameRate?: string;
  sampleRate?: number;
  channels?: number;
  timescale: number;
}

export interface LiveSegmentRef {
  number: number;
  /** Media time and duration, in the representation's timescale. */
  t: number;
  d: number;
}

export interface LiveRep extends RepInfo {
  initialization: string;
  media: string;
  segments: LiveSegmentRef[];
}

const attrs = (tag: string): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const m of tag.matchAll(/([\w:]+)="([^"]*)"/g)) out[m[1]] = m[2];
  return out;
};

const num = (v: string | undefined): number | undefined => (v !== undefined && /^\d+(\.\d+)?$/.test(v) ? Number(v) : undefined);

export function parseLiveMpd(text: string): LiveRep[] {
  const reps: LiveRep[] = [];
  for (const set of text.matchAll(/<AdaptationSet\b([^>]*)>([\s\S]*?)<\/AdaptationSet>/g)) {
    const setAttrs = attrs(set[1]);
    for (const rep of set[2].matchAll(/<Representation\b([^>]*)>([\s\S]*?)<\/Representation>/g)) {
      const a = attrs(rep[1]);
      const body = rep[2];
      const template = /<SegmentTemplate\b([^>]*)>/.exec(body);
      if (!template || a.id === undefined) continue;
      const ta = attrs(template[1]);
      const timescale = num(ta.timescale) ?? 1;
      const mimeType = a.mimeType ?? setAttrs.mimeType ?? '';
      const kind = setAttrs.contentType ?? mimeType.split('/')[0];
      const contentType = kind === 'video' || kind === 'audio' ? kind : 'text';
      const channels = /<AudioChannelConfiguration\b[^>]*\bvalue="(\d+)"/.exec(body);
      const segments: LiveSegmentRef[] = [];
      let number = num(ta.startNumber) ?? 1;
      let time = 0;
      for (const s of body.matchAll(/<S\b([^>]*)\/?>/g)) {
        const sa = attrs(s[1]);
        const d = num(sa.d);
        if (d === undefined) continue;
        if (sa.t !== undefined) time = num(sa.t) ?? time;
        const repeat = Math.max(0, num(sa.r) ?? 0);
        for (let i = 0; i <= repeat; i++) {
          segments.push({ number, t: time, d });
          number++;
          time += d;
        }
      }
      reps.push({
        id: a.id, contentType, mimeType, codecs: a.codecs ?? '', bandwidth: num(a.bandwidth) ?? 0,
        width: num(a.width), height: num(a.height), frameRate: a.frameRate, sampleRate: num(a.audioSamplingRate),
        channels: channels ? Number(channels[1]) : undefined, timescale,
        initialization: ta.initialization ?? '', media: ta.media ?? '', segments,
      });
    }
  }
  return reps;
}

/** A SegmentTemplate's file name for one representation and number ($RepresentationID$, $Number$, $Number%05d$). */
export function templateFile(template: string, repId: string, number?: number): string {
  return template
    .replace(/\$RepresentationID\$/g, repId)
    .replace(/\$Number(?:%0(\d+)d)?\$/g, (_, width: string | undefined) => String(number ?? 0).padStart(width ? Number(width) : 0, '0'));
}
