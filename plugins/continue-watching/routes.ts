/**
 * /api/continue-watching (spec §4 "Continue watching and subtitles", PRODUCT.md
 * §2): the list, progress reports, watched / unwatched and removal. The spec
 * shows no bodies for the updates: they answer 200 with the entry, DELETE with
 * {"ok":true}.
 */
import { Type, type AuthService, type CatalogItem, type HttpScope, type Static, type VodCatalogService } from 'antenna/sdk';
import { WATCHED_FRACTION, type ContinueWatching } from './entries.js';
import type { Entry } from './store.js';

const ErrorBody = Type.Object({ error: Type.String() });
const MAX_SECONDS = 10_000_000; // ~115 days: anything longer is a client bug

const EntrySchema = Type.Object({
  videoId: Type.String({ description: 'The VOD item id (also {videoId} in these paths)' }),
  libraryId: Type.Integer({ description: 'Library that holds the video' }),
  contentType: Type.Union([Type.Literal('movie'), Type.Literal('episode'), Type.Literal('recording')]),
  title: Type.String(),
  position: Type.Number({ description: 'Seconds reached' }),
  duration: Type.Number({ description: 'Seconds; as the player last reported it, else the catalog\'s (0 = unknown)' }),
  watched: Type.Boolean({ description: `True past ${WATCHED_FRACTION * 100} % of the duration or after PATCH …/watched; watched entries are not listed` }),
  updated_at: Type.String({ format: 'date-time', description: 'Last progress report, play or change (UTC)' }),
  series_title: Type.Union([Type.String(), Type.Null()], { description: 'Episodes: their series' }),
  season_number: Type.Union([Type.Integer(), Type.Null()]),
  episode_number: Type.Union([Type.Integer(), Type.Null()]),
});

/** The list's entries carry their picture; the other answers (progress reports among them) stay free of lookups. */
const ListedEntrySchema = Type.Object({
  ...EntrySchema.properties,
  poster_url: Type.Union([Type.String(), Type.Null()], { description: 'The video\'s picture (its poster, an episode\'s still, else a frame), as poster_url in /library/{id}: add `&width=` for a smaller copy. Null when there is none (a recording)' }),
});

const Params = Type.Object({
  // No pattern: a malformed id answers 404 like an unknown one, never 400.
  videoId: Type.String({ description: 'VOD item id (a movie, an episode or a recording)' }),
});

const ListQuery = Type.Object({
  type: Type.Optional(Type.Union([Type.Literal('vod'), Type.Literal('live_tv')], { description: 'vod: movies and episodes; live_tv: recordings; omitted: all' })),
  limit: Type.Integer({ minimum: 0, maximum: 1000, default: 20 }),
  offset: Type.Integer({ minimum: 0, maximum: 1_000_000, default: 0 }),
});

const ProgressBody = Type.Object({
  position: Type.Number({ minimum: 0, maximum: MAX_SECONDS, description: 'Seconds from the start; clamped to the duration' }),
  duration: Type.Optional(Type.Number({ minimum: 0, maximum: MAX_SECONDS, description: 'Seconds; 0 or omitted when the player does not know it (the catalog\'s is used)' })),
});

const NOT_FOUND = '404 for an unknown id, or one in a library the user may not see';
const errorsOf = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody };
const tags = ['continue-watching'];

const view = (e: Entry, item: CatalogItem | undefined) => ({
  videoId: e.videoId, libraryId: e.libraryId, contentType: e.contentType, title: e.title,
  position: e.position, duration: e.duration, watched: e.watched, updated_at: new Date(e.updatedAt).toISOString(),
  series_title: item?.seriesTitle ?? null, season_number: item?.seasonNumber ?? null, episode_number: item?.episodeNumber ?? null,
});

