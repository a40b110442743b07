/**
 * VOD manifests and their files (PRODUCT.md §2):
 *   GET /watch/vod/{id}/master.m3u8   HLS master (video variant + audio rendition)
 *   GET /watch/vod/{id}/master.mpd    static DASH MPD
 *   GET /watch/vod/{id}/t/{token}/{file}   media playlists, init and media segments
 * Every URL a manifest hands out is relative to it and carries a short-lived
 * key scoped to the item (never the token); the token names the job's variant,
 * signed (variant.ts): a segment URL can only name a variant a manifest offered.
 * play-info's manifest URL carries its decision the same way (`variant=`), so
 * a player that sends no Device-* headers gets what play-info decided.
 */
import { readFile } from 'node:fs/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, deviceCaps, errors, languageName, normalizeLanguage, Type, type AuthService, type AuthUser, type HostInfo, type HttpScope, type Static } from 'antenna/sdk';
import { playableItem, type Playable } from '../access.js';
import type { Catalog } from '../catalog.js';
import type { AudioInfo } from '../model.js';
import { decide } from '../play-decision.js';
import { CachedItems } from '../play-routes.js';
import type { VodStore } from '../store.js';
import { AUDIO_BITRATE, VBV_SECONDS } from './ffmpeg-args.js';
import { dashMpd, hlsMaster, hlsMedia, hlsSubtitles, parseJobFile, segmentDurations, type ManifestInput, type SubtitleTrack } from './manifests.js';
import type { Plan, Tracks } from './session.js';
import type { Transcoder } from './transcoder.js';
import { checkVariant, variantOf, type Variant, type VariantTokens } from './variant.js';

const ErrorBody = Type.Object({ error: Type.String() });
const Params = Type.Object({
  // No pattern: a malformed id answers 404 like an unknown one (access.ts), never 400.
  item_id: Type.String({ description: 'Item id (a movie or an episode)' }),
});
const FileParams = Type.Object({
  item_id: Type.String({ description: 'Item id' }),
  token: Type.String({ description: 'The transcode variant, signed, as the manifest named it' }),
  file: Type.String({ description: 'video.m3u8, audio.m3u8, sub-<n>.m3u8, init-v.mp4, init-a.mp4, v-<n>.m4s or a-<n>.m4s' }),
});
const credentials = {
  api_key: Type.Optional(Type.String({ description: 'The bearer token, for players that cannot send headers' })),
  key: Type.Optional(Type.String({ description: 'A signed, item-scoped key from a URL this server handed out' })),
};
const ManifestQuery = Type.Object({
  version: Type.Optional(Type.Integer({ minimum: 0, maximum: 999, description: 'Which version of the item (0 = the best, the default)' })),
  maxBitrate: Type.Optional(Type.Integer({ minimum: 64_000, maximum: 1_000_000_000, description: 'bits per second the client asks not to exceed' })),
  audioTrack: Type.Optional(Type.Integer({ minimum: 0, maximum: 999, description: "Audio track: its position among the file's audio streams (0 = first)" })),
  variant: Type.Optional(Type.String({ maxLength: 100, description: "The decision play-info made (method, size, bitrate, audio track, version), signed: when present it is followed and version, maxBitrate, audioTrack and the Device-* headers are not consulted" })),
  placed: Type.Optional(Type.String({ maxLength: 64, description: 'Cluster mode: set by the node that redirected the request here for its spare capacity; this node starts the transcode rather than pass it on again' })),
  ...credentials,
});
type ManifestQueryT = Static<typeof ManifestQuery>;
const FileQuery = Type.Object(credentials);

const MANIFEST_DESCRIPTION = 'Starts (or joins) the transcode job of this item, version, variant and device and answers a manifest of the whole title: fixed-length segments when transcoding, cut at the source keyframes near segmentSeconds when the video is copied; every segment listed from the start (seekable). The method is the decision play-info put in the URL (`variant`), else the play decision from the Device-* headers, maxBitrate and audioTrack: transcode → H.264 + AAC stereo at a ladder height and bitrate; audio-only → video copied, AAC stereo; remux (and direct) → both copied. Segment URLs carry a short-lived key scoped to the item. 400 for a malformed query value, 404 for an unknown or unauthorised item, version or audio track or a variant this server did not sign, 503 with Retry-After when the transcode limits are reached (ffmpeg.maxTranscodes, maxTranscodesPerUser) or the transcoder cannot start. Cluster mode: 307 to the same URL on the node running this device\'s job when another node does, or, when the request would start a transcode on a node without room (cluster.maxNodeTranscodes), on the node with the most (with an item key instead of a token, the decision made here as `variant`, and `placed`).';
const HLS_TYPE = 'application/vnd.apple.mpegurl';
const DASH_TYPE = 'application/dash+xml';

