/**
 * The built web app, held in memory: a handful of files, each with the gzip and
 * brotli copies the build wrote next to it, so a request is a map lookup and a
 * write. Hashed files are cached for a year by browsers; index.html is
 * revalidated on every load (its ETag) so a new build is picked up at once.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

export interface StaticFile {
  type: string;
  etag: string;
  immutable: boolean;
  body: Buffer;
  gzip?: Buffer;
  brotli?: Buffer;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.map': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
};

/** Reads every file of the build folder; undefined when the app was never built. */
export function loadStaticFiles(dir: string): Map<string, StaticFile> | undefined {
  if (!existsSync(path.join(dir, 'index.html'))) return undefined;
  const files = new Map<string, StaticFile>();
  for (const name of readdirSync(dir)) {
    const type = TYPES[path.extname(name)];
    if (!type) continue; // the .gz / .br copies are read with their original
    const body = readFileSync(path.join(dir, name));
    const copy = (ext: string) => (existsSync(path.join(dir, name + ext)) ? readFileSync(path.join(dir, name + ext)) : undefined);
    files.set(name, {
      type,
      etag: `"${createHash('sha1').update(body).digest('base64url').slice(0, 20)}"`,
      // esbuild names carry a content hash (app-ABCD1234.js); index.html and favicon.svg do not.
      immutable: /-[A-Z0-9]{8}\.\w+$/.test(name),
      body, gzip: copy('.gz'), brotli: copy('.br'),
    });
  }
  return files;
}

/** The best encoding the client accepts among those we have: brotli, then gzip, else none. */
/** A coding listed in Accept-Encoding, unless refused with q=0. */
const acceptsCoding = (name: string) => new RegExp(`(^|[\\s,])${name}(?!;q=0(\\.0*)?(\\s|,|$))`, 'i');
const ACCEPTS_BR = acceptsCoding('br');
const ACCEPTS_GZIP = acceptsCoding('gzip');

export function pickEncoding(file: StaticFile, acceptEncoding: string | undefined): { body: Buffer; encoding?: 'br' | 'gzip' } {
  if (file.brotli && ACCEPTS_BR.test(acceptEncoding ?? '')) return { body: file.brotli, encoding: 'br' };
  if (file.gzip && ACCEPTS_GZIP.test(acceptEncoding ?? '')) return { body: file.gzip, encoding: 'gzip' };
  return { body: file.body };
}
