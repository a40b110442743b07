/**
 * What the live player knows besides the picture: the time-shift window the
 * <video> can seek in and the wall clock it stands for (the playlists'
 * EXT-X-PROGRAM-DATE-TIME, through hls.js or the browser's own HLS), the
 * channels to zap to, and the guide around the channel.
 */
import type HlsType from 'hls.js';
import { api } from '../api.js';
import type { Channel, Program } from '../types.js';

/** Behind the live edge by less than this, a player is at live: players start about three segments back. */
export const LIVE_SLACK_SECONDS = 12;
/** Channels above and below the current one in the mini-guide. */
const GUIDE_REACH = 2;

/** Where a live player is: the window and the position in media seconds, and the wall-clock time of media time 0. */
export interface LivePosition {
  start: number;
  end: number;
  position: number;
  /** ms since epoch at media time 0, when the stream is dated. */
  epoch?: number;
}

export function livePosition(video: HTMLVideoElement, hls: HlsType | undefined): LivePosition | undefined {
  const range = video.seekable;
  if (!range.length) return undefined;
  let epoch: number | undefined;
  const playing = hls?.playingDate;
  if (playing) epoch = playing.getTime() - video.currentTime * 1000;
  else if (!hls) {
    // Safari's own HLS: the date of media time 0.
    const date = (video as HTMLVideoElement & { getStartDate?(): Date }).getStartDate?.();
    if (date && Number.isFinite(date.getTime())) epoch = date.getTime();
  }
  return { start: range.start(0), end: range.end(range.length - 1), position: video.currentTime, epoch };
}

/** Where "jump to live" goes: hls.js's own live point, else a few segments before the end. */
export function liveEdge(at: LivePosition, hls: HlsType | undefined): number {
  const sync = hls?.liveSyncPosition;
  return sync !== null && sync !== undefined && Number.isFinite(sync) ? sync : Math.max(at.start, at.end - 6);
}

export const behindLive = (at: LivePosition) => Math.max(0, at.end - at.position);

/** The channels before and after `id` in channel-number order, wrapping round. */
export function zapTargets(channels: Channel[], id: string): { previous?: Channel; next?: Channel; index: number } {
  const index = channels.findIndex((c) => String(c.id) === id);
  if (index < 0 || channels.length < 2) return { index };
  return { index, previous: channels[(index - 1 + channels.length) % channels.length], next: channels[(index + 1) % channels.length] };
}

export interface GuideRow {
  id: number;
  name: string;
  tvg_chno: string;
  now?: Program;
  next?: Program;
}

/** GET /programs as the live player reads it. */
interface ProgramsPage {
  channels: { id: number; name: string; tvg_chno: string; programs: Program[] }[];
}

/** GET /watch/live/{id}/play-info. */
export interface LivePlayInfo {
  method: 'live';
  url: string;
  format: 'hls' | 'dash';
  timeshift: number;
}

const isoAt = (ms: number) => new Date(ms).toISOString();

/** The programmes of the channel at `index` (of /channels) overlapping from…to. */
export async function programmesOf(index: number, channelId: number, from: number, to: number, signal: AbortSignal): Promise<Program[]> {
  const query = new URLSearchParams({ offset: String(index), limit: '1', from: isoAt(from), to: isoAt(to) });
  const page = await api<ProgramsPage>(`/programs?${query}`, { signal });
  return page.channels.find((c) => c.id === channelId)?.programs ?? [];
}

/** Now and next on the channels around the one at `index`. */
export async function miniGuide(index: number, signal: AbortSignal): Promise<GuideRow[]> {
  const now = Date.now();
  const offset = Math.max(0, index - GUIDE_REACH);
  const query = new URLSearchParams({ offset: String(offset), limit: String(2 * GUIDE_REACH + 1), from: isoAt(now), to: isoAt(now + 4 * 3600_000) });
  const page = await api<ProgramsPage>(`/programs?${query}`, { signal });
  return page.channels.map((c) => {
    const programs = [...c.programs].sort((a, b) => Date.parse(a.start) - Date.parse(b.start));
    const current = programs.findIndex((p) => Date.parse(p.start) <= now && Date.parse(p.stop) > now);
    return {
      id: c.id, name: c.name, tvg_chno: c.tvg_chno,
      now: current >= 0 ? programs[current] : undefined,
      next: programs.find((p) => Date.parse(p.start) > now),
    };
  });
}
