import { pipeline, type Readable } from 'node:stream';
import { promisify } from 'node:util';
import { constants, createGzip, gzip, type ZlibOptions } from 'node:zlib';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** Whether the request's Accept-Encoding takes gzip: named, or `*`, and not refused with q=0. */
export function acceptsGzip(request: FastifyRequest): boolean {
  const header = request.headers['accept-encoding'] ?? '';
  let star = false;
  for (const part of (Array.isArray(header) ? header.join(',') : header).split(',')) {
    const [coding, ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const taken = !q || Number(q.slice(2)) > 0;
    if (coding === 'gzip') return taken;
    if (coding === '*') star = taken;
  }
  return star;
}

/** `body` gzipped in libuv's pool, not on the event loop. */
export const gzipped: (body: Buffer, options?: ZlibOptions) => Promise<Buffer> = promisify(gzip);

export interface SendOptions {
  /** Smaller bodies are sent as they are: compressing them saves less than it costs. Default 0. */
  minBytes?: number;
  /** Makes a Buffer's gzip (a caller may keep what it makes). */
  compress?: (body: Buffer) => Promise<Buffer>;
}

/**
 * Sends JSON, gzipped for a client that takes gzip. A stream is compressed as it is read, at the
 * fastest level (the work is in libuv's pool; the whole guide shrinks 4x); a failed stream fails
 * the whole response, so the client sees a cut response, never a short valid one.
 */
export async function sendJson(request: FastifyRequest, reply: FastifyReply, body: Buffer | Readable, options: SendOptions = {}): Promise<FastifyReply> {
  reply.header('content-type', 'application/json; charset=utf-8').header('vary', 'accept-encoding');
  const small = Buffer.isBuffer(body) && body.length < (options.minBytes ?? 0);
  if (small || !acceptsGzip(request)) return reply.send(body);
  reply.header('content-encoding', 'gzip');
  if (Buffer.isBuffer(body)) return reply.send(await (options.compress ?? gzipped)(body));
  return reply.send(pipeline(body, createGzip({ level: constants.Z_BEST_SPEED }), () => {}));
}
