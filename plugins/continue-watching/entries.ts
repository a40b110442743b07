/**
 * Continue watching: each user's entries, the rules that move them (the 90 %
 * rule, watched/unwatched, up next) and cheap progress writes.
 *
 * Players report progress every few seconds. A user's entries are loaded once
 * (on their first request) and from then on memory is the truth: a report
 * changes the entry in memory and queues it, and the queue is written as one
 * batch per flush interval (store.ts), so a report costs no query of its own
 * and a burst of them becomes one row of one write per entry. Catalog lookups
 * are remembered too (item()). Reads are served from
 * memory and so see reports not written yet. Shutdown writes what is queued;
 * explicit user actions (watched, unwatched, delete) are written before they
 * are answered.
 */
import { errors, type AuthService, type AuthUser, type CatalogItem, type ContentType, type Logger, type VodCatalogService, type WatchState } from 'antenna/sdk';
import type { Change, Entry, EntryStore } from './store.js';

/** Past this fraction of its duration a video counts as watched and leaves the list. */
export const WATCHED_FRACTION = 0.9;

export type ListType = 'vod' | 'live_tv';
const KINDS: Record<ListType, ReadonlySet<ContentType>> = { vod: new Set(['movie', 'episode']), live_tv: new Set(['recording']) };

// A remembered catalog lookup is refreshed when older than this (in the background:
// see item()), so a rescan's removals and renames show within about this long.
const ITEM_TTL_MS = 30_000;
const ITEM_CACHE_MAX = 10_000;
const TITLE_MAX = 512;

const ms = (seconds: number) => Math.round(seconds * 1000) / 1000;
const meta = (item: CatalogItem) => ({
  videoId: item.id, libraryId: item.libraryId, contentType: item.contentType, title: item.title.slice(0, TITLE_MAX),
});
const notFound = (id: string) => errors.notFound(`No video ${JSON.stringify(id.slice(0, 64))}`);

export class ContinueWatching {
  private readonly users = new Map<number, Promise<Map<string, Entry>>>();
  /** videoId → the catalog's item, or undefined when it is known to be gone. */
  private readonly items = new Map<string, { item: CatalogItem | undefined; at: number }>();
  /** `user:video` → the change to write at the next flush. */
  private readonly pending = new Map<string, Change>();
  /** Catalog lookups under way, by videoId. */
  private readonly lookups = new Map<string, Promise<CatalogItem | undefined>>();
  private timer?: NodeJS.Timeout;
  private flushing?: Promise<void>;
  private closed = false;
  private lastStamp = 0;

  constructor(
    private readonly store: EntryStore,
    private readonly catalog: VodCatalogService,
    private readonly auth: AuthService,
    private readonly log: Logger,
    private readonly now: () => number,
    private readonly flushIntervalMs: number,
  ) {}

  /** Unwatched entries the user may still see, newest first; `total` counts them all. */
  async list(user: AuthUser, query: { type?: ListType; limit: number; offset: number }): Promise<{ items: Entry[]; total: number }> {
    const entries = await this.entriesOf(user.id);
    const kinds = query.type && KINDS[query.type];
    // Access is checked on every read, so a revoked grant hides entries at once (and they
    // come back if it is granted again); items a rescan removed are hidden the same way.
    const candidates = [...entries.values()].filter((e) => !e.watched && (!kinds || kinds.has(e.contentType)) && this.auth.canAccessLibrary(user, e.libraryId));
    const visible: Entry[] = [];
    for (const [i, item] of (await Promise.all(candidates.map((e) => this.item(user, e.videoId, e)))).entries()) {
      if (item) visible.push(this.refreshed(user.id, entries, candidates[i]!, item));
    }
    visible.sort((a, b) => b.updatedAt - a.updatedAt || (a.videoId < b.videoId ? -1 : 1));
    return { items: visible.slice(query.offset, query.offset + query.limit), total: visible.length };
  }

  /**
   * A player's report. `duration` 0 or missing means the player does not know
   * it: the entry's or the catalog's is used. A position past the duration is
   * clamped to it (players overshoot by a frame; the last report must still count).
   */
  async progress(user: AuthUser, videoId: string, position: number, duration?: number): Promise<Entry> {
    const entries = await this.entriesOf(user.id);
    const old = entries.get(videoId);
    const item = await this.item(user, videoId, old);
    if (!item) throw notFound(videoId);
    const length = duration || old?.duration || item.duration;
    const at = length > 0 ? Math.min(position, length) : position;
    // Each report restates the state: below 90 % a watched video is being watched again.
    const watched = length > 0 && at >= WATCHED_FRACTION * length;
    const entry: Entry = { ...meta(item), position: ms(at), duration: ms(length), watched, updatedAt: this.stamp() };
    this.set(user.id, entries, entry);
    if (watched && !old?.watched) await this.finished(user, entries, item);
    return entry;
  }

