import Fastify, { LogController, type FastifyInstance } from 'fastify';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import fastifyJwt from '@fastify/jwt';
import fastifyMultipart from '@fastify/multipart';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { Logger } from 'pino';
import type { AntennaConfig } from '../config/schema.js';
import type { AuthServiceImpl } from '../auth/auth-service.js';
import { errorHandler, redactUrl } from './errors.js';

const DOCS = '/api/docs';

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

export async function createHttp(options: {
  config: AntennaConfig; logger: Logger; auth: AuthServiceImpl; secret: string; version: string;
}): Promise<FastifyInstance> {
  const { config, logger, auth } = options;
  const app = Fastify({
    loggerInstance: logger.child({ component: 'http' }),
    // Our onResponse hook writes one line per request instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    trustProxy: config.server.trustProxy,
    bodyLimit: 1024 * 1024,
    routerOptions: { ignoreTrailingSlash: true },
  } as any) as unknown as FastifyInstance;

  app.setValidatorCompiler(validators());
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send({ error: `Not found: ${request.method} ${redactUrl(request.url).split('?')[0]}` });
  });

  // One log line per request, written when it ends; never the token.
  app.addHook('onResponse', async (request, reply) => {
    request.log.info({
      method: request.method, url: redactUrl(request.url), status: reply.statusCode,
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

  app.addHook('onRequest', async (request) => {
    const cfg = request.routeOptions.config;
    if (request.routeOptions.url === undefined) return; // 404 handler
    let mode = cfg.auth ?? 'user';
    const url = request.routeOptions.url;
    // The docs page and its static assets are public like the web app's; the document itself is not.
    if (url.startsWith(DOCS) && !url.startsWith(`${DOCS}/json`) && !url.startsWith(`${DOCS}/yaml`)) mode = 'public';
    await auth.authenticate(request, mode);
  });

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
      if (auth === 'public') out.security = [];
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
