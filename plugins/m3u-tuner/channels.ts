import type { TunerChannel } from 'antenna/sdk';
import type { M3uEntry } from './m3u-parser.js';

// Attributes that become channel fields; the rest are kept in `extra`.
const USED = new Set(['tvg-id', 'tvg-name', 'tvg-logo', 'tvg-chno', 'channel-number', 'tvg-num', 'group-title',
  'user-agent', 'http-user-agent', 'http-referrer', 'http-origin', 'referrer', 'referer']);

/**
 * Playlist entries as channels with keys that stay the same across refreshes:
 * the tvg-id, or for a tvg-id the playlist repeats (feeds like @HD/@SD of one
 * channel) the tvg-id with the stream URL, or the stream URL alone. An exact
 * repeat (same key) is dropped and counted.
 */
export function toTunerChannels(entries: M3uEntry[]): { channels: TunerChannel[]; duplicates: number } {
  const tvgCount = new Map<string, number>();
  for (const e of entries) if (e.tvgId) tvgCount.set(e.tvgId, (tvgCount.get(e.tvgId) ?? 0) + 1);
  const seen = new Set<string>();
  const channels: TunerChannel[] = [];
  let duplicates = 0;
  for (const e of entries) {
    const key = e.tvgId ? ((tvgCount.get(e.tvgId) ?? 0) > 1 ? `tvg:${e.tvgId}|${e.url}` : `tvg:${e.tvgId}`) : `url:${e.url}`;
    if (seen.has(key)) {
      duplicates++;
      continue;
    }
    seen.add(key);
    const extra: Record<string, string> = {};
    for (const [k, v] of Object.entries(e.attrs)) if (!USED.has(k) && v !== '') extra[k] = v;
    channels.push({
      key, name: e.name, number: e.number, tvgId: e.tvgId, tvgName: e.tvgName, logo: e.tvgLogo,
      groups: [...e.groups], extra,
      data: { url: e.url, headers: { ...e.headers }, ...(Object.keys(e.kodiProps).length ? { kodiProps: { ...e.kodiProps } } : {}) },
    });
  }
  return { channels, duplicates };
}
