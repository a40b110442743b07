/**
 * Tracks across providers: the listing behind GET /api/items/{id}/subtitle-tracks
 * and the manifests, and fetching one track. Access is the VOD catalog's: an
 * item the user may not see is unknown (404).
 */
import {
  errors, isAppError, type AuthUser, type CatalogFile, type CatalogItem, type Logger, type SubtitleProvider,
  type SubtitleRequest, type VodCatalogService,
} from 'antenna/sdk';
import { labelsFor, normalizeLanguage } from './language.js';
import type { Providers } from './registry.js';

export interface ListedTrack {
  provider: string;
  id: string;
  label: string;
  /** Canonical BCP 47 code, or null when unknown. */
  language: string | null;
  codec: string;
  forced: boolean;
  default: boolean;
  hearingImpaired: boolean;
  external: boolean;
  /** Path (from the server root) serving the track as WebVTT. */
  url: string;
}

export interface Target { item: CatalogItem; file: CatalogFile; version: number }

const TRACK_ID = /^[A-Za-z0-9_.-]{1,64}$/;

export class SubtitleService {
  constructor(
    private readonly providers: Providers,
    private readonly catalog: VodCatalogService,
    private readonly log: Logger,
    /** A provider that has not listed its tracks by then is left out of the listing. */
    private readonly listTimeoutMs: number,
  ) {}

  /** The item and version (0 = the best, as in playback) a request names; 404 when unknown, not granted or without that version. */
  async target(user: AuthUser, itemId: string, version = 0): Promise<Target> {
    const item = await this.catalog.item(user, itemId);
    if (!item) throw errors.notFound(`No item ${JSON.stringify(itemId.slice(0, 64))}`);
    const files = await this.catalog.files(user, item.id);
    const file = files[version];
    if (!file) throw errors.notFound(`Item ${item.id} has no version ${version} (it has ${files.length})`);
    return { item, file, version };
  }

  async list(user: AuthUser, { item, file, version }: Target, signal: AbortSignal): Promise<ListedTrack[]> {
    const request = (s: AbortSignal): SubtitleRequest => ({ user, item, file, signal: s });
    const lists = await Promise.all(this.providers.all().map((p) => this.listOne(p, request, signal)));
    const tracks = lists.flatMap((list, i) => list.map((t) => ({ provider: this.providers.all()[i]!, t })))
      .filter(({ provider, t }) => {
        if (TRACK_ID.test(t.id)) return true;
        this.log.warn({ provider: provider.id, track: String(t.id).slice(0, 80) }, 'subtitle track with an invalid id left out');
        return false;
      });
    const normalized = tracks.map(({ t }) => ({ ...t, language: normalizeLanguage(t.language) }));
    const labels = labelsFor(normalized);
    const query = version ? `?version=${version}` : '';
    return tracks.map(({ provider, t }, i) => ({
      provider: provider.id,
      id: t.id,
      label: labels[i]!,
      language: normalized[i]!.language,
      codec: t.codec,
      forced: Boolean(t.forced),
      default: Boolean(t.default),
      hearingImpaired: Boolean(t.hearingImpaired),
      external: Boolean(t.external),
      url: `/api/items/${encodeURIComponent(item.id)}/subtitle/${provider.id}/${encodeURIComponent(t.id)}${query}`,
    }));
  }

  /** One track as WebVTT; 404 for an unknown provider or track. */
  async fetch(user: AuthUser, target: Target, providerId: string, trackId: string, signal: AbortSignal): Promise<string> {
    const provider = this.providers.get(providerId);
    if (!provider || !TRACK_ID.test(trackId)) throw errors.notFound(`No subtitle track ${providerId}/${trackId.slice(0, 64)}`);
    let vtt: string | undefined;
    try {
      vtt = await provider.fetchTrack({ user, item: target.item, file: target.file, signal }, trackId);
    } catch (err) {
      if (isAppError(err)) throw err;
      this.log.warn({ err, provider: provider.id, item: target.item.id, track: trackId }, 'subtitle provider failed');
      throw errors.badGateway(`Subtitle provider ${provider.id} failed`);
    }
    if (vtt === undefined) throw errors.notFound(`Item ${target.item.id} has no subtitle track ${providerId}/${trackId}`);
    return vtt;
  }

  private async listOne(provider: SubtitleProvider, request: (s: AbortSignal) => SubtitleRequest, outer: AbortSignal) {
    const controller = new AbortController();
    const stop = () => controller.abort(outer.reason);
    outer.addEventListener('abort', stop, { once: true });
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          controller.abort(new Error('timed out'));
          reject(new Error(`no answer within ${this.listTimeoutMs} ms`));
        }, this.listTimeoutMs);
      });
      return await Promise.race([provider.listTracks(request(controller.signal)), timeout]);
    } catch (err) {
      if (!outer.aborted) this.log.warn({ err, provider: provider.id, item: request(controller.signal).item.id }, 'subtitle provider could not list tracks; left out');
      return [];
    } finally {
      clearTimeout(timer);
      outer.removeEventListener('abort', stop);
    }
  }
}
