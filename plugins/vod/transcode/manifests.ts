/**
 * HLS and DASH manifests of a VOD transcode, written from the segment plan:
 * complete from the first request (every segment of the title, exact
 * durations, ENDLIST / static MPD), before ffmpeg has produced them.
 *
 * Video and audio are separate tracks in both: an HLS variant with an audio
 * rendition group, two DASH adaptation sets. They share the plan, so segment k
 * of either covers the same time.
 */

export interface VideoTrack { codec: string; width: number; height: number; bandwidth: number; frameRate?: number }
export interface AudioTrack {
  codec: string;
  channels: number;
  /** E-AC-3 with Joint Object Coding (Atmos): HLS says CHANNELS="16/JOC". */
  joc?: boolean;
  sampleRate: number;
  bandwidth: number;
  /** BCP 47. */
  language: string | null;
  name: string;
}

/** A WebVTT track other plugins list (the subtitles plugin). */
export interface SubtitleTrack {
  label: string;
  language: string | null;
  default: boolean;
  forced: boolean;
  /** The .vtt URL with its key (absolute path), as DASH players fetch it. */
  url: string;
  /** The same for HLS: with the timestamp map (the segments' timeline starts at 0, as the cues'). */
  hlsUrl: string;
}

export interface ManifestInput {
  /** Segment boundaries, seconds: [0, …, duration]. */
  plan: readonly number[];
  video?: VideoTrack;
  audio?: AudioTrack;
  subtitles?: SubtitleTrack[];
  /** The URL of a file of the job (init segment, media segment, media playlist), relative to the manifest, with its key. */
  link(file: string): string;
}

/** File names inside a job; routes accept exactly these. */
export const FILES = {
  playlist: (track: 'v' | 'a') => (track === 'v' ? 'video.m3u8' : 'audio.m3u8'),
  subtitles: (index: number) => `sub-${index}.m3u8`,
  init: (track: 'v' | 'a') => `init-${track}.mp4`,
  segment: (track: 'v' | 'a', k: number) => `${track}-${k}.m4s`,
};

export type JobFile =
  | { kind: 'playlist'; track: 'v' | 'a' }
  | { kind: 'subtitles'; index: number }
  | { kind: 'init'; track: 'v' | 'a' }
  | { kind: 'segment'; track: 'v' | 'a'; index: number };

/** A file name from a URL, strictly: anything else (`..`, slashes, other names) is undefined. */
export function parseJobFile(name: string): JobFile | undefined {
  if (name === 'video.m3u8') return { kind: 'playlist', track: 'v' };
  if (name === 'audio.m3u8') return { kind: 'playlist', track: 'a' };
  let m = /^sub-(0|[1-9]\d{0,2})\.m3u8$/.exec(name);
  if (m) return { kind: 'subtitles', index: Number(m[1]) };
  m = /^init-([va])\.mp4$/.exec(name);
  if (m) return { kind: 'init', track: m[1] as 'v' | 'a' };
  m = /^([va])-(0|[1-9]\d{0,5})\.m4s$/.exec(name);
  if (m) return { kind: 'segment', track: m[1] as 'v' | 'a', index: Number(m[2]) };
  return undefined;
}

const quote = (s: string) => `"${s.replace(/["\r\n]/g, '')}"`;

