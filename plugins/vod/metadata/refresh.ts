/**
 * The metadata step of a scan: for every item of the library whose inputs
 * changed (its files, the NFO and image files beside them, its name, the
 * providers), ask the providers (the local one first, then the plugins', in
 * the order they were added) and keep what they say in vod_metadata. The
 * first provider to give a field wins, so local files beat online databases.
 *
 * Where nothing gives a picture: a movie or an episode gets its file's cover
 * art, else a frame (artwork.ts makes it when it is first shown); a show gets
 * its first episode's; a season its show's poster and backdrop.
 *
 * A provider that fails (or takes longer than PROVIDER_TIMEOUT_MS) is left out
 * for that item, and the item is asked again at the next scan. Items under a
 * folder the scan could not read keep what they had.
 */
import { createHash } from 'node:crypto';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { ArtworkSource, ItemMetadata, Logger, MetadataProvider, MetadataRequest } from 'antenna/sdk';
import { artworkTag, insideFolders, isWebUrl, type ArtworkRef } from '../artwork.js';
import type { Library, MediaFile } from '../model.js';
import { seasonOfFolder, sortTitle } from '../naming.js';
import { sortVersions, type ItemDetails, type ItemRow, type MetadataRow, type VodStore } from '../store.js';
import { LocalProvider, sidecarsOf, type SidecarIndex } from './local-provider.js';
import { pool } from '../pool.js';

/** Bumped when what the local provider reads changes, so every item is read again once. */
const LOCAL_VERSION = 1;
const PROVIDER_TIMEOUT_MS = 30_000;
const CONCURRENCY = 4;
const BATCH = 200;

export interface RefreshInput {
  library: Library;
  /** Every item of the library after the scan, by id. */
  items: Map<string, ItemRow>;
  /** The library's readable files. */
  files: MediaFile[];
  sidecars: SidecarIndex;
  /** Folders the scan could not read. */
  unavailable: string[];
}

interface Planned {
  row: ItemRow;
  request: Omit<MetadataRequest, 'found' | 'signal'>;
  /** Movies and episodes: their files; a show: its first episode's (for its picture). */
  files: MediaFile[];
  fingerprint: string;
}

const str = (v: unknown, max = 512): string | undefined => (typeof v === 'string' && v.trim() ? v.trim().slice(0, max) : undefined);
const strings = (v: unknown, max = 50): string[] | undefined => {
  if (!Array.isArray(v)) return undefined;
  const list = [...new Set(v.map((x) => str(x, 200)).filter((x): x is string => !!x))].slice(0, max);
  return list.length ? list : undefined;
};
const num = (v: unknown, min: number, max: number): number | undefined => (typeof v === 'number' && Number.isFinite(v) && v >= min && v <= max ? v : undefined);
const source = (v: unknown): ArtworkSource | undefined => {
  const o = v as { path?: unknown; url?: unknown } | undefined;
  if (typeof o?.path === 'string' && o.path) return { path: o.path };
  if (typeof o?.url === 'string' && o.url) return { url: o.url };
  return undefined;
};

/** A provider's answer with every field checked (a plugin's answer is not trusted to be well-formed). */
export function sanitize(m: ItemMetadata | undefined): ItemMetadata {
  if (!m || typeof m !== 'object') return {};
  const cast = Array.isArray(m.cast) ? m.cast.map((c) => ({ name: str(c?.name, 200), role: str(c?.role, 200) }))
    .filter((c): c is { name: string; role: string | undefined } => !!c.name).slice(0, 50).map((c) => (c.role ? c : { name: c.name })) : [];
  const out: ItemMetadata = {
    title: str(m.title), originalTitle: str(m.originalTitle), sortTitle: str(m.sortTitle), plot: str(m.plot, 8000), tagline: str(m.tagline, 1000),
    year: num(m.year, 1800, 2200), rating: num(m.rating, 0, 10), runtime: num(m.runtime, 1, 1e6), contentRating: str(m.contentRating, 50),
    premiered: typeof m.premiered === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(m.premiered) ? m.premiered : undefined,
    genres: strings(m.genres, 20), directors: strings(m.directors, 20), studios: strings(m.studios, 20), cast: cast.length ? cast : undefined,
    poster: source(m.poster), backdrop: source(m.backdrop),
  };
  if (out.year !== undefined) out.year = Math.trunc(out.year);
  if (out.runtime !== undefined) out.runtime = Math.round(out.runtime);
  for (const key of Object.keys(out) as (keyof ItemMetadata)[]) if (out[key] === undefined) delete out[key];
  return out;
}

