/**
 * hdhomerun: Antenna as an HDHomeRun network tuner, for Plex, Jellyfin, Emby,
 * Channels DVR and the other clients that add live TV that way. The documents
 * and streams live under `/hdhr/<access key>/` (and `/hdhr/` for the clients of
 * `accessKeys.open` networks); a stream is the channel's shared live session as
 * MPEG-TS. Optional UDP discovery announces one key's URLs.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { coreServices, definePlugin, errors, isAppError, liveTvService, Type, type AccessGrant, type HttpScope, type LiveTvAccess, type Static } from 'antenna/sdk';
import { deviceIdentity, type DeviceIdentity } from './device.js';
import { guideNumbers } from './lineup.js';
import { startDiscovery } from './discovery.js';

const configSchema = Type.Object({
  /** The name clients show for the tuner. */
  friendlyName: Type.String({ default: 'Antenna', minLength: 1, maxLength: 64 }),
  /** Tuners announced; by default the sum of the sources' maxStreams, and never more. */
  tunerCount: Type.Optional(Type.Integer({ minimum: 1, maximum: 255 })),
  /** UDP discovery (libhdhomerun's protocol), off unless `key` names the access key whose URLs it announces. */
  discovery: Type.Optional(Type.Object({
    key: Type.String({ minLength: 1, maxLength: 64 }),
    port: Type.Integer({ minimum: 1, maximum: 65535, default: 65001 }),
    /** The address to listen on (default every IPv4 address). */
    address: Type.String({ default: '0.0.0.0', minLength: 1 }),
  }, { additionalProperties: false })),
}, { additionalProperties: false });

const ErrorBody = Type.Object({ error: Type.String() });
const Errors = { 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 503: ErrorBody };
const KeyParams = Type.Object({ key: Type.String({ description: 'An access key (antenna access-key create)' }) });
const tags = ['hdhomerun'];
const TUNER_FULL = '805 All Tuners In Use';

const Discover = Type.Object({
  FriendlyName: Type.String(), Manufacturer: Type.String(), ModelNumber: Type.String(), FirmwareName: Type.String(),
  FirmwareVersion: Type.String(), DeviceID: Type.String(), DeviceAuth: Type.String(), BaseURL: Type.String(), LineupURL: Type.String(),
  TunerCount: Type.Integer(),
});
const LineupEntry = Type.Object({
  GuideNumber: Type.String(), GuideName: Type.String(), URL: Type.String(), HD: Type.Integer(), VideoCodec: Type.String(), AudioCodec: Type.String(),
});

/** The scheme and host the client used, checked: URLs in documents are built from them. */
function origin(request: FastifyRequest): string {
  const host = request.headers.host ?? '';
  if (!/^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/.test(host)) throw errors.badRequest('Host header is missing or malformed');
  return `${request.protocol}://${host}`;
}

/** This request's base URL: `/hdhr/<key>` as the client wrote it, or `/hdhr` for an open network's client. */
function baseUrl(request: FastifyRequest): string {
  const key = (request.params as { key?: string }).key;
  return `${origin(request)}/hdhr${key === undefined ? '' : `/${key}`}`;
}

export interface Documents {
  discover(base: string): Promise<Static<typeof Discover>>;
  lineup(base: string): Promise<Static<typeof LineupEntry>[]>;
}

export default definePlugin({
  id: 'hdhomerun',
  version: '1.0.0',
  host: '^1.2',
  description: 'HDHomeRun tuner emulation for Plex, Jellyfin, Emby, Channels DVR',
  configSchema,
  dependsOn: ['live-tv'],
  register(env) {
    env.registerInit({
      deps: {
        config: coreServices.config, http: coreServices.http, auth: coreServices.auth, paths: coreServices.paths,
        logger: coreServices.logger, lifecycle: coreServices.lifecycle, host: coreServices.host, live: liveTvService,
      },
      async init({ config, http, auth, paths, logger, lifecycle, host, live }) {
        const identity = await deviceIdentity(await paths.pluginDir());
        const docs = documents(live, identity, config);
        routes(http, live, docs, auth.requireAccessKey.bind(auth));
        const { discovery } = config;
        if (discovery) {
          lifecycle.onStart(async () => {
            const responder = await startDiscovery({
              ...discovery, identity, log: logger,
              tunerCount: async () => (await docs.discover('')).TunerCount,
              urls: async (localAddress) => {
                const key = await auth.accessKey(discovery.key);
                const port = host.localUrl ? new URL(host.localUrl).port : undefined;
                if (!key || !port) return undefined; // no such key (revoked?): nothing is announced
                const base = `http://${localAddress.includes(':') ? `[${localAddress}]` : localAddress}:${port}/hdhr/${key}`;
                return { base, lineup: `${base}/lineup.json` };
              },
            });
            lifecycle.onShutdown(() => responder.close());
          });
        }
      },
    });
  },
});

function documents(live: LiveTvAccess, identity: DeviceIdentity, config: { friendlyName: string; tunerCount?: number }): Documents {
  return {
    async discover(base) {
      const streams = live.tuners().reduce((sum, t) => sum + t.maxStreams, 0);
      return {
        FriendlyName: config.friendlyName, Manufacturer: 'Silicondust', ModelNumber: 'HDTC-2US', FirmwareName: 'hdhomeruntc_atsc',
        FirmwareVersion: '20200101', DeviceID: identity.deviceId, DeviceAuth: identity.deviceAuth,
        BaseURL: base, LineupURL: `${base}/lineup.json`,
        TunerCount: Math.max(1, Math.min(255, config.tunerCount ?? streams, streams || 1)),
      };
    },
    async lineup(base) {
      return [...guideNumbers(await live.channels())].map(([number, c]) => ({
        GuideNumber: number, GuideName: c.name, URL: `${base}/auto/v${number}`, HD: 1, VideoCodec: 'H264', AudioCodec: 'AAC',
      }));
    },
  };
}

