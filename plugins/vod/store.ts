/**
 * Libraries, items and files in the database. The scanner writes through it;
 * browsing, play-info and the transcoder read through it.
 */
import type { Database } from 'antenna/sdk';
import type { Item, ItemType, Library, LibraryType, MediaFile, MediaInfo } from './model.js';

export type ItemSort = 'title' | 'year' | 'added';

/** The rows as the scanner writes them (the columns of vod_items / vod_files). */
export interface ItemRow { id: string; library_id: number; type: ItemType; parent_id: string | null; title: string; sort_title: string; year: number | null; season: number | null; episode: number | null; added_at: number | string }
export interface FileRow { id: string; item_id: string; library_id: number; path: string; size: number | string; mtime_ms: number | string; label: string | null; info: string | null; error: string | null; scanned_at?: number | string }

const toItem = (r: ItemRow): Item => ({
  id: r.id, libraryId: r.library_id, type: r.type, title: r.title, year: r.year, parentId: r.parent_id,
  seasonNumber: r.season, episodeNumber: r.episode, addedAt: Number(r.added_at),
});

const toFile = (r: FileRow): MediaFile => ({
  id: r.id, itemId: r.item_id, libraryId: r.library_id, path: r.path, size: Number(r.size), mtimeMs: Number(r.mtime_ms),
  label: r.label, info: r.info ? (JSON.parse(r.info) as MediaInfo) : null, error: r.error,
});

/** Versions in a fixed order: the best picture first, then by label and path, so `version=0` is the default. */
export function sortVersions(files: MediaFile[]): MediaFile[] {
  return files.sort((a, b) => (b.info?.video?.height ?? 0) - (a.info?.video?.height ?? 0)
    || (a.label ?? '').localeCompare(b.label ?? '') || a.path.localeCompare(b.path));
}

export class VodStore {
  private librariesById = new Map<number, Library>();

  constructor(private readonly knex: Database) {}

  /**
   * Match the configured libraries to their rows by name (creating new ones); unlisted ones are kept but hidden.
   * At start every row is unlisted until named again (a plugin providing a library names it after); a change
   * while running (`keepProvided`) leaves the libraries other plugins provide as they are.
   */
  async syncLibraries(configured: { name: string; type: LibraryType; paths: string[] }[], options: { keepProvided?: boolean } = {}): Promise<Library[]> {
    await this.knex.transaction(async (trx) => {
      const unlist = trx('vod_libraries');
      if (options.keepProvided) unlist.whereNot({ type: 'recordings' });
      await unlist.update({ configured: false });
      for (const lib of configured) {
        const existing = await trx('vod_libraries').where({ name: lib.name }).first('id');
        const row = { type: lib.type, paths: JSON.stringify(lib.paths), configured: true };
        if (existing) await trx('vod_libraries').where({ id: existing.id }).update(row);
        else await trx('vod_libraries').insert({ name: lib.name, ...row });
      }
    });
    return this.loadLibraries();
  }

  /** A library renamed in the config keeps its id (and so its items and users' grants). */
  async renameLibrary(from: string, to: string): Promise<void> {
    if (from === to) return;
    if (await this.knex('vod_libraries').where({ name: to }).first('id')) throw new Error(`the library name ${JSON.stringify(to)} is taken`);
    await this.knex('vod_libraries').where({ name: from }).update({ name: to });
  }

  /** A library another plugin provides, kept by name; its id never changes. */
  async ensureProvidedLibrary(name: string): Promise<Library> {
    const existing = await this.knex('vod_libraries').where({ name }).first('id', 'type');
    if (existing && existing.type !== 'recordings') throw new Error(`the library name ${JSON.stringify(name)} is taken by a configured ${existing.type} library; rename that one`);
    if (existing) await this.knex('vod_libraries').where({ id: existing.id }).update({ configured: true });
    else await this.knex('vod_libraries').insert({ name, type: 'recordings', paths: '[]', configured: true });
    await this.loadLibraries();
    return this.libraries().find((l) => l.name === name)!;
  }

