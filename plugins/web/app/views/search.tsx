/**
 * The header's search box: results grouped by kind (movies, shows, episodes,
 * channels, programmes) while typing. A request goes out once typing pauses
 * (DEBOUNCE_MS) and aborts the one before it, so a fast typist never queues
 * requests and a stale answer never replaces a newer one.
 */
import './search.css';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api.js';
import { Picture } from '../artwork.js';
import { episodeCode } from '../player/sources.js';
import { href, navigate, usePath } from '../router.js';
import type { SearchItem, SearchResult } from '../types.js';
import { describeError, formatDateTime } from '../ui.js';

const DEBOUNCE_MS = 150;
const LIMIT = 8;
const enc = encodeURIComponent;

interface Hit { key: string; href: string; title: string; detail?: string; picture?: string | null }
interface Group { label: string; hits: Hit[] }

function itemHit(i: SearchItem): Hit {
  const detail = i.type === 'episode' ? [i.series_title, episodeCode(i)].filter(Boolean).join(' · ') : i.year ? String(i.year) : undefined;
  return { key: i.id, href: `/item/${enc(i.id)}`, title: i.title, detail, picture: i.poster_url };
}

function groups(r: SearchResult): Group[] {
  return [
    { label: 'Movies', hits: r.movies.map(itemHit) },
    { label: 'Shows', hits: r.shows.map(itemHit) },
    { label: 'Episodes', hits: r.episodes.map(itemHit) },
    { label: 'Channels', hits: r.channels.map((c) => ({ key: `c${c.id}`, href: `/watch/live/${c.id}`, title: c.name, detail: c.number })) },
    { label: 'Programmes', hits: r.programmes.map((p) => ({ key: `p${p.id}`, href: '/guide', title: p.sub_title ? `${p.title}: ${p.sub_title}` : p.title, detail: `${p.channel_number} ${p.channel_name} · ${formatDateTime(p.start)}` })) },
  ].filter((g) => g.hits.length > 0);
}

export function HeaderSearch() {
  const path = usePath();
  const [text, setText] = useState('');
  const [open, setOpen] = useState(false);
  const [result, setResult] = useState<SearchResult>();
  const [error, setError] = useState<unknown>();
  const [active, setActive] = useState(-1);
  const boxRef = useRef<HTMLDivElement>(null);
  const query = text.trim();

  useEffect(() => {
    setError(undefined);
    if (!query) { setResult(undefined); return; }
    const controller = new AbortController();
    const timer = setTimeout(() => {
      api<SearchResult>(`/api/search?q=${enc(query)}&limit=${LIMIT}`, { signal: controller.signal }).then(
        (r) => { setResult(r); setActive(-1); },
        (err: Error) => { if (err.name !== 'AbortError') setError(err); },
      );
    }, DEBOUNCE_MS);
    return () => { clearTimeout(timer); controller.abort(); };
  }, [query]);

  // Going somewhere closes the results.
  useEffect(() => setOpen(false), [path]);

  useEffect(() => {
    if (!open) return;
    const outside = (e: PointerEvent) => { if (!boxRef.current?.contains(e.target as Node)) setOpen(false); };
    document.addEventListener('pointerdown', outside);
    return () => document.removeEventListener('pointerdown', outside);
  }, [open]);

  const list = result && result.query === query ? groups(result) : [];
  const flat = list.flatMap((g) => g.hits);
  const go = (hit: Hit) => { setOpen(false); setText(''); navigate(hit.href); };
  const onKey = (e: KeyboardEvent) => {
    if (e.key === 'Escape') { setOpen(false); (e.target as HTMLInputElement).blur(); }
    else if (e.key === 'ArrowDown' && flat.length) { e.preventDefault(); setOpen(true); setActive((a) => (a + 1) % flat.length); }
    else if (e.key === 'ArrowUp' && flat.length) { e.preventDefault(); setActive((a) => (a <= 0 ? flat.length - 1 : a - 1)); }
    else if (e.key === 'Enter' && flat.length) { e.preventDefault(); go(flat[Math.max(0, active)]); }
  };

  let index = -1;
  return (
    <div class="header-search" ref={boxRef} role="search">
      <input type="search" placeholder="Search" aria-label="Search movies, shows, channels and programmes" value={text}
        role="combobox" aria-expanded={open && query !== ''} aria-controls="search-results" aria-autocomplete="list"
        aria-activedescendant={active >= 0 ? `search-hit-${active}` : undefined}
        onInput={(e) => { setText((e.target as HTMLInputElement).value); setOpen(true); }} onFocus={() => setOpen(true)} onKeyDown={onKey} />
      {open && query && (
        <div class="search-results" id="search-results" role="listbox" aria-label="Search results">
          {error !== undefined ? <p class="search-note" role="alert">{describeError(error)}</p>
            : !result || result.query !== query ? <p class="search-note muted">Searching…</p>
            : !list.length ? <p class="search-note muted">Nothing found for “{query}”.</p>
            : list.map((g) => (
              <section key={g.label} class="search-group" aria-label={g.label}>
                <h2>{g.label}</h2>
                {g.hits.map((hit) => {
                  const i = ++index;
                  return (
                    <a key={hit.key} id={`search-hit-${i}`} role="option" aria-selected={i === active} class={`search-hit${i === active ? ' active' : ''}`}
                      href={href(hit.href)} onClick={(e) => { e.preventDefault(); go(hit); }}>
                      <span class="search-thumb" aria-hidden="true"><Picture url={hit.picture} width={36} /></span>
                      <span class="search-text"><span class="search-title">{hit.title}</span>{hit.detail && <span class="muted search-detail">{hit.detail}</span>}</span>
                    </a>
                  );
                })}
              </section>
            ))}
        </div>
      )}
    </div>
  );
}
