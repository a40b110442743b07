/**
 * Streams whose URL carries the provider's credentials (`user:pass@`, a
 * password in the query or the path) reach ffmpeg through this route of
 * Antenna's own server, so that ffmpeg's command line, which every user of the
 * machine sees in `ps`, holds a loopback URL with a per-stream token instead.
 *
 * The route answers only connections from this machine with a token of a
 * stream that is open (401 otherwise); a token lives until its stream's signal
 * aborts or the stream is opened again. It fetches the upstream with the
 * entry's headers (and `user:pass@` as Basic authorization), passes Range
 * through, and streams the body. An HLS playlist is sent with its URIs made
 * absolute against the upstream URL, so that ffmpeg fetches the segments from
 * the upstream itself (their URLs are in its memory, not on its command line).
 */
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { errors, type HttpScope } from 'antenna/sdk';

export const RELAY_PATH = '/api/m3u-tuner/relay';
/** A playlist larger than this is no live HLS playlist. */
const MAX_PLAYLIST_BYTES = 4 * 1024 * 1024;
const PLAYLIST_TYPE = /mpegurl/i;
/** Upstream response headers ffmpeg uses. */
const PASSED_HEADERS = ['content-type', 'content-length', 'content-range', 'accept-ranges', 'last-modified'];

interface Relayed {
  url: string;
  headers: Record<string, string>;
  /** Aborts the upstream requests of this stream when it ends. */
  ended: AbortController;
  /** Why the upstream's last answer was no stream. */
  failure?: { kind: string; detail: string };
}

export class StreamRelay {
  private readonly streams = new Map<string, Relayed>();
  /** The token of each open stream, replaced when its session opens it again (a restart). */
  private readonly bySignal = new WeakMap<AbortSignal, string>();

  /** connectTimeoutMs: how long the upstream may take to answer (its body may take for ever). */
  constructor(private readonly localUrl: () => string | undefined, private readonly connectTimeoutMs = 30_000) {}

  /**
   * The loopback URL ffmpeg reads `url` from while `signal` is not aborted, its token (a secret
   * too), and why the upstream's last answer was no stream (ffmpeg sees only the relay's status).
   */
  open(url: string, headers: Record<string, string>, signal: AbortSignal): { url: string; token: string; failure: () => { kind: string; detail: string } | undefined } {
    const base = this.localUrl();
    if (!base) throw errors.unavailable('Streams with credentials play once the server listens', 5);
    this.close(this.bySignal.get(signal));
    const token = randomBytes(24).toString('base64url');
    const stream: Relayed = { url, headers, ended: new AbortController() };
    this.streams.set(token, stream);
    this.bySignal.set(signal, token);
    signal.addEventListener('abort', () => this.close(token), { once: true });
    // `token=` is a query key every log line redacts.
    return { url: `${base}${RELAY_PATH}?token=${token}`, token, failure: () => stream.failure };
  }

  /** How many streams are open (for tests). */
  get size(): number {
    return this.streams.size;
  }

  private close(token: string | undefined): void {
    const stream = token ? this.streams.get(token) : undefined;
    if (!stream) return;
    this.streams.delete(token!);
    stream.ended.abort();
  }