const fingerprintOf = (parts: unknown[]): string => createHash('sha1').update(JSON.stringify(parts)).digest('hex');

/** Where a frame for a picture is taken: a tenth of the way in, at most ten minutes. */
const frameAt = (file: MediaFile): number => Math.round(Math.min(600, (file.info?.duration ?? 0) * 0.1) * 10) / 10;
const videoRef = (file: MediaFile): ArtworkRef => {
  const at = frameAt(file);
  return { video: file.path, at, tag: artworkTag('video', file.path, file.size, file.mtimeMs, at) };
};

export class MetadataRefresher {
  constructor(
    private readonly store: VodStore,
    /** The plugins' providers (read at each refresh: the registry is complete once the server started). */
    private readonly providers: () => readonly MetadataProvider[],
    private readonly logger: Logger,
    private readonly now: () => number,
  ) {}

  /** Reads what changed; returns how many items were read and how many a provider failed on. */
  async refresh(input: RefreshInput, signal: AbortSignal, progress?: (fraction: number) => void): Promise<{ read: number; failed: number }> {
    const { library } = input;
    const providers = [
      new LocalProvider(input.sidecars, (file) => tagsByPath.get(file), (file, err) => this.logger.warn({ err, libraryId: library.id, file }, 'NFO file not read')),
      ...this.providers(),
    ];
    const tagsByPath = new Map(input.files.map((f) => [f.path, f.info?.tags]));
    const plan = this.plan(input, providers.map((p) => p.id));
    const stored = await this.store.metadataFingerprints(library.id);
    const todo = plan.filter((p) => stored.get(p.row.id) !== p.fingerprint);
    if (!todo.length) return { read: 0, failed: 0 };

    // Shows first: their seasons take their pictures.
    const showArt = new Map<string, { poster: ArtworkRef | null; backdrop: ArtworkRef | null }>();
    const failures = new Map<string, number>();
    let pending: { row: MetadataRow; genres: string[] }[] = [];
    let done = 0;
    const flush = async () => {
      const batch = pending;
      pending = [];
      if (batch.length) await this.store.transaction((trx) => this.store.saveMetadata(trx, batch.map((b) => b.row), new Map(batch.map((b) => [b.row.item_id, b.genres]))));
    };
    const work = async (p: Planned) => {
      const { meta, failed } = await this.ask(providers, p, signal, failures);
      if (signal.aborted) return;
      const refs = await this.pictures(p, meta, input, showArt);
      if (p.row.type === 'series') showArt.set(p.row.id, refs);
      pending.push({ row: this.row(p, meta, refs, failed), genres: meta.genres ?? [] });
      progress?.(++done / todo.length);
      if (pending.length >= BATCH) await flush();
    };
    await pool(todo.filter((p) => p.row.type === 'series'), CONCURRENCY, signal, work);
    await pool(todo.filter((p) => p.row.type !== 'series'), CONCURRENCY, signal, work);
    await flush();
    for (const [provider, n] of failures) this.logger.warn({ libraryId: library.id, provider, items: n }, 'a metadata provider failed; those items are asked again at the next scan');
    return { read: done, failed: [...failures.values()].reduce((a, b) => a + b, 0) };
  }

