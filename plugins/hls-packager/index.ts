/**
 * hls-packager: HLS (RFC 8216) playlists for a presentation of fMP4 segments.
 * The master names one media playlist per representation (video as the
 * variant, audio as its rendition); a media playlist covers its representation
 * across periods, each period after the first behind an EXT-X-DISCONTINUITY
 * with its own EXT-X-MAP.
 */
import { definePlugin, hlsPackagerService, type HlsPackager, type Presentation, type PresentationRepresentation } from 'antenna/sdk';

/** EXT-X-MAP outside I-frame playlists needs protocol version 6 (RFC 8216 §7). */
const VERSION = 6;

export const hlsPackager: HlsPackager = {
  contentType: 'application/vnd.apple.mpegurl',

  master(presentation, playlistUrl) {
    const last = presentation.periods[presentation.periods.length - 1];
    const video = last?.representations.find((r) => r.kind === 'video');
    const audio = last?.representations.find((r) => r.kind === 'audio');
    const lines = ['#EXTM3U', `#EXT-X-VERSION:${VERSION}`, '#EXT-X-INDEPENDENT-SEGMENTS'];
    if (video) {
      const attrs = [`BANDWIDTH=${peakOf(presentation, video.id) + (audio ? peakOf(presentation, audio.id) : 0)}`];
      attrs.push(`CODECS="${[video.codecs, audio?.codecs].filter(Boolean).join(',')}"`);
      if (video.width && video.height) attrs.push(`RESOLUTION=${video.width}x${video.height}`);
      const fps = frameRate(video.frameRate);
      if (fps) attrs.push(`FRAME-RATE=${fps.toFixed(3)}`);
      if (audio) {
        lines.push(`#EXT-X-MEDIA:${audioAttributes(audio, playlistUrl(audio.id))}`);
        attrs.push('AUDIO="audio"');
      }
      lines.push(`#EXT-X-STREAM-INF:${attrs.join(',')}`, playlistUrl(video.id));
    } else if (audio) {
      lines.push(`#EXT-X-STREAM-INF:BANDWIDTH=${peakOf(presentation, audio.id)},CODECS="${audio.codecs}"`, playlistUrl(audio.id));
    }
    return lines.join('\n') + '\n';
  },

  media(presentation, representationId) {
    const body: string[] = [];
    let discontinuitySequence: number | undefined;
    /** Wall-clock times (ms) of the playlist's start and end, when the presentation is dated. */
    let first: number | undefined;
    let end: number | undefined;
    for (const period of presentation.periods) {
      const rep = period.representations.find((r) => r.id === representationId);
      if (!rep?.segments.length) continue;
      if (discontinuitySequence === undefined) discontinuitySequence = period.sequence;
      else body.push('#EXT-X-DISCONTINUITY');
      body.push(`#EXT-X-MAP:URI="${rep.init}"`);
      const dated = presentation.availabilityStart !== undefined;
      const wallClock = (media: number) => presentation.availabilityStart! + (period.start + media / rep.timescale - period.mediaStart) * 1000;
      // A live window lists hundreds of segments: the template is split once, and a duration written once while it repeats.
      const url = segmentUrls(rep.media);
      let duration: number | undefined;
      let extinf = '';
      rep.segments.forEach((s, i) => {
        // A date on each period's first segment: players line renditions up by it across discontinuities.
        if (i === 0 && dated) {
          const at = wallClock(s.start);
          first ??= at;
          body.push(`#EXT-X-PROGRAM-DATE-TIME:${new Date(Math.round(at)).toISOString()}`);
        }
        if (s.duration !== duration) {
          duration = s.duration;
          extinf = `#EXTINF:${(duration / rep.timescale).toFixed(6)},`;
        }
        body.push(extinf, url(s.number));
      });
      const last = rep.segments[rep.segments.length - 1];
      if (dated) end = wallClock(last.start + last.duration);
    }
    const head = [
      '#EXTM3U', `#EXT-X-VERSION:${VERSION}`, `#EXT-X-TARGETDURATION:${presentation.targetDuration}`,
      `#EXT-X-MEDIA-SEQUENCE:${presentation.mediaSequence ?? 0}`,
    ];
    if (discontinuitySequence) head.push(`#EXT-X-DISCONTINUITY-SEQUENCE:${discontinuitySequence}`);
    // Start over: back from the end to the time asked for (at most to the playlist's start), unless
    // that is within the three target durations a player starts at anyway.
    if (presentation.startAt !== undefined && first !== undefined && end !== undefined) {
      const back = (end - Math.max(first, presentation.startAt)) / 1000;
      if (back > 3 * presentation.targetDuration) head.push(`#EXT-X-START:TIME-OFFSET=-${back.toFixed(3)},PRECISE=YES`);
    }
    if (presentation.type !== 'live') head.push(`#EXT-X-PLAYLIST-TYPE:${presentation.type === 'vod' ? 'VOD' : 'EVENT'}`);
    head.push('#EXT-X-INDEPENDENT-SEGMENTS');
    return [...head, ...body, ...(presentation.type === 'vod' ? ['#EXT-X-ENDLIST'] : [])].join('\n') + '\n';
  },
};

/** The highest bandwidth a representation id has in any period listed. */
function peakOf(presentation: Presentation, id: string): number {
  let peak = 1;
  for (const period of presentation.periods) for (const r of period.representations) if (r.id === id) peak = Math.max(peak, Math.ceil(r.bandwidth));
  return peak;
}

function audioAttributes(audio: PresentationRepresentation, uri: string): string {
  const attrs = ['TYPE=AUDIO', 'GROUP-ID="audio"', `NAME="${quoted(audio.name ?? 'Audio')}"`];
  if (audio.language) attrs.push(`LANGUAGE="${quoted(audio.language)}"`);
  attrs.push('DEFAULT=YES', 'AUTOSELECT=YES');
  if (audio.channels) attrs.push(`CHANNELS="${audio.channels}"`);
  attrs.push(`URI="${uri}"`);
  return attrs.join(',');
}

/** A quoted-string may not hold a double quote or a line break (RFC 8216 §4.2). */
const quoted = (text: string) => text.replace(/["\r\n]/g, '');

function frameRate(rate: string | undefined): number | undefined {
  if (!rate) return undefined;
  const [num, den] = rate.split('/').map(Number);
  const fps = den ? num / den : num;
  return Number.isFinite(fps) && fps > 0 ? fps : undefined;
}

/** The media URL template with a segment's number in place of `$Number$` / `$Number%0Nd$`. */
export function segmentUrl(template: string, number: number): string {
  return segmentUrls(template)(number);
}

/** segmentUrl for one template and many numbers: [text, width, text, width, …, text] once, then joined per number. */
function segmentUrls(template: string): (number: number) => string {
  const parts = template.split(/\$Number(?:%0(\d+)d)?\$/);
  return (number) => {
    let out = parts[0];
    for (let i = 1; i < parts.length; i += 2) out += String(number).padStart(parts[i] ? Number(parts[i]) : 0, '0') + parts[i + 1];
    return out;
  };
}

export default definePlugin({
  id: 'hls-packager',
  version: '1.1.0',
  host: '^1.1',
  description: 'HLS (fMP4) playlists for live TV and recordings',
  register(env) {
    env.registerInit({ deps: {}, provides: { packager: hlsPackagerService }, init: () => ({ packager: hlsPackager }) });
  },
});