  async loadLibraries(): Promise<Library[]> {
    const rows = await this.knex('vod_libraries').where({ configured: true }).orderBy('id');
    this.librariesById = new Map(rows.map((r) => [r.id, { id: r.id, name: r.name, type: r.type, paths: JSON.parse(r.paths) }]));
    return this.libraries();
  }

  /** Configured libraries, in id order (in memory). */
  libraries(): Library[] {
    return [...this.librariesById.values()];
  }

  library(id: number): Library | undefined {
    return this.librariesById.get(id);
  }

  async item(id: string): Promise<Item | undefined> {
    const row = await this.knex('vod_items').where({ id }).first();
    return row && this.librariesById.has(row.library_id) ? toItem(row) : undefined;
  }

  /**
   * A page of a library's top-level items (movies, or series), or of an item's
   * children (a series' seasons, a season's episodes: always in number order).
   */
  async items(query: { libraryId: number; parentId?: string | null; sort?: ItemSort; order?: 'asc' | 'desc'; limit: number; offset: number }): Promise<{ items: Item[]; total: number }> {
    const base = this.knex('vod_items').where({ library_id: query.libraryId });
    if (query.parentId) base.andWhere({ parent_id: query.parentId });
    else base.whereNull('parent_id');
    const [{ n }] = await base.clone().count({ n: '*' });
    const rows = base.clone();
    if (query.parentId) rows.orderBy([{ column: 'season', order: 'asc' }, { column: 'episode', order: 'asc' }, { column: 'sort_title' }]);
    else {
      const order = query.order ?? (query.sort === 'added' ? 'desc' : 'asc');
      const column = query.sort === 'year' ? 'year' : query.sort === 'added' ? 'added_at' : 'sort_title';
      rows.orderBy([{ column, order }, { column: 'sort_title', order: 'asc' }, { column: 'id', order: 'asc' }]);
    }
    if (query.limit >= 0) rows.limit(query.limit);
    rows.offset(query.offset);
    return { items: (await rows).map(toItem), total: Number(n) };
  }

  async children(parentId: string): Promise<Item[]> {
    const rows = await this.knex('vod_items').where({ parent_id: parentId })
      .orderBy([{ column: 'season', order: 'asc' }, { column: 'episode', order: 'asc' }, { column: 'sort_title' }]);
    return rows.map(toItem);
  }

  /** Top-level items (movies, series) per library. */
  async topLevelCounts(): Promise<Map<number, number>> {
    const rows = await this.knex('vod_items').whereNull('parent_id').groupBy('library_id').select('library_id').count({ n: '*' });
    return new Map((rows as { library_id: number; n: number }[]).map((r) => [Number(r.library_id), Number(r.n)]));
  }

  /** Seasons of each series, episodes of each season. */
  async childCounts(ids: string[]): Promise<Map<string, number>> {
    if (!ids.length) return new Map();
    const rows = await this.knex('vod_items').whereIn('parent_id', ids).groupBy('parent_id').select('parent_id').count({ n: '*' });
    return new Map((rows as { parent_id: string; n: number }[]).map((r) => [String(r.parent_id), Number(r.n)]));
  }

  /** The duration of each playable item's default version (seconds). */
  async durations(ids: string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    if (!ids.length) return out;
    const rows = await this.knex('vod_files').whereIn('item_id', ids).whereNull('error').select('item_id', 'id', 'path', 'size', 'mtime_ms', 'label', 'library_id', 'info', 'error');
    const byItem = new Map<string, MediaFile[]>();
    for (const r of rows) {
      const list = byItem.get(r.item_id) ?? [];
      list.push(toFile(r));
      byItem.set(r.item_id, list);
    }
    for (const [id, files] of byItem) out.set(id, sortVersions(files)[0]!.info?.duration ?? 0);
    return out;
  }

  /** The readable files of a playable item, as versions (index = `version`). */
  async versions(itemId: string): Promise<MediaFile[]> {
    const rows = await this.knex('vod_files').where({ item_id: itemId }).whereNull('error');
    return sortVersions(rows.map(toFile));
  }

