/**
 * An item's page (#/item/:id). A movie or an episode: its backdrop, poster,
 * plot and cast, audio and subtitles to play with, Play / Resume / Play from
 * start, one watched toggle, and under Details its versions with their
 * streams and its subtitle tracks. A series (or one of its seasons): its seasons
 * and, for the chosen one, the episodes, each playable.
 */
import './item.css';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { Picture } from '../artwork.js';
import { rememberedSubtitleLabel, rememberSubtitles } from '../player/subtitle-choice.js';
import { audioLabel, codecName, languageName, lengthLabel, resolutionName } from '../player/labels.js';
import { episodeCode } from '../player/sources.js';
import { markWatched, resumePosition, useVideoState } from '../player/watch-state.js';
import { href, navigate, routeQuery, usePath } from '../router.js';
import type { ItemDetail, ItemSummary, ItemVersion, SubtitleTrack } from '../types.js';
import { describeError, Empty, ErrorNote, formatBytes, formatDuration, Loaded, Spinner, titleColours, toast, useAsync, useTitle } from '../ui.js';

const enc = encodeURIComponent;
const loadItem = (id: string, signal: AbortSignal) => api<ItemDetail>(`/item/${enc(id)}`, { signal });

export function ItemView({ id }: { id: string }) {
  const state = useAsync((signal) => loadItem(id, signal), [id]);
  useTitle(state.data?.title);
  return (
    <Loaded state={state}>
      {(item) => item.type === 'series' || item.type === 'season' ? <ShowPage item={item} />
        : item.type === 'recording' ? <RecordingPage item={item} />
        : <VideoPage item={item} />}
    </Loaded>
  );
}

/** The poster over a gradient with the title (what shows while it loads, or when there is none). */
function Poster({ title, year, url }: { title: string; year?: number | null; url?: string | null }) {
  const [from, to] = titleColours(title);
  return (
    <div class="poster item-poster" style={{ background: `linear-gradient(150deg, ${from}, ${to})` }} aria-hidden="true">
      <span class="poster-title">{title}</span>
      {year && <span class="poster-year">{year}</span>}
      <Picture className="poster-image" url={url} width={220} eager />
    </div>
  );
}

/** The backdrop behind the hero, faded into the page. */
function Backdrop({ url }: { url: string | null | undefined }) {
  if (!url) return null;
  return <div class="item-backdrop" aria-hidden="true"><Picture url={url} width={1280} eager /></div>;
}

/** Plot, genres, cast and crew: what a page leads with. */
function About({ item }: { item: ItemDetail }) {
  const facts = [item.content_rating, item.rating !== null ? `★ ${item.rating.toFixed(1)}` : undefined, item.genres.join(', ') || undefined].filter(Boolean);
  return (
    <>
      {item.tagline && <p class="item-tagline">{item.tagline}</p>}
      {facts.length > 0 && <p class="muted item-facts">{facts.join(' · ')}</p>}
      {item.plot && <p class="item-plot">{item.plot}</p>}
      {item.directors.length > 0 && <p class="item-crew"><span class="muted">Directed by</span> {item.directors.join(', ')}</p>}
    </>
  );
}

function Cast({ item }: { item: ItemDetail }) {
  if (!item.cast.length) return null;
  return (
    <section class="section" aria-label="Cast">
      <h2>Cast</h2>
      <ul class="cast">
        {item.cast.slice(0, 24).map((c, i) => <li key={`${c.name}-${i}`}><span class="cast-name">{c.name}</span>{c.role && <span class="muted cast-role">{c.role}</span>}</li>)}
      </ul>
    </section>
  );
}