/** What the routes use of the catalog: play notices (continue-watching) and other plugins' subtitle tracks. */
type CatalogHooks = Pick<Catalog, 'played' | 'manifestSubtitles'>;

export function transcodeRoutes(http: HttpScope, deps: { auth: AuthService; store: VodStore; host: HostInfo; transcoder: Transcoder; tokens: VariantTokens; catalog?: CatalogHooks }): void {
  const { auth, transcoder, tokens, catalog } = deps;
  const items = new CachedItems(deps.store);
  const mediaScope = (request: FastifyRequest) => `vod:${(request.params as { item_id: string }).item_id}`;
  const config = { auth: 'media' as const, mediaScope };
  const keyFor = (user: AuthUser, itemId: string) => auth.signMediaKey(user, `vod:${itemId}`);

  /** The job a manifest request names, started; waits until its tracks are known (codecs come from ffmpeg's output). */
  async function openSession(request: FastifyRequest, reply: FastifyReply, id: string, q: ManifestQueryT) {
    const signed = q.variant === undefined ? undefined : tokens.verify(id, q.variant);
    if (q.variant !== undefined && !signed) throw errors.notFound('This stream link is not valid here; ask play-info for a new one');
    const p = await playableItem(items, auth, request, id, signed?.version ?? q.version ?? 0);
    const info = p.file.info!;
    let variant: Variant;
    // The decision play-info signed, unless the file changed since (then it is made again, as without one).
    if (signed && !checkVariant(signed, p.file)) variant = signed;
    else {
      if (q.audioTrack !== undefined && q.audioTrack >= info.audio.length) {
        throw errors.notFound(`Item ${p.item.id} (version ${p.version}) has no audio track ${q.audioTrack}; it has ${info.audio.length}`);
      }
      const decision = decide(info, deviceCaps(request.headers), { maxBitrate: q.maxBitrate, audioTrack: q.audioTrack });
      variant = variantOf(p.file, p.version, decision);
    }
    const job = { itemId: p.item.id, file: p.file, variant, user: p.user };
    const there = await transcoder.elsewhere(job, q.placed === undefined);
    if (there) {
      throw sendElsewhere(request, p.user, p.item.id, there, { variant: tokens.sign(p.item.id, variant), placed: there.node },
        `This transcode runs on node ${there.node}, which has room for it`);
    }
    const session = await transcoder.open(job);
    catalog?.played(p.user, p.item);
    const [{ plan, tracks }, subtitles] = await Promise.all([session.ready(aborted(reply)), subtitlesOf(p)]);
    return { p, variant, plan, tracks, subtitles };
  }

  /**
   * Cluster mode: 307 to the same URL on another node, with an item key instead of a token (a
   * redirect to another origin loses the Authorization header), and `params` set.
   */
  function sendElsewhere(request: FastifyRequest, user: AuthUser, itemId: string, there: { url: string }, params: Record<string, string>, message: string): AppError {
    const url = new URL(request.url, 'http://node');
    url.searchParams.delete('api_key');
    if (!url.searchParams.has('key')) url.searchParams.set('key', keyFor(user, itemId));
    for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
    return new AppError(307, 'ANTENNA_ELSEWHERE', message, { location: `${there.url.replace(/\/$/, '')}${url.pathname}${url.search}`, 'cache-control': 'no-store' });
  }

  /** Other plugins' WebVTT tracks of the file, with the item's key on their URLs. */
  async function subtitlesOf(p: Playable): Promise<SubtitleTrack[]> {
    if (!catalog) return [];
    const key = keyFor(p.user, p.item.id);
    const withQuery = (url: string, query: string) => `${url}${url.includes('?') ? '&' : '?'}${query}`;
    return (await catalog.manifestSubtitles(p.user, p.item, p.file)).map((s) => ({
      label: s.label, language: s.language, default: s.default, forced: s.forced,
      url: withQuery(s.url, `key=${key}`),
      // HLS players place cues through X-TIMESTAMP-MAP: the 90 kHz timestamp of the title's time 0, which is 0.
      hlsUrl: withQuery(s.url, `key=${key}&mpegts=0`),
    }));
  }

  const manifestSchema = (summary: string) => ({
    summary, tags: ['vod'], description: MANIFEST_DESCRIPTION,
    params: Params, querystring: ManifestQuery,
    response: { 307: ErrorBody, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 503: ErrorBody },
  });

  http.get('/watch/vod/:item_id/master.m3u8', { config, schema: manifestSchema('HLS master playlist of a transcoded or remuxed item (web)') }, async (request, reply) => {
    const { item_id } = request.params as { item_id: string };
    const { p, variant, plan, tracks, subtitles } = await openSession(request, reply, item_id, request.query as ManifestQueryT);
    const body = hlsMaster({ ...manifestInput(p, variant, plan, tracks, `t/${tokens.sign(p.item.id, variant)}/`, keyFor(p.user, p.item.id)), subtitles });
    return reply.header('cache-control', 'no-store').type(HLS_TYPE).send(body);
  });

  http.get('/watch/vod/:item_id/master.mpd', { config, schema: manifestSchema('DASH manifest (static MPD) of a transcoded or remuxed item (set-top box, mobile)') }, async (request, reply) => {
    const { item_id } = request.params as { item_id: string };
    const { p, variant, plan, tracks, subtitles } = await openSession(request, reply, item_id, request.query as ManifestQueryT);
    const body = dashMpd({ ...manifestInput(p, variant, plan, tracks, `t/${tokens.sign(p.item.id, variant)}/`, keyFor(p.user, p.item.id)), subtitles });
    return reply.header('cache-control', 'no-store').type(DASH_TYPE).send(body);
  });

  http.get('/watch/vod/:item_id/t/:token/:file', {
    config,
    schema: {
      summary: 'A media playlist, init segment or media segment of a VOD transcode (URLs come from the manifests, with their key)',
      description: 'sub-<n>.m3u8 is the media playlist of subtitle rendition n (the WebVTT file as one segment). A segment not produced yet is held until it is; one far from what ffmpeg is producing restarts it there. A job that idled away is recreated from the token. Cluster mode: a request for a transcode running on another node is 307 to the same URL there (with an item key instead of a token). 404 for names that are not files of a job (including path tricks), a token this server did not sign for this item, or one that does not fit the file; 503 with Retry-After when the transcode limits are reached or the transcoder failed.',
      tags: ['vod'], params: FileParams, querystring: FileQuery,
      response: { 307: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 503: ErrorBody },
    },
  }, async (request, reply) => {
    const { item_id, token, file } = request.params as Static<typeof FileParams>;
    const name = parseJobFile(file);
    const wanted = tokens.verify(item_id, token);
    if (!name || !wanted) throw errors.notFound('No such file');
    const p = await playableItem(items, auth, request, item_id, wanted.version);
    const why = checkVariant(wanted, p.file);
    if (why) throw errors.notFound(`This stream cannot be made: ${why}; request the manifest again`);
    const job = { itemId: p.item.id, file: p.file, variant: wanted, user: p.user };
    // Cluster mode: the job runs on another node (a load balancer sent this request here): there, not a second one here.
    const there = await transcoder.elsewhere(job, false);
    if (there) throw sendElsewhere(request, p.user, p.item.id, there, {}, `This transcode runs on node ${there.node}`);
    const session = transcoder.session(job);
    const abort = aborted(reply);
    if (name.kind === 'subtitles') {
      const sub = (await subtitlesOf(p))[name.index];
      if (!sub) throw errors.notFound(`No subtitle track ${name.index}`);
      const plan = await session.planReady();
      return reply.header('cache-control', 'no-store').type(HLS_TYPE).send(hlsSubtitles(plan.bounds, sub.hlsUrl));
    }
    if (name.kind === 'playlist') {
      const plan = await session.planReady();
      if (!hasTrack(p, wanted, name.track)) throw errors.notFound(`This stream has no ${name.track === 'v' ? 'video' : 'audio'}`);
      const key = keyFor(p.user, p.item.id);
      const body = hlsMedia({ plan: plan.bounds, link: (f) => `${f}?key=${key}` }, name.track);
      return reply.header('cache-control', 'no-store').type(HLS_TYPE).send(body);
    }
    const target = await (name.kind === 'init' ? session.initFile(name.track, abort) : session.segmentFile(name.track, name.index, abort)).catch(async (err: Error) => {
      // A job recreated from the token whose start was refused (the transcode limits) is not kept.
      await transcoder.dropIfUnused(job);
      throw err;
    });
    const data = await readFile(target).catch(() => undefined);
    // The job stopped between the answer and the read (its files were removed): the player asks again.
    if (!data) throw errors.unavailable('This transcode has stopped; try again', 1);
    return sendMedia(reply, data, name.track);
  });
}