  routes(http: HttpScope): void {
    http.get(RELAY_PATH, {
      // ffmpeg has no user token: the route checks its own per-stream token.
      config: { auth: 'public' },
      schema: { hide: true, querystring: { type: 'object', properties: { token: { type: 'string', maxLength: 64 } } } },
    }, async (request, reply) => {
      const socket = request.raw.socket;
      const local = socket.remoteAddress !== undefined && (socket.remoteAddress === socket.localAddress || /^(127\.|::1$|::ffff:127\.)/.test(socket.remoteAddress));
      const stream = local ? this.streams.get((request.query as { token?: string }).token ?? '') : undefined;
      if (!stream) throw errors.unauthorized('Invalid stream token');

      const aborted = new AbortController(); // ffmpeg went away, or the upstream did not answer in time
      reply.raw.once('close', () => aborted.abort());
      // For the answer only: the body of a live stream goes on for hours.
      let timedOut = false;
      const timer = setTimeout(() => { timedOut = true; aborted.abort(); }, this.connectTimeoutMs);
      const { url, authorization } = withoutCredentials(stream.url);
      const headers: Record<string, string> = { ...stream.headers, ...(authorization ? { authorization } : {}) };
      if (typeof request.headers.range === 'string') headers.range = request.headers.range;
      let res: Response;
      try {
        res = await fetch(url, { headers, redirect: 'follow', signal: AbortSignal.any([aborted.signal, stream.ended.signal]) });
      } catch (err) {
        stream.failure = fetchFailure(err, timedOut);
        throw errors.badGateway(timedOut ? 'The upstream did not answer' : 'The upstream cannot be reached');
      } finally {
        clearTimeout(timer);
      }
      if (!res.ok || !res.body) {
        await res.body?.cancel().catch(() => {});
        stream.failure = { kind: `the source answered HTTP ${res.status}`, detail: `the upstream answered ${res.status} ${res.statusText}`.trim() };
        // ffmpeg reports the upstream's own status ("Server returned 404 Not Found").
        reply.code(res.status >= 400 ? res.status : 502);
        return { error: `The upstream answered ${res.status}` };
      }
      stream.failure = undefined;
      const type = res.headers.get('content-type') ?? '';
      if (PLAYLIST_TYPE.test(type) || /\.m3u8?$/i.test(new URL(res.url || url).pathname)) {
        const text = await readText(res, MAX_PLAYLIST_BYTES);
        if (text === undefined) throw errors.badGateway('The upstream playlist is too large');
        if (/^\s*(\ufeff)?#EXTM3U/.test(text)) {
          reply.header('content-type', type || 'application/vnd.apple.mpegurl');
          return absolutePlaylist(text, res.url || url, stream.url);
        }
        reply.code(res.status).header('content-type', type || 'application/octet-stream');
        return text;
      }
      reply.code(res.status);
      for (const name of PASSED_HEADERS) {
        const value = res.headers.get(name);
        if (value) reply.header(name, value);
      }
      return reply.send(Readable.fromWeb(res.body as import('node:stream/web').ReadableStream));
    });
  }
}

/** Why fetch found no upstream, in words for any user, and its own for administrators. */
function fetchFailure(err: unknown, timedOut: boolean): { kind: string; detail: string } {
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  const detail = cause?.message ?? (err as Error)?.message ?? String(err);
  if (timedOut) return { kind: 'the source did not answer in time', detail };
  switch (cause?.code) {
    case 'ECONNREFUSED': return { kind: 'the source refused the connection', detail };
    case 'ENOTFOUND': case 'EAI_AGAIN': return { kind: "the source's address could not be found", detail };
    default: return { kind: 'the source could not be reached', detail };
  }
}

/** `http://user:pass@host/…` as fetch takes it: without its credentials, which fetch refuses, and them as Basic authorization. */
function withoutCredentials(location: string): { url: string; authorization?: string } {
  const url = new URL(location);
  if (!url.username && !url.password) return { url: location };
  const decode = (part: string) => { try { return decodeURIComponent(part); } catch { return part; } };
  const authorization = `Basic ${Buffer.from(`${decode(url.username)}:${decode(url.password)}`).toString('base64')}`;
  url.username = url.password = '';
  return { url: url.href, authorization };
}

async function readText(res: Response, max: number): Promise<string | undefined> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
    size += chunk.length;
    if (size > max) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The playlist with each URI (lines, and URI="…" attributes) absolute against where it came
 * from. On the upstream's own origin, URIs keep the stream URL's `user:pass@`, which ffmpeg
 * sends as Basic authorization.
 */
export function absolutePlaylist(text: string, from: string, original: string): string {
  const source = new URL(original);
  const resolve = (uri: string): string => {
    let url: URL;
    try {
      url = new URL(uri, from);
    } catch {
      return uri;
    }
    if ((source.username || source.password) && url.origin === source.origin && !url.username) {
      url.username = source.username;
      url.password = source.password;
    }
    return url.href;
  };
  return text.split(/\r?\n/).map((line) => {
    const trimmed = line.trim();
    if (!trimmed) return line;
    if (trimmed.startsWith('#')) return line.replace(/URI="([^"]*)"/g, (_, uri: string) => `URI="${resolve(uri)}"`);
    return resolve(trimmed);
  }).join('\n');
}
