/**
 * Playing a recording: /watch/recording/{id} follows the live Device-OS rule
 * (HLS master, or a 302 to master.mpd for DASH-only devices); while recording
 * the manifests grow (EVENT playlist, dynamic MPD), once over they are VOD /
 * static and cover every part. URLs inside carry a key scoped to the recording.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { errors, isDashOnly, Type, type AuthService, type AuthUser, type DashPackager, type HlsPackager, type HostInfo, type HttpScope } from 'antenna/sdk';
import type { Dvr } from './dvr.js';
import { recordingPresentation } from './manifests.js';
import type { Recording } from './model.js';
import { partDir, readParts, type Part } from './parts.js';
import type { Recorder } from './recorder.js';

const ErrorBody = Type.Object({ error: Type.String() });
const Id = Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1 });
const Params = Type.Object({ id: Id });
const FIRST_MEDIA_WAIT_MS = 20_000;
const FIRST_MEDIA_POLL_MS = 250;
const CACHED_RECORDINGS = 32;

interface Media { rec: Recording; parts: Part[]; complete: boolean }

export function watchRoutes(http: HttpScope, deps: {
  auth: AuthService; dvr: Dvr; recorder: Recorder; hls: HlsPackager; dash: DashPackager; host: HostInfo; now: () => number;
  /** Whether the user is granted the Recordings library (else every recording answers 404). */
  mayUse: (user: AuthUser) => boolean;
}): void {
  const { auth, dvr, recorder, hls, dash, host, now, mayUse } = deps;
  const scope = (request: FastifyRequest) => `recording:${(request.params as { id: unknown }).id}`;
  const config = { auth: 'media' as const, mediaScope: scope };
  const keyFor = (user: AuthUser, id: number) => auth.signMediaKey(user, `recording:${id}`);
  /** Parts of finished recordings, read from disk once (they never change). */
  const finished = new Map<number, Promise<Part[]>>();

  /** The recording, for a caller granted the Recordings library (a key outlives a grant: checked on every request). */
  const recording = async (request: FastifyRequest, id: number): Promise<Recording> => {
    const rec = mayUse(auth.requireUser(request)) ? await dvr.get(id) : undefined;
    if (!rec) throw errors.notFound(`No recording ${id}`);
    return rec;
  };

  /** The recording's parts now; a running one with nothing yet is waited for a little. */
  async function media(request: FastifyRequest, id: number, wait: boolean): Promise<Media> {
    const deadline = Date.now() + (wait ? FIRST_MEDIA_WAIT_MS : 0);
    for (;;) {
      const rec = await recording(request, id);
      if (rec.status === 'scheduled') throw errors.conflict(`Recording ${id} is scheduled for ${new Date(rec.start).toISOString()}: nothing to play yet`);
      const active = rec.status === 'recording' ? recorder.active(id) : undefined;
      let parts: Part[];
      if (active) {
        parts = active.parts;
      } else {
        let cached = finished.get(id);
        if (!cached || rec.status === 'recording') {
          cached = readParts(rec.dir);
          if (rec.status !== 'recording') {
            finished.set(id, cached);
            if (finished.size > CACHED_RECORDINGS) finished.delete(finished.keys().next().value!);
          }
        }
        parts = await cached;
      }
      if (parts.length) return { rec, parts, complete: rec.status !== 'recording' };
      if (rec.status !== 'recording') throw errors.conflict(`Recording ${id} has no media${rec.error ? ` (${rec.error})` : ''}`);
      if (Date.now() >= deadline) throw errors.unavailable(`Recording ${id} has not received any media yet`, 5);
      await new Promise((r) => setTimeout(r, FIRST_MEDIA_POLL_MS));
    }
  }

  const send = (reply: FastifyReply, type: string, body: string, complete: boolean) =>
    reply.header('cache-control', complete ? 'private, max-age=10' : 'no-store').type(type).send(body);

  /** HLS URLs are absolute paths; DASH ones relative to master.mpd, as live does (ffmpeg 4.1's dash demuxer mishandles absolute-path templates). */
  const presentation = (m: Media, link: (file: string) => string) => recordingPresentation(m.parts, { complete: m.complete, now: now(), link });

  async function master(request: FastifyRequest, reply: FastifyReply, format: 'hls' | 'dash') {
    const user = auth.requireUser(request);
    const { id } = request.params as { id: number };
    const m = await media(request, id, true);
    dvr.played(user, m.rec);
    const key = keyFor(user, id);
    if (format === 'hls') {
      const body = hls.master(presentation(m, (file) => `/watch/recording/${id}/${file}?key=${key}`), (rep) => `/watch/recording/${id}/hls/${rep}.m3u8?key=${key}`);
      return send(reply, hls.contentType, body, m.complete);
    }
    return send(reply, dash.contentType, dash.mpd(presentation(m, (file) => `${file}?key=${key}`)), m.complete);
  }

  http.get('/watch/recording/:id', {
    config,
    schema: {
      summary: 'Play a recording: HLS master playlist, or a redirect to DASH for DASH-only devices', tags: ['dvr'],
      description: 'The live Device-OS rule: no Device-OS or another value → 200 HLS master playlist; a clients.dashOnly value → 302 to /watch/recording/{id}/master.mpd with a signed key. ' +
        'While recording the media playlists are EVENT playlists that grow; once finished, VOD playlists covering every part (joined with discontinuities). ' +
        '409 when it has not started or nothing was recorded; 503 while a just-started recording has no media yet.',
      params: Params,
      response: { 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody, 503: ErrorBody },
    },
  }, async (request, reply) => {
    const { id } = request.params as { id: number };
    if (isDashOnly(request.headers['device-os'], host.dashOnly)) {
      const user = auth.requireUser(request);
      await recording(request, id);
      return reply.redirect(`/watch/recording/${id}/master.mpd?key=${keyFor(user, id)}`, 302);
    }
    return master(request, reply, 'hls');
  });

  http.get('/watch/recording/:id/master.mpd', {
    config,
    schema: {
      summary: 'A recording as DASH: dynamic MPD while recording, static (one Period per part) once finished', tags: ['dvr'],
      params: Params,
      response: { 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody, 503: ErrorBody },
    },
  }, (request, reply) => master(request, reply, 'dash'));

  http.get('/watch/recording/:id/hls/:playlist', {
    config,
    schema: {
      summary: 'A media playlist of a recording (URLs come from the master playlist, with their signed key)', tags: ['dvr'],
      params: Type.Object({ id: Id, playlist: Type.Union([Type.Literal('video.m3u8'), Type.Literal('audio.m3u8')]) }),
      response: { 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody, 503: ErrorBody },
    },
  }, async (request, reply) => {
    const user = auth.requireUser(request);
    const { id, playlist } = request.params as { id: number; playlist: string };
    const m = await media(request, id, false);
    const key = keyFor(user, id);
    const listed = presentation(m, (file) => `/watch/recording/${id}/${file}?key=${key}`);
    const rep = playlist.replace('.m3u8', '');
    if (!listed.periods.some((p) => p.representations.some((r) => r.id === rep))) throw errors.notFound(`Recording ${id} has no ${rep}`);
    return send(reply, hls.contentType, hls.media(listed, rep), m.complete);
  });

  http.get('/watch/recording/:id/s/:part/:file', {
    config,
    schema: {
      summary: 'An init or media segment of a recording', tags: ['dvr'],
      params: Type.Object({ id: Id, part: Type.Integer({ minimum: 0, maximum: 100_000 }), file: Type.String({ pattern: '^(init-[A-Za-z0-9_]{1,16}|[A-Za-z0-9_]{1,16}-\\d{5,9})\\.mp4$' }) }),
      response: { 400: ErrorBody, 401: ErrorBody, 404: ErrorBody },
    },
  }, async (request, reply) => {
    const { id, part, file } = request.params as { id: number; part: number; file: string };
    const rec = await recording(request, id);
    dvr.touched(id);
    const dir = partDir(rec.dir, part);
    const data = await readFile(path.join(dir, file)).catch(() => undefined);
    if (!data) throw errors.notFound('No such segment');
    const repId = file.startsWith('init-') ? file.slice(5, -4) : file.slice(0, file.lastIndexOf('-'));
    const parts = recorder.active(id)?.parts ?? (await finished.get(id)) ?? [];
    const audio = parts.find((p) => p.index === part)?.reps.find((r) => r.id === repId)?.contentType === 'audio';
    return reply.header('cache-control', 'private, max-age=86400').type(audio ? 'audio/mp4' : 'video/mp4').send(data);
  });

  dvr.onRemoved((id) => finished.delete(id));
}
