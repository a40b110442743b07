/**
 * The manifests of a recording, written from its parts in the shapes ffmpeg's
 * segmenter writes (so the hls and dash packagers rewrite them as they do live
 * ones): one HLS master, one media playlist per kind (video, audio), one MPD.
 * While recording: an EVENT playlist and a dynamic MPD that grow; once over: a
 * VOD playlist and a static MPD. Parts are joined: a discontinuity with a new
 * EXT-X-MAP in HLS, one Period each in DASH. File names are relative
 * (`hls/video.m3u8`, `s/<part>/<file>`); the caller's link() makes URLs of them.
 */
import type { RepInfo } from './live-mpd.js';
import { initFile, mainRep, partSeconds, segmentFile, type Part, type Segment } from './parts.js';

export type MediaKind = 'video' | 'audio';

export const MEDIA_PLAYLISTS: Record<MediaKind, string> = { video: 'hls/video.m3u8', audio: 'hls/audio.m3u8' };

const repOf = (part: Part, kind: MediaKind): RepInfo | undefined => part.reps.find((r) => r.contentType === kind);
const fileOf = (part: Part, name: string) => `s/${part.index}/${name}`;

/** The HLS master playlist: one variant (video) with its audio as a rendition, or audio alone. */
export function hlsMaster(parts: readonly Part[]): string {
  const last = parts[parts.length - 1];
  const video = last && repOf(last, 'video');
  const audio = last && repOf(last, 'audio');
  const lines = ['#EXTM3U', '#EXT-X-VERSION:7'];
  if (video) {
    const codecs = [video.codecs, audio?.codecs].filter(Boolean).join(',');
    const attrs = [`BANDWIDTH=${Math.max(1, video.bandwidth + (audio?.bandwidth ?? 0))}`];
    if (video.width && video.height) attrs.push(`RESOLUTION=${video.width}x${video.height}`);
    if (codecs) attrs.push(`CODECS="${codecs}"`);
    if (audio) {
      lines.push(`#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="audio",NAME="audio",DEFAULT=YES,AUTOSELECT=YES,URI="${MEDIA_PLAYLISTS.audio}"`);
      attrs.push('AUDIO="audio"');
    }
    lines.push(`#EXT-X-STREAM-INF:${attrs.join(',')}`, MEDIA_PLAYLISTS.video);
  } else if (audio) {
    lines.push(`#EXT-X-STREAM-INF:BANDWIDTH=${Math.max(1, audio.bandwidth)}${audio.codecs ? `,CODECS="${audio.codecs}"` : ''}`, MEDIA_PLAYLISTS.audio);
  }
  return lines.join('\n') + '\n';
}

/** The media playlist of one kind over every part that has it. */
export function hlsMedia(parts: readonly Part[], kind: MediaKind, complete: boolean): string {
  const body: string[] = [];
  let target = 1;
  let first = true;
  for (const part of parts) {
    const rep = repOf(part, kind);
    const segments = rep ? part.segments.get(rep.id) ?? [] : [];
    if (!rep || !segments.length) continue;
    if (!first) body.push('#EXT-X-DISCONTINUITY');
    first = false;
    body.push(`#EXT-X-MAP:URI="${fileOf(part, initFile(rep.id))}"`);
    for (const s of segments) {
      const seconds = s.d / rep.timescale;
      target = Math.max(target, Math.ceil(seconds));
      body.push(`#EXTINF:${seconds.toFixed(6)},`, fileOf(part, segmentFile(rep.id, s.index)));
    }
  }
  const head = ['#EXTM3U', '#EXT-X-VERSION:6', `#EXT-X-TARGETDURATION:${target}`, '#EXT-X-MEDIA-SEQUENCE:0', `#EXT-X-PLAYLIST-TYPE:${complete ? 'VOD' : 'EVENT'}`];
  return [...head, ...body, ...(complete ? ['#EXT-X-ENDLIST'] : [])].join('\n') + '\n';
}

const seconds = (s: number) => `PT${Math.max(0, s).toFixed(3)}S`;
const xmlAttr = (v: string) => v.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

