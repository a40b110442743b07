/**
 * search: one query across what a household watches — movies, shows and
 * episodes of the libraries the user may see (vod) and channels and guide
 * programmes on now or later (live-tv) — grouped by kind, for the web app's
 * search box and any other client. GET /api/search?q=&limit=.
 */
import { coreServices, definePlugin, errors, liveTvService, Type, vodCatalogService, type CatalogSearchHit, type Static } from 'antenna/sdk';

const ErrorBody = Type.Object({ error: Type.String() });
const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);
const NullableInt = Type.Union([Type.Integer(), Type.Null()]);

const Query = Type.Object({
  q: Type.String({ maxLength: 200, description: 'What to look for: case, accents and punctuation aside (programme titles: case aside)' }),
  limit: Type.Integer({ minimum: 1, maximum: 50, default: 10, description: 'At most this many of each kind' }),
}, { additionalProperties: false });

const Item = Type.Object({
  id: Type.String({ description: 'The item id of /item/{id}' }),
  type: Type.Union([Type.Literal('movie'), Type.Literal('series'), Type.Literal('episode')]),
  title: Type.String(),
  year: NullableInt,
  library_id: Type.Integer(),
  series_title: Nullable(Type.String({ description: 'Episodes: their series' })),
  season_number: NullableInt,
  episode_number: NullableInt,
  poster_url: Nullable(Type.String({ description: 'As in /library/{id}: add `&width=` for a smaller copy' })),
});

const Result = Type.Object({
  query: Type.String(),
  movies: Type.Array(Item),
  shows: Type.Array(Item),
  episodes: Type.Array(Item),
  channels: Type.Array(Type.Object({ id: Type.Integer(), name: Type.String(), number: Type.String(), logo: Nullable(Type.String()) })),
  programmes: Type.Array(Type.Object({
    id: Type.Integer(), channel_id: Type.Integer(), channel_name: Type.String(), channel_number: Type.String(),
    title: Type.String(), sub_title: Nullable(Type.String()), start: Type.String({ format: 'date-time' }), stop: Type.String({ format: 'date-time' }),
  }, { description: 'On now or later, by start time' })),
});

const item = (h: CatalogSearchHit) => ({
  id: h.id, type: h.type, title: h.title, year: h.year, library_id: h.libraryId, series_title: h.seriesTitle,
  season_number: h.seasonNumber, episode_number: h.episodeNumber, poster_url: h.posterUrl,
});

export default definePlugin({
  id: 'search',
  version: '1.0.0',
  host: '^1.1',
  description: 'Search across movies, shows, episodes, channels and guide programmes',
  configSchema: Type.Object({}, { additionalProperties: false }),
  dependsOn: ['vod', 'live-tv'],
  register(env) {
    env.registerInit({
      deps: { http: coreServices.http, auth: coreServices.auth, catalog: vodCatalogService, live: liveTvService },
      async init({ http, auth, catalog, live }) {
        http.get('/api/search', {
          schema: {
            summary: 'Movies, shows, episodes, channels and programmes matching a query, grouped by kind', tags: ['search'],
            description: 'Titles (and channel names and numbers) containing `q`; those starting with it come first. Items only of libraries the user may see. 400 for an empty `q`.',
            querystring: Query,
            response: { 200: Result, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody },
          },
        }, async (request) => {
          const user = auth.requireUser(request);
          const { q, limit } = request.query as Static<typeof Query>;
          const query = q.trim();
          if (!query) throw errors.badRequest('q must not be empty');
          const [hits, tv] = await Promise.all([catalog.search(user, query, limit), live.search(query, limit)]);
          const channels = new Map(tv.channels.map((c) => [c.id, c]));
          // Programme rows name their channel; look up those the channel matches did not bring.
          const names = new Map<number, { name: string; number: string }>();
          for (const id of new Set(tv.programmes.map((p) => p.channelId))) {
            const c = channels.get(id) ?? await live.channel(id);
            if (c) names.set(id, { name: c.name, number: c.number });
          }
          return {
            query,
            movies: hits.filter((h) => h.type === 'movie').map(item),
            shows: hits.filter((h) => h.type === 'series').map(item),
            episodes: hits.filter((h) => h.type === 'episode').map(item),
            channels: tv.channels,
            programmes: tv.programmes.filter((p) => names.has(p.channelId)).map((p) => ({
              id: p.id, channel_id: p.channelId, channel_name: names.get(p.channelId)!.name, channel_number: names.get(p.channelId)!.number,
              title: p.title, sub_title: p.subTitle, start: new Date(p.start).toISOString(), stop: new Date(p.stop).toISOString(),
            })),
          };
        });
      },
    });
  },
});
