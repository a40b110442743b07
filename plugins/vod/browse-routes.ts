/**
 * Browsing: /libraries, /library/{id} (a page of its movies or series, sorted
 * and filtered, with where each letter starts), /item/{id} (one item with its
 * metadata, versions and children). Items carry their poster's URL and, when
 * a plugin keeps it (continue-watching), the user's progress. Libraries the
 * caller was not granted do not exist for them (404, and absent from /libraries).
 */
import { errors, languageName, normalizeLanguage, Type, type AuthService, type AuthUser, type HttpScope, type Static, type WatchState } from 'antenna/sdk';
import type { CatalogGroup, CatalogItem } from 'antenna/sdk';
import { visibleItem } from './access.js';
import { artworkUrl, type Catalog } from './catalog.js';
import type { Item, MediaFile } from './model.js';
import { VodStore, type ItemFilter, type ItemSort } from './store.js';

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
  poster_url: Nullable(Type.String({ description: 'The poster (an episode: its still), with a key for this item\'s pictures; add `&width=` for a smaller copy. Null when there is none (a recording)' })),
  watched: Type.Optional(Type.Boolean({ description: 'With continue-watching: the user watched it (a series or season: every episode)' })),
  position: Type.Optional(Type.Number({ description: 'With continue-watching: seconds reached, when part-watched (else 0)' })),
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
  plot: Nullable(Type.String()),
  tagline: Nullable(Type.String()),
  original_title: Nullable(Type.String()),
  genres: Type.Array(Type.String()),
  cast: Type.Array(Type.Object({ name: Type.String(), role: Nullable(Type.String()) })),
  directors: Type.Array(Type.String()),
  studios: Type.Array(Type.String()),
  rating: Type.Union([Type.Number(), Type.Null()], { description: '0 to 10' }),
  content_rating: Nullable(Type.String({ description: 'The age rating as the metadata writes it (PG-13)' })),
  premiered: Nullable(Type.String({ description: 'YYYY-MM-DD: release, first airing or premiere' })),
  backdrop_url: Nullable(Type.String({ description: 'The background picture (fanart), like poster_url' })),
  series_id: Nullable(Type.String({ description: 'Seasons and episodes: their series' })),
  series_title: Nullable(Type.String()),
  next_episode_id: Nullable(Type.String({ description: 'Episodes: the one after it in its series (next in the season, else the first of the next)' })),
})]);

const SORTS = ['title', 'year', 'added', 'rating', 'runtime'] as const;
const LibraryQuery = Type.Object({
  limit: Type.Integer({ minimum: -1, maximum: 10_000, default: 50, description: '-1 for all' }),
  offset: Type.Integer({ minimum: 0, maximum: 2 ** 31 - 1, default: 0 }),
  sort: Type.Union(SORTS.map((s) => Type.Literal(s)), { default: 'title', description: 'Items without a year, rating or runtime come last' }),
  order: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')], { description: 'Default: asc; desc for added and rating' })),
  genre: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'Only items of this genre (one of the library\'s `genres`)' })),
  unwatched: Type.Optional(Type.Boolean({ description: 'With continue-watching: leave out what the user watched (a series: when every episode is)' })),
}, { additionalProperties: false });

const Letter = Type.Object({ letter: Type.String({ description: 'The first character of the sort title (folded: lower case, no accents)' }), offset: Type.Integer() });

type Summary = Static<typeof ItemSummary>;
type LibraryQueryT = Static<typeof LibraryQuery>;

const isContainer = (i: Item) => i.type === 'series' || i.type === 'season';

