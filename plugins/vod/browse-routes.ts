/**
 * Browsing: /libraries, /library/{id} (a page of its movies or series),
 * /item/{id} (one item with its versions and children). Libraries the caller
 * was not granted do not exist for them (404, and absent from /libraries).
 */
import { errors, languageName, normalizeLanguage, Type, type AuthService, type HttpScope, type Static } from 'antenna/sdk';
import type { CatalogGroup, CatalogItem } from 'antenna/sdk';
import { visibleItem } from './access.js';
import type { Catalog } from './catalog.js';
import type { Item, MediaFile } from './model.js';
import type { ItemSort, VodStore } from './store.js';

const ErrorBody = Type.Object({ error: Type.String() });
const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);
const NullableInt = Type.Union([Type.Integer(), Type.Null()]);
const ItemType = Type.Union([Type.Literal('movie'), Type.Literal('series'), Type.Literal('season'), Type.Literal('episode'), Type.Literal('recording')]);

const LibrarySchema = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  type: Type.Union([Type.Literal('movies'), Type.Literal('shows'), Type.Literal('recordings')], { description: 'recordings: the DVR\'s library, newest first' }),
  item_count: Type.Integer({ description: 'Movies, or series, at the top level' }),
});

const ItemSummary = Type.Object({
  id: Type.String({ description: 'Opaque, stable across rescans' }),
  type: ItemType,
  title: Type.String(),
  year: NullableInt,
  library_id: Type.Integer(),
  season_number: NullableInt,
  episode_number: NullableInt,
  duration: Type.Union([Type.Number(), Type.Null()], { description: 'Seconds (playable items)' }),
  child_count: Type.Union([Type.Integer(), Type.Null()], { description: 'Seasons of a series, episodes of a season' }),
  added_at: Type.String({ format: 'date-time' }),
});

const Stream = {
  video: Type.Object({
    index: Type.Integer(), codec: Type.String(), profile: Nullable(Type.String()), width: Type.Integer(), height: Type.Integer(),
    hdr: Type.Boolean(), bitrate: Type.Union([Type.Number(), Type.Null()]), fps: Type.Union([Type.Number(), Type.Null()]),
  }),
  audio: Type.Object({
    index: Type.Integer(), track: Type.Integer({ description: 'The value of audioTrack that selects it' }), codec: Type.String(), channels: Type.Integer(),
    language: Nullable(Type.String({ description: 'BCP 47 (`en`, `pt-BR`), as in the manifests; null when unknown' })),
    language_name: Nullable(Type.String({ description: 'Its English display name' })), title: Nullable(Type.String()), default: Type.Boolean(),
  }),
  subtitle: Type.Object({
    index: Type.Integer(), codec: Type.String(), language: Nullable(Type.String({ description: 'BCP 47, null when unknown' })),
    language_name: Nullable(Type.String()), title: Nullable(Type.String()),
    default: Type.Boolean(), forced: Type.Boolean(),
  }),
};

const Version = Type.Object({
  version: Type.Integer({ description: 'The value of `version` that plays it (0 = the default, best picture)' }),
  label: Nullable(Type.String()),
  file_name: Type.String(),
  container: Type.String(),
  size: Type.Integer(),
  duration: Type.Number(),
  bitrate: Type.Integer(),
  video: Type.Union([Stream.video, Type.Null()]),
  audio: Type.Array(Stream.audio),
  subtitles: Type.Array(Stream.subtitle),
});

const ItemDetail = Type.Composite([ItemSummary, Type.Object({
  parent_id: Nullable(Type.String()),
  versions: Type.Array(Version, { description: 'Playable items: their files, best first' }),
  children: Type.Array(ItemSummary, { description: 'Series: seasons; seasons: episodes (in number order)' }),
})]);

const LibraryQuery = Type.Object({
  limit: Type.Integer({ minimum: -1, maximum: 10_000, default: 50, description: '-1 for all' }),
  offset: Type.Integer({ minimum: 0, maximum: 2 ** 31 - 1, default: 0 }),
  sort: Type.Union([Type.Literal('title'), Type.Literal('year'), Type.Literal('added')], { default: 'title' }),
  order: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')], { description: 'Default: asc, desc for added' })),
}, { additionalProperties: false });

type Summary = Static<typeof ItemSummary>;