export function hlsMaster(m: ManifestInput): string {
  const lines = ['#EXTM3U', '#EXT-X-VERSION:7', '#EXT-X-INDEPENDENT-SEGMENTS'];
  const { video, audio } = m;
  if (video && audio) {
    const attrs = ['TYPE=AUDIO', 'GROUP-ID="audio"', `NAME=${quote(audio.name)}`];
    if (audio.language) attrs.push(`LANGUAGE=${quote(audio.language)}`);
    attrs.push('DEFAULT=YES', 'AUTOSELECT=YES', `CHANNELS="${audio.joc ? '16/JOC' : audio.channels}"`, `URI=${quote(m.link(FILES.playlist('a')))}`);
    lines.push(`#EXT-X-MEDIA:${attrs.join(',')}`);
  }
  const subtitles = video ? m.subtitles ?? [] : [];
  subtitles.forEach((sub, i) => {
    const attrs = ['TYPE=SUBTITLES', 'GROUP-ID="subs"', `NAME=${quote(sub.label)}`];
    if (sub.language) attrs.push(`LANGUAGE=${quote(sub.language)}`);
    // DEFAULT=YES and FORCED=YES both require AUTOSELECT=YES.
    attrs.push(`DEFAULT=${sub.default ? 'YES' : 'NO'}`, 'AUTOSELECT=YES', `FORCED=${sub.forced ? 'YES' : 'NO'}`, `URI=${quote(m.link(FILES.subtitles(i)))}`);
    lines.push(`#EXT-X-MEDIA:${attrs.join(',')}`);
  });
  const codecs = [video?.codec, audio?.codec].filter(Boolean).join(',');
  const bandwidth = (video?.bandwidth ?? 0) + (audio?.bandwidth ?? 0);
  const inf = [`BANDWIDTH=${bandwidth}`, `CODECS=${quote(codecs)}`];
  if (video) {
    inf.push(`RESOLUTION=${video.width}x${video.height}`);
    if (video.frameRate) inf.push(`FRAME-RATE=${video.frameRate.toFixed(3)}`);
    if (audio) inf.push('AUDIO="audio"');
    if (subtitles.length) inf.push('SUBTITLES="subs"');
  }
  lines.push(`#EXT-X-STREAM-INF:${inf.join(',')}`, m.link(FILES.playlist(video ? 'v' : 'a')), '');
  return lines.join('\n');
}

/** The media playlist of one track: every segment, EXTINF durations adding up to the title's duration. */
export function hlsMedia(m: ManifestInput, track: 'v' | 'a'): string {
  const durations = segmentDurations(m.plan);
  const target = Math.max(1, ...durations.map((d) => Math.round(d)));
  const lines = [
    '#EXTM3U', '#EXT-X-VERSION:7', `#EXT-X-TARGETDURATION:${target}`, '#EXT-X-MEDIA-SEQUENCE:0',
    '#EXT-X-PLAYLIST-TYPE:VOD', '#EXT-X-INDEPENDENT-SEGMENTS', `#EXT-X-MAP:URI=${quote(m.link(FILES.init(track)))}`,
  ];
  durations.forEach((d, k) => lines.push(`#EXTINF:${d.toFixed(6)},`, m.link(FILES.segment(track, k))));
  lines.push('#EXT-X-ENDLIST', '');
  return lines.join('\n');
}

/** A subtitle rendition's media playlist: the whole WebVTT file as one segment. */
export function hlsSubtitles(plan: readonly number[], vttUrl: string): string {
  const duration = plan[plan.length - 1]!;
  return [
    '#EXTM3U', '#EXT-X-VERSION:7', `#EXT-X-TARGETDURATION:${Math.max(1, Math.round(duration))}`, '#EXT-X-MEDIA-SEQUENCE:0',
    '#EXT-X-PLAYLIST-TYPE:VOD', `#EXTINF:${duration.toFixed(6)},`, vttUrl, '#EXT-X-ENDLIST', '',
  ].join('\n');
}

export function segmentDurations(plan: readonly number[]): number[] {
  return plan.slice(1).map((end, k) => end - plan[k]!);
}

/** DASH timescale: 90 kHz, as MPEG; boundaries are rounded to it once, so durations add up exactly. */
const TIMESCALE = 90_000;