  /** Every file of a library (the scanner's view), keyed by path. */
  async filesOfLibrary(libraryId: number): Promise<Map<string, MediaFile>> {
    const rows = await this.knex('vod_files').where({ library_id: libraryId });
    return new Map(rows.map((r) => [r.path, toFile(r)]));
  }

  async keyframes(file: MediaFile): Promise<number[] | undefined> {
    const row = await this.knex('vod_keyframes').where({ file_id: file.id }).first();
    if (!row || Number(row.size) !== file.size || Number(row.mtime_ms) !== file.mtimeMs) return undefined;
    return JSON.parse(row.times) as number[];
  }

  async saveKeyframes(file: MediaFile, times: number[]): Promise<void> {
    await this.knex('vod_keyframes').insert({ file_id: file.id, size: file.size, mtime_ms: file.mtimeMs, times: JSON.stringify(times) })
      .onConflict('file_id').merge();
  }

  /* ---------------------------------------------------------------- scanner writes
   * Used by the LibraryScanner only, always inside one of its transactions, so
   * a crash mid-scan leaves either the batch before or the batch after.
   */

  /** Run `fn` in one transaction. */
  transaction<T>(fn: (trx: Database) => Promise<T>): Promise<T> {
    return this.knex.transaction((trx) => fn(trx));
  }

  /** Every item row of a library, keyed by id (the scanner's view: added_at and what changed). */
  async itemRowsOfLibrary(libraryId: number): Promise<Map<string, ItemRow>> {
    const rows: ItemRow[] = await this.knex('vod_items').where({ library_id: libraryId });
    return new Map(rows.map((r) => [r.id, r]));
  }

  /** Insert or replace file rows (by id). */
  async saveFiles(trx: Database, rows: Required<FileRow>[]): Promise<void> {
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
      await trx('vod_files').insert(rows.slice(i, i + INSERT_CHUNK).map((r) => pick(r, FILE_COLUMNS))).onConflict('id').merge();
    }
  }

  /** Insert or update item rows (by id); an existing row keeps its added_at. */
  async saveItems(trx: Database, rows: ItemRow[]): Promise<void> {
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
      await trx('vod_items').insert(rows.slice(i, i + INSERT_CHUNK).map((r) => pick(r, ITEM_COLUMNS)))
        .onConflict('id').merge(ITEM_COLUMNS.filter((c) => c !== 'id' && c !== 'added_at'));
    }
  }

  /** Delete files (and their keyframe cache) by id. */
  async deleteFiles(trx: Database, ids: string[]): Promise<void> {
    for (let i = 0; i < ids.length; i += DELETE_CHUNK) {
      const chunk = ids.slice(i, i + DELETE_CHUNK);
      await trx('vod_files').whereIn('id', chunk).delete();
      await trx('vod_keyframes').whereIn('file_id', chunk).delete();
    }
  }

  async deleteItems(trx: Database, ids: string[]): Promise<void> {
    for (let i = 0; i < ids.length; i += DELETE_CHUNK) await trx('vod_items').whereIn('id', ids.slice(i, i + DELETE_CHUNK)).delete();
  }
}

const FILE_COLUMNS = ['id', 'item_id', 'library_id', 'path', 'size', 'mtime_ms', 'label', 'info', 'error', 'scanned_at'];
const ITEM_COLUMNS = ['id', 'library_id', 'type', 'parent_id', 'title', 'sort_title', 'year', 'season', 'episode', 'added_at'];
/** Ids per DELETE … IN (…): well under SQLite's bound-variable limit. */
const DELETE_CHUNK = 500;
/** Rows per INSERT: knex writes a multi-row insert on SQLite as a compound SELECT, of at most 500 terms. */
const INSERT_CHUNK = 400;

/** The row's values of `columns` (a missing one as NULL). */
function pick(row: object, columns: string[]): Record<string, unknown> {
  return Object.fromEntries(columns.map((c) => [c, (row as Record<string, unknown>)[c] ?? null]));
}