export function browseRoutes(http: HttpScope, deps: { auth: AuthService; store: VodStore; catalog: Catalog }): void {
  const { auth, store, catalog } = deps;

  /** An item of a library another plugin provides (a recording), shaped like ours. */
  const providedSummary = (i: CatalogItem | CatalogGroup): Summary => ('kind' in i
    ? {
      id: i.id, type: i.kind, title: i.title, year: null, library_id: i.libraryId, season_number: i.seasonNumber, episode_number: null,
      duration: null, child_count: i.childCount, added_at: new Date(i.addedAt).toISOString(),
    }
    : {
      id: i.id, type: 'recording', title: i.title, year: null, library_id: i.libraryId, season_number: i.seasonNumber, episode_number: i.episodeNumber,
      duration: i.duration, child_count: null, added_at: new Date(i.addedAt ?? 0).toISOString(),
    });

  async function summaries(items: Item[]): Promise<Summary[]> {
    const [durations, counts] = await Promise.all([store.durations(items.map((i) => i.id)), store.childCounts(items.filter((i) => i.type === 'series' || i.type === 'season').map((i) => i.id))]);
    return items.map((i) => ({
      id: i.id, type: i.type, title: i.title, year: i.year, library_id: i.libraryId, season_number: i.seasonNumber, episode_number: i.episodeNumber,
      duration: durations.get(i.id) ?? null, child_count: counts.get(i.id) ?? (i.type === 'series' || i.type === 'season' ? 0 : null),
      added_at: new Date(i.addedAt).toISOString(),
    }));
  }

  http.get('/libraries', {
    schema: {
      summary: 'The libraries the caller may see', tags: ['vod'],
      response: { 200: Type.Object({ libraries: Type.Array(LibrarySchema) }), 401: ErrorBody, 403: ErrorBody },
    },
  }, async (request) => {
    const user = auth.requireUser(request);
    const libs = store.libraries().filter((l) => auth.canAccessLibrary(user, l.id));
    const counts = await store.topLevelCounts();
    for (const l of libs) {
      const source = catalog.providedLibrary(l.id);
      if (source) counts.set(l.id, (await source.list()).length);
    }
    return { libraries: libs.map((l) => ({ id: l.id, name: l.name, type: l.type, item_count: counts.get(l.id) ?? 0 })) };
  });

  http.get('/library/:id', {
    schema: {
      summary: 'One library and a page of its movies or series', tags: ['vod'],
      description: 'Items are the top level: movies, or series (whose seasons and episodes are reached through /item/{id}).',
      params: Type.Object({ id: Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1 }) }),
      querystring: LibraryQuery,
      response: {
        200: Type.Composite([LibrarySchema, Type.Object({ items: Type.Array(ItemSummary), total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer() })]),
        400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody,
      },
    },
  }, async (request) => {
    const user = auth.requireUser(request);
    const { id } = request.params as { id: number };
    const q = request.query as Static<typeof LibraryQuery>;
    const lib = store.library(id);
    if (!lib || !auth.canAccessLibrary(user, lib.id)) throw errors.notFound(`No library ${id}`);
    const source = catalog.providedLibrary(lib.id);
    if (source) {
      // A provided library keeps its source's order (recordings: newest first), grouped into shows when it groups.
      const all = source.browse ? (await source.browse(null))?.children ?? [] : await source.list();
      const items = all.slice(q.offset, q.limit < 0 ? undefined : q.offset + q.limit).map(providedSummary);
      return { id: lib.id, name: lib.name, type: lib.type, item_count: all.length, items, total: all.length, limit: q.limit, offset: q.offset };
    }
    const page = await store.items({ libraryId: lib.id, sort: q.sort as ItemSort, order: q.order, limit: q.limit, offset: q.offset });
    return { id: lib.id, name: lib.name, type: lib.type, item_count: page.total, items: await summaries(page.items), total: page.total, limit: q.limit, offset: q.offset };
  });

  http.get('/item/:id', {
    schema: {
      summary: 'One item: a movie, series, season or episode', tags: ['vod'],
      params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 256 }) }),
      response: { 200: ItemDetail, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody },
    },
  }, async (request) => {
    const user = auth.requireUser(request);
    const { id } = request.params as { id: string };
    const provider = catalog.providerOf(id);
    if (provider) {
      const found = await catalog.providedItem(user, id);
      if (found) return { ...providedSummary(found.item), parent_id: null, versions: [], children: [] };
      const group = auth.canAccessLibrary(user, provider.libraryId) ? await provider.source.browse?.(id) : undefined;
      if (!group?.group) throw errors.notFound(`No item ${JSON.stringify(id.slice(0, 64))}`);
      return { ...providedSummary(group.group), parent_id: group.group.parentId, versions: [], children: group.children.map(providedSummary) };
    }
    const item = await visibleItem(store, auth, user, id);
    const [[summary], children, versions] = await Promise.all([
      summaries([item]),
      item.type === 'series' || item.type === 'season' ? store.children(item.id).then(summaries) : Promise.resolve([]),
      item.type === 'movie' || item.type === 'episode' ? store.versions(item.id) : Promise.resolve([]),
    ]);
    return { ...summary, parent_id: item.parentId, versions: versions.map(versionBody), children };
  });
}

function versionBody(file: MediaFile, version: number): Static<typeof Version> {
  const info = file.info!;
  return {
    version, label: file.label, file_name: file.path.slice(file.path.lastIndexOf('/') + 1), container: info.container, size: file.size,
    duration: info.duration, bitrate: info.bitrate, video: info.video,
    audio: info.audio.map((a, track) => ({ ...a, track, ...language(a.language) })),
    subtitles: info.subtitles.map((s) => ({ ...s, ...language(s.language) })),
  };
}

/** A stream's language as the manifests name it: BCP 47 and its display name. */
function language(code: string | null): { language: string | null; language_name: string | null } {
  const tag = normalizeLanguage(code);
  return { language: tag, language_name: languageName(tag) };
}
