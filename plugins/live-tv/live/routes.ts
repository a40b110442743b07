import { constants } from 'node:zlib';
import type { FastifyRequest } from 'fastify';
import {
  AppError,
  errors, isDashOnly, Type, type AuthService, type AuthUser, type DashPackager, type HlsPackager, type HostInfo, type HttpScope, type LiveMpegTs, type Presentation,
} from 'antenna/sdk';
import type { Channel, ChannelStore } from '../channel-store.js';
import { acceptsGzip, gzipped } from '../gzip.js';
import { clientCaps } from './codecs.js';
import { FileCache } from './file-cache.js';
import { HeldElsewhere, type LiveSession, type LiveSessions, type Viewer } from './sessions.js';

const ErrorBody = Type.Object({ error: Type.String() });
const Params = Type.Object({ channel_id: Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1 }) });
const FileParams = Type.Object({
  channel_id: Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1 }),
  attempt: Type.Integer({ minimum: 0, maximum: 100_000 }),
  file: Type.String({ pattern: '^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,100}$' }),
});
const credentials = {
  api_key: Type.Optional(Type.String({ description: 'The bearer token, for players that cannot send headers' })),
  key: Type.Optional(Type.String({ description: 'A signed key scoped to the channel, from a URL this server handed out' })),
};
const start = Type.Optional(Type.Literal('program', {
  description: "Start over: players start at the current programme's start when it is inside the time-shift window, else at the window's start",
}));
const WatchQuery = Type.Object({ start, ...credentials });
const MpdQuery = Type.Object({
  start,
  refresh: Type.Optional(Type.Literal('1', { description: "An update of a running session's MPD (its Location): never starts the channel" })),
  ...credentials,
});
const FileQuery = Type.Object({
  start: Type.Optional(Type.Integer({ minimum: 0, maximum: 8_640_000_000_000, description: 'Media playlists: the wall-clock time (ms) players start at (EXT-X-START)' })),
  ...credentials,
});
const PlayInfo = Type.Object({
  method: Type.Literal('live'),
  url: Type.String({ description: 'The HLS master playlist, or the MPD for DASH-only devices, with a key scoped to the channel' }),
  format: Type.Union([Type.Literal('hls'), Type.Literal('dash')]),
  timeshift: Type.Integer({ description: 'Seconds a viewer may pause or seek back at most (the time-shift window; 0 when off)' }),
});

/** Where a viewer's key goes in a media playlist written once for all (no URL holds it). */
const KEY_MARK = '\u0001';
/** Bytes of media playlists kept (every viewer's copy counted), the least recently used going first. */
const MAX_PLAYLIST_BYTES = 32 * 2 ** 20;

/** A media playlist as one viewer gets it (its key put in): made once per state of the window, gzipped once for clients that take it. */
interface PlaylistCopy {
  plain(): Buffer;
  gzip(): Promise<Buffer>;
}

interface Written {
  version: string;
  text: string | undefined;
  /** Per key: keys change every few minutes, the window every segment, so this holds about one copy per viewer. */
  copies: Map<string, { plain?: Buffer; gzip?: Promise<Buffer> }>;
  bytes: number;
}

/**
 * Media playlists written once per state of a session's timeline, and each viewer's copy made
 * once too: a time-shift window lists hundreds of segments, and writing them, putting the key in
 * and encoding them for every reload (players reload every second or two) cost more than the
 * rest of live playback.
 */
class PlaylistCache {
  private readonly entries = new Map<string, Written>();
  private bytes = 0;

