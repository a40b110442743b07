/**
 * A library (#/library/:id): its movies or series as poster cards in a grid
 * (a watched tick, a progress bar), sorted, filtered to unwatched or a genre
 * (all kept in the route: ?sort=year&genre=Drama&unwatched=1), a page at a
 * time with more loaded as the end scrolls into view, and an A–Z jump that
 * loads the grid from that letter's offset. Only the rows near the viewport
 * are rendered (grid-window.ts).
 */
import './library.css';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api.js';
import { Picture } from '../artwork.js';
import { useGridWindow } from './grid-window.js';
import { lengthLabel } from '../player/labels.js';
import { episodeCode } from '../player/sources.js';
import { href, navigate, routeQuery, usePath } from '../router.js';
import type { ItemSummary, LibraryPage } from '../types.js';
import { Empty, ErrorNote, Spinner, titleColours, useTitle } from '../ui.js';

const PAGE = 60;
type Sort = 'title' | 'year' | 'added' | 'rating' | 'runtime';
const SORTS: { value: Sort; label: string }[] = [
  { value: 'title', label: 'Title' },
  { value: 'year', label: 'Year' },
  { value: 'added', label: 'Recently added' },
  { value: 'rating', label: 'Rating' },
  { value: 'runtime', label: 'Runtime' },
];

/** The name a library shows under: the DVR's library is not the Recordings page (which schedules and manages them). */
export function libraryName(library: { name: string; type: string }): string {
  return library.type === 'recordings' && library.name === 'Recordings' ? 'Recorded programmes' : library.name;
}

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

/**
 * A poster card: the item's poster over a gradient with its title (what shows while it loads,
 * or when there is none). One gradient and no box-shadow: a grid scrolls through thousands of
 * them, and a blurred inset shadow made rasterizing them ten times dearer.
 */
export function TitleCard({ item, wide }: { item: ItemSummary; wide?: boolean }) {
  const [from, to] = titleColours(item.title);
  const meta = cardMeta(item);
  const fraction = !item.watched && item.position && item.duration ? Math.min(1, item.position / item.duration) : 0;
  const state = item.watched ? ', watched' : fraction > 0 ? `, ${Math.round(fraction * 100)}% watched` : '';
  return (
    <a class="card title-card" href={itemHref(item)} aria-label={`${item.title}${meta ? `, ${meta}` : ''}${state}`}>
      <div class={`poster${wide ? ' wide' : ''}`} style={{ background: `linear-gradient(150deg, ${from}, ${to})` }} aria-hidden="true">
        <span class="poster-title">{item.title}</span>
        {item.year && <span class="poster-year">{item.year}</span>}
        <Picture className="poster-image" url={item.poster_url} width={wide ? 260 : 180} />
        {item.watched && <span class="watched-tick" title="Watched">✓</span>}
        {fraction > 0 && <span class="progress"><span style={{ width: `${fraction * 100}%` }} /></span>}
      </div>
      <span class="card-title" aria-hidden="true">{item.title}</span>
      {/* Always there (a blank line when empty), so every card of a grid has the same height. */}
      <span class="card-meta" aria-hidden="true">{meta || '\u00a0'}</span>
    </a>
  );
}

function isSort(value: string | null): value is Sort {
  return SORTS.some((s) => s.value === value);
}

interface View { sort: Sort; genre?: string; unwatched: boolean }

function routeOf(id: string, view: View): string {
  const query = new URLSearchParams();
  if (view.sort !== 'title') query.set('sort', view.sort);
  if (view.genre) query.set('genre', view.genre);
  if (view.unwatched) query.set('unwatched', '1');
  const q = query.toString();
  return `/library/${encodeURIComponent(id)}${q ? `?${q}` : ''}`;
}

