/**
 * Libraries, items and files in the database. The scanner writes through it;
 * browsing, play-info and the transcoder read through it.
 */
import type { Database } from 'antenna/sdk';
import type { Knex } from 'knex';
import type { ArtworkRef } from './artwork.js';
import type { Item, ItemType, Library, LibraryType, MediaFile, MediaInfo } from './model.js';

export type ItemSort = 'title' | 'year' | 'added' | 'rating' | 'runtime';

/** What the metadata providers said of an item (vod_metadata), beyond the title and year items carry. */
export interface ItemDetails {
  plot?: string;
  tagline?: string;
  originalTitle?: string;
  genres?: string[];
  cast?: { name: string; role?: string }[];
  directors?: string[];
  studios?: string[];
  contentRating?: string;
  premiered?: string;
}

/** A vod_metadata row as metadata/refresh.ts writes it. */
export interface MetadataRow {
  item_id: string; library_id: number; fingerprint: string; title: string | null; sort_title: string | null; search_title: string | null;
  year: number | null; rating: number | null; runtime: number | null; details: string; poster: string | null; backdrop: string | null; updated_at: number;
}

export interface ItemMetadataView {
  rating: number | null;
  runtime: number | null;
  details: ItemDetails;
  poster: ArtworkRef | null;
  backdrop: ArtworkRef | null;
}

/** What a library page shows: a library's top-level items, or those of one genre. */
export interface ItemFilter {
  libraryId: number;
  genre?: string;
}

/** The rows as the scanner writes them (the columns of vod_items / vod_files). */
export interface ItemRow { id: string; library_id: number; type: ItemType; parent_id: string | null; title: string; sort_title: string; year: number | null; season: number | null; episode: number | null; added_at: number | string }
export interface FileRow { id: string; item_id: string; library_id: number; path: string; size: number | string; mtime_ms: number | string; label: string | null; info: string | null; error: string | null; scanned_at?: number | string }

/** Items with the title and year their metadata gives, when it gives them (vod_items as i, vod_metadata as m). */
const itemColumns = (knex: Database) => [
  'i.id', 'i.library_id', 'i.type', 'i.parent_id', 'i.season', 'i.episode', 'i.added_at',
  knex.raw('COALESCE(m.title, i.title) AS title'), knex.raw('COALESCE(m.year, i.year) AS year'),
];
const SORT_TITLE = 'COALESCE(m.sort_title, i.sort_title)';

