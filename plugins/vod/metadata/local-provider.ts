/**
 * The built-in metadata provider, `local`: what lies beside the media and
 * inside it, the way Kodi, Jellyfin and Plex read a library.
 *
 * - NFO files: a movie's `<file name>.nfo` or its folder's `movie.nfo`, a
 *   show's `tvshow.nfo`, a season folder's `season.nfo`, an episode's
 *   `<file name>.nfo`.
 * - Images (jpg, jpeg, png, webp, tbn): a movie's `<file name>-poster` or its
 *   folder's `poster`/`folder`/`cover`, and `<file name>-fanart` or
 *   `fanart`/`backdrop`/`background`; a show's folder the same; a season's
 *   `seasonNN-poster` (`season-specials-poster`) in the show's folder or
 *   `poster`/`folder`/`cover` in its own; an episode's `<file name>-thumb`.
 * - Tags inside the files: the description, genre and date (and an episode's
 *   title when its name gives none).
 *
 * Folder names (`poster.jpg`, `movie.nfo`) count only in a folder that holds
 * one title (SidecarIndex decides which folders those are). What the scan
 * found on disk is in the SidecarIndex, so finding images costs no I/O.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { ItemMetadata, MetadataProvider, MetadataRequest } from 'antenna/sdk';
import type { MediaTags } from '../model.js';
import { stripExtension } from '../naming.js';
import { parseNfo, type NfoRoot } from './nfo.js';

export interface SidecarFile { path: string; size: number; mtimeMs: number }

/** Files beside the media that metadata reads: by folder, then by lower-case name. */
export type SidecarIndex = Map<string, Map<string, SidecarFile>>;

export const SIDECAR_EXTENSIONS: ReadonlySet<string> = new Set(['nfo', 'jpg', 'jpeg', 'png', 'webp', 'tbn']);
const IMAGE_EXTENSIONS = ['jpg', 'jpeg', 'png', 'webp', 'tbn'];
const NFO_MAX_BYTES = 1 << 20;

export function isSidecar(name: string): boolean {
  const dot = name.lastIndexOf('.');
  return dot > 0 && SIDECAR_EXTENSIONS.has(name.slice(dot + 1).toLowerCase());
}

const NFO_ROOT: Record<MetadataRequest['type'], NfoRoot> = { movie: 'movie', series: 'tvshow', season: 'season', episode: 'episodedetails' };
const POSTER = ['poster', 'folder', 'cover'];
const BACKDROP = ['fanart', 'backdrop', 'background'];

/** The sidecars a request depends on: its own folder's, its files' (`<file name>…`), and for a season its show's `season…` ones. */
export function sidecarsOf(index: SidecarIndex, request: Pick<MetadataRequest, 'type' | 'files' | 'folder' | 'series'>): SidecarFile[] {
  const out = new Map<string, SidecarFile>();
  if (request.folder) for (const f of index.get(request.folder)?.values() ?? []) out.set(f.path, f);
  for (const file of request.files) {
    const base = stripExtension(path.basename(file)).toLowerCase();
    for (const [name, f] of index.get(path.dirname(file)) ?? []) if (name.startsWith(base)) out.set(f.path, f);
  }
  if (request.type === 'season' && request.series?.folder) {
    for (const [name, f] of index.get(request.series.folder) ?? []) if (name.startsWith('season')) out.set(f.path, f);
  }
  return [...out.values()].sort((a, b) => (a.path < b.path ? -1 : 1));
}

export class LocalProvider implements MetadataProvider {
  readonly id = 'local';
  readonly name = 'Local files';

  constructor(
    private readonly index: SidecarIndex,
    /** The container tags of a media file, when its probe read them. */
    private readonly tagsOf: (file: string) => MediaTags | undefined,
    private readonly warn: (file: string, err: unknown) => void,
  ) {}

  async fetch(request: MetadataRequest): Promise<ItemMetadata | undefined> {
    const out: ItemMetadata = { ...(await this.nfo(request)) };
    const poster = this.image(request, 'poster');
    if (poster) out.poster = { path: poster };
    const backdrop = this.image(request, 'backdrop');
    if (backdrop) out.backdrop = { path: backdrop };
    this.addTags(request, out);
    return out;
  }