  /** PATCH watched / unwatched. Unwatched starts the video over (position 0) and lists it again. */
  async mark(user: AuthUser, videoId: string, watched: boolean): Promise<Entry> {
    const entries = await this.entriesOf(user.id);
    const old = entries.get(videoId);
    const item = await this.item(user, videoId, old);
    if (!item) throw notFound(videoId);
    const entry: Entry = {
      ...meta(item), position: watched ? old?.position ?? 0 : 0, duration: old?.duration || ms(item.duration), watched, updatedAt: this.stamp(),
    };
    this.set(user.id, entries, entry);
    if (watched && !old?.watched) await this.finished(user, entries, item);
    await this.flush();
    return entry;
  }

  /**
   * GET one video's state, for item pages: its entry (watched ones too), or a
   * blank one when the user never played it.
   */
  async state(user: AuthUser, videoId: string): Promise<{ entry: Entry; played: boolean }> {
    const entries = await this.entriesOf(user.id);
    const old = entries.get(videoId);
    const item = await this.item(user, videoId, old);
    if (!item) throw notFound(videoId);
    if (old) return { entry: this.refreshed(user.id, entries, old, item), played: true };
    return { entry: { ...meta(item), position: 0, duration: ms(item.duration), watched: false, updatedAt: 0 }, played: false };
  }

  /** DELETE: forgets the entry (its watched state too). Idempotent for a video the user can see. */
  async remove(user: AuthUser, videoId: string): Promise<void> {
    const entries = await this.entriesOf(user.id);
    const old = entries.get(videoId);
    if (old && this.auth.canAccessLibrary(user, old.libraryId)) {
      entries.delete(videoId);
      this.queue({ userId: user.id, videoId, entry: null });
      await this.flush();
      return;
    }
    if (!(await this.item(user, videoId))) throw notFound(videoId);
  }

  /**
   * The vod plugin's onPlay (play-info and manifest requests): starts an entry
   * at position 0, or moves an unfinished one to the top. Opening a watched
   * video leaves it watched; its progress reports decide.
   */
  played(user: AuthUser, item: CatalogItem): void {
    this.remember(item.id, item);
    this.entriesOf(user.id).then((entries) => {
      const old = entries.get(item.id);
      if (old?.watched) return;
      this.set(user.id, entries, old
        ? { ...old, ...meta(item), updatedAt: this.stamp() }
        : { ...meta(item), position: 0, duration: ms(item.duration), watched: false, updatedAt: this.stamp() });
    }).catch((err) => this.log.warn({ err, videoId: item.id }, 'continue-watching entry not started'));
  }

  /** Browsing's watch state (vod's setWatchState): the user's entries among these ids. */
  async states(user: AuthUser, ids: readonly string[]): Promise<Map<string, WatchState>> {
    const entries = await this.entriesOf(user.id);
    const out = new Map<string, WatchState>();
    for (const id of ids) {
      const e = entries.get(id);
      if (e) out.set(id, { watched: e.watched, position: e.position });
    }
    return out;
  }

  /** The catalog's item of a video, as last looked up (the entries answered were). */
  catalogItem(videoId: string): CatalogItem | undefined {
    return this.items.get(videoId)?.item;
  }

  /** play-info's `resume_position`: where an unfinished video was left, when past its start. */
  async resumePosition(user: AuthUser, item: CatalogItem): Promise<number | undefined> {
    const entry = (await this.entriesOf(user.id)).get(item.id);
    return entry && !entry.watched && entry.position > 0 ? entry.position : undefined;
  }

