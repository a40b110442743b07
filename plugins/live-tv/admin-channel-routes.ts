/**
 * Channels for administrators: every channel (hidden ones too) with its guide match and its
 * streams, edits that no refresh undoes, bulk renumbering, and the channels whose guide is
 * missing or doubtful with the guide channels closest to them. Every /api/admin route is
 * admin only (the HTTP layer answers 403 to anyone else).
 */
import { errors, Type, type HttpScope, type SourceReader } from 'antenna/sdk';
import type { Channel, ChannelChanges } from './channel-store.js';
import type { ChannelGuide } from './guide-store.js';
import type { LiveTvRegistry } from './registry.js';
import type { LiveTvService } from './service.js';
import type { LiveSessions } from './live/sessions.js';
import { fold } from './text.js';

const ErrorBody = Type.Object({ error: Type.String() });
const Errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody };
const tags = ['admin', 'live-tv'];
const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

const Method = Type.Union(['manual', 'tvg_id', 'tvg_id_folded', 'name', 'fuzzy'].map((m) => Type.Literal(m)));
const Guide = Type.Union([Type.Object({
  channel_id: Type.String({ description: 'The guide (XMLTV) channel id' }),
  source: Type.String({ description: 'The guide source it comes from' }),
  method: Method,
  score: Type.Number({ description: '1 for every method but fuzzy; fuzzy: the similarity of the names, 0-1' }),
}), Type.Null()], { description: 'The guide channel feeding it and how it was found; null when none' });
const Stream = Type.Object({
  id: Type.Integer({ description: 'The playlist entry it is (for PUT …/streams)' }),
  source: Type.String({ description: 'The tuner (playlist) id' }),
  name: Type.String({ description: 'The name the playlist gives it' }),
  url: Type.Union([Type.String(), Type.Null()], { description: 'The stream URL, credentials redacted' }),
  state: Type.Union([Type.Literal('playing'), Type.Literal('cooldown'), Type.Literal('standby')], {
    description: "playing: the channel's live session plays it now; cooldown: it failed less than live-tv's failoverCooldown ago and is passed over while another stream can play; standby: neither",
  }),
  last_failure: Type.Union([Type.Object({
    reason: Type.String({ description: 'What went wrong, e.g. "the source answered HTTP 404", "the source sent nothing for 10 s"' }),
    at: Type.String({ format: 'date-time' }),
  }), Type.Null()], { description: 'Its last failure since the server started, or null' }),
  viewers: Type.Integer({ description: 'Devices watching the channel on this stream now (asked for it within the last 30 s)' }),
});
const AdminChannel = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  number: Type.String(),
  logo: Type.Union([Type.String(), Type.Null()]),
  categories: Type.Array(Type.String()),
  hidden: Type.Boolean({ description: 'Hidden by an administrator: not listed to other users' }),
  tvg_id: Type.Union([Type.String(), Type.Null()]),
  tvg_shift: Type.Number({ description: "Hours the guide's programmes are moved by (the playlist's tvg-shift)" }),
  guide: Guide,
  streams: Type.Array(Stream, { description: 'In the order they are tried' }),
});
const Candidate = Type.Object({ channel_id: Type.String(), name: Type.String(), score: Type.Number() });
const IdParams = Type.Object({ id: Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1 }) });
const PatchBody = Type.Object({
  name: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 512 }))),
  number: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 32 }))),
  logo: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 2048 }))),
  categories: Type.Optional(Type.Union([Type.Array(Type.String({ minLength: 1, maxLength: 256 }), { maxItems: 64 }), Type.Null()])),
  hidden: Type.Optional(Type.Boolean()),
  guide_channel_id: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 255 }))),
}, { additionalProperties: false, minProperties: 1, description: "Fields to change; null gives back the playlist's value (guide_channel_id: null removes the manual mapping)" });

