/**
 * Route options every plugin uses, typed for Fastify:
 *   app.get('/x', { config: { auth: 'public' } }, handler)
 *   app.get('/seg/:n', { config: { auth: 'media', mediaScope: (req) => `live:${id}` } }, handler)
 */
import type { FastifyRequest } from 'fastify';
import type { AuthUser } from './services.js';

export type RouteAuth = 'public' | 'user' | 'media';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Default 'user': a bearer token. 'media' also takes ?api_key=<token> and, with mediaScope, a signed ?key=. */
    auth?: RouteAuth;
    /** The scope a signed media key must carry for this request, e.g. `live:12`. */
    mediaScope?: (request: FastifyRequest) => string;
  }
}

declare module '@fastify/jwt' {
  interface FastifyJWT {
    payload: { sid: string; sub: number };
    user: AuthUser;
  }
}
