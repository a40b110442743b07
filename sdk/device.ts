/**
 * What a client can play, from the device headers of spec §5. Live TV, VOD and
 * DVR read them the same way; a missing header means a conservative browser.
 */
import type { HostInfo } from './refs.js';

type Headers = Record<string, string | string[] | undefined>;

export interface DeviceCaps {
  /** Device-OS as sent (trimmed), or undefined for the web client. */
  os: string | undefined;
  /** Device-Codecs: video codecs, ffprobe names (h264, hevc, vp9, av1…). */
  video: Set<string>;
  /** Device-Audio-Codecs: audio codecs, ffprobe names (aac, mp3, opus, ac3, eac3…). */
  audio: Set<string>;
  /** Device-Audio-Channels. */
  audioChannels: number;
  /** Device-Containers: mp4, mkv, webm… */
  containers: Set<string>;
  /** Device-Max-Height, if sent. */
  maxHeight: number | undefined;
  /** Device-HDR. */
  hdr: boolean;
}

/** PRODUCT.md §2: without headers, a browser: mp4/webm, h264, aac/mp3/opus, stereo. */
const BROWSER_CAPS: Readonly<Omit<DeviceCaps, 'os'>> = Object.freeze({
  video: new Set(['h264']),
  audio: new Set(['aac', 'mp3', 'opus']),
  audioChannels: 2,
  containers: new Set(['mp4', 'webm']),
  maxHeight: undefined,
  hdr: false,
});

/** Names clients send → the names ffprobe reports. */
const ALIASES: Record<string, string> = {
  avc: 'h264', avc1: 'h264', 'h.264': 'h264', x264: 'h264',
  hevc: 'hevc', h265: 'hevc', 'h.265': 'hevc', hvc1: 'hevc', hev1: 'hevc', x265: 'hevc',
  mpeg2: 'mpeg2video', av01: 'av1', vp09: 'vp9',
  mp4a: 'aac', 'ac-3': 'ac3', 'e-ac-3': 'eac3', 'ec-3': 'eac3', dolby: 'ac3', 'dts-hd': 'dts', mpeg3: 'mp3',
  matroska: 'mkv', m4v: 'mp4', mov: 'mp4', mpegts: 'ts',
};

function header(headers: Headers, name: string): string | undefined {
  const value = headers[name];
  const text = (Array.isArray(value) ? value.join(',') : value)?.trim();
  return text ? text : undefined;
}

function list(headers: Headers, name: string): Set<string> | undefined {
  const text = header(headers, name);
  if (!text) return undefined;
  const names = text.split(',').map((c) => c.trim().toLowerCase()).filter(Boolean).map((c) => ALIASES[c] ?? c);
  return names.length ? new Set(names) : undefined;
}

function positiveInt(headers: Headers, name: string): number | undefined {
  const text = header(headers, name);
  if (!text || !/^\d{1,6}$/.test(text)) return undefined; // a nonsense value means "not sent", never an error
  const n = Number(text);
  return n > 0 ? n : undefined;
}

export function deviceCaps(headers: Headers): DeviceCaps {
  const hdr = header(headers, 'device-hdr')?.toLowerCase();
  return {
    os: header(headers, 'device-os'),
    video: list(headers, 'device-codecs') ?? BROWSER_CAPS.video,
    audio: list(headers, 'device-audio-codecs') ?? BROWSER_CAPS.audio,
    audioChannels: positiveInt(headers, 'device-audio-channels') ?? BROWSER_CAPS.audioChannels,
    containers: list(headers, 'device-containers') ?? BROWSER_CAPS.containers,
    maxHeight: positiveInt(headers, 'device-max-height'),
    hdr: hdr === '1' || hdr === 'true',
  };
}

/** Device-OS → DASH only? Exact values and prefixes from `clients.dashOnly`, compared case-insensitively. */
export function isDashOnly(deviceOs: string | string[] | undefined, rule: HostInfo['dashOnly']): boolean {
  const os = (Array.isArray(deviceOs) ? deviceOs[0] : deviceOs)?.trim().toLowerCase();
  if (!os) return false;
  return rule.exact.some((e) => e.toLowerCase() === os) || rule.prefix.some((p) => os.startsWith(p.toLowerCase()));
}
