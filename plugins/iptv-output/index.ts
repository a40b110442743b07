/**
 * iptv-output: Antenna's channels as an M3U playlist and its guide as XMLTV,
 * for Kodi, TiviMate, VLC, Jellyfin and the other clients that take live TV
 * that way. Under `/iptv/<access key>/` (and `/iptv/` for the clients of
 * `accessKeys.open` networks); streams are the channels' shared live sessions
 * as MPEG-TS, or (`?format=hls`) as live-tv's own HLS with keys the access key
 * mints, which hold as long as it does: clients keep a playlist for days.
 */
import { Readable } from 'node:stream';
import { createGzip } from 'node:zlib';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { coreServices, definePlugin, errors, liveTvService, Type, type AccessGrant, type HttpScope, type LiveTvAccess } from 'antenna/sdk';
import { xmltvDocument, xmltvIds } from './xmltv.js';

const configSchema = Type.Object({
  /** Days of guide `guide.xml` covers unless `?days=` says fewer. */
  guideDays: Type.Integer({ minimum: 1, maximum: 31, default: 14 }),
}, { additionalProperties: false });

const ErrorBody = Type.Object({ error: Type.String() });
const Errors = { 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody, 503: ErrorBody };
const tags = ['iptv-output'];
const DAY_MS = 86_400_000;
/** Guide programmes that ended this long ago are still written (a client's catch-up of the last hours). */
const PAST_MS = 6 * 3600_000;

export default definePlugin({
  id: 'iptv-output',
  version: '1.0.0',
  host: '^1.2',
  description: 'M3U playlist and XMLTV guide output for IPTV clients (Kodi, TiviMate, VLC, Jellyfin)',
  configSchema,
  dependsOn: ['live-tv'],
  register(env) {
    env.registerInit({
      deps: { config: coreServices.config, http: coreServices.http, auth: coreServices.auth, clock: coreServices.clock, live: liveTvService },
      async init({ config, http, auth, clock, live }) {
        routes(http, live, { guideDays: config.guideDays, now: () => clock.now(), grantOf: (r) => auth.requireAccessKey(r) });
      },
    });
  },
});

/** The scheme and host the client used, checked: URLs in the playlist are built from them. */
function origin(request: FastifyRequest): string {
  const host = request.headers.host ?? '';
  if (!/^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/.test(host)) throw errors.badRequest('Host header is missing or malformed');
  return `${request.protocol}://${host}`;
}

/** `/iptv/<key>` as the client wrote it, or `/iptv` for an open network's client. */
function baseUrl(request: FastifyRequest): string {
  const key = (request.params as { key?: string }).key;
  return `${origin(request)}/iptv${key === undefined ? '' : `/${key}`}`;
}

