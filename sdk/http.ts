/**
 * Route options every plugin uses, typed for Fastify:
 *   app.get('/x', { config: { auth: 'public' } }, handler)
 *   app.get('/seg/:n', { config: { auth: 'media', mediaScope: (req) => `live:${id}` } }, handler)
 *   app.get('/tuner/:key/list', { config: { auth: 'access-key' } }, handler)
 */
import type { FastifyRequest } from 'fastify';
import type { AuthUser } from './services.js';

export type RouteAuth = 'public' | 'user' | 'media' | 'access-key';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Default 'user': a bearer token. 'media' also takes ?api_key=<token> and, with mediaScope, a signed ?key=.
     * 'access-key' (since SDK 1.2): the route's `:key` parameter must be an active access key; a route
     * without one answers the clients of `accessKeys.open` networks only. Tokens do not open it.
     */
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