  /** Writes every queued change now (one transaction); waits for a flush under way first. */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (!this.pending.size) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const changes = [...this.pending.values()];
    this.pending.clear();
    const started = Date.now();
    this.flushing = this.store.write(changes).finally(() => { this.flushing = undefined; });
    await this.flushing;
    this.log.trace({ event: 'continue_watching_flushed', entries: changes.length, ms: Date.now() - started }, 'continue-watching entries written');
  }

  /** A removed user: their entries and the changes queued for them are dropped. */
  forget(userId: number): void {
    this.users.delete(userId);
    for (const [key, change] of this.pending) if (change.userId === userId) this.pending.delete(key);
  }

  /** At shutdown: no more timers, and everything queued is written. */
  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
  }

  // ---------------------------------------------------------------------------

  private entriesOf(userId: number): Promise<Map<string, Entry>> {
    let loaded = this.users.get(userId);
    if (!loaded) {
      const loading = this.store.load(userId).then((list) => new Map(list.map((e) => [e.videoId, e])));
      this.users.set(userId, (loaded = loading));
      // A failed load is not remembered: the next request tries again.
      loading.catch(() => { if (this.users.get(userId) === loading) this.users.delete(userId); });
    }
    return loaded;
  }

  /**
   * The catalog's item if the user may see it. Remembered items are answered
   * from memory; one older than ITEM_TTL_MS is still answered while a single
   * lookup refreshes it behind (stale-while-revalidate), so a progress report
   * never waits on the database once its video is known. A lookup that finds
   * nothing for a user who may see the item's library means it is gone (not
   * merely hidden from this user); that is remembered too.
   */
  private async item(user: AuthUser, videoId: string, entry?: Entry): Promise<CatalogItem | undefined> {
    const hit = this.items.get(videoId);
    const stale = !hit || this.now() - hit.at >= ITEM_TTL_MS;
    if (hit?.item) {
      if (!this.auth.canAccessLibrary(user, hit.item.libraryId)) return undefined;
      if (stale && !this.lookups.has(videoId)) void this.lookup(user, videoId, hit.item.libraryId);
      return hit.item;
    }
    if (hit && !stale) return undefined;
    // Never seen, or known gone for a while: ask the catalog and wait.
    return this.lookup(user, videoId, entry?.libraryId);
  }

  /** One catalog lookup per video at a time; `libraryId`, when known, tells "gone" from "hidden from this user". */
  private lookup(user: AuthUser, videoId: string, libraryId: number | undefined): Promise<CatalogItem | undefined> {
    let pending = this.lookups.get(videoId);
    if (!pending) {
      pending = this.catalog.item(user, videoId).then((item) => {
        if (item) this.remember(videoId, item);
        else if (libraryId !== undefined && this.auth.canAccessLibrary(user, libraryId)) this.remember(videoId, undefined);
        return item;
      }).finally(() => this.lookups.delete(videoId));
      this.lookups.set(videoId, pending);
      pending.catch((err) => this.log.warn({ err, videoId }, 'catalog lookup failed'));
      return pending;
    }
    // Another user's lookup is under way. When it finds nothing, that may be that user's access: ask again for this one.
    return pending.then((item) => (item ? (this.auth.canAccessLibrary(user, item.libraryId) ? item : undefined) : this.catalog.item(user, videoId)));
  }

  private remember(videoId: string, item: CatalogItem | undefined): void {
    this.items.delete(videoId);
    if (this.items.size >= ITEM_CACHE_MAX) this.items.delete(this.items.keys().next().value!);
    this.items.set(videoId, { item, at: this.now() });
  }

  /** The entry with the catalog's current title (a rescan may rename); same place in the list. */
  private refreshed(userId: number, entries: Map<string, Entry>, entry: Entry, item: CatalogItem): Entry {
    const m = meta(item);
    if (m.title === entry.title && m.libraryId === entry.libraryId && m.contentType === entry.contentType) return entry;
    const updated = { ...entry, ...m };
    this.set(userId, entries, updated);
    return updated;
  }

  /** A video just counted as watched: for an episode, the next one of its series is "up next". */
  private async finished(user: AuthUser, entries: Map<string, Entry>, item: CatalogItem): Promise<void> {
    this.log.debug({ event: 'watched', user: user.id, videoId: item.id }, 'video watched');
    if (item.contentType !== 'episode' && item.seriesId === null) return; // recordings of a series have episodes too
    let next: CatalogItem | undefined;
    try {
      next = await this.catalog.nextEpisode(user, item.id);
    } catch (err) {
      this.log.warn({ err, videoId: item.id }, 'next episode not found; no up-next entry');
      return;
    }
    if (!next) return;
    this.remember(next.id, next);
    const old = entries.get(next.id);
    if (old?.watched) return; // seen already
    this.set(user.id, entries, { ...meta(next), position: old?.position ?? 0, duration: old?.duration || ms(next.duration), watched: false, updatedAt: this.stamp() });
  }

  /** updated_at of a change: the clock, but always after the previous change, so "newest first" follows the order of requests. */
  private stamp(): number {
    this.lastStamp = Math.max(this.now(), this.lastStamp + 1);
    return this.lastStamp;
  }

  private set(userId: number, entries: Map<string, Entry>, entry: Entry): void {
    entries.set(entry.videoId, entry);
    this.queue({ userId, videoId: entry.videoId, entry });
  }

  private queue(change: Change): void {
    this.pending.set(`${change.userId}:${change.videoId}`, change);
    if (this.timer || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush().catch((err) => this.log.error({ err }, 'continue-watching flush failed'));
    }, this.flushIntervalMs);
    this.timer.unref();
  }
}
