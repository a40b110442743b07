/**
 * VOD playback entry points (spec §4, PRODUCT.md §2): play-info (which method
 * and which URL next), /watch/vod/{id} (the file, or where to go instead) and
 * /file (the original bytes, with ranges). Manifests and segments are the
 * transcoder's routes (transcode/routes.ts).
 */
import type { FastifyRequest } from 'fastify';
import { deviceCaps, errors, isDashOnly, Type, type AuthService, type AuthUser, type CatalogItem, type HostInfo, type HttpScope, type Logger, type Static } from 'antenna/sdk';
import { playableItem, type ItemSource, type Playable } from './access.js';
import type { Catalog } from './catalog.js';
import { contentTypeOf, sendFile } from './file-response.js';
import type { Item, MediaFile } from './model.js';
import { decide, directFormat, type PlayDecision } from './play-decision.js';
import type { VodStore } from './store.js';
import { variantOf, type VariantTokens } from './transcode/variant.js';

const ErrorBody = Type.Object({ error: Type.String() });
const Params = Type.Object({
  // No pattern here: a malformed id answers 404 like an unknown one (access.ts), never 400.
  item_id: Type.String({ description: 'Item id (a movie or an episode)' }),
});

const credentials = {
  api_key: Type.Optional(Type.String({ description: 'The bearer token, for players that cannot send headers' })),
  key: Type.Optional(Type.String({ description: 'A signed, item-scoped key from a URL this server handed out' })),
};
const version = Type.Optional(Type.Integer({ minimum: 0, maximum: 999, description: 'Which version of the item (0 = the best, the default)' }));
const PlayQuery = Type.Object({
  version,
  maxBitrate: Type.Optional(Type.Integer({ minimum: 64_000, maximum: 1_000_000_000, description: 'bits per second the client asks not to exceed' })),
  audioTrack: Type.Optional(Type.Integer({ minimum: 0, maximum: 999, description: "Audio track: its position among the file's audio streams (0 = first)" })),
  ...credentials,
});
type PlayQueryT = Static<typeof PlayQuery>;
const FileQuery = Type.Object({ version, ...credentials });

const PlayInfo = Type.Object({
  method: Type.Union([Type.Literal('direct'), Type.Literal('remux'), Type.Literal('audio-only'), Type.Literal('transcode')]),
  url: Type.String({ description: 'Path to request next: the /file path for direct play, else master.mpd (DASH-only devices) or master.m3u8; carries a signed key' }),
  format: Type.Union([Type.Literal('mkv'), Type.Literal('mp4'), Type.Literal('dash'), Type.Literal('hls')]),
  resume_position: Type.Optional(Type.Number({ description: 'Seconds to resume from, when the user has progress (continue-watching)' })),
  reasons: Type.Optional(Type.Array(Type.String(), { description: 'Not direct: why the file is not played directly (`video codec hevc not supported`, `container mkv not supported`…)' })),
  height: Type.Optional(Type.Integer({ description: 'Transcode: the height it is encoded at' })),
  // Other plugins may add fields through the VOD catalog's addPlayInfoField.
}, { additionalProperties: true });
const RedirectNotice = Type.Object({
  status: Type.Literal('redirecting'),
  type: Type.Union([Type.Literal('dash'), Type.Literal('hls')]),
  transcode_url: Type.String({ description: 'Path of the manifest to request (as play-info url)' }),
}, { description: 'When direct play does not apply. When it does, the file bytes as /file answers them (200, or 206 for a Range)' });
const FileBytes = {
  description: 'The file bytes (video/mp4, video/x-matroska, video/webm, video/mp2t, video/x-msvideo… by container)',
  type: 'string', format: 'binary',
};
/** What /file answers besides its 200, and so /watch/vod when direct play applies. */
const FILE_RESPONSES = {
  206: FileBytes, 304: { description: 'Not modified', type: 'null' },
  400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 412: ErrorBody, 416: ErrorBody,
};

const DEVICE_HEADERS = 'Device headers (Device-Codecs, Device-Audio-Codecs, Device-Audio-Channels, Device-Containers, Device-Max-Height, Device-HDR; none = a browser: mp4/webm, h264, aac/mp3/opus, stereo) and maxBitrate decide the method: transcode when the video does not fit (codec, height, HDR, bitrate), else audio-only when the audio does not, else remux when only the container does not, else direct.';
const RANGES = 'Range: one byte range (`bytes=a-b`, `bytes=a-`, `bytes=-n`) → 206 with Content-Range; past the end → 416 with `Content-Range: bytes */size`; malformed or several ranges → the whole file (200). ETag/Last-Modified with If-None-Match/If-Modified-Since (304), If-Match/If-Unmodified-Since (412) and If-Range. HEAD answers the same headers. 404 when the file is gone or changed since the scan.';

