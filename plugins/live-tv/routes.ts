import { Readable } from 'node:stream';
import type { AuthService, HttpScope } from 'antenna/sdk';
import { errors, Type } from 'antenna/sdk';
import type { Channel, ChannelSnapshot } from './channel-store.js';
import type { Favorites } from './favorites.js';
import type { GuideStore } from './guide-store.js';
import { gzipped, sendJson } from './gzip.js';
import type { LiveTvRegistry } from './registry.js';
import type { LiveTvService } from './service.js';
import { fold } from './text.js';

const ErrorBody = Type.Object({ error: Type.String() });

const ChannelSchema = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  tvg_chno: Type.String({ description: 'Channel number; assigned when the playlist has none' }),
  favorited: Type.Boolean(),
  logo: Type.Union([Type.String(), Type.Null()], { description: "The playlist's tvg-logo, else the icon (an http(s) URL) of the guide channel it is mapped to" }),
  category: Type.Union([Type.String(), Type.Null()], { description: 'The first group of the channel' }),
  tvg_id: Type.Union([Type.String(), Type.Null()]),
  source: Type.String({ description: 'Name of the tuner (playlist) the channel comes from' }),
});

const ProgramSchema = Type.Object({
  id: Type.Integer({ description: 'Stable across guide refreshes while the start time stays' }),
  title: Type.String(),
  start: Type.String({ format: 'date-time' }),
  stop: Type.String({ format: 'date-time' }),
  sub_title: Type.Optional(Type.String()),
  description: Type.Optional(Type.String()),
  categories: Type.Optional(Type.Array(Type.String())),
  episode_num: Type.Optional(Type.String()),
  icon: Type.Optional(Type.String()),
  season: Type.Union([Type.Integer(), Type.Null()], { description: 'Season number (from 1), when the guide gives one' }),
  episode: Type.Union([Type.Integer(), Type.Null()], { description: 'Episode number (from 1), when the guide gives one' }),
  episode_title: Type.Union([Type.String(), Type.Null()], { description: 'The episode\'s own title (XMLTV sub-title)' }),
  is_new: Type.Boolean({ description: 'A first showing: <new/> or <premiere>' }),
  is_repeat: Type.Boolean({ description: '<previously-shown> without <new/>, unless it names this airing\'s own day. Neither new nor repeat: unknown' }),
  is_live: Type.Boolean(),
  series_key: Type.Union([Type.String(), Type.Null()], {
    description: 'Groups the airings of one series: dd:<series id> when the guide has dd_progid, else t:<folded title> (null for programmes imported before this version)',
  }),
});

const FavoriteBody = Type.Object({ channel_id: Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1 }) }, { additionalProperties: false });
const FavoritesReply = Type.Object({ favorites: Type.Array(Type.Integer()) });

const MAX_PAGE = 100_000;
/** Listings kept per snapshot: one per category and set of favorites asked for (a household has a few). */
const MAX_CACHED_LISTINGS = 16;
/** Below this a listing is sent as it is: compressing it saves less than the round trip costs. */
const GZIP_FROM_BYTES = 8 * 1024;
/**
 * A `/programs` page of up to WHOLE_PAGE channels (a guide grid asks for 50 or so) is made at
 * once, with one query. A larger one is written GUIDE_PIECE channels with guide data at a time
 * (and those without between them, up to PIECE_MAX in all), as the client reads: the whole
 * guide of a large provider is hundreds of MB of JSON, which made as one string would hold
 * the server's memory and every other request, while in pieces it holds a few MB and another
 * client's grid page waits for one piece's query. Channels without guide data cost no query.
 */
const WHOLE_PAGE = 100;
const GUIDE_PIECE = 10;
const PIECE_MAX = 1000;
/**
 * Channels a search looks at per turn of the event loop: the first search of a new snapshot
 * folds every channel's name, which, done at once for 100,000 channels, would hold every other request.
 */
const SEARCH_SLICE = 5_000;

