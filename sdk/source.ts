import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { errors } from './errors.js';

export interface OpenedSource {
  stream: Readable;
  /** Bytes, when known (file size or Content-Length), for progress. */
  size?: number;
  /** The absolute URL (file:// for files), e.g. to resolve relative links. */
  url: string;
}

export interface SourceOptions {
  signal?: AbortSignal;
  /** Relative paths are resolved against this directory (the config file's). */
  baseDir?: string;
  /** Give up when the server has not answered within this time (default 30 s). */
  timeoutMs?: number;
  userAgent?: string;
}

/**
 * Opens a playlist or guide given as a local path, a file:// URL or an
 * http(s) URL, as a byte stream. Failures (missing file, DNS, refused
 * connection, HTTP errors, timeouts) throw a 502 AppError with a message that
 * names the source, never a hang.
 */
export async function openSource(location: string, options: SourceOptions = {}): Promise<OpenedSource> {
  const { signal, baseDir = process.cwd(), timeoutMs = 30_000 } = options;
  if (/^https?:\/\//i.test(location)) {
    const timeout = AbortSignal.timeout(timeoutMs);
    let res: Response;
    try {
      res = await fetch(location, {
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
        headers: { 'user-agent': options.userAgent ?? 'Antenna', accept: '*/*' },
        redirect: 'follow',
      });
    } catch (err) {
      signal?.throwIfAborted();
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      throw errors.badGateway(`cannot fetch ${redact(location)}: ${timeout.aborted ? `no answer within ${timeoutMs} ms` : cause?.code ?? cause?.message ?? (err as Error).message}`);
    }
    if (!res.ok || !res.body) {
      await res.body?.cancel().catch(() => {});
      throw errors.badGateway(`cannot fetch ${redact(location)}: HTTP ${res.status}`);
    }
    const length = Number(res.headers.get('content-length'));
    return { stream: Readable.fromWeb(res.body as any), size: Number.isFinite(length) && length > 0 ? length : undefined, url: res.url || location };
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(location) && !location.startsWith('file://')) {
    throw errors.badRequest(`unsupported source ${redact(location)}: expected a path, a file:// URL or an http(s) URL`);
  }
  const file = location.startsWith('file://') ? fileURLToPath(location) : path.resolve(baseDir, location);
  let size: number;
  try {
    const info = await stat(file);
    if (!info.isFile()) throw new Error('not a file');
    size = info.size;
  } catch (err) {
    throw errors.badGateway(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return { stream: createReadStream(file, { highWaterMark: 256 * 1024, signal }), size, url: `file://${file}` };
}

/** The whole source in memory, gunzipped when it is gzip (by content, not by name), at most maxBytes. */
export async function readSource(location: string, options: SourceOptions & { maxBytes?: number } = {}): Promise<{ data: Buffer; url: string }> {
  const maxBytes = options.maxBytes ?? 512 * 1024 * 1024;
  const opened = await openSource(location, options);
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    for await (const chunk of opened.stream) {
      total += chunk.length;
      if (total > maxBytes) throw errors.payloadTooLarge(`${redact(location)} is larger than ${maxBytes} bytes`);
      chunks.push(chunk as Buffer);
    }
  } catch (err) {
    opened.stream.destroy();
    if ((err as { statusCode?: number }).statusCode) throw err;
    options.signal?.throwIfAborted();
    throw errors.badGateway(`reading ${redact(location)} failed: ${(err as Error).message}`);
  }
  let data = Buffer.concat(chunks);
  if (data.length >= 2 && data[0] === 0x1f && data[1] === 0x8b) {
    try {
      data = gunzipSync(data, { maxOutputLength: maxBytes });
    } catch (err) {
      throw errors.badGateway(`${redact(location)} is not valid gzip: ${(err as Error).message}`);
    }
  }
  return { data, url: opened.url };
}

/** Credentials in source URLs never reach a log or an error message. */
export function redact(url: string): string {
  return url.replace(/\/\/[^/@\s]*@/, '//***@').replace(/([?&](?:api_key|apikey|key|token|password|pass|username|user|auth)=)[^&#]*/gi, '$1***');
}
