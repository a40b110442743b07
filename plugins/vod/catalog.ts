/**
 * What the vod plugin offers the plugins that build on VOD: lookups
 * (vodCatalogService) and what they add to play-info, manifests, the
 * libraries and browsing (vodExtensionPoint). One object serves both, as SDK
 * 1.0's VodCatalogService did.
 */
import type {
  AuthService, AuthUser, CatalogFile, CatalogItem, CatalogLibrarySource, CatalogSearchHit, Logger, ManifestSubtitle,
  VodCatalogService, VodExtensions, WatchState,
} from 'antenna/sdk';
import { isItemId } from './access.js';
import type { ArtworkKind, ArtworkRef } from './artwork.js';
import { PLAYABLE, type Item, type MediaFile } from './model.js';
import { sortTitle } from './naming.js';
import type { VodStore } from './store.js';

type PlayInfoField = { name: string; compute: (user: AuthUser, item: CatalogItem) => unknown | Promise<unknown> };
type SubtitleSource = (user: AuthUser, item: CatalogItem, file: CatalogFile) => Promise<ManifestSubtitle[]>;
type WatchStateSource = (user: AuthUser, ids: readonly string[]) => Promise<ReadonlyMap<string, WatchState>>;

/** The URL of an item's picture for a user: it carries the picture's tag (a new picture, a new URL) and a key for that item's pictures. */
export function artworkUrl(auth: AuthService, user: AuthUser, itemId: string, kind: ArtworkKind, ref: ArtworkRef): string {
  return `/api/items/${itemId}/images/${kind}?tag=${ref.tag}&key=${auth.signMediaKey(user, `vod-image:${itemId}`)}`;
}

export function toCatalogFile(file: MediaFile): CatalogFile {
  return { path: file.path, size: file.size, mtimeMs: file.mtimeMs, duration: file.info?.duration ?? 0, subtitles: file.info?.subtitles ?? [] };
}

export class Catalog implements VodCatalogService, VodExtensions {
  private readonly playListeners: ((user: AuthUser, item: CatalogItem) => void)[] = [];
  private readonly playInfoFields: PlayInfoField[] = [];
  private readonly subtitleSources: SubtitleSource[] = [];
  /** Libraries other plugins provide, by library id. */
  private readonly provided = new Map<number, CatalogLibrarySource>();
  private watchState?: WatchStateSource;

  constructor(private readonly db: VodStore, private readonly auth: AuthService, private readonly log: Logger) {}

  async toCatalogItem(item: Item): Promise<CatalogItem> {
    const versions = await this.db.versions(item.id);
    const season = item.type === 'episode' && item.parentId ? await this.db.item(item.parentId) : undefined;
    const series = season?.parentId ? await this.db.item(season.parentId) : undefined;
    return {
      id: item.id, libraryId: item.libraryId, contentType: item.type === 'episode' ? 'episode' : 'movie', title: item.title,
      duration: versions[0]?.info?.duration ?? 0, seriesId: season?.parentId ?? null, seasonNumber: item.seasonNumber, episodeNumber: item.episodeNumber,
      seriesTitle: series?.title ?? null,
    };
  }

  private async visible(user: AuthUser, id: string): Promise<Item | undefined> {
    if (!isItemId(id)) return undefined;
    const item = await this.db.item(id);
    return item && PLAYABLE.has(item.type) && this.auth.canAccessLibrary(user, item.libraryId) ? item : undefined;
  }

  async addLibrary(library: { name: string; source: CatalogLibrarySource }): Promise<number> {
    const lib = await this.db.ensureProvidedLibrary(library.name);
    this.provided.set(lib.id, library.source);
    return lib.id;
  }

  /** The provided library that owns an id, if one does. */
  providerOf(id: string): { libraryId: number; source: CatalogLibrarySource } | undefined {
    for (const [libraryId, source] of this.provided) if (source.owns(id)) return { libraryId, source };
    return undefined;
  }

  /** The source of a provided library. */
  providedLibrary(libraryId: number): CatalogLibrarySource | undefined {
    return this.provided.get(libraryId);
  }

  /** An item of a provided library, if the user may see it. */
  async providedItem(user: AuthUser, id: string): Promise<{ item: CatalogItem; source: CatalogLibrarySource } | undefined> {
    const owner = this.providerOf(id);
    if (!owner || !this.auth.canAccessLibrary(user, owner.libraryId)) return undefined;
    const item = await owner.source.item(id);
    return item && { item, source: owner.source };
  }

  async item(user: AuthUser, id: string): Promise<CatalogItem | undefined> {
    if (this.providerOf(id)) return (await this.providedItem(user, id))?.item;
    const item = await this.visible(user, id);
    return item && this.toCatalogItem(item);
  }

