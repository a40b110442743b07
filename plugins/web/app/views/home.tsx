/**
 * Home (#/): Continue watching (movies and episodes left part-way, and the
 * next episode up), recordings left part-way, then each library as a row of
 * what was added most recently.
 */
import './home.css';
import { api } from '../api.js';
import { Picture } from '../artwork.js';
import { loadContinueWatching, removeFromContinueWatching, useWatchState, knownEntry } from '../player/watch-state.js';
import { episodeCode } from '../player/sources.js';
import { href } from '../router.js';
import type { ContinueEntry, Library, LibraryPage } from '../types.js';
import { describeError, Empty, ErrorNote, formatDuration, Loaded, Spinner, titleColours, toast, useAsync, useTitle } from '../ui.js';
import { libraryName, TitleCard } from './library.js';

const ROW = 16;

function watchHref(entry: ContinueEntry): string {
  const recording = entry.contentType === 'recording' && /^rec-(\d+)$/.exec(entry.videoId);
  return recording ? href(`/watch/recording/${recording[1]}`) : href(`/watch/vod/${encodeURIComponent(entry.videoId)}`);
}

function remaining(entry: ContinueEntry): string {
  if (entry.position < 1) return entry.contentType === 'episode' ? 'Up next' : entry.duration ? formatDuration(entry.duration) : 'Not started';
  if (!entry.duration) return `Watched ${formatDuration(entry.position)}`;
  const left = Math.max(0, entry.duration - entry.position);
  return left >= 60 ? `${Math.round(left / 60)} min left` : `${Math.round(left)} s left`;
}

/** "Show · S01E02 · Title" for an episode, else the title. */
export function continueName(entry: ContinueEntry): string {
  if (entry.contentType !== 'episode' || !entry.series_title) return entry.title;
  const code = entry.episode_number != null ? episodeCode({ season_number: entry.season_number ?? null, episode_number: entry.episode_number }) : undefined;
  return [entry.series_title, code, entry.title].filter(Boolean).join(' · ');
}

/** `poster`: the listed entry's picture (entries this session updated since carry none). */
function ContinueCard({ entry, poster }: { entry: ContinueEntry; poster: string | null | undefined }) {
  const name = continueName(entry);
  const [from, to] = titleColours(entry.series_title ?? entry.title);
  const fraction = entry.duration ? Math.min(1, entry.position / entry.duration) : 0;
  const remove = async () => {
    try {
      await removeFromContinueWatching(entry.videoId);
      toast(`Removed “${name}” from Continue watching`);
    } catch (err) {
      toast(describeError(err), 'error');
    }
  };
  return (
    <div class="continue-card">
      <a class="card" href={watchHref(entry)} aria-label={`${entry.position >= 1 ? 'Resume' : 'Play'} ${name}, ${remaining(entry)}`}>
        <div class="poster wide" style={{ background: `linear-gradient(150deg, ${from}, ${to})` }} aria-hidden="true">
          <span class="poster-title">{entry.series_title ?? entry.title}</span>
          <Picture className="poster-image" url={poster} width={260} />
          <span class="continue-play">▶</span>
          {fraction > 0 && <span class="progress"><span style={{ width: `${fraction * 100}%` }} /></span>}
        </div>
        <span class="card-title" aria-hidden="true" title={name}>{name}</span>
        <span class="card-meta" aria-hidden="true">{remaining(entry)}</span>
      </a>
      <button type="button" class="icon-button continue-remove" aria-label={`Remove ${name} from Continue watching`} title="Remove from Continue watching" onClick={() => { void remove(); }}>×</button>
    </div>
  );
}

function ContinueRow({ type, title }: { type: 'vod' | 'live_tv'; title: string }) {
  useWatchState();
  const state = useAsync((signal) => loadContinueWatching(type, ROW, signal), [type]);
  if (state.error) return <section class="section"><h2>{title}</h2><ErrorNote error={state.error} onRetry={state.reload} /></section>;
  // Entries this session saw finished or removed leave at once; the rest wait for the next visit.
  const items = (state.data ?? []).filter((e) => { const now = knownEntry(e.videoId); return now !== undefined && !now.watched; });
  if (!items.length) return null;
  return (
    <section class="section" aria-label={title}>
      <div class="section-head"><h2>{title}</h2></div>
      <div class="card-row continue-row">
        {items.map((e) => <ContinueCard key={e.videoId} entry={knownEntry(e.videoId) ?? e} poster={e.poster_url} />)}
      </div>
    </section>
  );
}

function LibraryRow({ library }: { library: Library }) {
  const state = useAsync((signal) => api<LibraryPage>(`/library/${library.id}?sort=added&limit=${ROW}`, { signal }), [library.id]);
  return (
    <section class="section" aria-label={libraryName(library)}>
      <div class="section-head">
        <h2><a class="row-link" href={href(`/library/${library.id}`)}>{libraryName(library)}</a></h2>
        <a href={href(`/library/${library.id}`)} aria-label={`See all of ${libraryName(library)}`}>See all ({library.item_count})</a>
      </div>
      <Loaded state={state}>
        {(page) => page.items.length
          ? <div class="card-row">{page.items.map((item) => <TitleCard key={item.id} item={item} wide={library.type === 'recordings'} />)}</div>
          : <p class="muted">Nothing here yet.</p>}
      </Loaded>
    </section>
  );
}

export function HomeView() {
  useTitle('Home');
  const libraries = useAsync((signal) => api<{ libraries: Library[] }>('/libraries', { signal }), []);
  return (
    <div class="home">
      <h1 class="visually-hidden">Home</h1>
      <ContinueRow type="vod" title="Continue watching" />
      <ContinueRow type="live_tv" title="Recordings to finish" />
      {libraries.error ? <ErrorNote error={libraries.error} onRetry={libraries.reload} />
        : !libraries.data ? <Spinner />
        : !libraries.data.libraries.length
          ? <Empty>No libraries yet. An administrator can add movie and show folders; live TV is under <a href={href('/live')}>Live TV</a>.</Empty>
          : libraries.data.libraries.filter((l) => l.item_count > 0 || l.type !== 'recordings').map((l) => <LibraryRow key={l.id} library={l} />)}
    </div>
  );
}
