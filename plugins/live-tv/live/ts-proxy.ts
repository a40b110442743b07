/**
 * Cluster mode: a channel's MPEG-TS read from the node that runs its session, for an HDHomeRun
 * or M3U client that asked this node. Proxied rather than redirected: those clients (Plex,
 * Channels, Emby, TiviMate) follow a 307 badly or not at all, and the bytes pass through here
 * without this node taking the channel's lease, a tuner slot or an upstream connection.
 */
import { PassThrough, Readable } from 'node:stream';
import { AppError, errors, type AccessGrant, type LiveMpegTs, type Logger } from 'antenna/sdk';

/** What the owner may take beyond its own readyTimeout to answer (it answers once the stream has a first segment). */
const ANSWER_MARGIN_MS = 5000;

export async function proxyMpegTs(url: string, deps: {
  node: string; log: Logger; label: string; readyTimeoutMs: number; signal?: AbortSignal; grant?: AccessGrant;
}): Promise<LiveMpegTs> {
  const controller = new AbortController();
  const output = new PassThrough({ highWaterMark: 1 << 20 });
  let closed = false;
  let stopWatchingKey: (() => void) | undefined;
  let body: Readable | undefined;
  const close = () => {
    if (closed) return;
    closed = true;
    stopWatchingKey?.();
    body?.unpipe(output);
    controller.abort();
    if (!output.writableEnded) output.end();
  };
  output.on('close', close);
  if (deps.signal?.aborted) close();
  deps.signal?.addEventListener('abort', close, { once: true });
  // A revoked key's client is cut off here; the owner then sees its request go.
  stopWatchingKey = deps.grant?.onRevoked(() => {
    close();
    output.destroy();
  });

  const timer = setTimeout(() => controller.abort(), deps.readyTimeoutMs + ANSWER_MARGIN_MS);
  let res: Response;
  try {
    res = await fetch(url, { signal: controller.signal, headers: { 'user-agent': `antenna-node ${deps.node}` } });
  } catch (err) {
    close();
    if (deps.signal?.aborted) throw errors.badRequest('The client went away');
    throw errors.badGateway(`The node that runs the channel (${deps.node}) did not answer: ${(err as Error).message}`, 5);
  } finally {
    clearTimeout(timer);
  }
  if (res.status !== 200 || !res.body) {
    const answer = await res.json().catch(() => ({})) as { error?: string };
    close();
    const why = answer.error ?? `HTTP ${res.status}`;
    // A full tuner or a stream not ready is what the client would hear from the owner itself; anything else is the owner failing.
    if (res.status === 409 || res.status === 503) throw new AppError(res.status, res.status === 409 ? 'ANTENNA_CONFLICT' : 'ANTENNA_UNAVAILABLE', why, retryAfter(res));
    throw errors.badGateway(`The node that runs the channel (${deps.node}) answered ${res.status}: ${why}`, 5);
  }
  body = Readable.fromWeb(res.body as import('node:stream/web').ReadableStream);
  body.on('error', (err) => {
    if (!closed) deps.log.info({ label: deps.label, node: deps.node, error: err.message }, 'live: the proxied MPEG-TS ended');
    close();
  });
  body.on('end', close);
  body.pipe(output, { end: false });
  return { stream: output, close };
}

function retryAfter(res: Response): Record<string, string> {
  const value = res.headers.get('retry-after');
  return value ? { 'retry-after': value } : {};
}