  get(id: string, version: string, key: string, write: () => string | undefined): PlaylistCopy | undefined {
    let entry = this.entries.get(id);
    if (entry) this.drop(id, entry); // Map order: least recently used first
    if (entry?.version !== version) {
      const text = write();
      entry = { version, text, copies: new Map(), bytes: text?.length ?? 0 };
    }
    this.entries.set(id, entry);
    this.bytes += entry.bytes;
    const { text } = entry;
    if (text === undefined) return undefined;
    let copy = entry.copies.get(key);
    if (!copy) entry.copies.set(key, (copy = {}));
    const current = entry;
    const made = copy;
    const grow = (n: number) => {
      if (this.entries.get(id) !== current) return; // evicted or replaced meanwhile
      current.bytes += n;
      this.bytes += n;
      this.trim(id);
    };
    const plain = () => {
      if (!made.plain) {
        made.plain = Buffer.from(text.replaceAll(KEY_MARK, key));
        grow(made.plain.length);
      }
      return made.plain;
    };
    return {
      plain,
      gzip: () => {
        if (!made.gzip) {
          const body = made.plain ?? Buffer.from(text.replaceAll(KEY_MARK, key));
          // The fastest level: a playlist's lines differ only in their numbers (120 KB → 3 KB either way, 5× less CPU).
          made.gzip = gzipped(body, { level: constants.Z_BEST_SPEED }).then((zipped) => { grow(zipped.length); return zipped; });
        }
        return made.gzip;
      },
    };
  }

  private drop(id: string, entry: Written): void {
    this.entries.delete(id);
    this.bytes -= entry.bytes;
  }

  /** The least recently used playlists go while the bytes are over; the one in use stays. */
  private trim(keep: string): void {
    for (const [id, entry] of this.entries) {
      if (this.bytes <= MAX_PLAYLIST_BYTES) return;
      if (id !== keep) this.drop(id, entry);
    }
  }
}

/** Per id, the value made for the latest version only (a few ids: channels × start asked for, the oldest going first). */
class LatestOf<T> {
  private readonly entries = new Map<string, { version: string; value: T }>();

  get(id: string, version: string, make: () => T): T {
    const hit = this.entries.get(id);
    if (hit?.version === version) return hit.value;
    this.entries.delete(id);
    const value = make();
    this.entries.set(id, { version, value });
    if (this.entries.size > 64) this.entries.delete(this.entries.keys().next().value!);
    return value;
  }
}

/** The guide lookup start over needs. */
export interface ProgrammeLookup {
  programmesOf(channelId: number, from: number, to: number): Promise<{ start: number; stop: number }[]>;
}

/**
 * The manifests are written from the session's own segment list (its timeline)
 * by the packagers, every URL carrying a key scoped to the channel. Media
 * playlists live at `s/<run>/<rendition>.m3u8` and always answer the current
 * list, whatever run the URL names (a player keeps the URL it got across restarts).
 */