function routes(http: HttpScope, live: LiveTvAccess, docs: Documents, grantOf: (request: FastifyRequest) => AccessGrant): void {
  const config = { auth: 'access-key' as const };
  /** Each path with a key, and without one for the clients of open networks. */
  const both = (path: string, register: (url: string, keyed: boolean) => void) => {
    register(`/hdhr/:key${path}`, true);
    register(`/hdhr${path}`, false);
  };

  both('/discover.json', (url, keyed) => http.get(url, {
    config,
    schema: { summary: 'HDHomeRun device document', tags, ...(keyed ? { params: KeyParams } : {}), response: { 200: Discover, ...Errors } },
  }, async (request) => docs.discover(baseUrl(request))));

  both('/lineup.json', (url, keyed) => http.get(url, {
    config,
    schema: {
      summary: 'HDHomeRun channel lineup', tags, description: 'Every channel in number order; GuideNumber is unique (a repeated number gets a sub-number).',
      ...(keyed ? { params: KeyParams } : {}), response: { 200: Type.Array(LineupEntry), ...Errors },
    },
  }, async (request) => docs.lineup(baseUrl(request))));

  both('/lineup_status.json', (url, keyed) => http.get(url, {
    config,
    schema: {
      summary: 'HDHomeRun scan status (never scanning)', tags, ...(keyed ? { params: KeyParams } : {}),
      response: { 200: Type.Object({ ScanInProgress: Type.Integer(), ScanPossible: Type.Integer(), Source: Type.String(), SourceList: Type.Array(Type.String()) }), ...Errors },
    },
  }, async () => ({ ScanInProgress: 0, ScanPossible: 1, Source: 'Cable', SourceList: ['Cable'] })));

  both('/lineup.post', (url, keyed) => http.route({
    method: ['GET', 'POST'], url, config,
    schema: { summary: 'HDHomeRun channel scan (answered at once: the lineup is always current)', tags, ...(keyed ? { params: KeyParams } : {}), response: { 200: Type.Object({}), ...Errors } },
    handler: async () => ({}),
  }));

  both('/device.xml', (url, keyed) => http.get(url, {
    config,
    schema: { summary: 'UPnP root device description', tags, ...(keyed ? { params: KeyParams } : {}), response: { ...Errors } },
  }, async (request, reply) => {
    const d = await docs.discover(baseUrl(request));
    return reply.type('application/xml; charset=utf-8').send(deviceXml(d));
  }));

  both('/auto/:channel', (url, keyed) => http.get(url, {
    config,
    // A HEAD would tune the channel like a GET.
    exposeHeadRoute: false,
    schema: {
      summary: 'A channel as one continuous MPEG-TS (video/mp2t)', tags,
      description: '`v<GuideNumber>` from the lineup. The stream is the channel\'s shared live session (one upstream connection however many watch); in cluster mode, when another node runs the channel, this node reads that node\'s stream and passes it on (HDHomeRun clients follow no redirect), still one upstream connection. Query parameters clients add (transcode=, duration=) are ignored. Every tuner slot of the source in use → 503 with `X-HDHomeRun-Error: 805 All Tuners In Use`.',
      params: keyed ? Type.Object({ key: Type.String(), channel: Type.String() }) : Type.Object({ channel: Type.String() }),
      response: { ...Errors },
    },
  }, async (request, reply) => stream(request, reply, live, grantOf(request))));
}

async function stream(request: FastifyRequest, reply: FastifyReply, live: LiveTvAccess, grant: AccessGrant): Promise<FastifyReply> {
  const { channel } = request.params as { channel: string };
  const number = /^v(\d{1,9}(?:\.\d{1,6})?)$/.exec(channel)?.[1];
  if (!number) throw errors.notFound(`No channel ${channel.slice(0, 40)}: expected v<GuideNumber>`);
  const found = guideNumbers(await live.channels()).get(number);
  if (!found) throw errors.notFound(`No channel ${number}`);
  const gone = new AbortController();
  request.raw.on('close', () => gone.abort());
  let ts;
  try {
    ts = await live.mpegTs(found.id, { label: `hdhomerun ${grant.name ?? 'open network'}`, signal: gone.signal, grant });
  } catch (err) {
    if (isAppError(err) && err.statusCode === 409) {
      return reply.code(503).header('x-hdhomerun-error', TUNER_FULL).send({ error: `${TUNER_FULL}: ${err.message}` });
    }
    throw err;
  }
  reply.raw.on('close', () => ts.close());
  return reply.code(200).header('cache-control', 'no-store').type('video/mp2t').send(ts.stream);
}

const xml = (s: string) => s.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);

function deviceXml(d: { FriendlyName: string; DeviceID: string; BaseURL: string; ModelNumber: string }): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<root xmlns="urn:schemas-upnp-org:device-1-0">
  <specVersion><major>1</major><minor>0</minor></specVersion>
  <URLBase>${xml(d.BaseURL)}</URLBase>
  <device>
    <deviceType>urn:schemas-upnp-org:device:MediaServer:1</deviceType>
    <friendlyName>${xml(d.FriendlyName)}</friendlyName>
    <manufacturer>Silicondust</manufacturer>
    <modelName>${xml(d.ModelNumber)}</modelName>
    <modelNumber>${xml(d.ModelNumber)}</modelNumber>
    <serialNumber>${xml(d.DeviceID)}</serialNumber>
    <UDN>uuid:${xml(d.DeviceID)}</UDN>
  </device>
</root>
`;
}
