import type { FastifyRequest } from 'fastify';
import {
  errors, isDashOnly, Type, type AuthService, type AuthUser, type DashPackager, type HlsPackager, type HostInfo, type HttpScope,
} from 'antenna/sdk';
import type { ChannelStore } from '../channel-store.js';
import { clientCaps } from './codecs.js';
import { FileCache } from './file-cache.js';
import type { LiveSession, LiveSessions } from './sessions.js';

const ErrorBody = Type.Object({ error: Type.String() });
const Params = Type.Object({ channel_id: Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1 }) });
const FileParams = Type.Object({
  channel_id: Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1 }),
  attempt: Type.Integer({ minimum: 0, maximum: 100_000 }),
  file: Type.String({ pattern: '^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,100}$' }),
});

/**
 * The manifests are written from the session's own segment list (its timeline)
 * by the packagers, every URL carrying a key scoped to the channel. Media
 * playlists live at `s/<run>/<rendition>.m3u8` and always answer the current
 * list, whatever run the URL names (a player keeps the URL it got across restarts).
 */
export function watchRoutes(http: HttpScope, deps: {
  auth: AuthService; sessions: LiveSessions; channels: ChannelStore; hls: HlsPackager; dash: DashPackager; host: HostInfo;
}): void {
  const { auth, sessions, channels, hls, dash, host } = deps;
  const mediaScope = (request: FastifyRequest) => `live:${(request.params as { channel_id: unknown }).channel_id}`;
  const config = { auth: 'media' as const, mediaScope };

  const keyFor = (user: AuthUser, channelId: number) => auth.signMediaKey(user, `live:${channelId}`);
  const files = new FileCache();

  async function openSession(request: FastifyRequest, channelId: number): Promise<{ session: LiveSession; key: string }> {
    const user = auth.requireUser(request);
    const channel = (await channels.current()).byId.get(channelId);
    if (!channel) throw errors.notFound(`No channel ${channelId}`);
    const session = await sessions.open(channel, clientCaps(request.headers));
    return { session, key: keyFor(user, channelId) };
  }

  /** HLS URLs are absolute paths; DASH ones relative to the MPD (/watch/live/<id>/master.mpd), which ffmpeg 4.1's dash demuxer needs. */
  const presentation = (session: LiveSession, key: string, base: string) => session.timeline.presentation({
    init: (run, rep) => `${base}s/${run}/init-${rep}.mp4?key=${key}`,
    media: (run, rep) => `${base}s/${run}/${rep}-$Number$.m4s?key=${key}`,
  });
  const hlsBase = (channelId: number) => `/watch/live/${channelId}/`;
  const playlistUrl = (session: LiveSession, key: string) => (rep: string) => `${hlsBase(session.channelId)}s/${Math.max(0, session.run)}/${rep}.m3u8?key=${key}`;

  http.get('/watch/live/:channel_id', {
    config,
    schema: {
      summary: 'Watch a channel: HLS master playlist, or a redirect to DASH for DASH-only devices', tags: ['live-tv'],
      description: 'No Device-OS → 200 HLS master playlist. Device-OS equal to a clients.dashOnly.exact value (default STB) or starting with a clients.dashOnly.prefix value (default Android) → 302 to /watch/live/{id}/master.mpd. Other Device-OS values → 200 HLS. Media URLs inside carry a short-lived signed key. One upstream connection per channel however many viewers; 409 when the tuner has no free stream; 502/503 when the upstream fails.',
      params: Params,
      response: { 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody, 502: ErrorBody, 503: ErrorBody },
    },
  }, async (request, reply) => {
    const { channel_id } = request.params as { channel_id: number };
    if (isDashOnly(request.headers['device-os'], host.dashOnly)) {
      const user = auth.requireUser(request);
      if (!(await channels.current()).byId.has(channel_id)) throw errors.notFound(`No channel ${channel_id}`);
      return reply.redirect(`/watch/live/${channel_id}/master.mpd?key=${keyFor(user, channel_id)}`, 302);
    }
    const { session, key } = await openSession(request, channel_id);
    const body = hls.master(presentation(session, key, hlsBase(channel_id)), playlistUrl(session, key));
    return reply.header('cache-control', 'no-store').type(hls.contentType).send(body);
  });

  http.get('/watch/live/:channel_id/master.mpd', {
    config,
    schema: {
      summary: 'Watch a channel as DASH (dynamic MPD)', tags: ['live-tv'],
      params: Params,
      response: { 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody, 502: ErrorBody, 503: ErrorBody },
    },
  }, async (request, reply) => {
    const { channel_id } = request.params as { channel_id: number };
    const { session, key } = await openSession(request, channel_id);
    return reply.header('cache-control', 'no-store').type(dash.contentType).send(dash.mpd(presentation(session, key, '')));
  });

  http.get('/watch/live/:channel_id/s/:attempt/:file', {
    config,
    schema: {
      summary: 'A live media playlist or segment (URLs come from the manifests, with their signed key)', tags: ['live-tv'],
      params: FileParams,
      response: { 400: ErrorBody, 401: ErrorBody, 404: ErrorBody },
    },
  }, async (request, reply) => {
    const { channel_id, attempt, file } = request.params as { channel_id: number; attempt: number; file: string };
    const session = sessions.touch(channel_id);
    if (!session || attempt > session.run) throw errors.notFound('This stream is not running; request the channel again');
    const playlist = /^(video|audio)\.m3u8$/.exec(file);
    if (playlist) {
      const key = keyFor(auth.requireUser(request), channel_id);
      const listed = presentation(session, key, hlsBase(channel_id));
      if (!listed.periods.some((p) => p.representations.some((r) => r.id === playlist[1]))) throw errors.notFound('No such playlist');
      return reply.header('cache-control', 'no-store').type(hls.contentType).send(hls.media(listed, playlist[1]));
    }
    const found = session.timeline.file(attempt, file);
    const data = found && (await files.get(found.path));
    if (!found || !data) throw errors.notFound('No such segment');
    return reply.header('cache-control', 'private, max-age=60').type(`${found.kind}/mp4`).send(data);
  });
}