/**
 * How long an item and its versions are reused between requests. A player
 * seeking through a file sends a request per range, hundreds a minute; a
 * rescan's changes are seen within this time, and a changed or deleted file
 * is caught by sendFile's stat whatever the cache says.
 */
const ITEM_CACHE_MS = 5_000;
const ITEM_CACHE_MAX = 1_000;

/** The store's item() and versions(), remembered briefly; concurrent lookups of one item share a query. */
export class CachedItems implements ItemSource {
  private readonly entries = new Map<string, { at: number; value: Promise<unknown> }>();

  constructor(private readonly store: ItemSource, private readonly ttlMs = ITEM_CACHE_MS, private readonly now: () => number = Date.now) {}

  item(id: string): Promise<Item | undefined> {
    return this.cached(`i:${id}`, () => this.store.item(id), (v) => v !== undefined);
  }

  versions(itemId: string): Promise<MediaFile[]> {
    return this.cached(`v:${itemId}`, () => this.store.versions(itemId), () => true);
  }

  clear(): void {
    this.entries.clear();
  }

  private cached<T>(key: string, load: () => Promise<T>, keep: (value: T) => boolean): Promise<T> {
    const now = this.now();
    const hit = this.entries.get(key);
    if (hit && now - hit.at < this.ttlMs) return hit.value as Promise<T>;
    const value = load();
    if (this.entries.size >= ITEM_CACHE_MAX) this.entries.delete(this.entries.keys().next().value!);
    this.entries.delete(key);
    this.entries.set(key, { at: now, value });
    // Unknown ids are not remembered (anyone may ask for any id), nor are failures.
    value.then((v) => { if (!keep(v)) this.drop(key, value); }, () => this.drop(key, value));
    return value;
  }

  private drop(key: string, value: Promise<unknown>): void {
    if (this.entries.get(key)?.value === value) this.entries.delete(key);
  }
}

