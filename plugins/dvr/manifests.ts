/**
 * A recording as a presentation for the packagers: one period per part (a
 * discontinuity in HLS, a Period in DASH), each keeping the live session's own
 * media times with the period's presentationTimeOffset. While recording it
 * grows (EVENT playlist, dynamic MPD, periods at their wall-clock offsets);
 * once over it is complete (VOD playlist, static MPD, periods back to back from
 * 0). File names are relative (`s/<part>/<file>`); the caller's link() makes
 * URLs of them.
 */
import type { Presentation, PresentationPeriod } from 'antenna/sdk';
import { initFile, type Part } from './parts.js';

/** Declared bit rates sit this much above the measured peak of the segments. */
const BANDWIDTH_MARGIN = 1.1;

export function recordingPresentation(parts: readonly Part[], options: { complete: boolean; now: number; link: (file: string) => string }): Presentation {
  const { complete, now, link } = options;
  const origin = parts[0]?.startedAt ?? now;
  const periods: PresentationPeriod[] = [];
  let at = 0;
  for (const part of parts) {
    const reps = part.reps.filter((r) => (r.contentType === 'video' || r.contentType === 'audio') && part.segments.get(r.id)?.length);
    if (!reps.length) continue;
    const mediaStart = Math.min(...reps.map((r) => part.segments.get(r.id)![0].t / r.timescale));
    // Dynamic: the wall-clock offset (never overlapping the previous period); complete: back to back.
    const start = complete ? at : Math.max(at, (part.startedAt - origin) / 1000);
    let length = 0;
    const representations = reps.map((rep) => {
      const segments = part.segments.get(rep.id)!;
      const last = segments[segments.length - 1];
      length = Math.max(length, (last.t + last.d) / rep.timescale - mediaStart);
      const peak = Math.max(...segments.map((s) => (s.bytes * 8 * rep.timescale) / Math.max(1, s.d)));
      return {
        id: rep.contentType as 'video' | 'audio', kind: rep.contentType as 'video' | 'audio', codecs: rep.codecs, bandwidth: Math.ceil(peak * BANDWIDTH_MARGIN),
        width: rep.width, height: rep.height, frameRate: rep.frameRate, sampleRate: rep.sampleRate, channels: rep.channels, timescale: rep.timescale,
        init: link(`s/${part.index}/${initFile(rep.id)}`),
        media: link(`s/${part.index}/${rep.id}-$Number%05d$.mp4`),
        segments: segments.map((s) => ({ number: s.index, start: s.t, duration: s.d })),
      };
    });
    periods.push({ id: String(part.index), sequence: periods.length, start, mediaStart, representations });
    at = start + length;
  }
  return {
    type: complete ? 'vod' : 'event',
    targetDuration: targetDuration(parts),
    ...(complete ? {} : { availabilityStart: origin, now }),
    periods,
  };
}

/**
 * One target duration for every playlist (RFC 8216 §6.2.4 wants renditions' equal): the live
 * session's, or the longest segment rounded when that is longer.
 */
function targetDuration(parts: readonly Part[]): number {
  let target = 1;
  for (const part of parts) {
    target = Math.max(target, part.targetDuration ?? 0);
    for (const rep of part.reps) for (const s of part.segments.get(rep.id) ?? []) target = Math.max(target, Math.round(s.d / rep.timescale));
  }
  return target;
}
