/**
 * m3u-tuner: IPTV playlists (files or http(s) URLs, gzip too) as a live-tv tuner.
 *
 *   m3u-tuner: { sources: [ { name: IPTV, url: ./tv.m3u, maxStreams: 2, refresh: 12h } ] }
 */
import { pathToFileURL } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import {
  coreServices, definePlugin, Duration, errors, parseDuration, tunersExtensionPoint, Type,
  type SourceReader, type StreamSource, type Static, type Tuner, type TunerChannel,
} from 'antenna/sdk';
import { M3uParser } from './m3u-parser.js';
import { refusal, toTunerChannel } from './channels.js';
import { StreamRelay } from './relay.js';
import { playlistRoutes } from './admin-routes.js';

const SourceSchema = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 100, description: 'Shown to users; unique among sources' }),
  url: Type.String({ minLength: 1, description: 'A path (relative to the config file), a file:// or an http(s) URL' }),
  maxStreams: Type.Integer({ minimum: 1, maximum: 1000, default: 1, description: 'Simultaneous upstream connections the provider allows' }),
  refresh: Duration({ default: '12h' }),
  userAgent: Type.Optional(Type.String({ minLength: 1, pattern: '^[^\\x00-\\x1f\\x7f]*$', description: 'Sent when fetching the playlist and streams that set none' })),
}, { additionalProperties: false });

const configSchema = Type.Object({
  sources: Type.Array(SourceSchema, { default: [] }),
}, { additionalProperties: false });

type Source = Static<typeof SourceSchema>;

/**
 * Bytes parsed at a time (a few dozen entries): what is parsed is consumed before V8's next minor
 * collection would have to copy it, and the text decoded at once (twice this in a two-byte string)
 * stays small enough for the young generation rather than going straight to the old one.
 */
const PARSE_SLICE = 16 * 1024;

/**
 * ffmpeg's input for a channel. A stream URL with credentials in it (`user:pass@`, a password in the
 * query or the path, or a secret of the source's own URL as a path segment or query value) is read
 * through the relay, never put on ffmpeg's command line; every such value goes into `secrets`.
 */
export function streamInput(
  channel: { name: string; data?: Record<string, unknown> }, source: { secrets: string[]; userAgent: string },
  sources: SourceReader, relay: StreamRelay, signal: AbortSignal,
): StreamSource {
  const data = channel.data as { url?: string; headers?: Record<string, string> } | undefined;
  if (!data?.url) throw errors.badGateway(`Channel ${channel.name} has no stream URL`);
  const { url, headers = {} } = data;
  // Checked again here: channels imported before the check existed are still stored.
  const refused = refusal(url, headers);
  if (refused) throw errors.badGateway(`Channel ${channel.name} cannot be played: ${refused}`);
  const secrets = [...source.secrets, ...sources.secretsOf(url)];
  const args: string[] = [];
  let input = url;
  let failure: StreamSource['failure'];
  if (/^https?:/i.test(url)) {
    const { 'user-agent': ua = source.userAgent, ...rest } = headers;
    args.push('-user_agent', ua);
    const extra = Object.entries(rest).map(([k, v]) => `${k}: ${v}\r\n`).join('');
    if (extra) args.push('-headers', extra);
    args.push('-reconnect', '1', '-reconnect_streamed', '1', '-reconnect_delay_max', '5');
    if (hasCredentials(url, secrets)) {
      const relayed = relay.open(url, { ...rest, 'user-agent': ua }, signal);
      input = relayed.url;
      secrets.push(relayed.token);
      failure = relayed.failure;
    }
  }
  args.push('-i', input);
  return { inputArgs: args, secrets, ...(failure ? { failure } : {}) };
}

/** Whether the URL's userinfo, a path segment or a query value is one of `secrets`. */
function hasCredentials(url: string, secrets: readonly string[]): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false; // nothing, the relay included, can fetch it
  }
  if (parsed.username || parsed.password) return true;
  const decode = (part: string) => { try { return decodeURIComponent(part); } catch { return part; } };
  const parts = [...parsed.pathname.split('/').map(decode), ...parsed.searchParams.values()];
  return parts.some((part) => part !== '' && secrets.includes(part));
}

/**
 * A NUL among the first bytes, without a UTF-16 byte order mark: a video stream, an image or an
 * archive, not a playlist. (A stream URL given as the playlist would otherwise be read to the
 * 512 MiB limit before failing; an MPEG-TS, MP4 or PNG has a NUL within its first bytes.)
 */
function looksBinary(first: Buffer): boolean {
  const utf16 = first.length >= 2 && ((first[0] === 0xff && first[1] === 0xfe) || (first[0] === 0xfe && first[1] === 0xff));
  return !utf16 && first.subarray(0, 64).includes(0);
}

/**
 * The playlist's channels, parsed as the bytes arrive and yielded as soon as
 * each piece of it is parsed (the channels of a piece together): neither the
 * file nor its channels are ever held whole.
 */
