/**
 * Recordings as items of the VOD catalog's "Recordings" library (contentType
 * `recording`; VodCatalogService.addLibrary), so browsing, play-info and continue
 * watching work on them. Item ids are `rec-<id>`. Recordings of a series (their
 * programme's series_key) browse like a show: a series (`recs-<key>`), its seasons
 * (`recs-<key>-<season>`) when the guide numbers them, then the episodes.
 */
import { createHash } from 'node:crypto';
import type { AuthService, AuthUser, CatalogGroup, CatalogItem, CatalogLibrarySource, CatalogPlayInfo } from 'antenna/sdk';
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

/** The group id of a series: its key hashed into the catalog's id alphabet. */
export const seriesIdOf = (seriesKey: string): string => `recs-${createHash('sha1').update(seriesKey).digest('base64url').slice(0, 16)}`;
const GROUP_ID = /^recs-[A-Za-z0-9_-]{16}(?:-(\d{1,6}))?$/;

/** Whether a recording is something to play: it has media (it may still be growing). */
export const playable = (rec: Recording): boolean => rec.status !== 'scheduled' && rec.duration > 0;

export function toCatalogItem(rec: Recording, libraryId: number): CatalogItem {
  return {
    id: itemIdOf(rec.id), libraryId, contentType: 'recording', title: rec.title,
    duration: Math.round(rec.duration), seriesId: rec.seriesKey === null ? null : seriesIdOf(rec.seriesKey),
    seasonNumber: rec.season, episodeNumber: rec.episode, addedAt: rec.start,
  };
}

/** Episodes in watching order: season, episode, then airing. */
const episodeOrder = (a: Recording, b: Recording) =>
  (a.season ?? 0) - (b.season ?? 0) || (a.episode ?? 0) - (b.episode ?? 0) || a.start - b.start || a.id - b.id;

export class RecordingItems implements CatalogLibrarySource {
  /** Set once the catalog has given the library its id. */
  libraryId = 0;

  constructor(private readonly dvr: Dvr, private readonly auth: AuthService) {}

  owns(itemId: string): boolean {
    return recordingIdOf(itemId) !== undefined || GROUP_ID.test(itemId);
  }

  async item(itemId: string): Promise<CatalogItem | undefined> {
    const id = recordingIdOf(itemId);
    const rec = id === undefined ? undefined : await this.dvr.get(id);
    return rec && playable(rec) ? toCatalogItem(rec, this.libraryId) : undefined;
  }

  /** Newest first, like a DVR's recordings shelf. */
  async list(): Promise<CatalogItem[]> {
    return (await this.playable()).map((r) => toCatalogItem(r, this.libraryId));
  }

  private async playable(): Promise<Recording[]> {
    return (await this.dvr.list()).filter(playable).sort((a, b) => b.start - a.start || b.id - a.id);
  }

  async browse(parentId: string | null): Promise<{ group: CatalogGroup | null; children: (CatalogItem | CatalogGroup)[] } | undefined> {
    const all = await this.playable();
    const bySeries = new Map<string, Recording[]>();
    for (const r of all) if (r.seriesKey !== null) bySeries.set(seriesIdOf(r.seriesKey), [...(bySeries.get(seriesIdOf(r.seriesKey)) ?? []), r]);
    const item = (r: Recording) => toCatalogItem(r, this.libraryId);
    const group = (id: string, recs: Recording[], season: number | null, parentId: string | null, childCount: number): CatalogGroup => ({
      id, libraryId: this.libraryId, kind: parentId === null ? 'series' : 'season', parentId,
      title: parentId === null ? recs[0].title : `Season ${season}`, seasonNumber: season, childCount, addedAt: recs[0].start,
    });
    const seasonsOf = (recs: Recording[]) => [...new Set(recs.map((r) => r.season).filter((s): s is number => s !== null))].sort((a, b) => a - b);
    /** A series' children: its seasons when the guide numbers them (unnumbered episodes beside them), else its episodes. */
    const childrenOf = (id: string, recs: Recording[]): (CatalogItem | CatalogGroup)[] => [
      ...seasonsOf(recs).map((s) => group(`${id}-${s}`, recs.filter((r) => r.season === s), s, id, recs.filter((r) => r.season === s).length)),
      ...recs.filter((r) => r.season === null).sort(episodeOrder).map(item),
    ];
    if (parentId === null) {
      // Newest first: a series where its newest recording would be.
      const children: (CatalogItem | CatalogGroup)[] = [];
      const seen = new Set<string>();
      for (const r of all) {
        if (r.seriesKey === null) { children.push(item(r)); continue; }
        const id = seriesIdOf(r.seriesKey);
        if (seen.has(id)) continue;
        seen.add(id);
        const recs = bySeries.get(id)!;
        children.push(group(id, recs, null, null, childrenOf(id, recs).length));
      }
      return { group: null, children };
    }
    const m = GROUP_ID.exec(parentId);
    if (!m) return undefined;
    const seriesId = m[1] === undefined ? parentId : parentId.slice(0, parentId.lastIndexOf('-'));
    const recs = bySeries.get(seriesId);
    if (!recs) return undefined;
    if (m[1] === undefined) {
      const children = childrenOf(seriesId, recs);
      return { group: group(seriesId, recs, null, null, children.length), children };
    }
    const season = Number(m[1]);
    const inSeason = recs.filter((r) => r.season === season).sort(episodeOrder);
    if (!inSeason.length) return undefined;
    return { group: group(parentId, inSeason, season, seriesId, inSeason.length), children: inSeason.map(item) };
  }

  async nextItem(itemId: string): Promise<CatalogItem | undefined> {
    const id = recordingIdOf(itemId);
    const all = await this.playable();
    const rec = all.find((r) => r.id === id);
    if (!rec || rec.seriesKey === null) return undefined;
    const episodes = all.filter((r) => r.seriesKey === rec.seriesKey).sort(episodeOrder);
    const next = episodes[episodes.findIndex((r) => r.id === rec.id) + 1];
    return next && toCatalogItem(next, this.libraryId);
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
