/**
 * Access keys through the admin API (the CLI's `antenna access-key …` does the
 * same): list, create, revoke. Admin only, as every /api/admin route.
 */
import type { FastifyInstance } from 'fastify';
import type { AccessKeys } from '../auth/access-keys.js';
import type { AuthServiceImpl } from '../auth/auth-service.js';

const ErrorBody = { type: 'object', properties: { error: { type: 'string' } }, required: ['error'] } as const;
const Errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody };
const tags = ['admin'];

export const AccessKeySchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    name: { type: 'string' },
    key: { type: ['string', 'null'], description: 'The path segment clients put in their URLs (/hdhr/<key>/, /iptv/<key>/); null once revoked' },
    created_at: { type: 'string', format: 'date-time' },
    revoked_at: { type: ['string', 'null'], format: 'date-time' },
  },
  required: ['id', 'name', 'key', 'created_at', 'revoked_at'],
} as const;
const KeyBody = { type: 'object', properties: { access_key: AccessKeySchema }, required: ['access_key'] } as const;

export async function accessKeyRoutes(app: FastifyInstance, deps: { keys: AccessKeys; auth: AuthServiceImpl }): Promise<void> {
  const { keys, auth } = deps;

  app.get('/api/admin/access-keys', {
    schema: {
      summary: 'Access keys, active and revoked (admin)', tags,
      description: 'Keys let clients that cannot sign in (HDHomeRun and M3U/XMLTV clients: Plex, Jellyfin, Kodi, TiviMate…) read `/hdhr/<key>/` and `/iptv/<key>/`. An active key can be shown again (it is derived from the server secret, not stored).',
      response: { 200: { type: 'object', properties: { access_keys: { type: 'array', items: AccessKeySchema } }, required: ['access_keys'] }, ...Errors },
    },
  }, async () => ({ access_keys: await keys.list() }));

  app.post('/api/admin/access-keys', {
    schema: {
      summary: 'Create an access key (admin)', tags,
      description: 'A name already used by an active key → 409.',
      body: { type: 'object', required: ['name'], additionalProperties: false, properties: { name: { type: 'string', minLength: 1, maxLength: 64 } } },
      response: { 201: KeyBody, ...Errors },
    },
  }, async (request, reply) => {
    const created = await keys.create((request.body as { name: string }).name);
    request.log.info({ event: 'access_key_created', id: created.id, name: created.name, by: auth.requireUser(request).id }, 'access key created');
    reply.code(201);
    return { access_key: created };
  });

  app.delete('/api/admin/access-keys/:id', {
    schema: {
      summary: 'Revoke an access key (admin)', tags,
      description: 'The key stops working at once and the streams opened with it are closed.',
      params: { type: 'object', properties: { id: { type: 'integer', minimum: 1, maximum: 2 ** 31 - 1 } }, required: ['id'] },
      response: { 200: KeyBody, ...Errors },
    },
  }, async (request) => {
    const revoked = await keys.revoke((request.params as { id: number }).id);
    request.log.info({ event: 'access_key_revoked', id: revoked.id, name: revoked.name, by: auth.requireUser(request).id }, 'access key revoked');
    return { access_key: revoked };
  });
}
