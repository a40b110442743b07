/**
 * Recordings as items of the VOD catalog's "Recordings" library (contentType
 * `recording`; VodCatalogService.addLibrary), so browsing, play-info and continue
 * watching work on them. Item ids are `rec-<id>`.
 */
import type { AuthService, AuthUser, CatalogItem, CatalogLibrarySource, CatalogPlayInfo } from 'antenna/sdk';
import type { Dvr } from './dvr.js';
import type { Recording } from './model.js';

const PREFIX = 'rec-';

/** Item ids are opaque strings in the catalog ([A-Za-z0-9_-]{1,64}): `rec-<id>`. */
export const itemIdOf = (recordingId: number): string => `${PREFIX}${recordingId}`;

export function recordingIdOf(itemId: string): number | undefined {
  const m = /^rec-(\d{1,10})$/.exec(itemId);
  const id = m ? Number(m[1]) : NaN;
  return Number.isSafeInteger(id) && id > 0 ? id : undefined;
}

/** Whether a recording is something to play: it has media (it may still be growing). */
export const playable = (rec: Recording): boolean => rec.status !== 'scheduled' && rec.duration > 0;

export function toCatalogItem(rec: Recording, libraryId: number): CatalogItem {
  return {
    id: itemIdOf(rec.id), libraryId, contentType: 'recording', title: rec.title,
    duration: Math.round(rec.duration), seriesId: null, seasonNumber: null, episodeNumber: null, addedAt: rec.start,
  };
}

export class RecordingItems implements CatalogLibrarySource {
  /** Set once the catalog has given the library its id. */
  libraryId = 0;

  constructor(private readonly dvr: Dvr, private readonly auth: AuthService) {}

  owns(itemId: string): boolean {
    return recordingIdOf(itemId) !== undefined;
  }

  async item(itemId: string): Promise<CatalogItem | undefined> {
    const id = recordingIdOf(itemId);
    const rec = id === undefined ? undefined : await this.dvr.get(id);
    return rec && playable(rec) ? toCatalogItem(rec, this.libraryId) : undefined;
  }

  /** Newest first, like a DVR's recordings shelf. */
  async list(): Promise<CatalogItem[]> {
    return (await this.dvr.list()).filter(playable).sort((a, b) => b.start - a.start || b.id - a.id).map((r) => toCatalogItem(r, this.libraryId));
  }

  /** What play-info answers: the recording's manifest (HLS, or DASH by the Device-OS rule) with a key scoped to it. */
  async playInfo(user: AuthUser, itemId: string, dashOnly: boolean): Promise<CatalogPlayInfo | undefined> {
    const id = recordingIdOf(itemId);
    if (id === undefined || !(await this.item(itemId))) return undefined;
    const key = this.auth.signMediaKey(user, `recording:${id}`);
    return dashOnly
      ? { method: 'remux', url: `/watch/recording/${id}/master.mpd?key=${key}`, format: 'dash' }
      : { method: 'remux', url: `/watch/recording/${id}?key=${key}`, format: 'hls' };
  }
}