/** An M3U attribute value: quotes and line breaks would end it early. */
const attr = (s: string) => s.replace(/["\r\n]/g, ' ');

function routes(http: HttpScope, live: LiveTvAccess, options: { guideDays: number; now: () => number; grantOf: (r: FastifyRequest) => AccessGrant }): void {
  const config = { auth: 'access-key' as const };
  const both = (path: string, register: (url: string, params: Record<string, ReturnType<typeof Type.String>>) => void) => {
    register(`/iptv/:key${path}`, { key: Type.String({ description: 'An access key (antenna access-key create)' }) });
    register(`/iptv${path}`, {});
  };

  both('/channels.m3u', (url, params) => http.get(url, {
    config,
    schema: {
      summary: 'Every channel as an M3U playlist', tags,
      description: 'One `#EXTINF:-1` entry per channel in number order, with tvg-id (the XMLTV output\'s channel id), tvg-chno, tvg-name, tvg-logo and group-title (`;`-joined); the stream URL is the channel as MPEG-TS (`/iptv/<key>/stream/<id>.ts`), or with `format=hls` its HLS master playlist (`/watch/live/<id>/master.m3u8?key=…`) with a key scoped to that channel that this access key minted: manifests and segments need no header, and the key never expires but stops working (401) the moment the access key is revoked. `group` keeps one category.',
      params: Type.Object(params),
      querystring: Type.Object({
        group: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
        format: Type.Optional(Type.Union([Type.Literal('ts'), Type.Literal('hls')], { description: 'Stream URLs as MPEG-TS (default) or as keyed HLS' })),
      }),
      response: { ...Errors },
    },
  }, async (request, reply) => {
    const { group, format = 'ts' } = request.query as { group?: string; format?: 'ts' | 'hls' };
    const base = baseUrl(request);
    const grant = options.grantOf(request);
    const streamUrl = format === 'hls' ? (id: number) => `${origin(request)}${live.hlsPath(id, grant)}` : (id: number) => `${base}/stream/${id}.ts`;
    const all = await live.channels();
    const ids = xmltvIds(all);
    const lines = [`#EXTM3U url-tvg="${base}/guide.xml.gz" x-tvg-url="${base}/guide.xml.gz"`];
    for (const c of all) {
      if (group !== undefined && !c.groups.includes(group)) continue;
      lines.push(`#EXTINF:-1 tvg-id="${attr(ids.get(c.id)!)}" tvg-chno="${attr(c.number)}" tvg-name="${attr(c.name)}" tvg-logo="${attr(c.logo ?? '')}" group-title="${attr(c.groups.join(';'))}",${c.name.replace(/[\r\n]/g, ' ')}`);
      lines.push(streamUrl(c.id));
    }
    // No charset parameter (M3U is UTF-8 anyway): mpv recognises a playlist whose URL has a query only by the bare type.
    return reply.type('audio/x-mpegurl').header('cache-control', 'no-store').send(lines.join('\n') + '\n');
  }));

  for (const [file, gzip] of [['guide.xml', false], ['guide.xml.gz', true]] as const) {
    both(`/${file}`, (url, params) => http.get(url, {
      config,
      schema: {
        summary: `The guide as XMLTV${gzip ? ', gzipped' : ''}`, tags,
        description: 'One `<channel>` per channel (id = the playlist\'s tvg-id, its name and number as display-names, its icon), and its programmes from 6 hours ago to `days` days ahead (default `guideDays`), written as it is read.',
        params: Type.Object(params),
        querystring: Type.Object({ days: Type.Optional(Type.Integer({ minimum: 1, maximum: 31 })) }),
        response: { ...Errors },
      },
    }, async (request, reply) => {
      const { days = options.guideDays } = request.query as { days?: number };
      const now = options.now();
      // Bytes, not objects: the next piece is read once the client (or gzip) has taken the last one.
      const document = Readable.from(xmltvDocument(live, await live.channels(), now - PAST_MS, now + days * DAY_MS), { objectMode: false, highWaterMark: 64 * 1024 });
      const body = gzip ? document.pipe(createGzip()) : document;
      if (gzip) document.on('error', (err) => body.destroy(err));
      return reply.type(gzip ? 'application/gzip' : 'application/xml; charset=utf-8').header('cache-control', 'no-store').send(body);
    }));
  }

  both('/stream/:file', (url, params) => http.get(url, {
    config,
    exposeHeadRoute: false, // a HEAD would tune the channel like a GET
    schema: {
      summary: 'A channel as one continuous MPEG-TS (video/mp2t)', tags,
      description: '`<channel id>.ts`, as the playlist lists it: the channel\'s shared live session (in cluster mode, when another node runs the channel, that node\'s stream passed on by this one: still one upstream connection). 409 when the source has no free stream.',
      params: Type.Object({ ...params, file: Type.String() }),
      response: { ...Errors },
    },
  }, async (request, reply) => stream(request, reply, live, options.grantOf(request))));
}

async function stream(request: FastifyRequest, reply: FastifyReply, live: LiveTvAccess, grant: AccessGrant): Promise<FastifyReply> {
  const { file } = request.params as { file: string };
  const id = /^(\d{1,10})\.ts$/.exec(file)?.[1];
  if (!id || Number(id) > 2 ** 31 - 1) throw errors.notFound(`No channel ${file.slice(0, 40)}: expected <channel id>.ts`);
  const gone = new AbortController();
  request.raw.on('close', () => gone.abort());
  const ts = await live.mpegTs(Number(id), { label: `iptv ${grant.name ?? 'open network'}`, signal: gone.signal, grant });
  reply.raw.on('close', () => ts.close());
  return reply.code(200).header('cache-control', 'no-store').type('video/mp2t').send(ts.stream);
}