  async files(user: AuthUser, id: string): Promise<CatalogFile[]> {
    if (this.providerOf(id)) return [];
    const item = await this.visible(user, id);
    return item ? (await this.db.versions(item.id)).map(toCatalogFile) : [];
  }

  async nextEpisode(user: AuthUser, id: string): Promise<CatalogItem | undefined> {
    if (this.providerOf(id)) {
      const found = await this.providedItem(user, id);
      return found && (await found.source.nextItem?.(id));
    }
    const item = await this.visible(user, id);
    if (!item || item.type !== 'episode' || !item.parentId) return undefined;
    const season = await this.db.item(item.parentId);
    if (!season?.parentId) return undefined;
    // Every episode of the series, in (season, episode) order: the one after this.
    const episodes: Item[] = [];
    for (const s of await this.db.children(season.parentId)) episodes.push(...(await this.db.children(s.id)));
    const at = episodes.findIndex((e) => e.id === item.id);
    const next = at >= 0 ? episodes[at + 1] : undefined;
    return next && this.toCatalogItem(next);
  }

  async search(user: AuthUser, query: string, limit: number): Promise<CatalogSearchHit[]> {
    const folded = sortTitle(query);
    const libraries = this.db.libraries().filter((l) => l.type !== 'recordings' && this.auth.canAccessLibrary(user, l.id)).map((l) => l.id);
    const found = await this.db.search(libraries, ['movie', 'series', 'episode'], folded, limit);
    return found.map((i) => ({
      id: i.id, libraryId: i.libraryId, type: i.type as CatalogSearchHit['type'], title: i.title, year: i.year,
      seriesTitle: i.seriesTitle, seasonNumber: i.seasonNumber, episodeNumber: i.episodeNumber,
      posterUrl: i.poster && artworkUrl(this.auth, user, i.id, 'poster', i.poster),
    }));
  }

  async posterUrls(user: AuthUser, ids: readonly string[]): Promise<Map<string, string>> {
    const items = (await this.db.itemsById(ids)).filter((i) => this.auth.canAccessLibrary(user, i.libraryId));
    const posters = await this.db.posters(items.map((i) => i.id));
    return new Map([...posters].map(([id, ref]) => [id, artworkUrl(this.auth, user, id, 'poster', ref)]));
  }

  setWatchState(source: WatchStateSource): void {
    if (this.watchState) throw new Error('a watch-state source is set already');
    this.watchState = source;
  }

  /** The user's watch state of these items, when a plugin keeps it (else undefined). */
  async watchStates(user: AuthUser, ids: readonly string[]): Promise<ReadonlyMap<string, WatchState> | undefined> {
    if (!this.watchState) return undefined;
    return this.watchState(user, ids).catch((err) => {
      this.log.warn({ err }, 'watch state left out');
      return undefined;
    });
  }

  onPlay(listener: (user: AuthUser, item: CatalogItem) => void): void {
    this.playListeners.push(listener);
  }

  addPlayInfoField(name: string, compute: PlayInfoField['compute']): void {
    this.playInfoFields.push({ name, compute });
  }

  addManifestSubtitles(source: SubtitleSource): void {
    this.subtitleSources.push(source);
  }

  // ---- used by the vod plugin's routes

  reportPlay(user: AuthUser, item: CatalogItem): void {
    for (const listener of this.playListeners) {
      try { listener(user, item); } catch (err) { this.log.warn({ err, item: item.id }, 'a play listener failed'); }
    }
  }

  /** Tell listeners a user started playing (never throws, never waits). */
  played(user: AuthUser, item: Item): void {
    if (!this.playListeners.length) return;
    void this.toCatalogItem(item).then((ci) => this.reportPlay(user, ci), (err) => this.log.warn({ err, item: item.id }, 'play listeners skipped'));
  }

  /** The extra play-info fields other plugins add (for a vod item, or a provided library's). */
  async playInfoExtras(user: AuthUser, item: Item | CatalogItem): Promise<Record<string, unknown>> {
    if (!this.playInfoFields.length) return {};
    const ci = 'contentType' in item ? item : await this.toCatalogItem(item);
    const out: Record<string, unknown> = {};
    for (const f of this.playInfoFields) {
      const value = await f.compute(user, ci);
      if (value !== undefined) out[f.name] = value;
    }
    return out;
  }

  /** Subtitle tracks for a manifest of this file. */
  async manifestSubtitles(user: AuthUser, item: Item, file: MediaFile): Promise<ManifestSubtitle[]> {
    if (!this.subtitleSources.length) return [];
    const ci = await this.toCatalogItem(item);
    const lists = await Promise.all(this.subtitleSources.map((s) => s(user, ci, toCatalogFile(file)).catch((err) => {
      this.log.warn({ err, item: item.id }, 'a subtitle source failed; the manifest lists no subtitles from it');
      return [];
    })));
    return lists.flat();
  }
}
