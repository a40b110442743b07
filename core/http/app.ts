import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { RouteAuth } from '../../sdk/http.js';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import fastifyJwt from '@fastify/jwt';
import fastifyMultipart from '@fastify/multipart';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { Logger } from 'pino';
import type { AntennaConfig } from '../config/schema.js';
import type { AuthServiceImpl } from '../auth/auth-service.js';
import { errorHandler } from './errors.js';
import { redact } from '../redact.js';

const DOCS = '/api/docs';
/** Every route under this prefix answers 403 to a signed-in user who is not an administrator. */
export const ADMIN = '/api/admin';
const isAdminUrl = (url: string) => url === ADMIN || url.startsWith(`${ADMIN}/`);

/**
 * CORS on media routes (manifests, segments, files): any origin may read them, since their
 * credentials are in the URL (api_key, a signed key) or an Authorization header a page must hold,
 * never in cookies. A preflight (OPTIONS) on a media path is answered for the headers players send.
 */
const MEDIA_CORS = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers': 'Content-Length, Content-Range, Accept-Ranges, ETag, Last-Modified, Retry-After',
};
const MEDIA_PREFLIGHT = {
  ...MEDIA_CORS,
  'access-control-allow-methods': 'GET, HEAD, OPTIONS',
  'access-control-allow-headers': 'Authorization, Range, If-Range, If-None-Match, If-Modified-Since, Device-Id, Device-OS, Device-Codecs, Device-Audio-Codecs, Device-Audio-Channels, Device-Containers, Device-Max-Height, Device-HDR',
  'access-control-max-age': '86400',
};

/** A route pattern as a regular expression over concrete paths (`:param` is one segment, `*` the rest). */
function patternOf(url: string): RegExp {
  const parts = url.split(/(:[A-Za-z0-9_]+|\*)/).map((p) => (p.startsWith(':') ? '[^/]+' : p === '*' ? '.*' : p.replace(/[.+?^${}()|[\]\\]/g, '\\$&')));
  return new RegExp(`^${parts.join('')}/?$`);
}

export interface RouteEntry { method: string; url: string; auth: RouteAuth }
const routeTables = new WeakMap<FastifyInstance, RouteEntry[]>();

/** Every route registered on the app, core and plugins alike, in registration order (Fastify has no public list). */
export function routeTable(app: FastifyInstance): readonly RouteEntry[] {
  return routeTables.get(app) ?? [];
}

/** A route's auth: its config says, default 'user'. The docs page and its assets are public like the web app's; the document itself is not. */
function effectiveAuth(url: string, configured: RouteAuth | undefined): RouteAuth {
  if (url.startsWith(DOCS) && !url.startsWith(`${DOCS}/json`) && !url.startsWith(`${DOCS}/yaml`)) return 'public';
  if (isAdminUrl(url)) return configured === 'media' ? 'media' : 'user';
  return configured ?? 'user';
}

/**
 * Bodies are validated strictly (a number is not a string), while query strings,
 * params and headers are coerced, since they arrive as text.
 */
function validators() {
  const strict = new Ajv({ coerceTypes: false, useDefaults: true, removeAdditional: false, allErrors: false, strict: false });
  const coercing = new Ajv({ coerceTypes: 'array', useDefaults: true, removeAdditional: false, allErrors: false, strict: false });
  addFormats(strict);
  addFormats(coercing);
  return ({ schema, httpPart }: { schema: any; httpPart?: string }) => (httpPart === 'body' ? strict : coercing).compile(schema);
}

/**
 * Requests Node's HTTP parser refuses before Fastify sees them (a malformed request line or
 * header, headers over 16 KB) get the one error body too, then the connection closes.
 */
function clientErrorHandler(this: FastifyInstance, err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, message] = err.code === 'HPE_HEADER_OVERFLOW' ? [431, 'Request headers too large']
    : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? [408, 'Request timed out']
    : [400, 'Malformed HTTP request'];
  this.log.debug({ code: err.code, status }, 'client error');
  const body = JSON.stringify({ error: message });
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy();
}

