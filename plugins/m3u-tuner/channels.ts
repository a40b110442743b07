import type { TunerChannel } from 'antenna/sdk';
import type { M3uEntry } from './m3u-parser.js';

// Attributes that become channel fields; the rest are kept in `extra`.
const USED = new Set(['tvg-id', 'tvg-name', 'tvg-logo', 'tvg-chno', 'channel-number', 'tvg-num', 'group-title',
  'user-agent', 'http-user-agent', 'http-referrer', 'http-origin', 'referrer', 'referer']);

/**
 * A playlist entry as a channel, with a key that stays the same across
 * refreshes: the tvg-id, or for a tvg-id the playlist repeats (feeds like
 * @HD/@SD of one channel) the tvg-id with the stream URL (`keyIfShared`: live-tv
 * tells once the whole list is read), or the stream URL alone. An exact repeat
 * (same key) is listed again; live-tv keeps the first and counts it.
 */
export function toTunerChannel(e: M3uEntry): TunerChannel {
  let extra: Record<string, string> | undefined;
  for (const k in e.attrs) {
    const v = e.attrs[k];
    if (!USED.has(k) && v !== '') (extra ??= {})[k] = v;
  }
  // The entry's groups, headers and Kodi props are the parser's own (frozen or unshared): no copies.
  // Headers and Kodi props only when there are some: most entries have none, and 100,000 channels
  // stored `"headers":{}` each.
  const data: { url: string; headers?: Record<string, string>; kodiProps?: Record<string, string> } = { url: e.url };
  for (const _ in e.headers) { data.headers = e.headers; break; }
  for (const _ in e.kodiProps) { data.kodiProps = e.kodiProps; break; }
  return {
    key: e.tvgId ? `tvg:${e.tvgId}` : `url:${e.url}`,
    keyIfShared: e.tvgId ? `tvg:${e.tvgId}|${e.url}` : undefined,
    name: e.name, number: e.number, tvgId: e.tvgId, tvgName: e.tvgName, logo: e.tvgLogo,
    groups: e.groups as string[], extra, data,
  };
}