/** One button: watched or not (unwatched also starts a part-watched video over). */
function WatchedToggle({ videoId, title }: { videoId: string; title: string }) {
  const [busy, setBusy] = useState(false);
  const { entry } = useVideoState(videoId);
  if (!entry) return null;
  const watched = entry.watched;
  const mark = async () => {
    setBusy(true);
    try {
      await markWatched(videoId, !watched);
      toast(!watched ? `“${title}” marked as watched` : `“${title}” marked as unwatched`);
    } catch (err) {
      toast(describeError(err), 'error');
    } finally {
      setBusy(false);
    }
  };
  return (
    <button type="button" class="button" disabled={busy} aria-pressed={watched} onClick={() => { void mark(); }}>
      {watched ? 'Mark as unwatched' : '✓ Mark as watched'}
    </button>
  );
}

/** The tracks chosen before Play: audio goes in the player's URL, subtitles in the session's choice the player follows. */
interface Tracks { audio?: number }

function PlayButtons({ item, tracks }: { item: ItemSummary; tracks?: Tracks }) {
  const resume = resumePosition(useVideoState(item.id).entry);
  const audio = tracks?.audio !== undefined ? `&audio=${tracks.audio}` : '';
  const watch = (t: number) => href(`/watch/vod/${enc(item.id)}?t=${Math.floor(t)}${audio}`);
  if (resume === undefined) {
    return <a class="button primary" href={watch(0)} aria-label={`Play ${item.title}`}>▶ Play</a>;
  }
  return (
    <>
      <a class="button primary" href={watch(resume)}>▶ Resume from {formatDuration(resume)}</a>
      <a class="button" href={watch(0)}>Play from start</a>
    </>
  );
}

function Progress({ videoId }: { videoId: string }) {
  const { entry } = useVideoState(videoId);
  if (entry?.watched) return <span class="badge watched">Watched</span>;
  const resume = resumePosition(entry);
  if (resume === undefined || !entry?.duration) return null;
  return (
    <span class="item-progress" title={`${formatDuration(resume)} of ${formatDuration(entry.duration)}`}>
      <span class="progress-track"><span style={{ width: `${Math.min(100, (resume / entry.duration) * 100)}%` }} /></span>
      <span class="muted">{formatDuration(entry.duration - resume)} left</span>
    </span>
  );
}

/** Audio and subtitles, chosen before Play. */
function TrackChoice({ item, subtitles, tracks, onTracks }: { item: ItemDetail; subtitles: SubtitleTrack[]; tracks: Tracks; onTracks(t: Tracks): void }) {
  const audio = item.versions[0]?.audio ?? [];
  const [subtitle, setSubtitle] = useState(() => rememberedSubtitleLabel(subtitles));
  if (audio.length < 2 && !subtitles.length) return null;
  const chosenAudio = tracks.audio ?? (audio.find((a) => a.default) ?? audio[0])?.track;
  return (
    <div class="row track-choice">
      {audio.length > 1 && (
        <label class="inline-select">
          <span>Audio</span>
          <select value={String(chosenAudio)} onChange={(e) => onTracks({ ...tracks, audio: Number((e.target as HTMLSelectElement).value) })}>
            {audio.map((a) => <option key={a.track} value={String(a.track)}>{audioLabel(a)}</option>)}
          </select>
        </label>
      )}
      {subtitles.length > 0 && (
        <label class="inline-select">
          <span>Subtitles</span>
          <select value={subtitle} onChange={(e) => {
            const label = (e.target as HTMLSelectElement).value;
            setSubtitle(label);
            const track = subtitles.find((t) => t.label === label);
            rememberSubtitles(track ? { label: track.label, language: track.language } : 'off');
          }}>
            <option value="">Off</option>
            {subtitles.map((t) => <option key={t.url} value={t.label}>{t.label}</option>)}
          </select>
        </label>
      )}
    </div>
  );
}

/** The series and season an episode belongs to. */
function useEpisodeParents(item: ItemDetail) {
  return useAsync(async (signal) => {
    if (item.type !== 'episode' || !item.parent_id) return {};
    const season = await loadItem(item.parent_id, signal);
    const series = season.parent_id ? await loadItem(season.parent_id, signal) : undefined;
    return { season, series };
  }, [item.id]);
}

