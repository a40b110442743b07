import type { FastifyInstance } from 'fastify';
import type { AuthService, JobManager } from '../../sdk/services.js';

const ErrorBody = { type: 'object', properties: { error: { type: 'string' } }, required: ['error'] } as const;

/** A job as listings show it (JobSummary). */
export const JobSummarySchema = {
  type: 'object',
  properties: {
    key: { type: 'string' }, kind: { type: 'string' }, state: { type: 'string', enum: ['running', 'completed', 'failed', 'stopped'] },
    progress: { type: 'number' }, message: { type: 'string' }, error: { type: 'string' }, startedAt: { type: 'string' },
  },
  required: ['key', 'kind', 'state', 'progress', 'startedAt'],
} as const;

/** GET /api/jobs: running and recent jobs with state and progress (imports, transcodes, recordings). Admin only. */
export async function jobRoutes(app: FastifyInstance, deps: { jobs: JobManager; auth: AuthService }): Promise<void> {
  app.get('/api/jobs', {
    schema: {
      summary: 'Running and recently ended jobs (admin)', tags: ['jobs'],
      response: {
        200: {
          type: 'object',
          properties: {
            jobs: { type: 'array', items: JobSummarySchema },
          },
          required: ['jobs'],
        },
        401: ErrorBody, 403: ErrorBody,
      },
    },
  }, async (request) => {
    deps.auth.requireAdmin(request);
    return { jobs: deps.jobs.list() };
  });
}
