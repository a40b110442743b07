/**
 * What the `vod` plugin offers the plugins that build on it (continue-watching,
 * subtitles, dvr):
 *
 * - `vodCatalogService`: lookups of items and files, with the caller's library
 *   grants applied (an item the user may not see is `undefined`, exactly like
 *   an unknown id: answer 404, never 403);
 * - `vodExtensionPoint`: what they add to VOD (a library of their own items,
 *   play listeners, play-info fields, subtitle tracks in manifests).
 *
 *   env.registerInit({ deps: { catalog: vodCatalogService, vod: vodExtensionPoint }, init({ catalog, vod }) { … } })
 */
import { createExtensionPoint, createServiceRef, type ServiceRef } from './refs.js';
import type { AuthUser } from './services.js';

export type ContentType = 'movie' | 'episode' | 'recording';

export interface CatalogItem {
  /** Opaque item id (the `videoId` of continue-watching). */
  id: string;
  libraryId: number;
  contentType: ContentType;
  title: string;
  /** Seconds (of the default version). */
  duration: number;
  /** Episodes: their series and numbers. */
  seriesId: string | null;
  seasonNumber: number | null;
  episodeNumber: number | null;
  /** ms since epoch: when it appeared (a recording: its start). */
  addedAt?: number;
}

export interface CatalogSubtitleStream {
  /** ffprobe stream index within the file. */
  index: number;
  codec: string;
  language: string | null;
  title: string | null;
  default: boolean;
  forced: boolean;
}

export interface CatalogFile {
  /** Absolute path of the media file. */
  path: string;
  size: number;
  mtimeMs: number;
  /** Seconds. */
  duration: number;
  subtitles: CatalogSubtitleStream[];
}

/** A subtitle track a manifest lists (HLS SUBTITLES rendition, DASH text AdaptationSet). */
export interface ManifestSubtitle {
  label: string;
  /** BCP 47 / ISO 639 code, or null. */
  language: string | null;
  /** Absolute path (from the server root) of the WebVTT file; the vod plugin adds its signed key. */
  url: string;
  default: boolean;
  forced: boolean;
}

/** What play-info answers for an item another plugin provides. */
export interface CatalogPlayInfo {
  method: 'remux' | 'transcode';
  /** The manifest to request, carrying its own signed key. */
  url: string;
  format: 'hls' | 'dash';
}

/**
 * The items of a library another plugin provides (the DVR's "Recordings"):
 * they are browsed, played, listed in continue watching like any VOD item.
 */
/** A group of a provided library's items, browsed like a show: a series or one of its seasons. Since SDK 1.2. */
export interface CatalogGroup {
  id: string;
  libraryId: number;
  kind: 'series' | 'season';
  /** A season's series. */
  parentId: string | null;
  title: string;
  seasonNumber: number | null;
  childCount: number;
  /** ms since epoch: its newest item's. */
  addedAt: number;
}

export interface CatalogLibrarySource {
  /** Whether an item or group id is this source's (e.g. `rec-12`); ids must not collide with others'. */
  owns(itemId: string): boolean;
  item(itemId: string): Promise<CatalogItem | undefined>;
  /** Every item, in display order. */
  list(): Promise<CatalogItem[]>;
  /**
   * Browsing as shows (since SDK 1.2): `null` gives the top level (groups and the items in none),
   * a group's id the group and its children, in display order; undefined when it is no group.
   */
  browse?(parentId: string | null): Promise<{ group: CatalogGroup | null; children: (CatalogItem | CatalogGroup)[] } | undefined>;
  /** The item after this one in its series, for "up next" (since SDK 1.2). */
  nextItem?(itemId: string): Promise<CatalogItem | undefined>;
  /** The manifest for this user and device (`dashOnly`: the Device-OS rule); undefined → 404. */
  playInfo(user: AuthUser, itemId: string, dashOnly: boolean): Promise<CatalogPlayInfo | undefined>;
}

/** Lookups in the VOD catalog, for the user asking. */
export interface VodCatalogService {
  /** A playable item (movie, episode, recording) the user may see. */
  item(user: AuthUser, id: string): Promise<CatalogItem | undefined>;
  /** Its files, best version first (empty when none is readable). */
  files(user: AuthUser, id: string): Promise<CatalogFile[]>;
  /** The episode after this one in its series (next in the season, else the first of the next season). */
  nextEpisode(user: AuthUser, id: string): Promise<CatalogItem | undefined>;
  /** Report that a user started playing an item your library provides (vod reports its own). */
  reportPlay(user: AuthUser, item: CatalogItem): void;
}

/** What other plugins add to VOD, during their init. */
export interface VodExtensions {
  /**
   * Adds a library whose items this source provides; resolves to its id,
   * stable across restarts (kept by name). Grants (`--library ID`) apply to it
   * like to any library.
   */
  addLibrary(library: { name: string; source: CatalogLibrarySource }): Promise<number>;
  /** Called (not awaited) when a user requests play-info or a manifest of an item. */
  onPlay(listener: (user: AuthUser, item: CatalogItem) => void): void;
  /** Adds a field to play-info (continue-watching adds `resume_position`); undefined leaves it out. */
  addPlayInfoField(name: string, compute: (user: AuthUser, item: CatalogItem) => unknown | Promise<unknown>): void;
  /** Lists subtitle tracks in transcoded manifests (the subtitles plugin adds one). */
  addManifestSubtitles(source: (user: AuthUser, item: CatalogItem, file: CatalogFile) => Promise<ManifestSubtitle[]>): void;
}

export const vodCatalogService = createServiceRef<VodCatalogService>({ id: 'vod.catalog', owner: 'vod' });
export const vodExtensionPoint = createExtensionPoint<VodExtensions>({ id: 'vod.extensions', owner: 'vod' });

/** @deprecated since SDK 1.1: SDK 1.0's catalog, lookups and additions in one; use vodCatalogService and vodExtensionPoint. */
export interface VodCatalog extends VodCatalogService, VodExtensions {}

/** @deprecated since SDK 1.1: SDK 1.0's name; the service it names also takes the additions of `vodExtensionPoint`. */
export const vodCatalogExtensionPoint = vodCatalogService as ServiceRef<VodCatalog>;
