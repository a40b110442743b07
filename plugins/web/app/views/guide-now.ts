/**
 * What is on now, per channel, for the channel list: pages of GET /programs
 * limited to the coming minute, in the same channel order and category as the
 * list, fetched only for the rows on screen. A page is fetched again once one
 * of its programmes has ended.
 */
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import type { GuidePage, Program } from '../types.js';

export const NOW_PAGE = 100;

interface PageState { until: number; loading: boolean }

const pages = new Map<string, PageState>();
const onNow = new Map<number, Program>();
const listeners = new Set<() => void>();

function pageKey(category: string | undefined, page: number): string {
  return `${category ?? '*'}|${page}`;
}

async function fetchPage(category: string | undefined, page: number): Promise<void> {
  const key = pageKey(category, page);
  const state = pages.get(key);
  if (state && (state.loading || state.until > Date.now())) return;
  pages.set(key, { until: 0, loading: true });
  const now = Date.now();
  const query = new URLSearchParams({
    limit: String(NOW_PAGE), offset: String(page * NOW_PAGE),
    from: new Date(now).toISOString(), to: new Date(now + 60_000).toISOString(),
  });
  if (category !== undefined) query.set('category', category);
  try {
    const body = await api<GuidePage>(`/programs?${query}`);
    // Valid until the first programme on the page ends; at most 10 minutes (new guide data, or a gap that has filled).
    let until = now + 10 * 60_000;
    for (const channel of body.channels) {
      const current = channel.programs.find((p) => Date.parse(p.start) <= now + 60_000 && Date.parse(p.stop) > now);
      if (current) {
        onNow.set(channel.id, current);
        until = Math.min(until, Date.parse(current.stop));
      } else onNow.delete(channel.id);
    }
    pages.set(key, { until, loading: false });
    listeners.forEach((l) => l());
  } catch {
    // Not worth an error on the channel list: try again in a minute.
    pages.set(key, { until: Date.now() + 60_000, loading: false });
  }
}

/** The programme on air on a channel, when known. */
export function programOnNow(channelId: number): Program | undefined {
  const p = onNow.get(channelId);
  return p && Date.parse(p.stop) > Date.now() ? p : undefined;
}

/**
 * Keeps the given pages of the list (all channels, or one category; NOW_PAGE
 * channels each) covered; re-renders the caller when programmes arrive or end.
 */
export function useOnNow(category: string | undefined, pageNumbers: number[]): number {
  const [version, setVersion] = useState(0);
  useEffect(() => {
    const update = () => setVersion((v) => v + 1);
    listeners.add(update);
    return () => { listeners.delete(update); };
  }, []);
  const wanted = pageNumbers.join(',');
  useEffect(() => {
    if (!wanted) return;
    const ensure = () => {
      for (const page of wanted.split(',')) void fetchPage(category, Number(page));
    };
    ensure();
    // Re-checked every half minute: a programme that ended is replaced by the next one.
    const timer = setInterval(() => { ensure(); setVersion((v) => v + 1); }, 30_000);
    return () => clearInterval(timer);
  }, [category, wanted]);
  return version;
}
