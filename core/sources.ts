import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { createGunzip } from 'node:zlib';
import { errors } from '../sdk/errors.js';
import type { SourceChunks, SourceOptions, SourceReader } from '../sdk/services.js';
import { makeRedactor, redact, secretsIn } from './redact.js';

export interface OpenedSource {
  stream: Readable;
  /** Bytes, when known (file size or Content-Length), for progress. */
  size?: number;
  /** The absolute URL (file:// for files), e.g. to resolve relative links. */
  url: string;
}

/**
 * Opens a playlist or guide given as a local path, a file:// URL or an
 * http(s) URL, as a byte stream. Failures (missing file, DNS, refused
 * connection, HTTP errors, a server that stops answering) throw a 502 AppError
 * with a message that names the source, never a hang.
 */
export async function openSource(location: string, options: Omit<SourceOptions, 'maxBytes'> = {}): Promise<OpenedSource> {
  const { signal, baseDir = process.cwd(), timeoutMs = 30_000 } = options;
  if (/^https?:\/\//i.test(location)) {
    // Not AbortSignal.timeout: fetch's signal also governs the body, so a timeout for the whole
    // request cut every download that took longer (a 300 MB guide at 50 Mbit/s takes 48 s).
    const { url, headers } = withoutCredentials(location);
    headers['user-agent'] = options.userAgent ?? 'Antenna';
    headers.accept = '*/*';
    const stalled = new AbortController();
    let timer = setTimeout(() => stalled.abort(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    let res: Response;
    try {
      res = await fetch(url, { signal: signal ? AbortSignal.any([signal, stalled.signal]) : stalled.signal, headers, redirect: 'follow' });
    } catch (err) {
      signal?.throwIfAborted();
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      // fetch's own messages may quote the URL: redacted too.
      throw errors.badGateway(`cannot fetch ${redact(location)}: ${redact(stalled.signal.aborted ? (stalled.signal.reason as Error).message : cause?.code ?? cause?.message ?? (err as Error).message)}`);
    } finally {
      clearTimeout(timer);
    }
    if (!res.ok || !res.body) {
      await res.body?.cancel().catch(() => {});
      throw errors.badGateway(`cannot fetch ${redact(location)}: HTTP ${res.status}`);
    }
    // The body, read through a stream whose pull runs only while its reader wants bytes: the clock
    // runs while waiting for the server, not while the parser (or the database behind it) is busy.
    const reader = res.body.getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        timer = setTimeout(() => stalled.abort(new Error(`no data for ${timeoutMs} ms`)), timeoutMs);
        try {
          const r = await reader.read();
          if (r.done) controller.close();
          else controller.enqueue(r.value);
        } catch (err) {
          // The server went quiet: say so, not "This operation was aborted".
          throw stalled.signal.aborted ? stalled.signal.reason : err;
        } finally {
          clearTimeout(timer);
        }
      },
      cancel: (reason) => reader.cancel(reason),
    }, { highWaterMark: 0 });
    const length = Number(res.headers.get('content-length'));
    return { stream: Readable.fromWeb(body as any), size: Number.isFinite(length) && length > 0 ? length : undefined, url: res.url || location };
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

/**
 * The source as a stream of byte chunks, for parsing while it is read (the
 * whole file never sits in memory), gunzipped when it is gzip, at most
 * maxBytes (decompressed; default 512 MiB). Opening fails as openSource does;
 * a failure while reading throws from the iteration: 413 past maxBytes, 502
 * for anything else (connection lost, corrupt gzip), naming the source.
 */
export async function streamSource(location: string, options: SourceOptions & { maxBytes?: number } = {}): Promise<SourceChunks> {
  const opened = await openSource(location, options);
  const read = { bytes: 0 };
  return {
    chunks: readChunks(opened, location, options.maxBytes ?? 512 * 1024 * 1024, read, options.signal),
    size: opened.size, url: opened.url, bytesRead: () => read.bytes,
  };
}

async function* readChunks(opened: OpenedSource, location: string, maxBytes: number, read: { bytes: number }, signal?: AbortSignal): AsyncGenerator<Buffer> {
  const raw = opened.stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const input = {
    next: async (): Promise<IteratorResult<Buffer>> => {
      const r = await raw.next();
      if (!r.done) read.bytes += r.value.length;
      return r;
    },
  };
  let gunzip: ReturnType<typeof createGunzip> | undefined;
  let total = 0;
  const counted = (chunk: Buffer): Buffer => {
    total += chunk.length;
    if (total > maxBytes) throw errors.payloadTooLarge(`${redact(location)} is larger than ${maxBytes} bytes`);
    return chunk;
  };
  try {
    // The first two bytes say whether it is gzip.
    let head: Buffer = Buffer.alloc(0);
    while (head.length < 2) {
      const r = await input.next();
      if (r.done) break;
      head = head.length ? Buffer.concat([head, r.value]) : r.value;
    }
    if (head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b) {
      gunzip = createGunzip();
      const compressed = async function* () {
        yield head;
        for (let r = await input.next(); !r.done; r = await input.next()) yield r.value;
      };
      const feeding = pipeline(compressed(), gunzip);
      feeding.catch(() => {}); // its error also ends the iteration of gunzip below
      for await (const chunk of gunzip) yield counted(chunk as Buffer);
      await feeding;
    } else {
      if (head.length) yield counted(head);
      for (let r = await input.next(); !r.done; r = await input.next()) yield counted(r.value);
    }
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode) throw err;
    signal?.throwIfAborted();
    const code = (err as NodeJS.ErrnoException).code;
    if (gunzip && code?.startsWith('Z_')) throw errors.badGateway(`${redact(location)} is not valid gzip: ${(err as Error).message}`);
    throw errors.badGateway(`reading ${redact(location)} failed: ${redact((err as Error).message)}`);
  } finally {
    gunzip?.destroy();
    opened.stream.destroy();
  }
}

/**
 * `http://user:pass@host/…` as fetch takes it: the URL without its credentials, which fetch
 * refuses, and them as Basic authorization (what curl, VLC and Kodi send for such a URL).
 */
function withoutCredentials(location: string): { url: string; headers: Record<string, string> } {
  let url: URL;
  try {
    url = new URL(location);
  } catch {
    throw errors.badGateway(`cannot fetch ${redact(location)}: not a valid URL`);
  }
  if (!url.username && !url.password) return { url: location, headers: {} };
  const decode = (part: string) => { try { return decodeURIComponent(part); } catch { return part; } };
  const user = `${decode(url.username)}:${decode(url.password)}`;
  url.username = url.password = '';
  return { url: url.href, headers: { authorization: `Basic ${Buffer.from(user).toString('base64')}` } };
}

/** The `sources` core service: relative paths resolve against the config file's directory. */
export class SourceReaderImpl implements SourceReader {
  constructor(private readonly configDir: string) {}

  open(location: string, options: SourceOptions = {}): Promise<SourceChunks> {
    return streamSource(location, { baseDir: this.configDir, ...options });
  }

  redact(text: string, secrets: readonly string[] = []): string {
    return secrets.length ? makeRedactor(secrets)(text) : redact(text);
  }

  secretsOf(text: string): string[] {
    return secretsIn(text);
  }
}