function sendMedia(reply: FastifyReply, data: Buffer, track: 'v' | 'a') {
  return reply
    // Segments of a job never change; a private cache may keep them as long as the key lives.
    .header('cache-control', 'private, max-age=3600')
    .type(track === 'a' ? 'audio/mp4' : 'video/mp4')
    .send(data);
}

/** Aborts when the client goes away before its answer (a player that seeks cancels its pending segment). */
function aborted(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => { if (!reply.raw.writableFinished) controller.abort(); });
  return controller.signal;
}

function hasTrack(p: Playable, variant: Variant, track: 'v' | 'a'): boolean {
  return track === 'v' ? Boolean(p.file.info!.video) : variant.audio !== null;
}

/** What the manifests say about the tracks: codecs and sizes from ffmpeg's init segment, the rest from the scan. */
function manifestInput(p: Playable, variant: Variant, plan: Plan, tracks: Tracks, base: string, key: string): ManifestInput {
  const info = p.file.info!;
  const audioInfo: AudioInfo | undefined = variant.audio === null ? undefined : info.audio[variant.audio];
  const copiedVideoBitrate = info.video?.bitrate ?? Math.max(0, info.bitrate - info.audio.length * 192_000);
  const video = tracks.video && {
    codec: tracks.video.codec,
    width: tracks.video.width ?? info.video?.width ?? 0,
    height: tracks.video.height ?? info.video?.height ?? 0,
    // A peak: a transcode's maxrate with the VBV buffer spent within the shortest segment; a copied stream's average with headroom.
    bandwidth: variant.method === 'transcode'
      ? Math.ceil(variant.videoKbps * 1000 * (1 + VBV_SECONDS / Math.min(...segmentDurations(plan.bounds))) * CONTAINER_OVERHEAD)
      : Math.round((copiedVideoBitrate || 5_000_000) * 1.5),
    frameRate: info.video?.fps ?? undefined,
  };
  const language = normalizeLanguage(audioInfo?.language);
  const audio = tracks.audio && {
    codec: tracks.audio.codec,
    channels: tracks.audio.channels ?? 2,
    sampleRate: tracks.audio.sampleRate ?? 48_000,
    joc: tracks.audio.joc,
    bandwidth: Math.ceil((variant.method === 'remux' && audioInfo ? copiedAudioBitrate(audioInfo) : AUDIO_BITRATE) * AUDIO_PEAK),
    language,
    name: audioInfo?.title || languageName(language) || 'Audio',
  };
  return { plan: plan.bounds, video, audio, link: (f) => `${base}${f}?key=${key}` };
}

/** fMP4 boxes (moof, trun entries) over the media bytes. */
const CONTAINER_OVERHEAD = 1.03;
/** An audio segment's peak over its average: AAC and Opus are variable within their nominal rate. */
const AUDIO_PEAK = 1.15;

/** A copied audio track's bitrate: what the scan read, else a ceiling for its codec and channels. */
function copiedAudioBitrate(a: AudioInfo): number {
  if (a.bitrate) return a.bitrate;
  if (a.codec === 'flac' || a.codec === 'alac' || a.codec.startsWith('pcm')) return 800_000 * Math.max(1, a.channels / 2);
  if (a.codec === 'aac' || a.codec === 'mp3' || a.codec === 'opus' || a.codec === 'vorbis') return Math.min(640_000, 128_000 * Math.max(1, a.channels / 2));
  return 640_000;
}
