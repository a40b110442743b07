/**
 * GET /api/items/{id}/subtitle-tracks (spec §4) and the track files it points
 * at, /api/items/{id}/subtitle/<provider>/<track> as text/vtt. Track files are
 * media URLs (players and manifests fetch them): a bearer token, ?api_key= or
 * the item-scoped signed ?key= a manifest carries.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type, type AuthService, type HttpScope, type Static } from 'antenna/sdk';
import type { SubtitleService } from './service.js';
import { withTimestampMap } from './vtt.js';

const ErrorBody = Type.Object({ error: Type.String() });
const Params = Type.Object({
  // No pattern: a malformed id is unknown (404), as everywhere in VOD.
  id: Type.String({ description: 'Item id (a movie, an episode or a recording)' }),
});
const TrackParams = Type.Object({
  id: Type.String({ description: 'Item id' }),
  provider: Type.String({ description: '`embedded` (streams inside the file), `external` (sidecar files) or a plugin\'s provider id' }),
  track: Type.String({ description: 'embedded: the position among the file\'s subtitle streams (0 = the first; ffmpeg\'s 0:s:N); external: the position among the sidecar files, sorted by name' }),
});
const version = Type.Optional(Type.Integer({ minimum: 0, maximum: 999, description: 'Which version (file) of the item (0 = the best, the default), as in playback' }));
const ListQuery = Type.Object({ version });
const TrackQuery = Type.Object({
  version,
  mpegts: Type.Optional(Type.Integer({
    minimum: 0, maximum: 2 ** 33 - 1,
    description: 'For HLS subtitle renditions: adds `X-TIMESTAMP-MAP=MPEGTS:<mpegts>,LOCAL:00:00:00.000`, the media timestamp (90 kHz) of the title\'s time 0, so hls.js and Safari align cues with segments whose timestamps do not start at 0',
  })),
  api_key: Type.Optional(Type.String({ description: 'The bearer token, for players that cannot send headers' })),
  key: Type.Optional(Type.String({ description: 'A signed, item-scoped key from a manifest this server handed out' })),
});

const Track = Type.Object({
  label: Type.String({ description: 'Display label, unique within the list: the track\'s title or language, with (Forced), (SDH), (External)' }),
  language: Type.String({ description: 'BCP 47 language code in canonical form (`en`, `fr`, `pt-BR`; `eng`/`fre` become `en`/`fr`); `und` when unknown' }),
  url: Type.String({ description: 'Path of the WebVTT file: /api/items/{id}/subtitle/embedded/<track_index> for embedded tracks, /api/items/{id}/subtitle/external/<n> for sidecar files; `?version=` when not the default version' }),
  codec: Type.String({ description: 'Source format as ffprobe names it: subrip, ass, ssa, mov_text, webvtt' }),
  forced: Type.Boolean(),
  default: Type.Boolean(),
  external: Type.Boolean({ description: 'Not inside the media file (a sidecar file, a plugin\'s download)' }),
  hearing_impaired: Type.Boolean({ description: 'SDH / closed captions' }),
});
const TrackList = Type.Object({ tracks: Type.Array(Track) });
const Vtt = { description: 'The track as WebVTT (text/vtt; charset=utf-8)', type: 'string' };

/** Aborted when the client goes away before the answer is sent. */
function clientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => { if (!reply.raw.writableFinished) controller.abort(new Error('client went away')); });
  return controller.signal;
}

export function subtitleRoutes(http: HttpScope, deps: { auth: AuthService; service: SubtitleService }): void {
  const { auth, service } = deps;
  const mediaScope = (request: FastifyRequest) => `vod:${(request.params as { id: string }).id}`;

  http.get('/api/items/:id/subtitle-tracks', {
    schema: {
      summary: "An item's subtitle tracks", tags: ['subtitles'],
      description: 'Text tracks embedded in the file (SubRip, ASS/SSA, mov_text, WebVTT), then sidecar files next to it (Movie.srt, Movie.en.srt, Movie.fr.forced.srt, Movie.eng.sdh.srt; .srt, .vtt, .ass, .ssa), then tracks of provider plugins. Every url serves WebVTT. Image-based tracks (PGS, VobSub, DVB) are not listed. 404 for an unknown or unauthorised item or version.',
      params: Params,
      querystring: ListQuery,
      response: { 200: TrackList, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody },
    },
  }, async (request, reply) => {
    const user = auth.requireUser(request);
    const { id } = request.params as Static<typeof Params>;
    const target = await service.target(user, id, (request.query as Static<typeof ListQuery>).version ?? 0);
    const tracks = await service.list(user, target, clientGone(reply));
    return {
      tracks: tracks.map((t) => ({
        label: t.label, language: t.language ?? 'und', url: t.url, codec: t.codec,
        forced: t.forced, default: t.default, external: t.external, hearing_impaired: t.hearingImpaired,
      })),
    };
  });

  http.get('/api/items/:id/subtitle/:provider/:track', {
    config: { auth: 'media', mediaScope },
    schema: {
      summary: 'One subtitle track as WebVTT', tags: ['subtitles'],
      description: 'The first request for an embedded track extracts every text track of the file in one ffmpeg pass (job `subtitles:…` in GET /api/jobs) and caches them until the file changes; later tracks of that file are answered from the cache. Cue text and timings are kept exactly; styling beyond italic/bold/underline is dropped; sidecar files in Windows-1252/Latin-1 are converted to UTF-8. 404 for an unknown or unauthorised item, version, provider or track (image-based tracks included); 503 when extraction failed.',
      params: TrackParams,
      querystring: TrackQuery,
      response: { 200: Vtt, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 502: ErrorBody, 503: ErrorBody },
    },
  }, async (request, reply) => {
    const user = auth.requireUser(request);
    const { id, provider, track } = request.params as Static<typeof TrackParams>;
    const query = request.query as Static<typeof TrackQuery>;
    const target = await service.target(user, id, query.version ?? 0);
    const vtt = await service.fetch(user, target, provider, track, clientGone(reply));
    return reply.header('cache-control', 'private, max-age=300').type('text/vtt; charset=utf-8')
      .send(query.mpegts === undefined ? vtt : withTimestampMap(vtt, query.mpegts));
  });
}