  /** The requests for every item, with the fingerprint of what each is read from. */
  private plan(input: RefreshInput, providerIds: string[]): Planned[] {
    const { library, items, sidecars } = input;
    const roots = new Set(library.paths);
    const under = (p: string) => input.unavailable.some((dir) => p === dir || p.startsWith(dir + path.sep));
    const filesOf = new Map<string, MediaFile[]>();
    const itemsIn = new Map<string, Set<string>>();
    for (const f of input.files) {
      let list = filesOf.get(f.itemId);
      if (!list) filesOf.set(f.itemId, (list = []));
      list.push(f);
      const dir = path.dirname(f.path);
      let set = itemsIn.get(dir);
      if (!set) itemsIn.set(dir, (set = new Set()));
      set.add(f.itemId);
    }
    for (const list of filesOf.values()) sortVersions(list);
    const children = new Map<string, ItemRow[]>();
    for (const row of items.values()) {
      if (!row.parent_id) continue;
      let list = children.get(row.parent_id);
      if (!list) children.set(row.parent_id, (list = []));
      list.push(row);
    }
    const byNumber = (a: ItemRow, b: ItemRow) => ((a.season || 1e6) - (b.season || 1e6)) || ((a.episode ?? 0) - (b.episode ?? 0));
    const episodesOf = (row: ItemRow): ItemRow[] => (row.type === 'season' ? children.get(row.id) ?? [] : (children.get(row.id) ?? []).flatMap((s) => children.get(s.id) ?? []))
      .sort(byNumber);

    /** The one folder all these files are in, when it holds nothing else and is not a library folder. */
    const ownFolder = (dirs: string[], members: Set<string>): string | null => {
      const unique = [...new Set(dirs)];
      if (unique.length !== 1 || roots.has(unique[0])) return null;
      return [...itemsIn.get(unique[0]) ?? []].every((id) => members.has(id)) ? unique[0] : null;
    };
    const episodeDirs = (row: ItemRow) => episodesOf(row).flatMap((e) => (filesOf.get(e.id) ?? []).map((f) => path.dirname(f.path)));
    const showFolder = (series: ItemRow): string | null => {
      const members = new Set(episodesOf(series).map((e) => e.id));
      // Episodes sit in the show's folder or in its season folders.
      const dirs = episodeDirs(series).map((d) => (seasonOfFolder(path.basename(d)) !== null ? path.dirname(d) : d));
      const unique = [...new Set(dirs)];
      if (unique.length !== 1 || roots.has(unique[0])) return null;
      return [...itemsIn.get(unique[0]) ?? []].every((id) => members.has(id)) ? unique[0] : null;
    };
    const seasonFolder = (season: ItemRow): string | null => {
      const dirs = episodeDirs(season);
      const folder = ownFolder(dirs, new Set(episodesOf(season).map((e) => e.id)));
      return folder && seasonOfFolder(path.basename(folder)) !== null ? folder : null;
    };

    const shows = new Map<string, { title: string; year: number | null; folder: string | null }>();
    const planned: Planned[] = [];
    for (const row of items.values()) {
      const files = row.type === 'movie' || row.type === 'episode' ? filesOf.get(row.id) ?? []
        : row.type === 'series' ? (filesOf.get(episodesOf(row)[0]?.id ?? '') ?? []).slice(0, 1) : [];
      const allFiles = row.type === 'movie' || row.type === 'episode' ? files : episodesOf(row).flatMap((e) => filesOf.get(e.id) ?? []);
      if (allFiles.some((f) => under(f.path))) continue;
      let folder: string | null = null;
      let series: MetadataRequest['series'];
      if (row.type === 'movie') folder = ownFolder(files.map((f) => path.dirname(f.path)), new Set([row.id]));
      else if (row.type === 'series') folder = showFolder(row);
      else if (row.type === 'season') folder = seasonFolder(row);
      if (row.type === 'season' || row.type === 'episode') {
        const show = items.get(row.type === 'season' ? row.parent_id ?? '' : items.get(row.parent_id ?? '')?.parent_id ?? '');
        if (show) {
          if (!shows.has(show.id)) shows.set(show.id, { title: show.title, year: show.year, folder: showFolder(show) });
          series = shows.get(show.id);
        }
      }
      const request: Planned['request'] = {
        type: row.type, itemId: row.id, libraryId: library.id, title: row.title, year: row.year,
        seasonNumber: row.season, episodeNumber: row.episode,
        files: row.type === 'movie' || row.type === 'episode' ? files.map((f) => f.path) : [],
        folder, ...(series ? { series } : {}),
      };
      const seen = sidecarsOf(sidecars, { ...request, files: files.map((f) => f.path) });
      // A season takes its show's pictures: what the show is read from counts for it too.
      const showSidecars = row.type === 'season' && series?.folder ? [...sidecars.get(series.folder)?.values() ?? []] : [];
      const fingerprint = fingerprintOf([
        LOCAL_VERSION, providerIds, request, files.map((f) => [f.path, f.size, f.mtimeMs]),
        [...seen, ...showSidecars].map((s) => [s.path, s.size, s.mtimeMs]),
      ]);
      planned.push({ row, request, files, fingerprint });
    }
    return planned;
  }

