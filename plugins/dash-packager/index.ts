/**
 * dash-packager: DASH MPDs (ISO/IEC 23009-1, isoff-live profile) for a
 * presentation of fMP4 segments: one Period per period, one AdaptationSet per
 * representation, SegmentTemplate with a SegmentTimeline. Dynamic while live
 * or growing, with the server's clock inside (UTCTiming), static once complete.
 */
import { dashPackagerService, definePlugin, type DashPackager, type Presentation, type PresentationPeriod, type PresentationRepresentation } from 'antenna/sdk';

export const dashPackager: DashPackager = {
  contentType: 'application/dash+xml',

  mpd(presentation) {
    const { type, targetDuration } = presentation;
    const periods = presentation.periods.filter((p) => p.representations.some((r) => r.segments.length));
    const setIds = new Map<string, number>();
    const body: string[] = [];
    let end = 0;
    periods.forEach((period, i) => {
      const next = periods[i + 1];
      const length = next ? next.start - period.start : periodLength(period);
      end = period.start + length;
      const duration = type === 'vod' || next ? ` duration="${seconds(length)}"` : '';
      body.push(`  <Period id="${xml(period.id)}" start="${seconds(period.start)}"${duration}>`);
      for (const rep of period.representations) {
        if (!rep.segments.length) continue;
        if (!setIds.has(rep.id)) setIds.set(rep.id, setIds.size);
        body.push(...adaptationSet(rep, setIds.get(rep.id)!, period));
      }
      body.push('  </Period>');
    });
    const attrs = ['xmlns="urn:mpeg:dash:schema:mpd:2011"', 'profiles="urn:mpeg:dash:profile:isoff-live:2011"'];
    if (type === 'vod') {
      attrs.push('type="static"', `mediaPresentationDuration="${seconds(end)}"`);
    } else {
      const now = presentation.now ?? Date.now();
      attrs.push(
        'type="dynamic"',
        `availabilityStartTime="${iso(presentation.availabilityStart ?? now)}"`,
        `publishTime="${iso(now)}"`,
        `minimumUpdatePeriod="${seconds(targetDuration)}"`,
        // About three target durations behind the live edge, as HLS players start (closer, dash.js stalls
        // at the edge), less a second: a live presentation holds three target durations from its first
        // answer on, and a player that starts exactly that far back (GStreamer) must land inside it.
        // Start over reaches back to the time asked for: players start that far behind the clock.
        `suggestedPresentationDelay="${seconds(presentation.startAt === undefined ? liveDelay(presentation, periods, now) : Math.max(3 * targetDuration - 1, (now - presentation.startAt) / 1000))}"`,
      );
      if (type === 'live' && presentation.windowSeconds) attrs.push(`timeShiftBufferDepth="${seconds(presentation.windowSeconds)}"`);
    }
    attrs.push(`minBufferTime="${seconds(2 * targetDuration)}"`);
    const tail = type === 'vod' ? [] : [`  <UTCTiming schemeIdUri="urn:mpeg:dash:utc:direct:2014" value="${iso(presentation.now ?? Date.now())}"/>`];
    const location = type !== 'vod' && presentation.location ? [`  <Location>${xml(presentation.location)}</Location>`] : [];
    return ['<?xml version="1.0" encoding="UTF-8"?>', `<MPD ${attrs.join(' ')}>`, ...location, ...body, ...tail, '</MPD>'].join('\n') + '\n';
  },
};

/**
 * About three target durations less a second, but never reaching back before the first Period: GStreamer
 * 1.22's dashdemux starts at the Period active suggestedPresentationDelay behind the clock and fails
 * ("Invalid manifest") when there is none. A session's first segments can come in a burst (ffmpeg catching
 * up after its probe), so its first Period may be younger than three target durations when first answered.
 */
function liveDelay(presentation: Presentation, periods: PresentationPeriod[], now: number): number {
  const delay = 3 * presentation.targetDuration - 1;
  const first = periods[0];
  if (!first || presentation.availabilityStart === undefined) return delay;
  const held = (now - presentation.availabilityStart) / 1000 - first.start;
  return Math.max(0.5, Math.min(delay, held - 0.25));
}

function adaptationSet(rep: PresentationRepresentation, id: number, period: PresentationPeriod): string[] {
  const setAttrs = [`id="${id}"`, `contentType="${rep.kind}"`, `mimeType="${rep.kind}/mp4"`, 'segmentAlignment="true"', 'startWithSAP="1"'];
  if (rep.language) setAttrs.push(`lang="${xml(rep.language)}"`);
  const repAttrs = [`id="${xml(rep.id)}"`, `codecs="${xml(rep.codecs)}"`, `bandwidth="${Math.max(1, Math.ceil(rep.bandwidth))}"`];
  if (rep.width && rep.height) repAttrs.push(`width="${rep.width}"`, `height="${rep.height}"`);
  if (rep.frameRate) repAttrs.push(`frameRate="${xml(rep.frameRate)}"`);
  if (rep.sampleRate) repAttrs.push(`audioSamplingRate="${rep.sampleRate}"`);
  const first = rep.segments[0];
  const template = [
    `timescale="${rep.timescale}"`, `presentationTimeOffset="${Math.round(period.mediaStart * rep.timescale)}"`,
    `initialization="${xml(rep.init)}"`, `media="${xml(rep.media)}"`, `startNumber="${first.number}"`,
  ];
  return [
    `    <AdaptationSet ${setAttrs.join(' ')}>`,
    `      <Representation ${repAttrs.join(' ')}>`,
    ...(rep.channels ? [`        <AudioChannelConfiguration schemeIdUri="urn:mpeg:dash:23003:3:audio_channel_configuration:2011" value="${rep.channels}"/>`] : []),
    `        <SegmentTemplate ${template.join(' ')}>`,
    '          <SegmentTimeline>',
    ...timeline(rep).map((s) => `            ${s}`),
    '          </SegmentTimeline>',
    '        </SegmentTemplate>',
    '      </Representation>',
    '    </AdaptationSet>',
  ];
}

/** `<S>` elements: runs of equal, back-to-back durations folded into r; t given at the start and wherever time jumps. */
function timeline(rep: PresentationRepresentation): string[] {
  const out: string[] = [];
  const list = rep.segments;
  let expected: number | undefined;
  for (let i = 0; i < list.length;) {
    const s = list[i];
    let r = 0;
    while (i + r + 1 < list.length && list[i + r + 1].duration === s.duration && list[i + r + 1].start === s.start + (r + 1) * s.duration) r++;
    out.push(`<S${s.start !== expected ? ` t="${s.start}"` : ''} d="${s.duration}"${r ? ` r="${r}"` : ''}/>`);
    expected = s.start + (r + 1) * s.duration;
    i += r + 1;
  }
  return out;
}

/** Seconds of media in a period: its longest representation, from the period's start. */
function periodLength(period: PresentationPeriod): number {
  let length = 0;
  for (const rep of period.representations) {
    const last = rep.segments[rep.segments.length - 1];
    if (last) length = Math.max(length, (last.start + last.duration) / rep.timescale - period.mediaStart);
  }
  return Math.max(0, length);
}

const seconds = (s: number) => `PT${Math.max(0, s).toFixed(3)}S`;
const iso = (ms: number) => new Date(Math.round(ms)).toISOString();
const xml = (text: string) => text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export default definePlugin({
  id: 'dash-packager',
  version: '1.1.0',
  host: '^1.1',
  description: 'DASH (fMP4) MPDs for live TV and recordings',
  register(env) {
    env.registerInit({ deps: {}, provides: { packager: dashPackagerService }, init: () => ({ packager: dashPackager }) });
  },
});
