import { errors, Type, type AuthService, type AuthUser, type HttpScope } from 'antenna/sdk';
import type { Dvr } from './dvr.js';
import { RecordingSchema, recordingView } from './model.js';

const ErrorBody = Type.Object({ error: Type.String() });
const Id = Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1 });
const CreateBody = Type.Object({
  channel_id: Id,
  program_id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'A programme id from GET /programs' }),
}, { additionalProperties: false });

/**
 * GET/POST /recordings, GET/DELETE /recordings/{id}. Recordings are the household's: every
 * user granted the Recordings library sees them all; to others they do not exist (404, an
 * empty list), and they may not schedule any (403).
 */
export function recordingRoutes(http: HttpScope, deps: { auth: AuthService; dvr: Dvr; mayUse: (user: AuthUser) => boolean }): void {
  const { auth, dvr, mayUse } = deps;
  /** The caller, when granted the Recordings library; else 404 like an unknown recording. */
  const granted = (request: Parameters<AuthService['requireUser']>[0], id: number) => {
    const user = auth.requireUser(request);
    if (!mayUse(user)) throw errors.notFound(`No recording ${id}`);
    return user;
  };

  http.get('/recordings', {
    schema: {
      summary: 'Every recording: scheduled, running and finished, by start time', tags: ['dvr'],
      response: { 200: Type.Array(RecordingSchema), 401: ErrorBody },
    },
  }, async (request) => {
    if (!mayUse(auth.requireUser(request))) return [];
    return (await dvr.list()).map(recordingView);
  });

  http.get('/recordings/:id', {
    schema: {
      summary: 'One recording', tags: ['dvr'],
      params: Type.Object({ id: Id }),
      response: { 200: RecordingSchema, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody },
    },
  }, async (request) => {
    const { id } = request.params as { id: number };
    granted(request, id);
    const rec = await dvr.get(id);
    if (!rec) throw errors.notFound(`No recording ${id}`);
    return recordingView(rec);
  });

  http.post('/recordings', {
    schema: {
      summary: 'Record a programme of the guide', tags: ['dvr'],
      description: 'A programme on air now starts recording at once (status recording); a later one is scheduled. ' +
        'The recording runs from prePadding before the programme to postPadding after it, on the channel\'s tuner ' +
        '(sharing the upstream with anyone watching the channel). 400: the programme is over or the body is malformed; ' +
        '404: unknown channel or no such programme on it; 409: the programme is recorded already, or the tuner has no free stream during it (the message names the recordings in the way).',
      body: CreateBody,
      response: { 201: RecordingSchema, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody },
    },
  }, async (request, reply) => {
    const user = auth.requireUser(request);
    if (!mayUse(user)) throw errors.forbidden('Recordings are not among your libraries');
    const { channel_id, program_id } = request.body as { channel_id: number; program_id: number };
    const rec = await dvr.create(user, channel_id, program_id);
    return reply.code(201).send(recordingView(rec));
  });

  http.delete('/recordings/:id', {
    schema: {
      summary: 'Cancel a scheduled or running recording, or delete a finished one with its files', tags: ['dvr'],
      description: 'Scheduled → cancelled. Running → cancelled, keeping (and playing) what was recorded. Completed, failed or cancelled → deleted with its files. '
        + 'An airing of a series rule that is scheduled or in conflict → skipped, and a skipped one stays skipped (its row keeps the rule from it). '
        + 'Series rules are evaluated again afterwards (a slot may have freed). Allowed to administrators and to the user who scheduled it (else 403).',
      params: Type.Object({ id: Id }),
      response: { 200: Type.Object({ ok: Type.Boolean() }), 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody },
    },
  }, async (request) => {
    const { id } = request.params as { id: number };
    await dvr.remove(granted(request, id), id);
    return { ok: true };
  });
}
