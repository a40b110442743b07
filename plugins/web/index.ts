/**
 * web: the web client, served by the same server as the API (spec §1). The app
 * (plugins/web/app) is built by `npm run build` into dist/plugins/web/public and
 * only ever talks to the public client API, like any other client. Its files are
 * public; every API call it makes carries the signed-in user's token.
 *
 * Routes: GET / (index.html), GET /web/<file> (scripts, styles, icons),
 * GET /favicon.svg. The app routes in the URL fragment (/#/guide), so no app
 * path can shadow an API path.
 */
import path from 'node:path';
import { coreServices, definePlugin, errors, Type, type HttpScope } from 'antenna/sdk';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { loadStaticFiles, pickEncoding, type StaticFile } from './static-files.js';

/** No settings yet; an unknown key is refused at start like anywhere else. */
const configSchema = Type.Object({}, { additionalProperties: false });

/** Where build.ts writes the app, beside this file once compiled. */
const PUBLIC_DIR = path.join(__dirname, 'public');

/**
 * The page may load nothing from elsewhere: scripts, styles, players and API calls are
 * all this origin. Channel logos are the exception: playlists point at logo URLs anywhere.
 * hls.js runs its demuxer in a blob: worker, feeds <video> through blob: media sources and
 * gives its metadata and caption text tracks a `data:,WEBVTT` source.
 */
const CSP = [
  "default-src 'self'", "script-src 'self'", "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob: http: https:", "media-src 'self' blob: data:", "worker-src 'self' blob:",
  "connect-src 'self'", "object-src 'none'", "base-uri 'none'", "frame-ancestors 'none'", "form-action 'self'",
].join('; ');

/** If-None-Match: `*`, or a list of tags, weak or strong (a weak comparison, RFC 9110 §13.1.2). */
function matchesEtag(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((tag) => { const t = tag.trim(); return t === '*' || t.replace(/^W\//, '') === etag; });
}

export function webRoutes(http: HttpScope, files: Map<string, StaticFile> | undefined): void {
  const send = (name: string) => async (request: FastifyRequest, reply: FastifyReply) => {
    if (!files) throw errors.unavailable('The web app is not built: run `npm run build`');
    const file = files.get(name);
    if (!file) throw errors.notFound(`No such file: ${name}`);
    const { body, encoding } = pickEncoding(file, request.headers['accept-encoding']);
    // Each encoding is its own representation, so its own tag.
    const etag = encoding ? `${file.etag.slice(0, -1)}-${encoding}"` : file.etag;
    reply.header('etag', etag).header('vary', 'accept-encoding').header('x-content-type-options', 'nosniff')
      .header('cache-control', file.immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
    if (name === 'index.html') reply.header('content-security-policy', CSP).header('referrer-policy', 'no-referrer');
    if (matchesEtag(request.headers['if-none-match'], etag)) return reply.code(304).send();
    if (encoding) reply.header('content-encoding', encoding);
    return reply.type(file.type).header('content-length', body.length).send(body);
  };
  const tags = ['web'];
  const documented = (summary: string) => ({ summary, tags, description: 'Public. Compressed with brotli or gzip as the client accepts; ETag / If-None-Match.' });
  http.get('/', { config: { auth: 'public' }, schema: documented('The web app (index.html; its routes are in the URL fragment, /#/guide)') }, send('index.html'));
  http.get('/favicon.svg', { config: { auth: 'public' }, schema: documented('The icon') }, send('favicon.svg'));
  http.get('/web/:file', {
    config: { auth: 'public' },
    schema: {
      ...documented('A file of the web app (scripts and styles named by content hash, cached for a year)'),
      params: { type: 'object', properties: { file: { type: 'string', maxLength: 200 } }, required: ['file'] },
    },
  }, (request, reply) => send((request.params as { file: string }).file)(request, reply));
}

export default definePlugin({
  id: 'web',
  version: '1.0.0',
  host: '^1.1',
  description: 'The web client: sign in, live TV and guide, recordings, libraries and playback',
  configSchema,
  // The app uses every feature's routes; listing web brings them all (PRODUCT.md §1).
  dependsOn: ['live-tv', 'vod', 'dvr', 'subtitles', 'continue-watching', 'search'],
  register(env) {
    env.registerInit({
      deps: { http: coreServices.http, logger: coreServices.logger },
      async init({ http, logger }) {
        const files = loadStaticFiles(PUBLIC_DIR);
        if (!files) logger.error({ dir: PUBLIC_DIR }, 'the web app is not built: run `npm run build`');
        else logger.debug({ files: files.size }, 'web app loaded');
        webRoutes(http, files);
      },
    });
  },
});