async function* readPlaylist(
  source: Source, sources: SourceReader, userAgent: string,
  { signal, progress, warning }: { signal: AbortSignal; progress?: (fraction: number, message?: string) => void; warning?: (message: string) => void },
): AsyncGenerator<TunerChannel[]> {
  progress?.(0, `fetching ${source.name}`);
  const { chunks, url, size, bytesRead } = await sources.open(source.url, { signal, userAgent });
  const secrets = sources.secretsOf(source.url);
  let ready: TunerChannel[] = [];
  let count = 0;
  let refused = 0;
  const parser = new M3uParser({
    baseUrl: url.startsWith('file://') ? pathToFileURL(url.slice(7)).href : url,
    onEntry: (e) => {
      const why = refusal(e.url, e.headers);
      if (!why) {
        ready.push(toTunerChannel(e));
        return;
      }
      refused++;
      // The name falls back to the URL: redacted like one.
      warning?.(sources.redact(`line ${e.line}: "${e.name.slice(0, 100)}": ${why}; skipped`, [...secrets, ...sources.secretsOf(e.url)]));
    },
  });
  let head = Buffer.alloc(0); // the first bytes, to tell an empty playlist from something else
  let bytes = 0;
  let reported = 0;
  for await (const chunk of chunks) {
    if (bytes === 0 && looksBinary(chunk)) throw errors.badGateway(`${source.name} is not an M3U playlist (binary data)`);
    if (head.length < 64) head = Buffer.concat([head, chunk.subarray(0, 64 - head.length)]);
    for (let i = 0; i < chunk.length; i += PARSE_SLICE) {
      parser.write(chunk.subarray(i, i + PARSE_SLICE));
      if (ready.length) {
        count += ready.length;
        yield ready;
        ready = [];
      }
    }
    bytes += chunk.length;
    if (size && bytesRead() / size - reported >= 0.1) progress?.((reported = Math.min(1, bytesRead() / size)) * 0.9, 'parsing');
  }
  const playlist = parser.end();
  count += ready.length;
  if (!count && !/^\s*(\ufeff)?#EXTM3U/i.test(head.toString('utf8'))) {
    throw errors.badGateway(`${source.name} is not an M3U playlist`);
  }
  if (ready.length) yield ready;
  progress?.(1, `${count} channels, ${playlist.skipped + refused} entries skipped`);
}

const tunerId = (name: string) => `m3u:${name.replace(/[^\w.:@-]/g, '_')}`;

function tunerFor(source: Source, sources: SourceReader, relay: StreamRelay, version: string): Tuner {
  const userAgent = source.userAgent ?? `Antenna/${version}`;
  // The source's own credentials (Xtream's get.php?username=…&password=…) are those of its streams too.
  const secrets = sources.secretsOf(source.url);
  return {
    id: tunerId(source.name),
    name: source.name,
    maxStreams: source.maxStreams,
    refreshMs: parseDuration(source.refresh),
    listChannels: (options) => readPlaylist(source, sources, userAgent, options),
    async openStream({ channel, signal }) {
      return streamInput(channel, { secrets, userAgent }, sources, relay, signal);
    },
  };
}

export default definePlugin({
  id: 'm3u-tuner',
  version: '1.0.0',
  host: '^1.1',
  description: 'IPTV M3U playlists as live TV channels',
  configSchema,
  dependsOn: ['live-tv'],
  register(env) {
    env.registerInit({
      deps: {
        config: coreServices.config, tuners: tunersExtensionPoint, host: coreServices.host, sources: coreServices.sources,
        settings: coreServices.settings, http: coreServices.http,
      },
      async init({ config, tuners, host, sources: reader, settings, http }) {
        const relay = new StreamRelay(() => host.localUrl);
        relay.routes(http);
        const names = new Set<string>();
        for (const source of config.sources) {
          if (names.has(tunerId(source.name))) throw new Error(`two sources are named ${source.name}; names must be unique`);
          names.add(tunerId(source.name));
          tuners.addTuner(tunerFor(source, reader, relay, host.version));
        }
        // A changed list swaps only the tuners that changed: live-tv imports those, and a tuner
        // put back under the same id keeps its channels.
        settings.onChange(['sources'], (next, previous) => {
          const before = new Map(previous.sources.map((s) => [tunerId(s.name), s]));
          const after = new Map(next.sources.map((s) => [tunerId(s.name), s]));
          if (after.size < next.sources.length) throw new Error('two sources have the same name; names must be unique');
          for (const [id, source] of before) if (!isDeepStrictEqual(source, after.get(id))) tuners.removeTuner(id);
          for (const [id, source] of after) if (!isDeepStrictEqual(source, before.get(id))) tuners.addTuner(tunerFor(source, reader, relay, host.version));
        });
        playlistRoutes(http, { schema: SourceSchema, settings, sources: reader, tunerId });
      },
    });
  },
});