  /** The first sidecar of these names (any image extension, or exactly as given) in `dir`. */
  private find(dir: string | null | undefined, names: string[], extensions: string[] = IMAGE_EXTENSIONS): string | undefined {
    const files = dir ? this.index.get(dir) : undefined;
    if (!files) return undefined;
    for (const name of names) {
      for (const ext of extensions) {
        const hit = files.get(`${name}.${ext}`.toLowerCase());
        if (hit) return hit.path;
      }
    }
    return undefined;
  }

  /** `<file name><suffix>` beside one of the item's files. */
  private besideFiles(request: MetadataRequest, suffixes: string[], extensions?: string[]): string | undefined {
    for (const file of request.files) {
      const hit = this.find(path.dirname(file), suffixes.map((s) => stripExtension(path.basename(file)) + s), extensions);
      if (hit) return hit;
    }
    return undefined;
  }

  private image(request: MetadataRequest, kind: 'poster' | 'backdrop'): string | undefined {
    const names = kind === 'poster' ? POSTER : BACKDROP;
    switch (request.type) {
      case 'movie':
        return this.besideFiles(request, kind === 'poster' ? ['-poster', '-cover'] : ['-fanart', '-backdrop']) ?? this.find(request.folder, names);
      case 'series':
        return this.find(request.folder, names);
      case 'season': {
        const n = request.seasonNumber ?? 0;
        const prefixes = n === 0 ? ['season-specials', 'season00'] : [`season${String(n).padStart(2, '0')}`, `season${n}`];
        return this.find(request.series?.folder, prefixes.map((p) => `${p}-${kind === 'poster' ? 'poster' : 'fanart'}`)) ?? this.find(request.folder, names);
      }
      case 'episode':
        return kind === 'poster' ? this.besideFiles(request, ['-thumb', '']) : undefined;
    }
  }

  private async nfo(request: MetadataRequest): Promise<ItemMetadata | undefined> {
    const candidates = [
      request.type === 'movie' || request.type === 'episode' ? this.besideFiles(request, [''], ['nfo']) : undefined,
      request.type === 'movie' ? this.find(request.folder, ['movie'], ['nfo']) : undefined,
      request.type === 'series' ? this.find(request.folder, ['tvshow'], ['nfo']) : undefined,
      request.type === 'season' ? this.find(request.folder, ['season'], ['nfo']) : undefined,
    ].filter((f): f is string => !!f);
    for (const file of candidates) {
      try {
        const sidecar = this.index.get(path.dirname(file))?.get(path.basename(file).toLowerCase());
        if (!sidecar || sidecar.size > NFO_MAX_BYTES) continue;
        const found = parseNfo(await readFile(file, 'utf8'), NFO_ROOT[request.type]);
        if (found) return found;
      } catch (err) {
        this.warn(file, err);
      }
    }
    return undefined;
  }

  /** Tags inside the default version fill what the NFO left out. */
  private addTags(request: MetadataRequest, out: ItemMetadata): void {
    const tags = request.files.length ? this.tagsOf(request.files[0]) : undefined;
    if (!tags) return;
    if (!out.plot && tags.description) out.plot = tags.description;
    if (!out.genres && tags.genre) out.genres = tags.genre.split(/\s*[/;,|]\s*/).filter(Boolean).slice(0, 20);
    const date = tags.date?.trim();
    if (date && /^\d{4}-\d{2}-\d{2}/.test(date) && !out.premiered) out.premiered = date.slice(0, 10);
    const year = date ? Number(date.slice(0, 4)) : NaN;
    if (!out.year && request.year === null && year >= 1800 && year <= 2200) out.year = year;
    // A file's own title tag is often a release name; only an episode the name calls "Episode N" takes it.
    if (request.type === 'episode' && !out.title && tags.title && request.title === `Episode ${request.episodeNumber}`) out.title = tags.title;
  }
}
