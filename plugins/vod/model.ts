/**
 * The VOD data model: libraries hold items (movies, series → seasons →
 * episodes); a playable item (movie, episode) has one or more files, its
 * versions. What ffprobe said about a file is kept as MediaInfo.
 */
import type { CatalogSubtitleStream, ProbeResult } from 'antenna/sdk';

/** `recordings`: a library another plugin provides (the DVR's), see VodCatalogService.addLibrary. */
export type LibraryType = 'movies' | 'shows' | 'recordings';
export type ItemType = 'movie' | 'series' | 'season' | 'episode';

export interface Library {
  /** Integer id, stable: libraries are matched to the config by name. */
  id: number;
  name: string;
  type: LibraryType;
  paths: string[];
}

export interface VideoInfo {
  index: number;
  codec: string;
  profile: string | null;
  width: number;
  height: number;
  /** PQ / HLG transfer (HDR10, HLG, Dolby Vision base layers). */
  hdr: boolean;
  /** bits per second, when known. */
  bitrate: number | null;
  /** frames per second, when known. */
  fps: number | null;
}

export interface AudioInfo {
  index: number;
  codec: string;
  channels: number;
  /** bits per second, when the container or its tags say (absent in scans made before it was read). */
  bitrate?: number | null;
  language: string | null;
  title: string | null;
  default: boolean;
}

/** The same as the SDK's, which subtitle plugins read from the catalog. */
export type SubtitleInfo = CatalogSubtitleStream;

/** The container's own tags that metadata reads (MP4 atoms, Matroska tags). */
export interface MediaTags {
  title?: string;
  description?: string;
  genre?: string;
  /** As written: a year, or a date starting with one. */
  date?: string;
}

export interface MediaInfo {
  /** Container as clients name it: mkv, mp4, webm, avi, ts… */
  container: string;
  /** Seconds. */
  duration: number;
  /** bits per second (whole file). */
  bitrate: number;
  video: VideoInfo | null;
  audio: AudioInfo[];
  subtitles: SubtitleInfo[];
  /** Absent in scans made before tags were read. */
  tags?: MediaTags;
}

export interface MediaFile {
  /** Opaque, stable (derived from the path). */
  id: string;
  itemId: string;
  libraryId: number;
  path: string;
  size: number;
  mtimeMs: number;
  /** The version's label: `1080p` from `Title (Year) - 1080p.mkv`, else null. */
  label: string | null;
  /** null when the file could not be read (then `error` says why). */
  info: MediaInfo | null;
  error: string | null;
}

export interface Item {
  /** Opaque, stable across rescans and restarts (derived from library + title/year or show/season/episode). */
  id: string;
  libraryId: number;
  type: ItemType;
  title: string;
  year: number | null;
  /** Series of a season, season of an episode. */
  parentId: string | null;
  seasonNumber: number | null;
  episodeNumber: number | null;
  /** ms since epoch: when the item first appeared. */
  addedAt: number;
}

export const PLAYABLE: ReadonlySet<ItemType> = new Set(['movie', 'episode']);

const CONTAINERS: [RegExp, string][] = [
  [/matroska/, 'mkv'], [/webm/, 'webm'], [/mp4|mov|m4a|3gp/, 'mp4'], [/mpegts/, 'ts'], [/avi/, 'avi'], [/flv/, 'flv'], [/ogg/, 'ogg'],
];

/**
 * ffprobe's format_name is a list (`matroska,webm`, `mov,mp4,m4a,3gp,3g2,mj2`):
 * the file's extension decides between the names it allows.
 */
export function containerOf(formatName: string | undefined, filePath: string): string {
  const ext = filePath.slice(filePath.lastIndexOf('.') + 1).toLowerCase();
  const names = (formatName ?? '').split(',');
  if (ext === 'webm' && names.includes('webm')) return 'webm';
  if ((ext === 'mkv' || ext === 'mk3d') && names.includes('matroska')) return 'mkv';
  for (const [pattern, name] of CONTAINERS) if (pattern.test(formatName ?? '')) return name;
  return ext || 'unknown';
}

const num = (v: unknown): number | null => {
  const n = typeof v === 'string' ? Number(v) : typeof v === 'number' ? v : NaN;
  return Number.isFinite(n) && n > 0 ? n : null;
};

function fps(rate: unknown): number | null {
  if (typeof rate !== 'string') return null;
  const [a, b] = rate.split('/').map(Number);
  if (!a || !b) return null;
  return Math.round((a / b) * 1000) / 1000;
}

const lang = (tags: Record<string, string> | undefined): string | null => {
  const l = tags?.language ?? tags?.LANGUAGE;
  return l && l !== 'und' ? l : null;
};

/** Matroska files written by mkvmerge carry each stream's bitrate as a BPS tag. */
const bpsTag = (tags: Record<string, string> | undefined): number | null => num(tags?.BPS ?? tags?.['BPS-eng']);

const TAG_NAMES: [keyof MediaTags, string[]][] = [
  ['title', ['title']], ['description', ['synopsis', 'description', 'summary']], ['genre', ['genre']], ['date', ['date_released', 'date', 'year']],
];

function mediaTags(tags: Record<string, string> | undefined): MediaTags {
  const lower = new Map(Object.entries(tags ?? {}).map(([k, v]) => [k.toLowerCase(), String(v).trim()]));
  const out: MediaTags = {};
  for (const [name, keys] of TAG_NAMES) {
    const value = keys.map((k) => lower.get(k)).find((v) => v);
    if (value) out[name] = value.slice(0, 4000);
  }
  return out;
}

/** The summary of an ffprobe result that browsing and the play decision use. */
export function mediaInfoFromProbe(probe: ProbeResult, filePath: string): MediaInfo {
  const streams = probe.streams ?? [];
  // Cover art is a video stream too (attached_pic): never the one we play.
  const video = streams.find((s) => s.codec_type === 'video' && !s.disposition?.attached_pic);
  const duration = num(probe.format.duration) ?? 0;
  const size = num(probe.format.size);
  return {
    container: containerOf(probe.format.format_name, filePath),
    duration,
    bitrate: num(probe.format.bit_rate) ?? (size && duration ? Math.round((size * 8) / duration) : 0),
    video: video ? {
      index: video.index,
      codec: String(video.codec_name ?? 'unknown'),
      profile: video.profile ?? null,
      width: video.width ?? 0,
      height: video.height ?? 0,
      hdr: video.color_transfer === 'smpte2084' || video.color_transfer === 'arib-std-b67',
      bitrate: num(video.bit_rate) ?? bpsTag(video.tags),
      fps: fps(video.avg_frame_rate) ?? fps(video.r_frame_rate),
    } : null,
    audio: streams.filter((s) => s.codec_type === 'audio').map((s) => ({
      index: s.index,
      codec: String(s.codec_name ?? 'unknown'),
      channels: s.channels ?? 2,
      bitrate: num(s.bit_rate) ?? bpsTag(s.tags),
      language: lang(s.tags),
      title: s.tags?.title ?? null,
      default: Boolean(s.disposition?.default),
    })),
    subtitles: streams.filter((s) => s.codec_type === 'subtitle').map((s) => ({
      index: s.index,
      codec: String(s.codec_name ?? 'unknown'),
      language: lang(s.tags),
      title: s.tags?.title ?? null,
      default: Boolean(s.disposition?.default),
      forced: Boolean(s.disposition?.forced),
    })),
    tags: mediaTags(probe.format.tags),
  };
}
