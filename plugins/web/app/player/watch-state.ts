/**
 * What the app has learnt of the user's progress per video: from the
 * continue-watching list (unwatched videos only), from one video's state
 * (GET /api/continue-watching/{id}, watched ones too) and from the entries
 * that progress reports and watched/unwatched answer.
 */
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import type { ContinueEntry } from '../types.js';

const known = new Map<string, ContinueEntry>();
const listeners = new Set<() => void>();

function changed(): void {
  listeners.forEach((l) => l());
}

export function remember(entries: ContinueEntry | ContinueEntry[]): void {
  for (const e of Array.isArray(entries) ? entries : [entries]) known.set(e.videoId, e);
  changed();
}

export function forget(videoId: string): void {
  known.delete(videoId);
  changed();
}

export function knownEntry(videoId: string): ContinueEntry | undefined {
  return known.get(videoId);
}

/** Re-renders the caller whenever an entry is learnt or forgotten. */
export function useWatchState(): void {
  const [, setTick] = useState(0);
  useEffect(() => {
    const update = () => setTick((n) => n + 1);
    listeners.add(update);
    return () => { listeners.delete(update); };
  }, []);
}

const loading = new Map<string, Promise<void>>();
const failures = new Map<string, Error>();

function fetchState(videoId: string): void {
  if (loading.has(videoId)) return;
  failures.delete(videoId);
  loading.set(videoId, api<ContinueEntry>(`/api/continue-watching/${encodeURIComponent(videoId)}`)
    .then(remember, (error: Error) => { failures.set(videoId, error); changed(); })
    .finally(() => loading.delete(videoId)));
}

export interface VideoState {
  /** Known once fetched (or already learnt from a list or a report). */
  entry?: ContinueEntry;
  error?: Error;
  retry(): void;
}

/** One video's state (GET /api/continue-watching/{id}), fetched when a view shows it, once at a time per video. */
export function useVideoState(videoId: string): VideoState {
  useWatchState();
  useEffect(() => fetchState(videoId), [videoId]);
  return { entry: knownEntry(videoId), error: failures.get(videoId), retry: () => fetchState(videoId) };
}

/** The continue-watching list (unwatched entries only: watched ones leave it). */
export async function loadContinueWatching(type: 'vod' | 'live_tv' | undefined, limit: number, signal?: AbortSignal): Promise<ContinueEntry[]> {
  const query = new URLSearchParams({ limit: String(limit) });
  if (type) query.set('type', type);
  const { items } = await api<{ items: ContinueEntry[]; total: number }>(`/api/continue-watching?${query}`, { signal });
  remember(items);
  return items;
}

export async function markWatched(videoId: string, watched: boolean): Promise<ContinueEntry> {
  const entry = await api<ContinueEntry>(`/api/continue-watching/${encodeURIComponent(videoId)}/${watched ? 'watched' : 'unwatched'}`, { method: 'PATCH' });
  remember(entry);
  return entry;
}

export async function removeFromContinueWatching(videoId: string): Promise<void> {
  await api(`/api/continue-watching/${encodeURIComponent(videoId)}`, { method: 'DELETE' });
  forget(videoId);
}

/** Where playback would resume, when the video was left part-way. */
export function resumePosition(entry: ContinueEntry | undefined): number | undefined {
  if (!entry || entry.watched || entry.position < 5) return undefined;
  if (entry.duration > 0 && entry.position > entry.duration - 5) return undefined;
  return entry.position;
}