/** `<S>` elements: equal durations folded into r, t given where the timeline jumps. */
function timeline(segments: readonly Segment[]): string[] {
  const out: string[] = [];
  let i = 0;
  let end: number | undefined;
  while (i < segments.length) {
    const s = segments[i];
    let r = 0;
    while (i + r + 1 < segments.length && segments[i + r + 1].d === s.d && segments[i + r + 1].t === s.t + (r + 1) * s.d) r++;
    const t = end === undefined || s.t !== end ? ` t="${s.t}"` : '';
    out.push(`<S${t} d="${s.d}"${r ? ` r="${r}"` : ''} />`);
    end = s.t + (r + 1) * s.d;
    i += r + 1;
  }
  return out;
}

/**
 * The MPD. Static once complete: Periods back to back. Dynamic while recording: each
 * Period starts when its part began, after availabilityStartTime (the first part's start),
 * and every segment listed is available; the last Period is open.
 */
export function dashMpd(parts: readonly Part[], options: { complete: boolean; now: number; segmentSeconds: number }): string {
  const { complete, now } = options;
  const periods: string[] = [];
  const origin = parts[0]?.startedAt ?? now;
  let at = 0;
  parts.forEach((part, n) => {
    const length = partSeconds(part);
    // Dynamic: the wall-clock offset (never overlapping the previous Period); static: back to back.
    const start = complete ? at : Math.max(at, (part.startedAt - origin) / 1000);
    const last = n === parts.length - 1;
    const sets: string[] = [];
    part.reps.forEach((rep, i) => {
      const segments = part.segments.get(rep.id) ?? [];
      if (!segments.length) return;
      const repAttrs = [`id="${xmlAttr(rep.id)}"`, `mimeType="${xmlAttr(rep.mimeType)}"`, `codecs="${xmlAttr(rep.codecs)}"`, `bandwidth="${rep.bandwidth}"`];
      if (rep.width) repAttrs.push(`width="${rep.width}"`);
      if (rep.height) repAttrs.push(`height="${rep.height}"`);
      if (rep.frameRate) repAttrs.push(`frameRate="${xmlAttr(rep.frameRate)}"`);
      if (rep.sampleRate) repAttrs.push(`audioSamplingRate="${rep.sampleRate}"`);
      sets.push(
        `\t\t<AdaptationSet id="${i}" contentType="${rep.contentType}" segmentAlignment="true">`,
        `\t\t\t<Representation ${repAttrs.join(' ')}>`,
        ...(rep.channels ? [`\t\t\t\t<AudioChannelConfiguration schemeIdUri="urn:mpeg:dash:23003:3:audio_channel_configuration:2011" value="${rep.channels}" />`] : []),
        `\t\t\t\t<SegmentTemplate timescale="${rep.timescale}" presentationTimeOffset="${segments[0].t}" initialization="${fileOf(part, 'init-$RepresentationID$.mp4')}" media="${fileOf(part, '$RepresentationID$-$Number%05d$.mp4')}" startNumber="${segments[0].index}">`,
        '\t\t\t\t\t<SegmentTimeline>',
        ...timeline(segments).map((s) => `\t\t\t\t\t\t${s}`),
        '\t\t\t\t\t</SegmentTimeline>',
        '\t\t\t\t</SegmentTemplate>',
        '\t\t\t</Representation>',
        '\t\t</AdaptationSet>',
      );
    });
    const duration = complete || !last ? ` duration="${seconds(length)}"` : '';
    periods.push(`\t<Period id="${part.index}" start="${seconds(start)}"${duration}>`, ...sets, '\t</Period>');
    at = start + length;
  });
  const minBuffer = seconds(Math.max(2, options.segmentSeconds * 2));
  const head = complete
    ? `type="static" mediaPresentationDuration="${seconds(at)}" minBufferTime="${minBuffer}"`
    : `type="dynamic" availabilityStartTime="${new Date(origin).toISOString()}" publishTime="${new Date(now).toISOString()}" ` +
      `minimumUpdatePeriod="${seconds(options.segmentSeconds)}" suggestedPresentationDelay="${seconds(options.segmentSeconds)}" minBufferTime="${minBuffer}"`;
  return [
    '<?xml version="1.0" encoding="utf-8"?>',
    `<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" profiles="urn:mpeg:dash:profile:isoff-live:2011" ${head}>`,
    ...periods,
    '</MPD>',
  ].join('\n') + '\n';
}

/** The longest segment of the main representations, in seconds (the live segment length). */
export function segmentSecondsOf(parts: readonly Part[]): number {
  let max = 0;
  for (const part of parts) {
    const rep = mainRep(part);
    for (const s of (rep && part.segments.get(rep.id)) ?? []) max = Math.max(max, s.d / rep!.timescale);
  }
  return max || 2;
}