export function continueWatchingRoutes(http: HttpScope, deps: { auth: AuthService; entries: ContinueWatching; catalog: VodCatalogService }): void {
  const { auth, entries, catalog } = deps;
  // Every entry answered was just looked up in the catalog, so its item is remembered.
  const show = (e: Entry) => view(e, entries.catalogItem(e.videoId));
  const videoId = (request: { params: unknown }) => (request.params as Static<typeof Params>).videoId;

  http.get('/api/continue-watching', {
    schema: {
      summary: 'What the user started and has not finished, newest first', tags,
      description: 'Entries start with a play-info or manifest request, or a progress report; an entry past 90 % of its duration counts as watched and leaves the list (so does PATCH …/watched). Episodes finished bring the next episode of their series in at position 0 ("up next"). Only entries of libraries the user may see now are listed, and `total` counts exactly those.',
      querystring: ListQuery,
      response: { 200: Type.Object({ items: Type.Array(ListedEntrySchema), total: Type.Integer() }), ...errorsOf },
    },
  }, async (request) => {
    const query = request.query as Static<typeof ListQuery>;
    const user = auth.requireUser(request);
    const { items, total } = await entries.list(user, query);
    const posters = await catalog.posterUrls(user, items.map((e) => e.videoId));
    return { items: items.map((e) => ({ ...show(e), poster_url: posters.get(e.videoId) ?? null })), total };
  });

  http.get('/api/continue-watching/:videoId', {
    schema: {
      summary: 'One video\'s progress and watched state', tags,
      description: `For item pages: the entry, watched or not (the list holds unwatched ones only). A video the user may see but never played answers position 0, watched false and updated_at null. ${NOT_FOUND}.`,
      params: Params,
      response: { 200: Type.Object({ ...EntrySchema.properties, updated_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]) }), ...errorsOf },
    },
  }, async (request) => {
    const state = await entries.state(auth.requireUser(request), videoId(request));
    const entry = show(state.entry);
    return { ...entry, updated_at: state.played ? entry.updated_at : null };
  });

  http.post('/api/continue-watching/:videoId/progress', {
    schema: {
      summary: 'Report playback progress', tags,
      description: `Players report every few seconds; it is cheap (kept in memory, written in batches). A position at or past 90 % of the duration marks the video watched; below it, a watched video is being watched again and returns to the list. Answers the entry. 400 for a negative, non-numeric or absurd (> ${MAX_SECONDS} s) position or duration; ${NOT_FOUND}.`,
      params: Params,
      body: ProgressBody,
      response: { 200: EntrySchema, ...errorsOf },
    },
  }, async (request) => {
    const body = request.body as Static<typeof ProgressBody>;
    return show(await entries.progress(auth.requireUser(request), videoId(request), body.position, body.duration));
  });

  http.patch('/api/continue-watching/:videoId/watched', {
    schema: {
      summary: 'Mark a video watched', tags,
      description: `It leaves the list (its position is kept); for an episode the next one of the series comes in as "up next". Works for videos never played too. Answers the entry. ${NOT_FOUND}.`,
      params: Params,
      response: { 200: EntrySchema, ...errorsOf },
    },
  }, async (request) => show(await entries.mark(auth.requireUser(request), videoId(request), true)));

  http.patch('/api/continue-watching/:videoId/unwatched', {
    schema: {
      summary: 'Mark a video unwatched', tags,
      description: `Resets the position to 0; the video is listed again, at the top. Answers the entry. ${NOT_FOUND}.`,
      params: Params,
      response: { 200: EntrySchema, ...errorsOf },
    },
  }, async (request) => show(await entries.mark(auth.requireUser(request), videoId(request), false)));

  http.delete('/api/continue-watching/:videoId', {
    schema: {
      summary: 'Remove a video from the list', tags,
      description: `Forgets the entry, watched state included, until the video is played again. Idempotent for a video the user can see. Answers {"ok":true}. ${NOT_FOUND}.`,
      params: Params,
      response: { 200: Type.Object({ ok: Type.Literal(true) }), ...errorsOf },
    },
  }, async (request) => {
    await entries.remove(auth.requireUser(request), videoId(request));
    return { ok: true as const };
  });
}