export function adminChannelRoutes(http: HttpScope, deps: { service: LiveTvService; registry: LiveTvRegistry; sources: SourceReader; sessions: LiveSessions }): void {
  const { service, registry, sources, sessions } = deps;
  const guideOrder = () => [...registry.guides.keys()];
  const guideOf = (refs: readonly ChannelGuide[] | undefined) => {
    const r = refs?.[0];
    return r ? { channel_id: r.guideId, source: r.sourceId, method: r.method, score: r.score } : null;
  };
  const view = (c: Channel, guides: ReadonlyMap<number, readonly ChannelGuide[]>) => {
    const health = sessions.streamHealth(c);
    return {
      id: c.id, name: c.name, number: c.number, logo: c.logo, categories: c.groups, hidden: c.hidden, tvg_id: c.tvgId,
      tvg_shift: c.shiftMs / 3600_000, guide: guideOf(guides.get(c.id)),
      streams: c.streams.map((s, i) => {
        const { state, lastFailure, viewers } = health[i];
        return {
          id: s.id, source: s.tunerId, name: s.name, url: typeof s.data.url === 'string' ? sources.redact(s.data.url) : null,
          state, last_failure: lastFailure && { reason: lastFailure.reason, at: new Date(lastFailure.at).toISOString() }, viewers,
        };
      }),
    };
  };

  http.get('/api/admin/channels', {
    schema: {
      summary: 'Every channel, hidden ones too, with its guide match and streams (admin)', tags,
      response: { 200: Type.Object({ channels: Type.Array(AdminChannel) }), ...Errors },
    },
  }, async () => {
    const [{ all }, guides] = await Promise.all([service.channels.current(), service.guide.channelGuides()]);
    return { channels: all.map((c) => view(c, guides)) };
  });

  http.get('/api/admin/channels/unmatched', {
    schema: {
      summary: 'Channels without a guide, or matched with low confidence, with the closest guide channels (admin)', tags,
      description: 'Low confidence: a fuzzy match scoring under 0.9. Each channel lists the five guide channels whose names come closest, best first.',
      querystring: Type.Object({ limit: Type.Integer({ minimum: 1, maximum: 10_000, default: 500 }) }),
      response: {
        200: Type.Object({
          total: Type.Integer({ description: 'How many channels are unmatched or doubtful (the list holds the first `limit`)' }),
          channels: Type.Array(Type.Object({
            id: Type.Integer(), name: Type.String(), number: Type.String(), tvg_id: Type.Union([Type.String(), Type.Null()]),
            guide: Guide, candidates: Type.Array(Candidate),
          })),
        }),
        ...Errors,
      },
    },
  }, async (request) => {
    const { limit } = request.query as { limit: number };
    const { all } = await service.channels.current();
    const found = await service.guide.unmatched(all, guideOrder(), limit);
    return {
      total: found.total,
      channels: found.channels.map(({ channel: c, match, candidates }) => ({
        id: c.id, name: c.name, number: c.number, tvg_id: c.tvgId,
        guide: match ? { channel_id: match.ref.guideId, source: match.ref.sourceId, method: match.method, score: match.score } : null,
        candidates: candidates.map((k) => ({ channel_id: k.ref.guideId, name: k.name, score: k.score })),
      })),
    };
  });

  http.get('/api/admin/guide-channels', {
    schema: {
      summary: 'Guide channels whose id or a display name contains q, for mapping a channel by hand (admin)', tags,
      description: 'Case- and accent-insensitive; the first `limit`, in the guide sources\' order. Without q, the first ones.',
      querystring: Type.Object({ q: Type.Optional(Type.String({ maxLength: 256 })), limit: Type.Integer({ minimum: 1, maximum: 1000, default: 50 }) }),
      response: {
        200: Type.Object({ channels: Type.Array(Type.Object({ channel_id: Type.String(), source: Type.String(), names: Type.Array(Type.String()) })) }),
        ...Errors,
      },
    },
  }, async (request) => {
    const { q = '', limit } = request.query as { q?: string; limit: number };
    const wanted = fold(q);
    const found = [];
    for (const e of (await service.guide.matcher(guideOrder())).entries) {
      if (found.length >= limit) break;
      if (!wanted || fold(e.guideId).includes(wanted) || e.names.some((n) => fold(n).includes(wanted))) {
        found.push({ channel_id: e.guideId, source: e.sourceId, names: e.names });
      }
    }
    return { channels: found };
  });

  http.patch('/api/admin/channels/:id', {
    schema: {
      summary: 'Change a channel: name, number, logo, categories, hidden, guide mapping (admin)', tags,
      description: 'Edits are kept apart from what the playlist says: no refresh undoes them. A number another channel shows is refused (409); a guide channel id no guide source has is refused (404).',
      params: IdParams, body: PatchBody,
      response: { 200: Type.Object({ channel: AdminChannel }), ...Errors },
    },
  }, async (request) => {
    const { id } = request.params as { id: number };
    const body = request.body as { name?: string | null; number?: string | null; logo?: string | null; categories?: string[] | null; hidden?: boolean; guide_channel_id?: string | null };
    if (body.guide_channel_id) {
      const matcher = await service.guide.matcher(guideOrder());
      if (!matcher.entries.some((e) => e.guideId === body.guide_channel_id)) throw errors.notFound(`No guide channel ${body.guide_channel_id}`);
    }
    const changes: ChannelChanges = {
      name: body.name, number: body.number, logo: body.logo, hidden: body.hidden, guideId: body.guide_channel_id,
      categories: body.categories === undefined || body.categories === null ? body.categories : [...new Set(body.categories.map((c) => c.trim()).filter(Boolean))],
    };
    const channel = await service.edits.edit(id, changes);
    if (body.guide_channel_id !== undefined || body.hidden !== undefined) await service.remap();
    return { channel: view(channel, await service.guide.channelGuides()) };
  });

  http.put('/api/admin/channels/:id/streams', {
    schema: {
      summary: "Set a channel's streams, in the order they are tried: attach, detach, reorder (admin)", tags,
      description: "A stream may come from a channel of its own (that channel goes; its favorites stay with its id for when it is detached again) or from this channel; one of another channel of several streams is refused (409). The channel's own stream stays (400 without it). Streams left out become channels of their own.",
      params: IdParams,
      body: Type.Object({ streams: Type.Array(Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1 }), { minItems: 1, maxItems: 100 }) }, { additionalProperties: false }),
      response: { 200: Type.Object({ channel: AdminChannel }), ...Errors },
    },
  }, async (request) => {
    const { id } = request.params as { id: number };
    const { streams } = request.body as { streams: number[] };
    const channel = await service.edits.setStreams(id, streams);
    await service.remap();
    return { channel: view(channel, await service.guide.channelGuides()) };
  });

  http.post('/api/admin/channels/renumber', {
    schema: {
      summary: 'Number every channel anew from `start`, in category, name or number order (admin)', tags,
      description: 'by "category": by first category (channels without one last), keeping the number order within each; "name": by name; "number": the current order, without gaps. Hidden channels are numbered too.',
      body: Type.Object({
        start: Type.Integer({ minimum: 0, maximum: 100_000_000 }),
        by: Type.Union([Type.Literal('category'), Type.Literal('name'), Type.Literal('number')]),
      }, { additionalProperties: false }),
      response: { 200: Type.Object({ renumbered: Type.Integer() }), ...Errors },
    },
  }, async (request) => {
    const { start, by } = request.body as { start: number; by: 'category' | 'name' | 'number' };
    return { renumbered: await service.edits.renumber(start, by) };
  });
}
