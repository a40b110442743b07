/**
 * Live TV: every channel with its logo, number, category and what is on now;
 * filtered by category or favorites, searched by name or number. A channel
 * opens the player; the star adds it to the user's favorites.
 */
import './channels.css';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api } from '../api.js';
import { href } from '../router.js';
import { setFavorites, useMe } from '../session.js';
import type { Channel } from '../types.js';
import { describeError, Empty, ErrorNote, formatClock, Spinner, toast, useAsync, useTitle } from '../ui.js';
import { ChannelLogo } from './guide-channel-logo.js';
import { NOW_PAGE, programOnNow, useOnNow } from './guide-now.js';

export interface Category { name: string; channel_count: number }

type Filter = { kind: 'all' } | { kind: 'favorites' } | { kind: 'category'; name: string };

/** Rows rendered at first; more as the list is scrolled (10,000 channels are no reason to build 10,000 rows). */
const BATCH = 120;

const fold = (s: string) => s.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();

function useDebounced<T>(value: T, ms: number): T {
  const [debounced, setDebounced] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setDebounced(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return debounced;
}

/** Adds or removes a favorite at once, then takes the server's list (or puts the old one back, saying why). */
export async function toggleFavorite(channel: { id: number; name: string }, favorites: number[]): Promise<void> {
  const was = favorites.includes(channel.id);
  setFavorites(was ? favorites.filter((id) => id !== channel.id) : [...favorites, channel.id]);
  try {
    const reply = await api<{ favorites: number[] }>('/me/favorite', { method: was ? 'DELETE' : 'POST', body: { channel_id: channel.id } });
    setFavorites(reply.favorites);
  } catch (err) {
    setFavorites(favorites);
    toast(`${channel.name}: ${describeError(err)}`, 'error');
  }
}

export function ChannelsView() {
  useTitle('Live TV');
  const me = useMe();
  const favorites = me?.favorites ?? [];
  const [filter, setFilter] = useState<Filter>({ kind: 'all' });
  const [query, setQuery] = useState('');
  const q = useDebounced(query.trim(), 250);
  const category = filter.kind === 'category' ? filter.name : undefined;

  const categories = useAsync((signal) => api<{ categories: Category[] }>('/channel/categories', { signal }), []);
  // A search covers every channel (the chips then narrow its results here); otherwise the server filters by category.
  const listCategory = q ? undefined : category;
  const list = useAsync((signal) => api<{ channels: Channel[] }>(
    q ? `/channels/search?q=${encodeURIComponent(q)}` : `/channels${listCategory !== undefined ? `?category=${encodeURIComponent(listCategory)}` : ''}`,
    { signal },
  ), [q, listCategory]);

  const channels = useMemo(() => {
    let all = list.data?.channels ?? [];
    if (filter.kind === 'favorites') all = all.filter((c) => favorites.includes(c.id));
    if (q && category !== undefined) all = all.filter((c) => c.category != null && fold(c.category) === fold(category));
    return all;
  }, [list.data, filter, q, category, favorites]);

  const [shown, setShown] = useState(BATCH);
  useEffect(() => setShown(BATCH), [list.data, filter]);
  const sentinel = useRef<HTMLLIElement>(null);
  useEffect(() => {
    const el = sentinel.current;
    if (!el) return;
    const observer = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) setShown((n) => n + BATCH);
    }, { rootMargin: '600px' });
    observer.observe(el);
    return () => observer.disconnect();
  }, [channels, shown]);

  // What's on now comes in pages of the list's own order; a search result's place in it is unknown, so only what is known shows.
  const visible = channels.slice(0, shown);
  const nowPages = useMemo(() => {
    if (q || !list.data) return [];
    if (filter.kind !== 'favorites') return Array.from({ length: Math.ceil(Math.min(shown, channels.length) / NOW_PAGE) }, (_, i) => i);
    const index = new Map(list.data.channels.map((c, i) => [c.id, i]));
    return [...new Set(visible.map((c) => Math.floor(index.get(c.id)! / NOW_PAGE)))].sort((a, b) => a - b);
  }, [q, list.data, filter, shown, channels]);
  useOnNow(listCategory, nowPages);

  const onKeyDown = (event: KeyboardEvent) => {
    const link = (event.target as HTMLElement).closest('.channel-main');
    if (!link) return;
    const links = [...(event.currentTarget as HTMLElement).querySelectorAll<HTMLElement>('.channel-main')];
    const at = links.indexOf(link as HTMLElement);
    const step = { ArrowDown: 1, ArrowRight: 1, ArrowUp: -1, ArrowLeft: -1 }[event.key];
    let next = -1;
    if (step) next = at + step;
    else if (event.key === 'Home') next = 0;
    else if (event.key === 'End') next = links.length - 1;
    if (next >= 0 && next < links.length) {
      event.preventDefault();
      links[next].focus();
    }
  };

  const chip = (f: Filter, label: string, key: string) => {
    const pressed = filter.kind === f.kind && (f.kind !== 'category' || (filter.kind === 'category' && filter.name === f.name));
    return <button key={key} type="button" class="chip" aria-pressed={pressed} onClick={() => setFilter(f)}>{label}</button>;
  };

  return (
    <section class="channels-view">
      <div class="channels-head">
        <h1>Live TV</h1>
        <label class="channels-search">
          <span class="visually-hidden">Search channels</span>
          <input type="search" placeholder="Search channels by name or number" value={query} autoComplete="off"
            onInput={(e) => setQuery((e.target as HTMLInputElement).value)} />
        </label>
      </div>
      <div class="chips channels-filters" role="group" aria-label="Show">
        {chip({ kind: 'all' }, 'All channels', 'all')}
        {chip({ kind: 'favorites' }, `★ Favorites${favorites.length ? ` (${favorites.length})` : ''}`, 'fav')}
        {(categories.data?.categories ?? []).map((c) => chip({ kind: 'category', name: c.name }, `${c.name} (${c.channel_count})`, `c:${c.name}`))}
      </div>
      {categories.error && <ErrorNote error={categories.error} onRetry={categories.reload} />}
      {list.error ? <ErrorNote error={list.error} onRetry={list.reload} />
        : !list.data ? <Spinner label="Loading channels" />
        : !channels.length ? <Empty>{emptyText(filter, q, list.data.channels.length)}</Empty>
        : (
          <>
            <p class="muted channels-count" aria-live="polite">{channels.length === 1 ? '1 channel' : `${channels.length} channels`}{list.loading ? '…' : ''}</p>
            <ul class="channel-list" onKeyDown={onKeyDown}>
              {visible.map((c) => <ChannelRow key={c.id} channel={c} favorite={favorites.includes(c.id)} onStar={() => void toggleFavorite(c, favorites)} />)}
              {shown < channels.length && <li ref={sentinel} class="channel-more"><Spinner label="Loading more channels" /></li>}
            </ul>
          </>
        )}
    </section>
  );
}

