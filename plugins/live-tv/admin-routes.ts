/**
 * Live TV sources for administrators: every tuner (playlist) and guide source
 * with its channel count, schedule, last import and the import running now,
 * and "refresh now". Adding and changing sources is the business of the
 * plugins that own them (m3u-tuner's and xmltv-guide's routes).
 */
import { errors, type HttpScope, type JobManager, type Scheduler } from 'antenna/sdk';
import type { LiveTvRegistry } from './registry.js';
import type { LiveTvService } from './service.js';

const ErrorBody = { type: 'object', properties: { error: { type: 'string' } }, required: ['error'] } as const;
const Errors = { 401: ErrorBody, 403: ErrorBody, 404: ErrorBody };
const tags = ['admin', 'live-tv'];

const Job = {
  type: ['object', 'null'],
  description: 'The import running now',
  properties: { state: { type: 'string' }, progress: { type: 'number' }, message: { type: 'string' }, error: { type: 'string' } },
  required: ['state', 'progress'],
} as const;
const LastImport = {
  type: ['object', 'null'],
  description: 'The last import since the server started (guides: since the source was first imported); null before one',
  properties: {
    at: { type: 'string' }, ok: { type: 'boolean' }, error: { type: 'string' },
    channels: { type: 'integer' }, added: { type: 'integer' }, removed: { type: 'integer' }, duplicates: { type: 'integer' },
    programmes: { type: 'integer' }, skipped: { type: 'integer' }, warnings: { type: 'integer' },
  },
  required: ['at', 'ok'],
} as const;
const Source = {
  type: 'object',
  properties: {
    id: { type: 'string' }, name: { type: 'string' }, kind: { type: 'string', enum: ['tuner', 'guide'] },
    max_streams: { type: 'integer' }, channels: { type: 'integer', description: 'Tuners: the channels it has now' },
    refresh_ms: { type: ['integer', 'null'] }, next_refresh: { type: ['string', 'null'] }, last_import: LastImport, job: Job,
  },
  required: ['id', 'name', 'kind', 'refresh_ms', 'next_refresh', 'last_import', 'job'],
} as const;

export function adminSourceRoutes(http: HttpScope, deps: { service: LiveTvService; registry: LiveTvRegistry; jobs: JobManager; scheduler: Scheduler; refreshKind: string }): void {
  const { service, registry, jobs } = deps;
  const jobOf = (key: string) => {
    const job = jobs.get(key);
    return job ? { state: job.state, progress: job.progress, ...(job.message ? { message: job.message } : {}), ...(job.error ? { error: job.error } : {}) } : null;
  };
  const lastOf = (key: string, stored?: { last_import: string | null; stats: unknown }) => {
    const last = service.lastImports.get(key);
    if (last) return { at: last.at, ok: last.ok, ...(last.error ? { error: last.error } : {}), ...last.counts };
    return stored?.last_import ? { at: stored.last_import, ok: true, ...(stored.stats as object) } : null;
  };

  http.get('/api/admin/sources', {
    schema: {
      summary: 'Live TV sources with their last import and the import running now (admin)', tags,
      response: { 200: { type: 'object', properties: { tuners: { type: 'array', items: Source }, guides: { type: 'array', items: Source } }, required: ['tuners', 'guides'] }, ...Errors },
    },
  }, async () => {
    const [{ channels }, stored, tasks] = await Promise.all([service.channels.current(), service.guide.sources(), deps.scheduler.list(deps.refreshKind)]);
    const next = new Map(tasks.map((t) => [t.id, new Date(t.at).toISOString()]));
    const perTuner = new Map<string, number>();
    for (const c of channels) perTuner.set(c.tunerId, (perTuner.get(c.tunerId) ?? 0) + 1);
    return {
      tuners: [...registry.tuners.values()].map((t) => ({
        id: t.id, name: t.name, kind: 'tuner', max_streams: t.maxStreams, channels: perTuner.get(t.id) ?? 0,
        refresh_ms: t.refreshMs ?? null, next_refresh: next.get(`livetv:tuner:${t.id}`) ?? null,
        last_import: lastOf(`tuner:${t.id}`), job: jobOf(`livetv:tuner:${t.id}`),
      })),
      guides: [...registry.guides.values()].map((g) => ({
        id: g.id, name: g.name, kind: 'guide', refresh_ms: g.refreshMs ?? null, next_refresh: next.get(`livetv:guide:${g.id}`) ?? null,
        last_import: lastOf(`guide:${g.id}`, stored.get(g.id)), job: jobOf(`livetv:guide:${g.id}`),
      })),
    };
  });

  http.post('/api/admin/sources/:id/refresh', {
    schema: {
      summary: 'Import a tuner or guide source now (admin)', tags,
      description: 'Starts the import (or joins the one running) and answers at once; GET /api/admin/sources shows its progress and then its result.',
      params: { type: 'object', properties: { id: { type: 'string', minLength: 1, maxLength: 191 } }, required: ['id'] },
      response: { 202: { type: 'object', properties: { job: Job }, required: ['job'] }, ...Errors },
    },
  }, async (request, reply) => {
    const { id } = request.params as { id: string };
    const tuner = registry.tuners.get(id);
    const guide = registry.guides.get(id);
    if (!tuner && !guide) throw errors.notFound(`No live TV source ${id}`);
    // The outcome is kept in lastImports (and logged); nobody waits for it here.
    void (tuner ? service.refreshTuner(tuner) : service.refreshGuide(guide!)).catch(() => {});
    reply.code(202);
    return { job: jobOf(`livetv:${tuner ? 'tuner' : 'guide'}:${id}`) };
  });
}