const parseJson = <T>(text: string | null | undefined): T | null => {
  if (!text) return null;
  try { return JSON.parse(text) as T; } catch { return null; }
};

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

  /** vod_items joined with their metadata (aliases i and m). */
  private itemQuery(): Knex.QueryBuilder {
    return this.knex('vod_items as i').leftJoin('vod_metadata as m', 'm.item_id', 'i.id');
  }

  async item(id: string): Promise<Item | undefined> {
    const row = await this.itemQuery().where('i.id', id).first(itemColumns(this.knex));
    return row && this.librariesById.has(row.library_id) ? toItem(row) : undefined;
  }

  /** Items by id, in no particular order (those of hidden libraries left out). */
  async itemsById(ids: readonly string[]): Promise<Item[]> {
    const out: Item[] = [];
    for (let i = 0; i < ids.length; i += DELETE_CHUNK) {
      const rows = await this.itemQuery().whereIn('i.id', ids.slice(i, i + DELETE_CHUNK)).select(itemColumns(this.knex));
      for (const r of rows) if (this.librariesById.has(r.library_id)) out.push(toItem(r));
    }
    return out;
  }

  static defaultOrder(sort: ItemSort): 'asc' | 'desc' {
    return sort === 'added' || sort === 'rating' ? 'desc' : 'asc';
  }

  /** A library's top-level items (movies, or series) that pass the filter, in page order. */
  private topLevel(filter: ItemFilter, sort: ItemSort, order: 'asc' | 'desc'): Knex.QueryBuilder {
    const q = this.itemQuery().where('i.library_id', filter.libraryId).whereNull('i.parent_id');
    if (filter.genre) q.whereIn('i.id', this.knex('vod_genres').select('item_id').where({ library_id: filter.libraryId, genre: filter.genre }));
    const column = { title: SORT_TITLE, year: 'COALESCE(m.year, i.year)', added: 'i.added_at', rating: 'm.rating', runtime: 'm.runtime' }[sort];
    // Items without a value come last either way (SQLite and PostgreSQL put NULLs at opposite ends).
    if (sort === 'year' || sort === 'rating' || sort === 'runtime') q.orderByRaw(`(${column}) IS NULL`);
    return q.orderByRaw(`${column} ${order === 'desc' ? 'DESC' : 'ASC'}, ${SORT_TITLE} ASC, i.id ASC`);
  }

  /**
   * A page of a library's top-level items (movies, or series), or of an item's
   * children (a series' seasons, a season's episodes: always in number order).
   */
  async items(query: ItemFilter & { parentId?: string | null; sort?: ItemSort; order?: 'asc' | 'desc'; limit: number; offset: number }): Promise<{ items: Item[]; total: number }> {
    let rows: Knex.QueryBuilder;
    let count: Knex.QueryBuilder;
    if (query.parentId) {
      count = this.knex('vod_items').where({ library_id: query.libraryId, parent_id: query.parentId });
      rows = this.itemQuery().where({ 'i.library_id': query.libraryId, 'i.parent_id': query.parentId })
        .orderBy([{ column: 'i.season', order: 'asc' }, { column: 'i.episode', order: 'asc' }, { column: 'i.sort_title' }]);
    } else {
      const sort = query.sort ?? 'title';
      rows = this.topLevel(query, sort, query.order ?? VodStore.defaultOrder(sort));
      count = this.topLevel(query, 'added', 'asc').clearOrder();
    }
    const [{ n }] = await count.count({ n: '*' });
    rows.select(itemColumns(this.knex));
    if (query.limit >= 0) rows.limit(query.limit);
    rows.offset(query.offset);
    return { items: (await rows).map(toItem), total: Number(n) };
  }

  /** Every top-level item passing the filter, in page order, with the first letter of its sort title (filters applied outside SQL). */
  async topLevelIds(filter: ItemFilter, sort: ItemSort, order: 'asc' | 'desc'): Promise<{ id: string; letter: string }[]> {
    const rows = await this.topLevel(filter, sort, order).select('i.id', this.knex.raw(`substr(${SORT_TITLE}, 1, 1) AS letter`));
    return rows.map((r: { id: string; letter: string | null }) => ({ id: r.id, letter: r.letter ?? '' }));
  }

  /** For a page in title order: the offset of the first item of each first letter. */
  async letterIndex(filter: ItemFilter, order: 'asc' | 'desc'): Promise<{ letter: string; offset: number }[]> {
    const rows = await this.topLevel(filter, 'title', order).clearOrder()
      .select(this.knex.raw(`substr(${SORT_TITLE}, 1, 1) AS letter`)).count({ n: '*' })
      .groupByRaw(`substr(${SORT_TITLE}, 1, 1)`).orderByRaw(`substr(${SORT_TITLE}, 1, 1) ${order === 'desc' ? 'DESC' : 'ASC'}`);
    let offset = 0;
    return rows.map((r: { letter: string | null; n: number | string }) => {
      const entry = { letter: r.letter ?? '', offset };
      offset += Number(r.n);
      return entry;
    });
  }

  /** The genres of a library's items, by name. */
  async genres(libraryId: number): Promise<string[]> {
    const rows = await this.knex('vod_genres').where({ library_id: libraryId }).distinct('genre').orderBy('genre');
    return rows.map((r: { genre: string }) => r.genre);
  }

  async children(parentId: string): Promise<Item[]> {
    const rows = await this.itemQuery().where('i.parent_id', parentId).select(itemColumns(this.knex))
      .orderBy([{ column: 'i.season', order: 'asc' }, { column: 'i.episode', order: 'asc' }, { column: 'i.sort_title' }]);
    return rows.map(toItem);
  }

  /** The episodes under these series and seasons (or under every series of a library), by the id asked for. */
  async episodesUnder(under: readonly string[] | { libraryId: number }): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>();
    if (Array.isArray(under) && !under.length) return out;
    const q = this.knex('vod_items as e').join('vod_items as s', 's.id', 'e.parent_id').where('e.type', 'episode')
      .select('e.id', 'e.parent_id as season', 's.parent_id as series');
    if (Array.isArray(under)) q.where((w) => { w.whereIn('s.parent_id', under).orWhereIn('e.parent_id', under); });
    else q.where('e.library_id', (under as { libraryId: number }).libraryId);
    const wanted = Array.isArray(under) ? new Set(under) : undefined;
    const add = (key: string, id: string) => {
      let list = out.get(key);
      if (!list) out.set(key, (list = []));
      list.push(id);
    };
    for (const r of await q as { id: string; season: string; series: string }[]) {
      if (!wanted || wanted.has(r.series)) add(r.series, r.id);
      if (wanted?.has(r.season)) add(r.season, r.id);
    }
    return out;
  }

  /**
   * Items of these types in these libraries whose sort title (or metadata title) contains
   * `folded` (a sort title: folded, leading article dropped, see naming.ts), at most `limit`
   * of each type: those starting with it first, then by title. Episodes come with their
   * series' title. One pass over the items for every type (a window per type), since
   * `%…%` reads every row whatever the filter.
   */
  async search(libraryIds: number[], types: readonly ('movie' | 'series' | 'episode')[], folded: string, limit: number): Promise<(Item & { seriesTitle: string | null; poster: ArtworkRef | null })[]> {
    if (!libraryIds.length || !types.length || !folded) return [];
    const like = `%${folded}%`;
    const hits = this.itemQuery().whereIn('i.library_id', libraryIds).whereIn('i.type', types)
      .where((w) => { w.where('i.sort_title', 'like', like).orWhere('m.search_title', 'like', like); })
      .leftJoin('vod_items as se', 'se.id', 'i.parent_id').leftJoin('vod_items as sr', 'sr.id', 'se.parent_id')
      .leftJoin('vod_metadata as sm', 'sm.item_id', 'sr.id')
      .select([...itemColumns(this.knex), 'm.poster',
        this.knex.raw(`CASE WHEN i.type = 'episode' THEN COALESCE(sm.title, sr.title) END AS series_title`),
        this.knex.raw(`ROW_NUMBER() OVER (PARTITION BY i.type ORDER BY CASE WHEN ${SORT_TITLE} LIKE ? THEN 0 ELSE 1 END, ${SORT_TITLE}, i.id) AS rn`, [`${folded}%`])]);
    const rows = await this.knex.from(hits.as('hits')).where('rn', '<=', limit).orderBy([{ column: 'type' }, { column: 'rn' }]).select('*');
    return rows.map((r: ItemRow & { poster: string | null; series_title: string | null }) => ({
      ...toItem(r), seriesTitle: r.series_title ?? null, poster: parseJson<ArtworkRef>(r.poster),
    }));
  }

  /** What the metadata providers found for an item. */
  async metadata(id: string): Promise<ItemMetadataView | undefined> {
    const row: MetadataRow | undefined = await this.knex('vod_metadata').where({ item_id: id }).first();
    if (!row) return undefined;
    return {
      rating: row.rating === null ? null : Number(row.rating), runtime: row.runtime === null ? null : Number(row.runtime),
      details: parseJson<ItemDetails>(row.details) ?? {}, poster: parseJson<ArtworkRef>(row.poster), backdrop: parseJson<ArtworkRef>(row.backdrop),
    };
  }

  /** The posters of these items (for cards). */
  async posters(ids: readonly string[]): Promise<Map<string, ArtworkRef>> {
    const out = new Map<string, ArtworkRef>();
    for (let i = 0; i < ids.length; i += DELETE_CHUNK) {
      const rows = await this.knex('vod_metadata').whereIn('item_id', ids.slice(i, i + DELETE_CHUNK)).whereNotNull('poster').select('item_id', 'poster');
      for (const r of rows) {
        const ref = parseJson<ArtworkRef>(r.poster);
        if (ref) out.set(r.item_id, ref);
      }
    }
    return out;
  }

  /** Every picture tag in use (what the image cache keeps). */
  async artworkTags(): Promise<Set<string>> {
    const tags = new Set<string>();
    for (const r of await this.knex('vod_metadata').select('poster', 'backdrop')) {
      for (const ref of [parseJson<ArtworkRef>(r.poster), parseJson<ArtworkRef>(r.backdrop)]) if (ref) tags.add(ref.tag);
    }
    return tags;
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

  /** Delete items with their metadata. */
  async deleteItems(trx: Database, ids: string[]): Promise<void> {
    for (let i = 0; i < ids.length; i += DELETE_CHUNK) {
      const chunk = ids.slice(i, i + DELETE_CHUNK);
      await trx('vod_items').whereIn('id', chunk).delete();
      await trx('vod_metadata').whereIn('item_id', chunk).delete();
      await trx('vod_genres').whereIn('item_id', chunk).delete();
    }
  }

  /** Each item's metadata fingerprint (what it was read from), for a library. */
  async metadataFingerprints(libraryId: number): Promise<Map<string, string>> {
    const rows = await this.knex('vod_metadata').where({ library_id: libraryId }).select('item_id', 'fingerprint');
    return new Map(rows.map((r: { item_id: string; fingerprint: string }) => [r.item_id, r.fingerprint]));
  }

  /** Insert or replace metadata rows, and their items' genres. */
  async saveMetadata(trx: Database, rows: MetadataRow[], genres: Map<string, string[]>): Promise<void> {
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
      await trx('vod_metadata').insert(rows.slice(i, i + INSERT_CHUNK).map((r) => pick(r, METADATA_COLUMNS))).onConflict('item_id').merge();
    }
    const ids = rows.map((r) => r.item_id);
    for (let i = 0; i < ids.length; i += DELETE_CHUNK) await trx('vod_genres').whereIn('item_id', ids.slice(i, i + DELETE_CHUNK)).delete();
    const genreRows = rows.flatMap((r) => (genres.get(r.item_id) ?? []).map((genre) => ({ item_id: r.item_id, library_id: r.library_id, genre })));
    for (let i = 0; i < genreRows.length; i += INSERT_CHUNK) await trx('vod_genres').insert(genreRows.slice(i, i + INSERT_CHUNK)).onConflict().ignore();
  }
}

const FILE_COLUMNS = ['id', 'item_id', 'library_id', 'path', 'size', 'mtime_ms', 'label', 'info', 'error', 'scanned_at'];
const METADATA_COLUMNS = ['item_id', 'library_id', 'fingerprint', 'title', 'sort_title', 'search_title', 'year', 'rating', 'runtime', 'details', 'poster', 'backdrop', 'updated_at'];
const ITEM_COLUMNS = ['id', 'library_id', 'type', 'parent_id', 'title', 'sort_title', 'year', 'season', 'episode', 'added_at'];
/** Ids per DELETE … IN (…): well under SQLite's bound-variable limit. */
const DELETE_CHUNK = 500;
/** Rows per INSERT: knex writes a multi-row insert on SQLite as a compound SELECT, of at most 500 terms. */
const INSERT_CHUNK = 400;

/** The row's values of `columns` (a missing one as NULL). */
function pick(row: object, columns: string[]): Record<string, unknown> {
  return Object.fromEntries(columns.map((c) => [c, (row as Record<string, unknown>)[c] ?? null]));
}