export function browseRoutes(http: HttpScope, deps: { auth: AuthService; store: VodStore; catalog: Catalog }): void {
  const { auth, store, catalog } = deps;

  /** An item of a library another plugin provides (a recording), shaped like ours. */
  const providedSummary = (i: CatalogItem | CatalogGroup): Summary => ('kind' in i
    ? {
      id: i.id, type: i.kind, title: i.title, year: null, library_id: i.libraryId, season_number: i.seasonNumber, episode_number: null,
      duration: null, child_count: i.childCount, added_at: new Date(i.addedAt).toISOString(), poster_url: null,
    }
    : {
      id: i.id, type: 'recording', title: i.title, year: null, library_id: i.libraryId, season_number: i.seasonNumber, episode_number: i.episodeNumber,
      duration: i.duration, child_count: null, added_at: new Date(i.addedAt ?? 0).toISOString(), poster_url: null,
    });

  /**
   * The user's state of these items, when a plugin keeps it: a movie's or episode's own; a
   * series or season is watched when every episode under it is.
   */
  async function watchStates(user: AuthUser, items: Item[]): Promise<Map<string, WatchState> | undefined> {
    const containers = items.filter(isContainer).map((i) => i.id);
    const episodes = await store.episodesUnder(containers);
    const ids = [...items.filter((i) => !isContainer(i)).map((i) => i.id), ...[...episodes.values()].flat()];
    const states = await catalog.watchStates(user, ids);
    if (!states) return undefined;
    const out = new Map<string, WatchState>(states);
    for (const id of containers) {
      const list = episodes.get(id) ?? [];
      out.set(id, { watched: list.length > 0 && list.every((e) => states.get(e)?.watched), position: 0 });
    }
    return out;
  }

  async function summaries(user: AuthUser, items: Item[]): Promise<Summary[]> {
    const ids = items.map((i) => i.id);
    const [durations, counts, posters, states] = await Promise.all([
      store.durations(ids), store.childCounts(items.filter(isContainer).map((i) => i.id)), store.posters(ids), watchStates(user, items),
    ]);
    return items.map((i) => {
      const poster = posters.get(i.id);
      const state = states && (states.get(i.id) ?? { watched: false, position: 0 });
      return {
        id: i.id, type: i.type, title: i.title, year: i.year, library_id: i.libraryId, season_number: i.seasonNumber, episode_number: i.episodeNumber,
        duration: durations.get(i.id) ?? null, child_count: counts.get(i.id) ?? (isContainer(i) ? 0 : null),
        added_at: new Date(i.addedAt).toISOString(), poster_url: poster ? artworkUrl(auth, user, i.id, 'poster', poster) : null,
        ...(state ? { watched: state.watched, position: state.watched ? 0 : state.position } : {}),
      };
    });
  }

  /**
   * A page with the unwatched filter: the watch state lives in another plugin, so the
   * library's items (ids only) are filtered here, then the page is read.
   */
  async function unwatchedPage(user: AuthUser, filter: ItemFilter, q: LibraryQueryT, sort: ItemSort, order: 'asc' | 'desc') {
    const all = await store.topLevelIds(filter, sort, order);
    const episodes = await store.episodesUnder({ libraryId: filter.libraryId });
    const states = await catalog.watchStates(user, [...all.map((i) => i.id), ...[...episodes.values()].flat()]);
    const watched = (id: string) => {
      const list = episodes.get(id);
      return list ? list.length > 0 && list.every((e) => states?.get(e)?.watched) : Boolean(states?.get(id)?.watched);
    };
    const kept = states ? all.filter((i) => !watched(i.id)) : all;
    const pageIds = kept.slice(q.offset, q.limit < 0 ? undefined : q.offset + q.limit).map((i) => i.id);
    const byId = new Map((await store.itemsById(pageIds)).map((i) => [i.id, i]));
    const letters: Static<typeof Letter>[] = [];
    if (sort === 'title') kept.forEach((i, offset) => { if (letters[letters.length - 1]?.letter !== i.letter) letters.push({ letter: i.letter, offset }); });
    return { items: pageIds.map((id) => byId.get(id)).filter((i): i is Item => !!i), total: kept.length, letters };
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
      description: 'Items are the top level: movies, or series (whose seasons and episodes are reached through /item/{id}). `total` counts the items that pass the filters (`genre`, `unwatched`), `item_count` the whole library. `genres` lists the library\'s genres; `letters`, in title order, the offset at which each first letter starts (for an A–Z jump), else empty.',
      params: Type.Object({ id: Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1 }) }),
      querystring: LibraryQuery,
      response: {
        200: Type.Composite([LibrarySchema, Type.Object({
          items: Type.Array(ItemSummary), total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer(),
          genres: Type.Array(Type.String()), letters: Type.Array(Letter),
        })]),
        400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody,
      },
    },
  }, async (request) => {
    const user = auth.requireUser(request);
    const { id } = request.params as { id: number };
    const q = request.query as LibraryQueryT;
    const lib = store.library(id);
    if (!lib || !auth.canAccessLibrary(user, lib.id)) throw errors.notFound(`No library ${id}`);
    const source = catalog.providedLibrary(lib.id);
    if (source) {
      // A provided library keeps its source's order (recordings: newest first), grouped into shows when it groups.
      const all = source.browse ? (await source.browse(null))?.children ?? [] : await source.list();
      const items = all.slice(q.offset, q.limit < 0 ? undefined : q.offset + q.limit).map(providedSummary);
      return { id: lib.id, name: lib.name, type: lib.type, item_count: all.length, items, total: all.length, limit: q.limit, offset: q.offset, genres: [], letters: [] };
    }
    const sort = q.sort as ItemSort;
    const order = q.order ?? VodStore.defaultOrder(sort);
    const filter: ItemFilter = { libraryId: lib.id, genre: q.genre };
    const [page, genres, counts] = await Promise.all([
      q.unwatched ? unwatchedPage(user, filter, q, sort, order)
        : Promise.all([store.items({ ...filter, sort, order, limit: q.limit, offset: q.offset }), sort === 'title' ? store.letterIndex(filter, order) : []])
          .then(([p, letters]) => ({ ...p, letters })),
      store.genres(lib.id),
      q.genre || q.unwatched ? store.topLevelCounts() : undefined,
    ]);
    return {
      id: lib.id, name: lib.name, type: lib.type, item_count: counts?.get(lib.id) ?? page.total, items: await summaries(user, page.items),
      total: page.total, limit: q.limit, offset: q.offset, genres, letters: page.letters,
    };
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
      if (found) return { ...providedSummary(found.item), parent_id: null, versions: [], children: [], ...NO_METADATA };
      const group = auth.canAccessLibrary(user, provider.libraryId) ? await provider.source.browse?.(id) : undefined;
      if (!group?.group) throw errors.notFound(`No item ${JSON.stringify(id.slice(0, 64))}`);
      return { ...providedSummary(group.group), parent_id: group.group.parentId, versions: [], children: group.children.map(providedSummary), ...NO_METADATA };
    }
    const item = await visibleItem(store, auth, user, id);
    const [[summary], children, versions, metadata, series, next] = await Promise.all([
      summaries(user, [item]),
      isContainer(item) ? store.children(item.id).then((c) => summaries(user, c)) : Promise.resolve([]),
      item.type === 'movie' || item.type === 'episode' ? store.versions(item.id) : Promise.resolve([]),
      store.metadata(item.id),
      seriesOf(item),
      item.type === 'episode' ? catalog.nextEpisode(user, item.id) : Promise.resolve(undefined),
    ]);
    const d = metadata?.details ?? {};
    return {
      ...summary, parent_id: item.parentId, versions: versions.map(versionBody), children,
      plot: d.plot ?? null, tagline: d.tagline ?? null, original_title: d.originalTitle ?? null, genres: d.genres ?? [],
      cast: (d.cast ?? []).map((c) => ({ name: c.name, role: c.role ?? null })), directors: d.directors ?? [], studios: d.studios ?? [],
      rating: metadata?.rating ?? null, content_rating: d.contentRating ?? null, premiered: d.premiered ?? null,
      backdrop_url: metadata?.backdrop ? artworkUrl(auth, user, item.id, 'backdrop', metadata.backdrop) : null,
      series_id: series?.id ?? null, series_title: series?.title ?? null, next_episode_id: next?.id ?? null,
    };
  });

  /** The series of a season or an episode. */
  async function seriesOf(item: Item): Promise<Item | undefined> {
    if (item.type === 'season') return item.parentId ? store.item(item.parentId) : undefined;
    if (item.type !== 'episode' || !item.parentId) return undefined;
    const season = await store.item(item.parentId);
    return season?.parentId ? store.item(season.parentId) : undefined;
  }
}

/** What an item without metadata (a recording) answers for the metadata fields. */
const NO_METADATA = {
  plot: null, tagline: null, original_title: null, genres: [], cast: [], directors: [], studios: [], rating: null, content_rating: null,
  premiered: null, backdrop_url: null, series_id: null, series_title: null, next_episode_id: null,
};

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