export function LibraryView({ id }: { id: string }) {
  const path = usePath();
  const query = routeQuery(path);
  const requested = query.get('sort');
  const view: View = { sort: isSort(requested) ? requested : 'title', genre: query.get('genre') ?? undefined, unwatched: query.get('unwatched') === '1' };
  const [library, setLibrary] = useState<LibraryPage>();
  const [items, setItems] = useState<ItemSummary[]>([]);
  /** The offset of the first item shown (an A–Z jump starts further in). */
  const [base, setBase] = useState(0);
  const [error, setError] = useState<unknown>();
  const [loading, setLoading] = useState(false);
  const [nonce, setNonce] = useState(0);
  const controllerRef = useRef<AbortController>();
  const endRef = useRef<HTMLDivElement>(null);
  const gridRef = useRef<HTMLDivElement>(null);
  const shown = useGridWindow(gridRef, items.length);
  useTitle(library ? libraryName(library) : 'Library');

  const fetchPage = (offset: number, replace: boolean) => {
    controllerRef.current?.abort();
    const controller = new AbortController();
    controllerRef.current = controller;
    setLoading(true);
    setError(undefined);
    const params = new URLSearchParams({ sort: view.sort, limit: String(PAGE), offset: String(offset) });
    if (view.sort === 'year' || view.sort === 'runtime') params.set('order', 'desc');
    if (view.genre) params.set('genre', view.genre);
    if (view.unwatched) params.set('unwatched', 'true');
    api<LibraryPage>(`/library/${encodeURIComponent(id)}?${params}`, { signal: controller.signal }).then((page) => {
      setLibrary(page);
      if (replace) setBase(offset);
      setItems((old) => (replace ? page.items : [...old, ...page.items]));
      setLoading(false);
    }, (err: Error) => {
      if (err.name === 'AbortError') return;
      setError(err);
      setLoading(false);
    });
  };

  useEffect(() => {
    setItems([]);
    fetchPage(0, true);
    return () => controllerRef.current?.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [id, view.sort, view.genre, view.unwatched, nonce]);

  const more = library !== undefined && base + items.length < library.total;
  // Scrolling near the end loads the next page; the button does the same for keyboards.
  useEffect(() => {
    const end = endRef.current;
    if (!end || !more || loading || error) return;
    const observer = new IntersectionObserver((entries) => { if (entries.some((e) => e.isIntersecting)) fetchPage(base + items.length, false); }, { rootMargin: '600px' });
    observer.observe(end);
    return () => observer.disconnect();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [more, loading, error, items.length, base]);

  if (!library && error) return <ErrorNote error={error} onRetry={() => setNonce((n) => n + 1)} />;
  if (!library) return <Spinner />;
  const noun = library.type === 'shows' ? 'shows' : library.type === 'recordings' ? 'recordings' : 'movies';
  const change = (next: Partial<View>) => navigate(routeOf(id, { ...view, ...next }), { replace: true });
  const filtered = view.genre !== undefined || view.unwatched;
  return (
    <section class="library">
      <div class="library-head">
        <div>
          <h1>{libraryName(library)}</h1>
          <p class="muted">
            {filtered ? `${library.total} of ${library.item_count}` : library.total} {library.total === 1 && !filtered ? noun.replace(/s$/, '') : noun}
            {library.type === 'recordings' && <> · scheduled and managed on the <a href={href('/recordings')}>Recordings page</a></>}
          </p>
        </div>
        {library.type !== 'recordings' && (
          <div class="library-controls">
            <label class="inline-select">
              <span>Sort</span>
              <select value={view.sort} onChange={(e) => change({ sort: (e.target as HTMLSelectElement).value as Sort })}>
                {SORTS.map((s) => <option key={s.value} value={s.value}>{s.label}</option>)}
              </select>
            </label>
            {library.genres.length > 0 && (
              <label class="inline-select">
                <span>Genre</span>
                <select value={view.genre ?? ''} onChange={(e) => change({ genre: (e.target as HTMLSelectElement).value || undefined })}>
                  <option value="">All</option>
                  {library.genres.map((g) => <option key={g} value={g}>{g}</option>)}
                </select>
              </label>
            )}
            <button type="button" class="chip" aria-pressed={view.unwatched} onClick={() => change({ unwatched: !view.unwatched })}>Unwatched</button>
          </div>
        )}
      </div>
      {view.sort === 'title' && library.letters.length > 1 && (
        <nav class="letters" aria-label="Jump to letter">
          {library.letters.map((l) => (
            <button key={l.letter} type="button" class="letter" aria-current={l.offset === base && items.length > 0 ? 'true' : undefined}
              onClick={() => { setItems([]); fetchPage(l.offset, true); }}>
              {l.letter ? l.letter.toUpperCase() : '#'}
            </button>
          ))}
        </nav>
      )}
      {items.length === 0 && !loading && !error && (filtered
        ? <Empty>Nothing matches these filters.</Empty>
        : <Empty>This library is empty. New files appear here after the next scan.</Empty>)}
      {base > 0 && <div class="library-more"><button type="button" class="button" onClick={() => { setItems([]); fetchPage(0, true); }}>Back to the start</button></div>}
      <div class="card-grid library-grid" ref={gridRef} style={{ paddingTop: shown.before, paddingBottom: shown.after }}>
        {items.slice(shown.start, shown.end).map((item) => <TitleCard key={item.id} item={item} wide={library.type === 'recordings'} />)}
      </div>
      {error !== undefined && <ErrorNote error={error} onRetry={() => fetchPage(base + items.length, false)} />}
      {loading && <Spinner />}
      {more && !loading && !error && (
        <div class="library-more" ref={endRef}>
          <button type="button" class="button" onClick={() => fetchPage(base + items.length, false)}>Show more</button>
        </div>
      )}
    </section>
  );
}