  /** Every provider in turn; the first to give a field keeps it. */
  private async ask(providers: MetadataProvider[], p: Planned, signal: AbortSignal, failures: Map<string, number>): Promise<{ meta: ItemMetadata; failed: boolean }> {
    const meta: ItemMetadata = {};
    let failed = false;
    for (const provider of providers) {
      if (signal.aborted) break;
      const timeout = AbortSignal.timeout(PROVIDER_TIMEOUT_MS);
      try {
        const found = sanitize(await provider.fetch({ ...p.request, found: { ...meta }, signal: AbortSignal.any([signal, timeout]) }));
        for (const [key, value] of Object.entries(found) as [keyof ItemMetadata, never][]) if (meta[key] === undefined) meta[key] = value;
      } catch (err) {
        if (signal.aborted) break;
        failed = true;
        if (!failures.has(provider.id)) this.logger.warn({ err, provider: provider.id, item: p.row.id }, 'metadata provider failed');
        failures.set(provider.id, (failures.get(provider.id) ?? 0) + 1);
      }
    }
    return { meta, failed };
  }

  /** The item's pictures, checked, with the fallbacks. */
  private async pictures(p: Planned, meta: ItemMetadata, input: RefreshInput, showArt: Map<string, { poster: ArtworkRef | null; backdrop: ArtworkRef | null }>) {
    let poster = await this.reference(meta.poster, input, p.row.id);
    let backdrop = await this.reference(meta.backdrop, input, p.row.id);
    if (!poster && p.files.length && p.row.type !== 'season') poster = videoRef(p.files[0]);
    if (p.row.type === 'season' && (!poster || !backdrop) && p.row.parent_id) {
      let show = showArt.get(p.row.parent_id);
      if (!show) {
        const stored = await this.store.metadata(p.row.parent_id);
        show = { poster: stored?.poster ?? null, backdrop: stored?.backdrop ?? null };
      }
      poster ??= show.poster ?? undefined;
      backdrop ??= show.backdrop ?? undefined;
    }
    return { poster: poster ?? null, backdrop: backdrop ?? null };
  }

  /** A provider's picture as a reference: a file inside the library's folders, or a web URL; anything else is dropped. */
  private async reference(s: ArtworkSource | undefined, input: RefreshInput, itemId: string): Promise<ArtworkRef | undefined> {
    if (!s) return undefined;
    if ('url' in s) {
      if (isWebUrl(s.url)) return { url: s.url, tag: artworkTag('url', s.url) };
    } else {
      const file = path.resolve(s.path);
      const known = input.sidecars.get(path.dirname(file))?.get(path.basename(file).toLowerCase());
      if (await insideFolders(file, input.library.paths)) {
        const st = known ?? await stat(file).then((x) => ({ size: x.size, mtimeMs: Math.trunc(x.mtimeMs) }), () => undefined);
        if (st) return { path: file, tag: artworkTag('path', file, st.size, st.mtimeMs) };
      }
    }
    this.logger.warn({ item: itemId, libraryId: input.library.id }, 'a picture outside the library\'s folders (or not a web URL) was left out');
    return undefined;
  }

  private row(p: Planned, meta: ItemMetadata, refs: { poster: ArtworkRef | null; backdrop: ArtworkRef | null }, failed: boolean): MetadataRow {
    const details: ItemDetails = {
      plot: meta.plot, tagline: meta.tagline, originalTitle: meta.originalTitle, genres: meta.genres, cast: meta.cast,
      directors: meta.directors, studios: meta.studios, contentRating: meta.contentRating, premiered: meta.premiered,
    };
    for (const key of Object.keys(details) as (keyof ItemDetails)[]) if (details[key] === undefined) delete details[key];
    const searchTitles = [meta.title, meta.originalTitle].filter((t): t is string => !!t).map(sortTitle);
    return {
      item_id: p.row.id, library_id: p.request.libraryId, fingerprint: failed ? '' : p.fingerprint,
      title: meta.title ?? null,
      sort_title: meta.sortTitle || meta.title ? sortTitle(meta.sortTitle ?? meta.title!) : null,
      // ' / ' holds the titles apart: a folded query has no '/' to match across them.
      search_title: searchTitles.length ? searchTitles.join(' / ') : null,
      year: meta.year ?? null, rating: meta.rating ?? null,
      runtime: meta.runtime ?? (p.row.type === 'movie' || p.row.type === 'episode' ? Math.round(p.files[0]?.info?.duration ?? 0) || null : null),
      details: JSON.stringify(details),
      poster: refs.poster && JSON.stringify(refs.poster), backdrop: refs.backdrop && JSON.stringify(refs.backdrop),
      updated_at: this.now(),
    };
  }
}
