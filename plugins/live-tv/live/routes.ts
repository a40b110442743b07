import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyRequest } from 'fastify';
import { errors, isDashOnly, Type, type AuthService, type AuthUser, type HostInfo, type HttpScope, type PackageFormat, type Packager } from 'antenna/sdk';
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
const SEGMENT_WAIT_POLL_MS = 100;
/** A media playlist is re-read at most this often, however many viewers poll it. */
const PLAYLIST_MAX_AGE_MS = 250;

export function watchRoutes(http: HttpScope, deps: {
  auth: AuthService; sessions: LiveSessions; channels: ChannelStore; packagers: Record<PackageFormat, Packager>; host: HostInfo; segmentSeconds: number;
}): void {
  const { auth, sessions, channels, packagers, host, segmentSeconds } = deps;
  const mediaScope = (request: FastifyRequest) => `live:${(request.params as { channel_id: unknown }).channel_id}`;
  const config = { auth: 'media' as const, mediaScope };

  const keyFor = (user: AuthUser, channelId: number) => auth.signMediaKey(user, `live:${channelId}`);
  const files = new FileCache();
  const playlistText = (file: string) => files.get(file, PLAYLIST_MAX_AGE_MS).then((data) => data?.toString('utf8'));

  async function openSession(request: FastifyRequest, channelId: number): Promise<{ session: LiveSession; key: string }> {
    const user = auth.requireUser(request);
    const channel = (await channels.current()).byId.get(channelId);
    if (!channel) throw errors.notFound(`No channel ${channelId}`);
    const session = await sessions.open(channel, clientCaps(request.headers));
    return { session, key: keyFor(user, channelId) };
  }

  async function manifest(format: PackageFormat, session: LiveSession, key: string): Promise<{ body: string; type: string }> {
    const packager = packagers[format];
    let attempt = session.attempt;
    let text = await readFile(path.join(session.dir, String(attempt), packager.entry), 'utf8').catch(() => undefined);
    if (text === undefined) {
      // The run restarted (a crash, or a switch to transcoding) since it was ready: wait for the new one.
      await sessions.ready(session.channelId);
      attempt = session.attempt;
      text = await readFile(path.join(session.dir, String(attempt), packager.entry), 'utf8').catch(() => undefined);
      if (text === undefined) throw errors.unavailable('The stream is restarting; try again', 2);
    }
    // DASH URLs are relative to the MPD (/watch/live/<id>/master.mpd): some players (ffmpeg 4.1's
    // dash demuxer among them) mishandle absolute-path templates.
    const link = format === 'dash'
      ? (file: string) => `s/${attempt}/${file}?key=${key}`
      : (file: string) => `/watch/live/${session.channelId}/s/${attempt}/${file}?key=${key}`;
    const body = packager.rewrite(text, link);
    return { body, type: packager.contentType };
  }

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
    const { body, type } = await manifest('hls', session, key);
    return reply.header('cache-control', 'no-store').type(type).send(body);
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
    const { body, type } = await manifest('dash', session, key);
    return reply.header('cache-control', 'no-store').type(type).send(body);
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
    if (!session || attempt > session.attempt) throw errors.notFound('This stream is not running; request the channel again');
    const target = path.join(session.dir, String(attempt), file);
    if (path.dirname(target) !== path.join(session.dir, String(attempt))) throw errors.badRequest('bad file name');
    if (file.endsWith('.m3u8')) {
      // Always the current run's playlist: after a restart a player keeps polling the URL it has
      // and finds the new run's segments, numbered on from the old ones.
      let current = session.attempt;
      let text = await playlistText(path.join(session.dir, String(current), file));
      if (text === undefined && current > 0) {
        // A restarted run has not written its playlist yet: wait for it rather than answer 404,
        // which makes players give up; if it does not come, the last run's playlist still plays.
        await sessions.ready(channel_id).catch(() => undefined);
        current = session.attempt;
        text = await playlistText(path.join(session.dir, String(current), file))
          ?? await playlistText(path.join(session.dir, String(current - 1), file)).then((t) => { if (t !== undefined) current -= 1; return t; });
      }
      if (text === undefined) throw errors.notFound('No such playlist');
      const key = keyFor(auth.requireUser(request), channel_id);
      const body = continuePlaylist(packagers.hls.rewrite(text, (f) => `/watch/live/${channel_id}/s/${current}/${f}?key=${key}`), session, current);
      return reply.header('cache-control', 'no-store').type('application/vnd.apple.mpegurl').send(body);
    }
    if (!/\.(mp4|m4s)$/.test(file)) throw errors.notFound('No such segment');
    // A segment listed a moment ago may still be being renamed into place: wait a little, never long.
    const deadline = Date.now() + segmentSeconds * 2000;
    let data = await files.get(target);
    while (data === undefined && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, SEGMENT_WAIT_POLL_MS));
      data = await files.get(target);
    }
    if (data === undefined) throw errors.notFound('No such segment');
    return reply
      .header('cache-control', 'private, max-age=60')
      .type(/-stream1|audio/.test(file) ? 'audio/mp4' : 'video/mp4')
      .send(data);
  });
}

/**
 * A media playlist of a restarted run continues the earlier ones: sequence
 * numbers keep growing and the first segment of the new run is marked as a
 * discontinuity, so players carry on instead of stalling.
 */
function continuePlaylist(text: string, session: LiveSession, attempt: number): string {
  if (attempt === 0 || attempt !== session.attempt) return text;
  const lines = text.split('\n');
  let firstIsNew = false;
  const out: string[] = [];
  for (const line of lines) {
    const seq = /^#EXT-X-MEDIA-SEQUENCE:(\d+)/.exec(line);
    if (seq) {
      firstIsNew = Number(seq[1]) === 1;
      out.push(`#EXT-X-MEDIA-SEQUENCE:${Number(seq[1]) + session.sequenceBase}`);
      out.push(`#EXT-X-DISCONTINUITY-SEQUENCE:${attempt - (firstIsNew ? 1 : 0)}`);
      continue;
    }
    if (firstIsNew && line.startsWith('#EXTINF')) {
      out.push('#EXT-X-DISCONTINUITY');
      firstIsNew = false;
    }
    out.push(line);
  }
  return out.join('\n');
}