export async function createHttp(options: {
  config: AntennaConfig; logger: Logger; auth: AuthServiceImpl; secret: string; version: string;
}): Promise<FastifyInstance> {
  const { config, logger, auth } = options;
  const app = Fastify({
    loggerInstance: logger.child({ component: 'http' }),
    // Our onResponse hook writes one line per request instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    // request.log is the server's logger itself: a child logger per request costs ~5 % of a
    // small request, and our per-request line already names the method and URL.
    childLoggerFactory: (logger: Logger) => logger,
    trustProxy: config.server.trustProxy,
    bodyLimit: 1024 * 1024,
    routerOptions: { ignoreTrailingSlash: true },
    // Errors Fastify raises before routing (an over-long path parameter, a malformed %-escape)
    // get our one error body too; the message never echoes the URL (it may be long or hostile).
    frameworkErrors: (err: { code?: string; statusCode?: number }, _request: FastifyRequest, reply: FastifyReply) => {
      const tooLong = err.code === 'FST_ERR_MAX_PARAM_LENGTH';
      reply.code(tooLong ? 414 : err.statusCode ?? 400).send({ error: tooLong ? 'A path parameter is too long' : 'Malformed URL' });
    },
    clientErrorHandler,
  } as any) as unknown as FastifyInstance;

  // Registered before any route, so it also sees the routes of every plugin scope.
  const routes: RouteEntry[] = [];
  routeTables.set(app, routes);
  const mediaPaths: RegExp[] = [];
  // Each route gets its own auth check, resolved once here rather than on every request.
  app.addHook('onRoute', (route) => {
    const mode = effectiveAuth(route.url, (route.config as { auth?: RouteAuth } | undefined)?.auth);
    for (const method of [route.method].flat()) routes.push({ method, url: route.url, auth: mode });
    if (mode === 'public') return;
    const check = async (request: FastifyRequest) => auth.authenticate(request, mode);
    const hooks: unknown[] = [check];
    // Administration is admin only whoever registers the route, and a non-admin learns nothing
    // more (403 before the body is even validated).
    if (isAdminUrl(route.url)) hooks.push(async (request: FastifyRequest) => { auth.requireAdmin(request); });
    // Players on other origins fetch manifests and segments; their credentials are in the URL
    // (api_key or a signed key), never in cookies, so any origin may read them.
    if (mode === 'media') {
      hooks.unshift(async (_request: FastifyRequest, reply: FastifyReply) => { reply.headers(MEDIA_CORS); });
      mediaPaths.push(patternOf(route.url));
    }
    route.onRequest = [...hooks, ...[route.onRequest ?? []].flat()] as typeof route.onRequest;
  });

  app.setValidatorCompiler(validators());
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler((request, reply) => {
    // CORS preflights have no route of their own: answered here for media paths, so the route table stays as registered.
    if (request.method === 'OPTIONS' && mediaPaths.some((p) => p.test(request.url.split('?')[0]!))) {
      reply.code(204).headers(MEDIA_PREFLIGHT).send();
      return;
    }
    reply.code(404).send({ error: `Not found: ${request.method} ${redact(request.url).split('?')[0]}` });
  });

  // One log line per request, written when it ends; never the token. Successful requests log
  // at debug (players fetch a segment every few seconds), failures and slow ones at info.
  app.addHook('onResponse', async (request, reply) => {
    const level = reply.statusCode >= 400 || reply.elapsedTime > 1000 ? 'info' : 'debug';
    if (!(request.log as unknown as Logger).isLevelEnabled(level)) return;
    request.log[level]({
      method: request.method, url: redact(request.url), status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 10) / 10, user: (request.user as any)?.id,
    }, 'request');
  });

  await app.register(fastifyJwt, {
    secret: options.secret,
    sign: { algorithm: 'HS256' },
    verify: { algorithms: ['HS256'] },
    decoratorName: 'user',
  });
  auth.attachJwt(app.jwt);


  await app.register(fastifyMultipart, {
    limits: { fileSize: config.server.avatarMaxBytes, files: 1, fields: 10, parts: 12 },
    throwFileSizeLimit: true,
  });

  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Antenna API',
        version: options.version,
        description: 'The client API of Antenna (see spec/client-api.md). Every route needs `Authorization: Bearer <token>` unless marked public; media routes also take `?api_key=<token>`. Errors are always `{"error": "<message>"}`.',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } } },
      security: [{ bearer: [] }],
    },
    transform: ({ schema, url, route }) => {
      const auth = (route.config as { auth?: string } | undefined)?.auth;
      const out: any = { ...(schema as object) };
      if (auth === 'public' || auth === 'access-key') out.security = [];
      return { schema: out, url };
    },
  });
  await app.register(fastifySwaggerUi, {
    routePrefix: DOCS,
    uiConfig: {
      // Runs in the browser: the page is public, the document is not. The token comes from
      // /api/docs#token=<TOKEN> (a fragment never reaches the server or its logs) or from the web app's storage.
      requestInterceptor: (req: { headers: Record<string, string> }) => {
        const w = globalThis as any;
        const m = /(?:^#|&)token=([^&]+)/.exec(w.location.hash);
        const token = m ? decodeURIComponent(m[1]) : w.localStorage?.getItem('antenna.token');
        if (token && !req.headers.Authorization) req.headers.Authorization = 'Bearer ' + token;
        return req;
      },
    } as any,
  });

  app.get('/api/version', {
    config: { auth: 'public' },
    schema: {
      summary: 'Server version', tags: ['account'],
      response: { 200: { type: 'object', properties: { version: { type: 'string' } }, required: ['version'] } },
    },
  }, async () => ({ version: options.version }));

  return app;
}