/** The channels whose folded name and number contain `q`, in their order, SEARCH_SLICE at a time. */
export async function searchChannels(channels: readonly Channel[], q: string): Promise<Channel[]> {
  const found: Channel[] = [];
  for (let i = 0; i < channels.length; i++) {
    if (i && i % SEARCH_SLICE === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    if (channels[i].search.includes(q)) found.push(channels[i]);
  }
  return found;
}

/** A `/channels` body, and its gzip once a client asked for it. */
interface Listing { body: Buffer; gzip?: Promise<Buffer> }

/**
 * The `/programs` body after `head`, in pieces of up to `size` channels with guide data: the
 * bytes the response schema's serializer writes, with the programmes already JSON
 * (programsJsonFor). Each piece reads the guide as it is then: an import switching over
 * meanwhile shows in the later pieces.
 */
async function* guidePieces(
  guide: GuideStore, page: Channel[], head: string, size: number, from?: number, to?: number,
): AsyncGenerator<string> {
  const guided = await guide.guided();
  const icons = await guide.channelIcons();
  let text = head;
  for (let start = 0; start < page.length;) {
    const ids: number[] = [];
    let end = start;
    for (; end < page.length && ids.length < size && end - start < PIECE_MAX; end++) if (guided.has(page[end].id)) ids.push(page[end].id);
    const programs = ids.length ? await guide.programsJsonFor(ids, from, to) : undefined;
    for (let i = start; i < end; i++) {
      const c = page[i];
      text += `${i === 0 ? '' : ','}{"id":${c.id},"name":${JSON.stringify(c.name)},"tvg_chno":${JSON.stringify(c.number)},"logo":${JSON.stringify(c.logo ?? icons.get(c.id) ?? null)},"programs":[${programs?.get(c.id) ?? ''}]}`;
    }
    start = end;
    if (start < page.length) {
      yield text;
      text = '';
    }
  }
  yield `${text}]}`;
}

export function liveTvRoutes(http: HttpScope, deps: { auth: AuthService; service: LiveTvService; favorites: Favorites; registry: LiveTvRegistry }): void {
  const { auth, service, favorites, registry } = deps;
  const tunerName = (id: string) => registry.tuners.get(id)?.name ?? id;
  const view = (c: Channel, favs: ReadonlySet<number>, icons: ReadonlyMap<number, string>) => ({
    id: c.id, name: c.name, tvg_chno: c.number, favorited: favs.has(c.id), logo: c.logo ?? icons.get(c.id) ?? null,
    category: c.groups[0] ?? null, tvg_id: c.tvgId, source: tunerName(c.tunerId),
  });
  const inCategory = (category: string | undefined) => {
    if (category === undefined) return () => true;
    const wanted = fold(category);
    return (c: Channel) => c.groups.some((g) => fold(g) === wanted);
  };

  // The full list is large (10,000 channels: 1.8 MB) and asked for again and again: it is made once
  // per snapshot, guide icons, category and set of favorites, and gzipped once.
  const listings = new WeakMap<ChannelSnapshot, { icons: ReadonlyMap<number, string>; byKey: Map<string, Listing> }>();
  const listing = (snapshot: ChannelSnapshot, icons: ReadonlyMap<number, string>, category: string | undefined, favs: ReadonlySet<number>): Listing => {
    let cached = listings.get(snapshot);
    if (cached?.icons !== icons) listings.set(snapshot, (cached = { icons, byKey: new Map() }));
    const key = `${category === undefined ? '*' : `=${fold(category)}`} ${[...favs].sort((a, b) => a - b).join(',')}`;
    let found = cached.byKey.get(key);
    if (!found) {
      if (cached.byKey.size >= MAX_CACHED_LISTINGS) cached.byKey.clear();
      const channels = snapshot.channels.filter(inCategory(category)).map((c) => view(c, favs, icons));
      found = { body: Buffer.from(JSON.stringify({ channels })) };
      cached.byKey.set(key, found);
    }
    return found;
  };

  http.get('/channels', {
    schema: {
      summary: 'Channels, in channel-number order', tags: ['live-tv'],
      querystring: Type.Object({ category: Type.Optional(Type.String({ maxLength: 256 })) }),
      response: { 200: Type.Object({ channels: Type.Array(ChannelSchema) }), 400: ErrorBody, 401: ErrorBody },
    },
  }, async (request, reply) => {
    const user = auth.requireUser(request);
    const { category } = request.query as { category?: string };
    const found = listing(await service.channels.current(), await service.guide.channelIcons(), category, favorites.of(user.id));
    // Large lists are sent gzipped to clients that take it (browsers, ExoPlayer/OkHttp, AVPlayer do).
    return sendJson(request, reply, found.body, { minBytes: GZIP_FROM_BYTES, compress: (body) => (found.gzip ??= gzipped(body)) });
  });

  http.get('/channels/search', {
    schema: {
      summary: 'Channels whose name or number contains q (case- and accent-insensitive)', tags: ['live-tv'],
      querystring: Type.Object({ q: Type.String({ maxLength: 256 }) }, { required: ['q'] }),
      response: { 200: Type.Object({ channels: Type.Array(ChannelSchema) }), 400: ErrorBody, 401: ErrorBody },
    },
  }, async (request) => {
    const user = auth.requireUser(request);
    const q = fold((request.query as { q: string }).q);
    if (!q) throw errors.badRequest('q must not be empty');
    const favs = favorites.of(user.id);
    const { channels } = await service.channels.current();
    const icons = await service.guide.channelIcons();
    return { channels: (await searchChannels(channels, q)).map((c) => view(c, favs, icons)) };
  });

  http.get('/channel/categories', {
    schema: {
      summary: 'Channel categories with how many channels each holds', tags: ['live-tv'],
      response: { 200: Type.Object({ categories: Type.Array(Type.Object({ name: Type.String(), channel_count: Type.Integer() })) }), 401: ErrorBody },
    },
  }, async (request) => {
    auth.requireUser(request);
    const counts = new Map<string, number>();
    for (const c of (await service.channels.current()).channels) for (const g of new Set(c.groups)) counts.set(g, (counts.get(g) ?? 0) + 1);
    return { categories: [...counts].sort((a, b) => a[0].localeCompare(b[0])).map(([name, channel_count]) => ({ name, channel_count })) };
  });

  http.get('/programs', {
    schema: {
      summary: 'The guide: a page of channels (in number order) with their programmes', tags: ['live-tv'],
      description: 'limit -1 (default) returns every channel. Every channel is listed; one without guide data has an empty programs array. from/to (ISO 8601) keep the programmes overlapping that window. Times are UTC with Z. A page of more than 100 channels is sent in pieces (chunked) as the client reads it, gzipped when Accept-Encoding takes gzip.',
      querystring: Type.Object({
        limit: Type.Integer({ default: -1, minimum: -1, maximum: MAX_PAGE }),
        offset: Type.Integer({ default: 0, minimum: 0, maximum: 2 ** 31 - 1 }),
        category: Type.Optional(Type.String({ maxLength: 256 })),
        from: Type.Optional(Type.String({ format: 'date-time' })),
        to: Type.Optional(Type.String({ format: 'date-time' })),
      }),
      response: {
        200: Type.Object({
          total_channels: Type.Integer(), offset: Type.Integer(),
          channels: Type.Array(Type.Object({ id: Type.Integer(), name: Type.String(), tvg_chno: Type.String(), logo: Type.Union([Type.String(), Type.Null()]), programs: Type.Array(ProgramSchema) })),
        }),
        400: ErrorBody, 401: ErrorBody,
      },
    },
  }, async (request, reply) => {
    auth.requireUser(request);
    const q = request.query as { limit: number; offset: number; category?: string; from?: string; to?: string };
    if (q.limit === 0) throw errors.badRequest('limit must be -1 (all) or a positive integer');
    const from = q.from === undefined ? undefined : Date.parse(q.from);
    const to = q.to === undefined ? undefined : Date.parse(q.to);
    if (from !== undefined && to !== undefined && to <= from) throw errors.badRequest('to must be after from');
    const { channels } = await service.channels.current();
    const matching = q.category === undefined ? channels : channels.filter(inCategory(q.category));
    const page = q.limit === -1 ? matching.slice(q.offset) : matching.slice(q.offset, q.offset + q.limit);
    const whole = page.length <= WHOLE_PAGE;
    const pieces = guidePieces(service.guide, page, `{"total_channels":${matching.length},"offset":${q.offset},"channels":[`, whole ? WHOLE_PAGE : GUIDE_PIECE, from, to);
    // A page of a guide grid (the usual request) is one piece, sent as it is.
    if (whole) return sendJson(request, reply, Buffer.from((await pieces.next()).value as string), { minBytes: Infinity });
    // More is written piece by piece as the client reads it (one piece made ahead).
    return sendJson(request, reply, Readable.from(pieces, { objectMode: false, highWaterMark: 1 }));
  });

  const favoriteRoute = (method: 'POST' | 'DELETE') => http.route({
    method, url: '/me/favorite',
    schema: {
      summary: method === 'POST' ? 'Add a channel to the favorites (idempotent)' : 'Remove a channel from the favorites (idempotent)', tags: ['live-tv'],
      body: FavoriteBody,
      response: { 200: FavoritesReply, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody },
    },
    handler: async (request) => {
      const user = auth.requireUser(request);
      const { channel_id } = request.body as { channel_id: number };
      const snapshot = await service.channels.current();
      if (method === 'POST') {
        if (!snapshot.byId.has(channel_id)) throw errors.notFound(`No channel ${channel_id}`);
        await favorites.add(user.id, channel_id);
      } else {
        if (!snapshot.byId.has(channel_id) && !favorites.of(user.id).has(channel_id)) throw errors.notFound(`No channel ${channel_id}`);
        await favorites.remove(user.id, channel_id);
      }
      return { favorites: [...favorites.of(user.id)].filter((id) => snapshot.byId.has(id)).sort((a, b) => a - b) };
    },
  });
  favoriteRoute('POST');
  favoriteRoute('DELETE');

  http.get('/api/livetv/sources', {
    schema: {
      summary: 'Tuners and guide sources with their last import (admin)', tags: ['live-tv'],
      response: { 401: ErrorBody, 403: ErrorBody },
    },
  }, async (request) => {
    auth.requireAdmin(request);
    const { channels } = await service.channels.current();
    const guideRows = await service.guide.sources();
    return {
      tuners: [...registry.tuners.values()].map((t) => ({ id: t.id, name: t.name, maxStreams: t.maxStreams, channels: channels.filter((c) => c.tunerId === t.id).length })),
      guides: [...registry.guides.values()].map((g) => ({ id: g.id, name: g.name, ...(guideRows.get(g.id) ?? { last_import: null }) })),
    };
  });
}
