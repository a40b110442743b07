/**
 * What to play for each kind of route, and what to say about it. Each kind
 * is asked for in the way the server answers best for a browser:
 *   vod        play-info → a direct file or master.m3u8, both with a signed key, and resume_position.
 *   live       /watch/live/{id} is the HLS master for a client without Device-OS. It is fetched once
 *              first so a refusal (409 tuner limit, 502/503 stream failed) comes back with the
 *              server's message, which hls.js would reduce to a status code. A browser that plays
 *              HLS itself (no hls.js) gets play-info's URL, whose key replaces the header.
 *   recording  /watch/recording/{id} fetched first for the same reason (it also waits for the first
 *              media of a recording that has just started), then play-info of its catalog item
 *              rec-<id>: the signed URL, the resume position, and the entry continue-watching keeps.
 */
import { api, request } from '../api.js';
import type { Channel, GuidePage, ItemDetail, PlayInfo, Recording } from '../types.js';
import { formatClock } from '../ui.js';
import { loadHls, type Source } from './engine.js';
import type { LivePlayInfo } from './live.js';

export type PlayerKind = 'live' | 'vod' | 'recording';

export interface Prepared {
  source: Source;
  /** The continue-watching id progress is reported under. */
  progressId?: string;
  /** VOD: the server's decision (method, why, the transcode's height). */
  info?: PlayInfo;
}

export interface Heading {
  title: string;
  detail?: string;
  /** Where Back leads when the player was opened directly. */
  back: string;
}

const enc = encodeURIComponent;

/** Reads a playlist answer to the end, so the connection is free for the player. */
async function preflight(path: string, signal: AbortSignal): Promise<void> {
  const response = await request(path, { signal });
  await response.text();
}

export async function prepare(kind: PlayerKind, id: string, options: { audioTrack?: number; start?: number; maxBitrate?: number }, signal: AbortSignal): Promise<Prepared> {
  if (kind === 'vod') {
    const query = new URLSearchParams();
    if (options.audioTrack !== undefined) query.set('audioTrack', String(options.audioTrack));
    if (options.maxBitrate !== undefined) query.set('maxBitrate', String(options.maxBitrate));
    const info = await api<PlayInfo>(`/watch/vod/${enc(id)}/play-info${query.size ? `?${query}` : ''}`, { signal });
    return {
      source: { url: info.url, hls: info.method !== 'direct', live: false, start: options.start ?? info.resume_position },
      progressId: id,
      info,
    };
  }
  if (kind === 'live') {
    const path = `/watch/live/${enc(id)}`;
    await preflight(path, signal);
    if (!(await loadHls()).isSupported()) {
      const info = await api<LivePlayInfo>(`${path}/play-info`, { signal });
      return { source: { url: info.url, hls: true, live: true } };
    }
    return { source: { url: path, hls: true, live: true } };
  }
  const path = `/watch/recording/${enc(id)}`;
  await preflight(path, signal);
  const info = await api<PlayInfo>(`/watch/vod/rec-${enc(id)}/play-info`, { signal }).catch((err: Error) => {
    if (err.name === 'AbortError') throw err;
    // A recording a few seconds old may not be a catalog item yet: play it without resume.
    return undefined;
  });
  return {
    // A recording still growing is an EVENT playlist, which hls.js would start at its live edge.
    source: { url: info?.url ?? path, hls: true, live: false, start: options.start ?? info?.resume_position ?? 0 },
    progressId: `rec-${id}`,
  };
}

const twoDigits = (n: number | null) => String(n ?? 0).padStart(2, '0');

export function episodeCode(item: { season_number: number | null; episode_number: number | null }): string | undefined {
  return item.episode_number === null ? undefined : `S${twoDigits(item.season_number)}E${twoDigits(item.episode_number)}`;
}

/** The programme on a channel now, as "Title · 20:00–20:30". */
async function onNow(channelId: number, signal: AbortSignal): Promise<string | undefined> {
  const now = new Date();
  const query = new URLSearchParams({ from: now.toISOString(), to: new Date(now.getTime() + 1000).toISOString() });
  const guide = await api<GuidePage>(`/programs?${query}`, { signal });
  const program = guide.channels.find((c) => c.id === channelId)?.programs.find((p) => Date.parse(p.start) <= now.getTime() && Date.parse(p.stop) > now.getTime());
  return program && `${program.title} · ${formatClock(program.start)}–${formatClock(program.stop)}`;
}

export async function heading(kind: PlayerKind, id: string, signal: AbortSignal): Promise<Heading> {
  if (kind === 'vod') {
    const item = await api<ItemDetail>(`/item/${enc(id)}`, { signal });
    if (item.type !== 'episode') {
      return { title: item.title, detail: item.year ? String(item.year) : undefined, back: item.type === 'recording' ? '/recordings' : `/item/${enc(id)}` };
    }
    const season = item.parent_id ? await api<ItemDetail>(`/item/${enc(item.parent_id)}`, { signal }) : undefined;
    const series = season?.parent_id ? await api<ItemDetail>(`/item/${enc(season.parent_id)}`, { signal }) : undefined;
    return { title: item.title, detail: [series?.title, episodeCode(item)].filter(Boolean).join(' · '), back: `/item/${enc(series?.id ?? id)}` };
  }
  const { channels } = await api<{ channels: Channel[] }>('/channels', { signal });
  if (kind === 'live') {
    const channel = channels.find((c) => String(c.id) === id);
    if (!channel) return { title: `Channel ${id}`, back: '/live' };
    const program = await onNow(channel.id, signal).catch(() => undefined);
    return { title: `${channel.tvg_chno} ${channel.name}`, detail: program, back: '/live' };
  }
  const rec = await api<Recording>(`/recordings/${enc(id)}`, { signal });
  const channel = channels.find((c) => c.id === rec.channel_id);
  const when = `${new Date(rec.start).toLocaleDateString([], { weekday: 'short', day: 'numeric', month: 'short' })} ${formatClock(rec.start)}`;
  return {
    title: rec.title,
    detail: [rec.status === 'recording' ? 'Recording now' : undefined, channel && `${channel.tvg_chno} ${channel.name}`, when].filter(Boolean).join(' · '),
    back: '/recordings',
  };
}