function VideoPage({ item }: { item: ItemDetail }) {
  const progress = useVideoState(item.id);
  const parents = useEpisodeParents(item);
  const subtitles = useAsync((signal) => api<{ tracks: SubtitleTrack[] }>(`/api/items/${enc(item.id)}/subtitle-tracks`, { signal }), [item.id]);
  const [tracks, setTracks] = useState<Tracks>({});
  const series = parents.data?.series;
  const meta = [episodeCode(item), item.year, item.duration ? lengthLabel(item.duration) : undefined].filter(Boolean).join(' · ');
  return (
    <article class="item-page">
      <Backdrop url={item.backdrop_url ?? series?.backdrop_url} />
      <div class="item-hero">
        <Poster title={series?.title ?? item.title} year={series ? undefined : item.year} url={item.poster_url ?? series?.poster_url} />
        <div class="item-summary">
          {series && <p class="item-kicker"><a href={href(`/item/${enc(series.id)}`)}>{series.title}</a>{parents.data?.season && <> · {parents.data.season.title}</>}</p>}
          <h1>{item.title}</h1>
          {meta && <p class="muted item-meta">{meta}</p>}
          <About item={item} />
          <Progress videoId={item.id} />
          {progress.error && <ErrorNote error={progress.error} onRetry={progress.retry} />}
          {subtitles.data && <TrackChoice item={item} subtitles={subtitles.data.tracks} tracks={tracks} onTracks={setTracks} />}
          <div class="row item-actions">
            {!progress.entry && !progress.error ? <Spinner label="Loading progress" /> : <PlayButtons item={item} tracks={tracks} />}
            <WatchedToggle videoId={item.id} title={item.title} />
          </div>
        </div>
      </div>
      <Cast item={item} />
      <details class="section item-details">
        <summary><h2>Details</h2></summary>
        <h3>{item.versions.length > 1 ? 'Versions' : 'File'}</h3>
        {item.versions.length ? item.versions.map((v) => <VersionDetails key={v.version} version={v} />) : <Empty>No playable file.</Empty>}
        <h3>Subtitles</h3>
        <Loaded state={subtitles}>
          {({ tracks: list }) => list.length
            ? <ul class="track-list">{list.map((t) => <li key={t.url}>{t.label}<span class="muted"> · {t.codec ? t.codec.toUpperCase() : 'WebVTT'}{t.external ? ' · file beside the video' : ' · in the file'}</span></li>)}</ul>
            : <p class="muted">No text subtitle tracks.</p>}
        </Loaded>
      </details>
    </article>
  );
}

function VersionDetails({ version: v }: { version: ItemVersion }) {
  const video = v.video;
  // Files often flag every track default; the flag says something only when one track has it.
  const oneDefault = v.audio.filter((a) => a.default).length === 1;
  return (
    <div class="version">
      <h3>{v.label ?? v.file_name}</h3>
      <dl class="facts">
        {v.label && <><dt>File</dt><dd>{v.file_name}</dd></>}
        <dt>Container</dt><dd>{v.container.toUpperCase()} · {formatBytes(v.size)} · {formatDuration(v.duration)}{v.bitrate ? ` · ${(v.bitrate / 1e6).toFixed(1)} Mb/s` : ''}</dd>
        {video && <><dt>Video</dt><dd>{resolutionName(video.width, video.height)} ({video.width}×{video.height}) · {video.codec.toUpperCase()}{video.profile ? ` ${video.profile}` : ''}{video.hdr ? ' · HDR' : ''}{video.fps ? ` · ${Math.round(video.fps * 100) / 100} fps` : ''}</dd></>}
        <dt>Audio</dt>
        <dd>{v.audio.length ? <ul>{v.audio.map((a) => <li key={a.index}>{audioLabel(a)}{a.default && oneDefault ? <span class="muted"> · default</span> : null}</li>)}</ul> : 'None'}</dd>
      </dl>
    </div>
  );
}

