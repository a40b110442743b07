/**
 * GET /api/items/{id}/images/{poster|backdrop}?width=: an item's pictures,
 * scaled to the width asked (artwork.ts), with ETags. The URL an item answer
 * hands out carries the picture's tag and a key for that item's pictures, so
 * an <img> needs no header and the URL changes when the picture does.
 */
import { readFile } from 'node:fs/promises';
import type { FastifyRequest } from 'fastify';
import { errors, Type, type AuthService, type HttpScope, type Static } from 'antenna/sdk';
import { visibleItem } from './access.js';
import { MAX_WIDTH, type Artwork, type ArtworkKind } from './artwork.js';
import type { VodStore } from './store.js';

const ErrorBody = Type.Object({ error: Type.String() });
const Params = Type.Object({
  // No pattern: a malformed id answers 404 like an unknown one.
  id: Type.String({ maxLength: 256 }),
  kind: Type.Union([Type.Literal('poster'), Type.Literal('backdrop')]),
});
const Query = Type.Object({
  width: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_WIDTH, description: 'Pixels; rounded up to a multiple of 20, never more than the picture has. Without it, the picture as it is' })),
  tag: Type.Optional(Type.String({ maxLength: 64, description: 'The picture\'s version, as the URL from an item answer carries it' })),
  key: Type.Optional(Type.String({ description: 'The key the URL from an item answer carries' })),
  api_key: Type.Optional(Type.String()),
});

const matches = (header: string | undefined, etag: string) => !!header && header.split(',').some((t) => t.trim() === '*' || t.trim().replace(/^W\//, '') === etag);

export function artworkRoutes(http: HttpScope, deps: { auth: AuthService; store: VodStore; artwork: Artwork }): void {
  const { auth, store, artwork } = deps;
  http.get('/api/items/:id/images/:kind', {
    config: { auth: 'media', mediaScope: (request: FastifyRequest) => `vod-image:${(request.params as { id: string }).id}` },
    schema: {
      summary: 'An item\'s poster or backdrop, at the width asked', tags: ['vod'],
      description: 'JPEG when scaled (or taken from a video), else the picture file as it is (JPEG, PNG or WebP). ETag / If-None-Match (304). A URL carrying the current `tag` may be cached for good; other answers are revalidated. 404 for an unknown or unauthorised item, or one without this picture; 502 when the picture cannot be read or made.',
      params: Params,
      querystring: Query,
      response: {
        200: { description: 'The picture (image/jpeg, image/png or image/webp)', type: 'string', format: 'binary' },
        304: { description: 'Not modified', type: 'null' },
        400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 502: ErrorBody,
      },
    },
  }, async (request, reply) => {
    const user = auth.requireUser(request);
    const { id, kind } = request.params as Static<typeof Params>;
    const { width, tag } = request.query as Static<typeof Query>;
    const item = await visibleItem(store, auth, user, id);
    const ref = (await store.metadata(item.id))?.[kind as ArtworkKind];
    const library = store.library(item.libraryId);
    if (!ref || !library) throw errors.notFound(`Item ${id} has no ${kind}`);
    // The picture is not worth making for a client that went away.
    const gone = new AbortController();
    reply.raw.once('close', () => { if (!reply.raw.writableFinished) gone.abort(); });
    const picture = await artwork.image(ref, library.paths, width, gone.signal);
    reply.header('etag', picture.etag).header('x-content-type-options', 'nosniff')
      .header('cache-control', tag === ref.tag ? 'private, max-age=31536000, immutable' : 'private, no-cache');
    if (matches(request.headers['if-none-match'], picture.etag)) return reply.code(304).send();
    return reply.type(picture.type).send(await readFile(picture.file));
  });
}
