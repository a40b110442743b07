/**
 * A library (#/library/:id): its movies or series as title cards in a grid,
 * sorted by title, year or date added (kept in the route, ?sort=year), a page
 * at a time with more loaded as the end scrolls into view. Items have no
 * artwork: a card is a gradient derived from the title, with the title on it.
 */
import './library.css';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api.js';
import { lengthLabel } from '../player/labels.js';
import { episodeCode } from '../player/sources.js';
import { href, navigate, routeQuery, usePath } from '../router.js';
import type { ItemSummary, LibraryPage } from '../types.js';
import { Empty, ErrorNote, Spinner, titleColours, useTitle } from '../ui.js';

const PAGE = 60;
type Sort = 'title' | 'year' | 'added';
const SORTS: { value: Sort; label: string }[] = [
  { value: 'title', label: 'Title' },
  { value: 'year', label: 'Year' },
  { value: 'added', label: 'Recently added' },
];

/** Where a card leads: recordings play, everything else opens its page. */
export function itemHref(item: Pick<ItemSummary, 'id' | 'type'>): string {
  const recording = /^rec-(\d+)$/.exec(item.id);
  if (item.type === 'recording' && recording) return href(`/watch/recording/${recording[1]}`);
  return href(`/item/${encodeURIComponent(item.id)}`);
}

export function cardMeta(item: ItemSummary): string {
  const parts: string[] = [];
  if (item.type === 'episode') parts.push(episodeCode(item) ?? '');
  if (item.year) parts.push(String(item.year));
  if (item.type === 'series' && item.child_count !== null) parts.push(`${item.child_count} season${item.child_count === 1 ? '' : 's'}`);
  else if (item.duration) parts.push(lengthLabel(item.duration));
  return parts.filter(Boolean).join(' · ');
}

/** A poster-shaped card for an item without artwork. */
export function TitleCard({ item, wide }: { item: ItemSummary; wide?: boolean }) {
  const [from, to] = titleColours(item.title);
  const meta = cardMeta(item);
  return (
    <a class="card title-card" href={itemHref(item)} aria-label={meta ? `${item.title}, ${meta}` : item.title}>
      <div class={`poster${wide ? ' wide' : ''}`} style={{ background: `linear-gradient(150deg, ${from}, ${to})` }} aria-hidden="true">
        <span class="poster-title">{item.title}</span>
        {item.year && <span class="poster-year">{item.year}</span>}
      </div>
      <span class="card-title" aria-hidden="true">{item.title}</span>
      {meta && <span class="card-meta" aria-hidden="true">{meta}</span>}
    </a>
  );
}

function isSort(value: string | null): value is Sort {
  return value === 'title' || value === 'year' || value === 'added';
}

export function LibraryView({ id }: { id: string }) {
  const path = usePath();
  const requested = routeQuery(path).get('sort');
  const sort: Sort = isSort(requested) ? requested : 'title';
  const [library, setLibrary] = useState<LibraryPage>();
  const [items, setItems] = useState<ItemSummary[]>([]);
  const [error, setError] = useState<unknown>();
  const [loading, setLoading] = useState(false);
  const [nonce, setNonce] = useState(0);
  const controllerRef = useRef<AbortController>();
  const endRef = useRef<HTMLDivElement>(null);
  useTitle(library?.name ?? 'Library');

  const fetchPage = (offset: number) => {
    controllerRef.current?.abort();
    const controller = new AbortController();
    controllerRef.current = controller;
    setLoading(true);
    setError(undefined);
    const order = sort === 'year' ? '&order=desc' : '';
    api<LibraryPage>(`/library/${encodeURIComponent(id)}?sort=${sort}${order}&limit=${PAGE}&offset=${offset}`, { signal: controller.signal }).then((page) => {
      setLibrary(page);
      setItems((old) => (offset === 0 ? page.items : [...old, ...page.items]));
      setLoading(false);
    }, (err: Error) => {
      if (err.name === 'AbortError') return;
      setError(err);
      setLoading(false);
    });
  };

  useEffect(() => {
    setItems([]);
    fetchPage(0);
    return () => controllerRef.current?.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [id, sort, nonce]);

  const more = library !== undefined && items.length < library.total;
  // Scrolling near the end loads the next page; the button does the same for keyboards.
  useEffect(() => {
    const end = endRef.current;
    if (!end || !more || loading || error) return;
    const observer = new IntersectionObserver((entries) => { if (entries.some((e) => e.isIntersecting)) fetchPage(items.length); }, { rootMargin: '600px' });
    observer.observe(end);
    return () => observer.disconnect();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [more, loading, error, items.length]);

  if (!library && error) return <ErrorNote error={error} onRetry={() => setNonce((n) => n + 1)} />;
  if (!library) return <Spinner />;
  const noun = library.type === 'shows' ? 'shows' : library.type === 'recordings' ? 'recordings' : 'movies';
  return (
    <section class="library">
      <div class="library-head">
        <div>
          <h1>{library.name}</h1>
          <p class="muted">{library.total} {library.total === 1 ? noun.replace(/s$/, '') : noun}</p>
        </div>
        {library.type !== 'recordings' && (
          <div class="chips" role="group" aria-label="Sort by">
            {SORTS.map((s) => (
              <button key={s.value} type="button" class="chip" aria-pressed={sort === s.value}
                onClick={() => navigate(`/library/${encodeURIComponent(id)}${s.value === 'title' ? '' : `?sort=${s.value}`}`, { replace: true })}>
                {s.label}
              </button>
            ))}
          </div>
        )}
      </div>
      {items.length === 0 && !loading && !error && <Empty>This library is empty. New files appear here after the next scan.</Empty>}
      <div class="card-grid library-grid">
        {items.map((item) => <TitleCard key={item.id} item={item} />)}
      </div>
      {error !== undefined && <ErrorNote error={error} onRetry={() => fetchPage(items.length)} />}
      {loading && <Spinner />}
      {more && !loading && !error && (
        <div class="library-more" ref={endRef}>
          <button type="button" class="button" onClick={() => fetchPage(items.length)}>Show more</button>
        </div>
      )}
    </section>
  );
}
