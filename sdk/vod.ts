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
 *
 * - `vodMetadataExtensionPoint`: metadata providers (since SDK 1.1). The
 *   built-in `local` provider reads NFO files, the images beside the media
 *   and the tags inside it; a plugin adds another (an online database) after it.
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
  /** Episodes: their series' title (since SDK 1.1). */
  seriesTitle?: string | null;
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
  /**
   * Movies, series and episodes whose title contains `query` (case, accents and
   * punctuation aside), up to `limit` of each type, titles starting with it first. (Since SDK 1.1.)
   */
  search(user: AuthUser, query: string, limit: number): Promise<CatalogSearchHit[]>;
  /**
   * The picture of each of these items for this user, as cards show it (`?width=` may be
   * added): its poster, an episode's still, else a frame of its video. Items without one,
   * or that the user may not see, are left out. (Since SDK 1.2.)
   */
  posterUrls(user: AuthUser, ids: readonly string[]): Promise<Map<string, string>>;
}

/** An item a catalog search found. */
export interface CatalogSearchHit {
  id: string;
  libraryId: number;
  type: 'movie' | 'series' | 'episode';
  title: string;
  year: number | null;
  /** Episodes: their series, season and number. */
  seriesTitle: string | null;
  seasonNumber: number | null;
  episodeNumber: number | null;
  /** The item's picture for this user (`?width=` may be added), or null when it has none. */
  posterUrl: string | null;
}

/** A user's progress through one item, as a plugin keeping it (continue-watching) knows it. */
export interface WatchState {
  watched: boolean;
  /** Seconds reached; 0 when not started. */
  position: number;
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
  /**
   * Where browsing reads users' watch state (continue-watching sets it; one source): library and
   * item answers then say what is watched and how far, and libraries filter unwatched titles.
   * The source answers for the ids it has state for and leaves the others out. (Since SDK 1.1.)
   */
  setWatchState(source: (user: AuthUser, ids: readonly string[]) => Promise<ReadonlyMap<string, WatchState>>): void;
}

// ---- Metadata and artwork (since SDK 1.1)

/** What a metadata provider knows of an item. Every field is optional: a provider gives what it has. */
export interface ItemMetadata {
  title?: string;
  originalTitle?: string;
  /** The title to order by (`Matrix 1`), when it is not the title itself. */
  sortTitle?: string;
  year?: number;
  plot?: string;
  tagline?: string;
  genres?: string[];
  cast?: CastMember[];
  directors?: string[];
  studios?: string[];
  /** 0 to 10. */
  rating?: number;
  /** The age rating as the source writes it (`PG-13`, `FSK 12`). */
  contentRating?: string;
  /** Seconds. */
  runtime?: number;
  /** YYYY-MM-DD: a movie's release, an episode's first airing, a show's premiere. */
  premiered?: string;
  /** Portrait art: a movie's or a show's poster; for an episode, its still. */
  poster?: ArtworkSource;
  /** Landscape art for the item page's background (fanart). */
  backdrop?: ArtworkSource;
}

export interface CastMember {
  name: string;
  role?: string;
}

/**
 * Where a picture is: `path`, a file inside one of the item's library folders
 * (anything else is refused), or `url`, http(s), downloaded once into vod's
 * image cache when it is first shown.
 */
export type ArtworkSource = { path: string } | { url: string };

/** The item a provider is asked about. */
export interface MetadataRequest {
  type: 'movie' | 'series' | 'season' | 'episode';
  itemId: string;
  libraryId: number;
  /** As the file and folder names give them. */
  title: string;
  year: number | null;
  seasonNumber: number | null;
  episodeNumber: number | null;
  /** Movies and episodes: their media files (absolute paths, best version first). */
  files: string[];
  /** The folder that holds this item alone (a movie's own folder, a show's, a season's), or null. */
  folder: string | null;
  /** Seasons and episodes: their series, as the names give it. */
  series?: { title: string; year: number | null; folder: string | null };
  /** What the providers before this one found (the local one runs first). */
  found: Readonly<ItemMetadata>;
  signal: AbortSignal;
}

export interface MetadataProvider {
  /** 1-32 of [a-z0-9-]; `local` is the built-in one. */
  id: string;
  name: string;
  /**
   * What it knows of the item, or undefined. Fields a provider before it gave are kept
   * (local files win); a provider that throws is left out for that item, which is asked
   * again at the next scan.
   */
  fetch(request: MetadataRequest): Promise<ItemMetadata | undefined>;
}

export interface MetadataRegistry {
  /** Adds a provider during init; providers run after the built-in local one, in the order added. */
  addProvider(provider: MetadataProvider): void;
}

export const vodCatalogService = createServiceRef<VodCatalogService>({ id: 'vod.catalog', owner: 'vod' });
export const vodExtensionPoint = createExtensionPoint<VodExtensions>({ id: 'vod.extensions', owner: 'vod' });
/**
 * Metadata providers: vod asks them, after its local one, about every item a scan
 * finds new or changed (and about all items once when the providers change).
 *
 *   env.registerInit({ deps: { metadata: vodMetadataExtensionPoint }, init({ metadata }) { metadata.addProvider(myProvider); } })
 */
export const vodMetadataExtensionPoint = createExtensionPoint<MetadataRegistry>({ id: 'vod.metadata', owner: 'vod' });

/** @deprecated since SDK 1.1: SDK 1.0's catalog, lookups and additions in one; use vodCatalogService and vodExtensionPoint. */
export interface VodCatalog extends VodCatalogService, VodExtensions {}

/** @deprecated since SDK 1.1: SDK 1.0's name; the service it names also takes the additions of `vodExtensionPoint`. */
export const vodCatalogExtensionPoint = vodCatalogService as ServiceRef<VodCatalog>;