export function playRoutes(http: HttpScope, deps: { auth: AuthService; store: VodStore; host: HostInfo; tokens: VariantTokens; logger?: Logger; catalog?: Catalog }): void {
  const { auth, host, tokens, logger, catalog } = deps;
  const items = new CachedItems(deps.store);
  const mediaScope = (request: FastifyRequest) => `vod:${(request.params as { item_id: string }).item_id}`;
  const config = { auth: 'media' as const, mediaScope };

  const playable = (request: FastifyRequest, id: string, v = 0) => playableItem(items, auth, request, id, v);

  /** The play decision for a request, and the URL a player fetches next. */
  async function plan(request: FastifyRequest, id: string, query: PlayQueryT): Promise<{ p: Playable; decision: PlayDecision; url: string; format: 'mkv' | 'mp4' | 'dash' | 'hls' }> {
    const p = await playable(request, id, query.version ?? 0);
    const info = p.file.info!;
    if (query.audioTrack !== undefined && query.audioTrack >= info.audio.length) {
      throw errors.notFound(`Item ${p.item.id} (version ${p.version}) has no audio track ${query.audioTrack}; it has ${info.audio.length}`);
    }
    const decision = decide(info, deviceCaps(request.headers), { maxBitrate: query.maxBitrate, audioTrack: query.audioTrack });
    const key = auth.signMediaKey(p.user, `vod:${p.item.id}`);
    const base = `/watch/vod/${p.item.id}`;
    logger?.debug({ event: 'play_decision', item: p.item.id, version: p.version, method: decision.method, reasons: decision.reasons }, 'play decision');
    if (decision.method === 'direct') {
      return { p, decision, url: `${base}/file?key=${key}${p.version ? `&version=${p.version}` : ''}`, format: directFormat(info.container) };
    }
    const dash = isDashOnly(request.headers['device-os'], host.dashOnly);
    const params = new URLSearchParams();
    if (p.version) params.set('version', String(p.version));
    if (query.maxBitrate !== undefined) params.set('maxBitrate', String(query.maxBitrate));
    if (query.audioTrack !== undefined) params.set('audioTrack', String(query.audioTrack));
    // The decision itself, signed: the manifest follows it whatever headers the player sends (or cannot send).
    params.set('variant', tokens.sign(p.item.id, variantOf(p.file, p.version, decision)));
    params.set('key', key);
    return { p, decision, url: `${base}/master.${dash ? 'mpd' : 'm3u8'}?${params}`, format: dash ? 'dash' : 'hls' };
  }

  /** Items of libraries other plugins provide (recordings): their source says where to go. */
  async function providedPlan(request: FastifyRequest, id: string): Promise<{ user: AuthUser; item: CatalogItem; body: { method: string; url: string; format: string } } | undefined> {
    if (!catalog?.providerOf(id)) return undefined;
    const user = auth.requireUser(request);
    const found = await catalog.providedItem(user, id);
    const info = found && await found.source.playInfo(user, id, isDashOnly(request.headers['device-os'], host.dashOnly));
    if (!found || !info) throw errors.notFound(`No item ${JSON.stringify(id.slice(0, 64))}`);
    return { user, item: found.item, body: { method: info.method, url: info.url, format: info.format } };
  }

  const fileOf = (f: MediaFile) => ({ path: f.path, size: f.size, mtimeMs: f.mtimeMs });

  http.get('/watch/vod/:item_id/play-info', {
    config,
    schema: {
      summary: 'How to play an item: direct, remux, audio-only or transcode, and the URL to request next', tags: ['vod'],
      description: `${DEVICE_HEADERS} Direct → url is /watch/vod/{id}/file (format mkv or mp4); otherwise master.mpd (format dash) for DASH-only Device-OS values, else master.m3u8 (format hls), carrying version/maxBitrate/audioTrack and the decision itself (variant, signed), which the manifest follows without the headers. URLs carry a short-lived key scoped to the item, never the token. Plugins add fields (continue-watching: resume_position, when the user has progress). 404 for an unknown or unauthorised id, version or audioTrack.`,
      params: Params,
      querystring: PlayQuery,
      response: { 200: PlayInfo, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody },
    },
  }, async (request) => {
    const { item_id } = request.params as { item_id: string };
    const provided = await providedPlan(request, item_id);
    let user: AuthUser;
    let item: Item | CatalogItem;
    let body: Record<string, unknown>;
    if (provided) ({ user, item, body } = provided);
    else {
      const { p, decision, url, format } = await plan(request, item_id, request.query as PlayQueryT);
      ({ user, item } = p);
      // Why it is not direct (a player shows it beside the quality); direct play answers only the spec's fields.
      body = decision.method === 'direct' ? { method: decision.method, url, format }
        : { method: decision.method, url, format, reasons: decision.reasons, ...(decision.height ? { height: decision.height } : {}) };
    }
    if (!catalog) return body;
    if (provided) catalog.reportPlay(user, provided.item);
    else catalog.played(user, item as Item);
    // Fields other plugins add (continue-watching's resume_position): one failing never costs the user playback.
    const extras = await catalog.playInfoExtras(user, item).catch((err) => {
      logger?.warn({ err, item: item.id }, 'play-info fields left out');
      return {} as Record<string, unknown>;
    });
    for (const [name, value] of Object.entries(extras)) if (!(name in body)) body[name] = value;
    return body;
  });

  http.route({
    method: ['GET', 'HEAD'],
    url: '/watch/vod/:item_id',
    config,
    schema: {
      summary: 'Play an item: the file itself when direct play applies, else where to go', tags: ['vod'],
      description: `The same decision as play-info. Direct → the file bytes exactly as /file answers them (${RANGES}) Otherwise → 200 with the Redirect notice, type dash for DASH-only Device-OS values, else hls.`,
      params: Params,
      querystring: PlayQuery,
      response: { 200: RedirectNotice, ...FILE_RESPONSES },
    },
    handler: async (request, reply) => {
      const { item_id } = request.params as { item_id: string };
      const provided = await providedPlan(request, item_id);
      if (provided) return { status: 'redirecting', type: provided.body.format, transcode_url: provided.body.url };
      const { p, decision, url, format } = await plan(request, item_id, request.query as PlayQueryT);
      if (decision.method === 'direct') return sendFile(request, reply, fileOf(p.file), contentTypeOf(p.file.info!.container));
      return { status: 'redirecting', type: format, transcode_url: url };
    },
  });

  http.route({
    method: ['GET', 'HEAD'],
    url: '/watch/vod/:item_id/file',
    config,
    schema: {
      summary: "An item's original file, with byte ranges for seeking", tags: ['vod'],
      description: RANGES,
      params: Params,
      querystring: FileQuery,
      response: { 200: FileBytes, ...FILE_RESPONSES },
    },
    handler: async (request, reply) => {
      const { item_id } = request.params as { item_id: string };
      const p = await playable(request, item_id, (request.query as { version?: number }).version ?? 0);
      return sendFile(request, reply, fileOf(p.file), contentTypeOf(p.file.info!.container));
    },
  });
}
