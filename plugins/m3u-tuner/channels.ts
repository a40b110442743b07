import type { TunerChannel } from 'antenna/sdk';
import type { M3uEntry } from './m3u-parser.js';

// Attributes that become channel fields; the rest are kept in `extra`.
const USED = new Set(['tvg-id', 'tvg-name', 'tvg-logo', 'tvg-chno', 'channel-number', 'tvg-num', 'group-title',
  'user-agent', 'http-user-agent', 'http-referrer', 'http-origin', 'referrer', 'referer']);

/**
 * Schemes ffmpeg may open for a playlist entry: network streams only. file:, concat:, pipe:,
 * subfile: and the like would read the server's own files or never play.
 */
const STREAM_SCHEMES = /^(?:https?|rtmps?|rtsp|rtp|udp|srt):\/\//i;
/** An HTTP header name (RFC 9110 token). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** CR, LF and the other control characters but tab: a header value holding one would add headers of its own. */
const CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/;

/**
 * Why an entry's stream cannot be opened as the playlist gives it, or undefined when it can:
 * a scheme ffmpeg must not open, or a header that is not one header.
 */
export function refusal(url: string, headers: Readonly<Record<string, string>>): string | undefined {
  if (!STREAM_SCHEMES.test(url)) return `stream URL scheme ${/^[a-z][a-z0-9+.-]*:/i.exec(url)?.[0] ?? '(none)'} is not allowed (http, https, rtmp, rtmps, rtsp, rtp, udp, srt)`;
  if (CONTROL.test(url)) return 'stream URL holds a control character';
  for (const name in headers) {
    if (!HEADER_NAME.test(name)) return `header name ${JSON.stringify(name.slice(0, 40))} is not an HTTP header name`;
    if (CONTROL.test(headers[name]!)) return `header ${name} holds a line break or control character`;
  }
  return undefined;
}

/** A tvg-logo worth keeping: an http(s) URL or a data: image; anything else (file:, javascript:, a bare path) is dropped. */
function logoOf(value: string | undefined): string | undefined {
  return value && (/^https?:\/\/[^\s]+$/i.test(value) || /^data:image\/[a-z0-9.+-]+[;,]/i.test(value)) ? value : undefined;
}

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
    name: e.name, number: e.number, tvgId: e.tvgId, tvgName: e.tvgName, logo: logoOf(e.tvgLogo),
    groups: e.groups as string[], extra, data,
  };
}