function emptyText(filter: Filter, q: string, total: number): string {
  if (q) return `No channel matches “${q}”${filter.kind === 'all' ? '' : ' here'}.`;
  if (filter.kind === 'favorites') return 'No favorites yet: star a channel to keep it here.';
  if (!total && filter.kind === 'all') return 'No channels yet. An administrator adds a tuner (an M3U playlist) in the server configuration.';
  return 'No channels in this category.';
}

function ChannelRow({ channel: c, favorite, onStar }: { channel: Channel; favorite: boolean; onStar: () => void }) {
  const now = programOnNow(c.id);
  const start = now ? Date.parse(now.start) : 0;
  const stop = now ? Date.parse(now.stop) : 0;
  const progress = now ? Math.min(100, Math.max(0, ((Date.now() - start) / (stop - start)) * 100)) : 0;
  return (
    <li class="channel">
      <a class="channel-main" href={href(`/watch/live/${c.id}`)}>
        <ChannelLogo name={c.name} logo={c.logo} />
        <span class="channel-text">
          <span class="channel-title"><span class="channel-number">{c.tvg_chno}</span> <span class="channel-name">{c.name}</span></span>
          {now
            ? <span class="channel-now"><span class="visually-hidden">On now: </span>{now.title}<span class="muted"> · until {formatClock(now.stop)}</span></span>
            : <span class="channel-now muted">{c.category ?? ''}</span>}
          {now && c.category && <span class="channel-category">{c.category}</span>}
          {now && <span class="channel-progress" aria-hidden="true"><span style={{ width: `${progress}%` }} /></span>}
        </span>
      </a>
      <button type="button" class={`star${favorite ? ' on' : ''}`} aria-pressed={favorite}
        aria-label={`Favorite ${c.name}`} title={favorite ? 'Remove from favorites' : 'Add to favorites'} onClick={onStar}>
        {favorite ? '★' : '☆'}
      </button>
    </li>
  );
}