export function watchRoutes(http: HttpScope, deps: {
  auth: AuthService; sessions: LiveSessions; channels: ChannelStore; guide: ProgrammeLookup; hls: HlsPackager; dash: DashPackager; host: HostInfo;
  timeshiftSeconds: number;
  /** The channel's session on this node as MPEG-TS (a viewer's hold); HeldElsewhere when another node runs it. */
  mpegTs(channel: Channel, label: string, signal: AbortSignal): Promise<LiveMpegTs>;
}): void {
  const { auth, sessions, channels, guide, hls, dash, host, timeshiftSeconds } = deps;
  const mediaScope = (request: FastifyRequest) => `live:${(request.params as { channel_id: unknown }).channel_id}`;
  const config = { auth: 'media' as const, mediaScope };

  const keyFor = (user: AuthUser, channelId: number) => auth.signMediaKey(user, `live:${channelId}`);
  /** A viewer is a device session of a user (a key leads back to the session it was signed for). */
  const viewerOf = (user: AuthUser): Viewer => ({ id: `${user.id}:${user.sessionId}`, user });
  const files = new FileCache();
  const playlists = new PlaylistCache();
  /** The presentation media playlists are written from, once per state of the window for both renditions. */
  const keyless = new LatestOf<Presentation>();

  async function channelOf(channelId: number) {
    const channel = (await channels.current()).byId.get(channelId);
    if (!channel) throw errors.notFound(`No channel ${channelId}`);
    return channel;
  }

  async function openSession(request: FastifyRequest, channelId: number): Promise<{ session: LiveSession; key: string; user: AuthUser }> {
    const user = auth.requireUser(request);
    try {
      const session = await sessions.open(await channelOf(channelId), clientCaps(request.headers), viewerOf(user));
      return { session, key: keyFor(user, channelId), user };
    } catch (err) {
      if (err instanceof HeldElsewhere && err.url) throw sendElsewhere(request, user, channelId, err.url, err.message);
      throw err;
    }
  }

  /**
   * Cluster mode: 307 to the same URL on the node that runs the channel (one upstream connection
   * in the cluster), with a key for the channel instead of a token (a redirect to another origin
   * loses the Authorization header).
   */
  function sendElsewhere(request: FastifyRequest, user: AuthUser, channelId: number, base: string, message: string): AppError {
    const url = new URL(request.url, 'http://node');
    url.searchParams.delete('api_key');
    if (!url.searchParams.has('key')) url.searchParams.set('key', keyFor(user, channelId));
    return new AppError(307, 'ANTENNA_ELSEWHERE', message, { location: `${base.replace(/\/$/, '')}${url.pathname}${url.search}` });
  }

  /** A request for a session this node does not run: 307 to the node that does, else 404. */
  async function notHere(request: FastifyRequest, user: AuthUser, channelId: number): Promise<AppError> {
    const holder = await sessions.elsewhere(channelId);
    if (holder?.url) return sendElsewhere(request, user, channelId, holder.url, `This stream runs on another node (${holder.node})`);
    return errors.notFound('This stream is not running; request the channel again');
  }

  /** Start over: the current programme's start when the window holds it, else the window's start. */
  async function programStart(session: LiveSession): Promise<number | undefined> {
    const windowStart = session.timeline.windowStart();
    if (windowStart === undefined) return undefined;
    const now = Date.now();
    const onAir = (await guide.programmesOf(session.channelId, now, now + 1)).find((p) => p.start <= now && p.stop > now);
    return Math.max(windowStart, onAir?.start ?? windowStart);
  }

  /** HLS URLs are absolute paths; DASH ones relative to the MPD (/watch/live/<id>/master.mpd), which ffmpeg 4.1's dash demuxer needs. */
  const presentation = (session: LiveSession, key: string, base: string, extra: Partial<Presentation> = {}): Presentation => ({
    ...session.timeline.presentation({
      init: (run, rep) => `${base}s/${run}/init-${rep}.mp4?key=${key}`,
      media: (run, rep) => `${base}s/${run}/${rep}-$Number$.m4s?key=${key}`,
    }),
    ...extra,
  });
  const hlsBase = (channelId: number) => `/watch/live/${channelId}/`;
  const playlistUrl = (session: LiveSession, key: string, startAt?: number) => (rep: string) =>
    `${hlsBase(session.channelId)}s/${Math.max(0, session.run)}/${rep}.m3u8?key=${key}${startAt === undefined ? '' : `&start=${Math.round(startAt)}`}`;
  const mpd = async (session: LiveSession, key: string, startOver: boolean) => dash.mpd(presentation(session, key, '', {
    startAt: startOver ? await programStart(session) : undefined,
    // Updates come from here: they keep the session alive like any request, but never start it again.
    location: `master.mpd?key=${key}&refresh=1`,
  }));

  // The same answer at a path that ends like a playlist, for clients that go by the extension (ExoPlayer in TiviMate, Kodi).
  for (const url of ['/watch/live/:channel_id', '/watch/live/:channel_id/master.m3u8']) http.get(url, {
    config,
    schema: {
      summary: url.endsWith('.m3u8') ? 'Watch a channel (the same as /watch/live/{channel_id}, at a path ending in .m3u8)' : 'Watch a channel: HLS master playlist, or a redirect to DASH for DASH-only devices', tags: ['live-tv'],
      description: 'No Device-OS → 200 HLS master playlist. Device-OS equal to a clients.dashOnly.exact value (default STB) or starting with a clients.dashOnly.prefix value (default Android) → 302 to /watch/live/{id}/master.mpd. Other Device-OS values → 200 HLS. Media URLs inside carry a short-lived signed key (or, when the request came with a key an access key minted, one that lives as long as that access key). One upstream connection per channel however many viewers; the media playlists list the time-shift window (pause, seek back), with EXT-X-PROGRAM-DATE-TIME. start=program starts players at the current programme\'s start (EXT-X-START) when the window holds it, else at the window\'s start. 409 when the tuner has no free stream (in cluster mode, counted across the nodes); 307 to the same URL on the node that runs the channel when another node of the cluster does (with a key scoped to the channel); 502/503 when the upstream fails or the transcode limits are reached (with Retry-After; the body names the channel and the kind of failure).',
      params: Params,
      querystring: WatchQuery,
      response: { 307: ErrorBody, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody, 502: ErrorBody, 503: ErrorBody },
    },
  }, async (request, reply) => {
    const { channel_id } = request.params as { channel_id: number };
    const { start: startQuery } = request.query as { start?: 'program' };
    if (isDashOnly(request.headers['device-os'], host.dashOnly)) {
      const user = auth.requireUser(request);
      await channelOf(channel_id);
      return reply.redirect(`/watch/live/${channel_id}/master.mpd?key=${keyFor(user, channel_id)}${startQuery ? `&start=${startQuery}` : ''}`, 302);
    }
    const { session, key } = await openSession(request, channel_id);
    const startAt = startQuery ? await programStart(session) : undefined;
    const body = hls.master(presentation(session, key, hlsBase(channel_id)), playlistUrl(session, key, startAt));
    return reply.header('cache-control', 'no-store').type(hls.contentType).send(body);
  });

  http.get('/watch/live/:channel_id/master.mpd', {
    config,
    schema: {
      summary: 'Watch a channel as DASH (dynamic MPD)', tags: ['live-tv'],
      description: 'timeShiftBufferDepth is the time-shift window held now. start=program: suggestedPresentationDelay reaches back to the current programme\'s start (or the window\'s start). The MPD\'s Location (refresh=1) is where players fetch its updates: those keep the session alive but never start it (404 once it has stopped, or 307 to the node that runs it in cluster mode).',
      params: Params,
      querystring: MpdQuery,
      response: { 307: ErrorBody, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody, 502: ErrorBody, 503: ErrorBody },
    },
  }, async (request, reply) => {
    const { channel_id } = request.params as { channel_id: number };
    const query = request.query as { start?: 'program'; refresh?: '1' };
    if (query.refresh) {
      const user = auth.requireUser(request);
      const session = sessions.touch(channel_id, viewerOf(user).id);
      if (!session) throw await notHere(request, user, channel_id);
      return reply.header('cache-control', 'no-store').type(dash.contentType).send(await mpd(session, keyFor(user, channel_id), false));
    }
    const { session, key } = await openSession(request, channel_id);
    return reply.header('cache-control', 'no-store').type(dash.contentType).send(await mpd(session, key, !!query.start));
  });

  http.get('/watch/live/:channel_id/play-info', {
    config,
    schema: {
      summary: 'How to play a channel, for players that cannot send headers (native HLS in Safari, TVs)', tags: ['live-tv'],
      description: 'The HLS master playlist URL, or the MPD for DASH-only Device-OS values, with a key scoped to the channel that the manifests and segments it leads to carry too (no header needed). Does not tune the channel: the URL does. start=program is carried into the URL. 404 for an unknown channel.',
      params: Params,
      querystring: WatchQuery,
      response: { 200: PlayInfo, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody },
    },
  }, async (request) => {
    const { channel_id } = request.params as { channel_id: number };
    const { start: startQuery } = request.query as { start?: 'program' };
    const user = auth.requireUser(request);
    await channelOf(channel_id);
    const dashOnly = isDashOnly(request.headers['device-os'], host.dashOnly);
    const path = dashOnly ? `/watch/live/${channel_id}/master.mpd` : `/watch/live/${channel_id}`;
    return {
      method: 'live' as const,
      url: `${path}?key=${keyFor(user, channel_id)}${startQuery ? `&start=${startQuery}` : ''}`,
      format: dashOnly ? 'dash' as const : 'hls' as const,
      timeshift: timeshiftSeconds,
    };
  });

  http.get('/watch/live/:channel_id/stream.ts', {
    config,
    exposeHeadRoute: false, // a HEAD would tune the channel like a GET
    schema: {
      summary: 'Watch a channel as one continuous MPEG-TS (video/mp2t)', tags: ['live-tv'],
      description: 'The channel\'s shared live session, remuxed to MPEG-TS from its newest segments: what the HDHomeRun and M3U outputs send. In cluster mode, a node whose HDHomeRun or M3U client asks for a channel another node runs reads it here from that node (with a key the client\'s access key minted) and passes the bytes on: one upstream connection, one tuner slot. 409 when the tuner has no free stream; 307 to the same URL on the node that runs the channel when another node of the cluster does; 503 when the stream does not start.',
      params: Params,
      querystring: Type.Object(credentials),
      response: { 307: ErrorBody, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody, 502: ErrorBody, 503: ErrorBody },
    },
  }, async (request, reply) => {
    const { channel_id } = request.params as { channel_id: number };
    const user = auth.requireUser(request);
    const channel = await channelOf(channel_id);
    const gone = new AbortController();
    request.raw.on('close', () => gone.abort());
    let ts: LiveMpegTs;
    try {
      ts = await deps.mpegTs(channel, `ts ${user.username}`, gone.signal);
    } catch (err) {
      if (err instanceof HeldElsewhere && err.url) throw sendElsewhere(request, user, channel_id, err.url, err.message);
      throw err;
    }
    reply.raw.on('close', () => ts.close());
    return reply.header('cache-control', 'no-store').type('video/mp2t').send(ts.stream);
  });

  http.get('/watch/live/:channel_id/s/:attempt/:file', {
    config,
    schema: {
      summary: 'A live media playlist or segment (URLs come from the manifests, with their signed key)', tags: ['live-tv'],
      params: FileParams,
      querystring: FileQuery,
      response: { 307: ErrorBody, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody },
    },
  }, async (request, reply) => {
    const { channel_id, attempt, file } = request.params as { channel_id: number; attempt: number; file: string };
    const { start: startAt } = request.query as { start?: number };
    const user = auth.requireUser(request);
    const segment = /^(?:video|audio)-(\d+)\.m4s$/.exec(file);
    const session = sessions.touch(channel_id, viewerOf(user).id, segment ? Number(segment[1]) : undefined);
    if (!session) throw await notHere(request, user, channel_id);
    if (attempt > session.run) throw errors.notFound('This stream is not running; request the channel again');
    const playlist = /^(video|audio)\.m3u8$/.exec(file);
    if (playlist) {
      const rep = playlist[1];
      // The session (its directory is its own), and where its window starts and ends.
      const version = `${session.dir}:${session.timeline.firstSequence}:${session.timeline.sequence}`;
      const copy = playlists.get(`${channel_id}/${rep}/${startAt ?? ''}`, version, keyFor(user, channel_id), () => {
        const listed = keyless.get(`${channel_id}/${startAt ?? ''}`, version, () => presentation(session, KEY_MARK, hlsBase(channel_id), { startAt }));
        return listed.periods.some((p) => p.representations.some((r) => r.id === rep)) ? hls.media(listed, rep) : undefined;
      });
      if (!copy) throw errors.notFound('No such playlist');
      reply.header('cache-control', 'no-store').header('vary', 'accept-encoding').type(hls.contentType);
      if (!acceptsGzip(request)) return reply.send(copy.plain());
      return reply.header('content-encoding', 'gzip').send(await copy.gzip());
    }
    const found = session.timeline.file(attempt, file);
    const data = found && (await files.get(found.path));
    if (!found || !data) throw errors.notFound('No such segment');
    return reply.header('cache-control', 'private, max-age=60').type(`${found.kind}/mp4`).send(data);
  });
}