export function dashMpd(m: ManifestInput): string {
  const duration = m.plan[m.plan.length - 1]!;
  const xml = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const template = (track: 'v' | 'a') => [
    `        <SegmentTemplate timescale="${TIMESCALE}" startNumber="0"`,
    `          initialization="${xml(m.link(FILES.init(track)))}" media="${xml(m.link(`${track}-$Number$.m4s`))}">`,
    '          <SegmentTimeline>',
    ...timeline(m.plan).map((s) => `            ${s}`),
    '          </SegmentTimeline>',
    '        </SegmentTemplate>',
  ];
  const lines = [
    '<?xml version="1.0" encoding="utf-8"?>',
    `<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" profiles="urn:mpeg:dash:profile:isoff-live:2011" type="static" mediaPresentationDuration="${isoDuration(duration)}" minBufferTime="PT4S">`,
    `  <Period id="0" start="PT0S" duration="${isoDuration(duration)}">`,
  ];
  const { video, audio } = m;
  if (video) {
    lines.push(
      `    <AdaptationSet id="0" contentType="video" mimeType="video/mp4" segmentAlignment="true" startWithSAP="1" maxWidth="${video.width}" maxHeight="${video.height}">`,
      `      <Representation id="video" codecs="${xml(video.codec)}" bandwidth="${video.bandwidth}" width="${video.width}" height="${video.height}"${video.frameRate ? ` frameRate="${frameRate(video.frameRate)}"` : ''}>`,
      ...template('v'),
      '      </Representation>',
      '    </AdaptationSet>',
    );
  }
  if (audio) {
    lines.push(
      `    <AdaptationSet id="1" contentType="audio" mimeType="audio/mp4" segmentAlignment="true" startWithSAP="1"${audio.language ? ` lang="${xml(audio.language)}"` : ''}>`,
      `      <Label>${xml(audio.name)}</Label>`,
      `      <Representation id="audio" codecs="${xml(audio.codec)}" bandwidth="${audio.bandwidth}" audioSamplingRate="${audio.sampleRate}">`,
      `        <AudioChannelConfiguration schemeIdUri="urn:mpeg:dash:23003:3:audio_channel_configuration:2011" value="${channelConfiguration(audio.channels)}"/>`,
      ...(audio.joc ? ['        <SupplementalProperty schemeIdUri="tag:dolby.com,2018:dash:EC3_ExtensionType:2018" value="JOC"/>'] : []),
      ...template('a'),
      '      </Representation>',
      '    </AdaptationSet>',
    );
  }
  (video ? m.subtitles ?? [] : []).forEach((sub, i) => {
    lines.push(
      `    <AdaptationSet id="${2 + i}" contentType="text" mimeType="text/vtt"${sub.language ? ` lang="${xml(sub.language)}"` : ''}>`,
      `      <Label>${xml(sub.label)}</Label>`,
      `      <Role schemeIdUri="urn:mpeg:dash:role:2011" value="${sub.forced ? 'forced-subtitle' : 'subtitle'}"/>`,
      `      <Representation id="subtitle-${i}" bandwidth="256">`,
      `        <BaseURL>${xml(sub.url)}</BaseURL>`,
      '      </Representation>',
      '    </AdaptationSet>',
    );
  });
  lines.push('  </Period>', '</MPD>', '');
  return lines.join('\n');
}

/** ISO/IEC 23091-3 ChannelConfiguration of a channel count: 1–6 are themselves (5.1 is 6), 7.1 is 12. */
function channelConfiguration(channels: number): number {
  return channels === 8 ? 12 : channels;
}

/** `<S>` elements: t of the first, runs of equal durations folded into r. */
function timeline(plan: readonly number[]): string[] {
  const ticks = plan.map((t) => Math.round(t * TIMESCALE));
  const out: string[] = [];
  let k = 0;
  while (k < ticks.length - 1) {
    const d = ticks[k + 1]! - ticks[k]!;
    let r = 0;
    while (k + r + 2 < ticks.length && ticks[k + r + 2]! - ticks[k + r + 1]! === d) r++;
    out.push(`<S${k === 0 ? ` t="${ticks[0]}"` : ''} d="${d}"${r ? ` r="${r}"` : ''}/>`);
    k += r + 1;
  }
  return out;
}

function isoDuration(seconds: number): string {
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds - h * 3600 - m * 60;
  return `PT${h ? `${h}H` : ''}${h || m ? `${m}M` : ''}${s.toFixed(3)}S`;
}

/** 25 → "25", 23.976 → "24000/1001", 29.97 → "30000/1001". */
function frameRate(fps: number): string {
  for (const base of [24, 30, 60, 120]) {
    if (Math.abs(fps - (base * 1000) / 1001) < 0.01) return `${base * 1000}/1001`;
  }
  return String(Math.round(fps * 1000) / 1000);
}