function RecordingPage({ item }: { item: ItemDetail }) {
  const recording = /^rec-(\d+)$/.exec(item.id)?.[1];
  return (
    <article class="item-page">
      <div class="item-hero">
        <Poster title={item.title} />
        <div class="item-summary">
          <p class="item-kicker">A recording · scheduled and managed on the <a href={href('/recordings')}>Recordings page</a></p>
          <h1>{item.title}</h1>
          {item.duration ? <p class="muted">{lengthLabel(item.duration)}</p> : null}
          <Progress videoId={item.id} />
          <div class="row item-actions">
            {recording && <a class="button primary" href={href(`/watch/recording/${recording}`)}>▶ Play</a>}
            <WatchedToggle videoId={item.id} title={item.title} />
          </div>
        </div>
      </div>
    </article>
  );
}

function ShowPage({ item }: { item: ItemDetail }) {
  const path = usePath();
  // A season's page is its series' page with that season chosen.
  const series = useAsync((signal) => (item.type === 'season' && item.parent_id ? loadItem(item.parent_id, signal) : Promise.resolve(item)), [item.id]);
  if (series.error) return <ErrorNote error={series.error} onRetry={series.reload} />;
  if (!series.data) return <Spinner />;
  const show = series.data;
  const seasons = show.type === 'series' ? show.children : [item];
  const wanted = item.type === 'season' ? item.id : routeQuery(path).get('season');
  const season = seasons.find((s) => s.id === wanted) ?? seasons[0];
  const chooseSeason = (id: string) => navigate(`/item/${enc(show.id)}?season=${enc(id)}`, { replace: true });
  return (
    <article class="item-page">
      <Backdrop url={show.backdrop_url} />
      <div class="item-hero">
        <Poster title={show.title} year={show.year} url={show.poster_url} />
        <div class="item-summary">
          <h1>{show.title}</h1>
          <p class="muted item-meta">{[show.year, `${seasons.length} season${seasons.length === 1 ? '' : 's'}`].filter(Boolean).join(' · ')}</p>
          <About item={show} />
        </div>
      </div>
      <Cast item={show} />
      {seasons.length === 0 ? <Empty>No episodes yet.</Empty> : (
        <section class="section">
          {seasons.length > 1 && (
            <div class="chips season-chips" role="group" aria-label="Season">
              {seasons.map((s) => <button key={s.id} type="button" class="chip" aria-pressed={s.id === season.id} onClick={() => chooseSeason(s.id)}>{s.title}</button>)}
            </div>
          )}
          <SeasonEpisodes seasonId={season.id} />
        </section>
      )}
    </article>
  );
}

function SeasonEpisodes({ seasonId }: { seasonId: string }) {
  const state = useAsync((signal) => loadItem(seasonId, signal), [seasonId]);
  return (
    <Loaded state={state}>
      {(season) => (
        <>
          <h2>{season.title}</h2>
          {season.children.length ? (
            <ol class="episodes">
              {season.children.map((e) => <EpisodeRow key={e.id} episode={e} />)}
            </ol>
          ) : <Empty>No episodes in this season.</Empty>}
        </>
      )}
    </Loaded>
  );
}

function EpisodeRow({ episode }: { episode: ItemSummary }) {
  const code = episodeCode(episode);
  const resume = resumePosition(useVideoState(episode.id).entry);
  const watch = `/watch/vod/${enc(episode.id)}`;
  return (
    <li class="episode">
      <span class="episode-code">{code ?? '—'}</span>
      <div class="episode-body">
        <a class="episode-title" href={href(`/item/${enc(episode.id)}`)}>{episode.title}</a>
        <span class="muted episode-meta">{episode.duration ? lengthLabel(episode.duration) : ''}</span>
        <Progress videoId={episode.id} />
      </div>
      <a class="button small primary" href={href(resume === undefined ? `${watch}?t=0` : `${watch}?t=${Math.floor(resume)}`)}
        aria-label={`${resume === undefined ? 'Play' : 'Resume'} ${code ? `${code} ` : ''}${episode.title}`}>
        ▶ {resume === undefined ? 'Play' : 'Resume'}
      </a>
    </li>
  );
}
