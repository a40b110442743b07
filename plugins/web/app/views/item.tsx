/**
 * An item's page (#/item/:id). A movie or an episode: what it is, Play /
 * Resume / Play from start, watched or not, and its versions with their
 * streams and subtitle tracks. A series (or one of its seasons): its seasons
 * and, for the chosen one, the episodes, each playable.
 */
import './item.css';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
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

function Poster({ title, year }: { title: string; year?: number | null }) {
  const [from, to] = titleColours(title);
  return (
    <div class="poster item-poster" style={{ background: `linear-gradient(150deg, ${from}, ${to})` }} aria-hidden="true">
      <span class="poster-title">{title}</span>
      {year && <span class="poster-year">{year}</span>}
    </div>
  );
}

function WatchedButtons({ videoId, title }: { videoId: string; title: string }) {
  const [busy, setBusy] = useState(false);
  const { entry } = useVideoState(videoId);
  const mark = async (watched: boolean) => {
    setBusy(true);
    try {
      await markWatched(videoId, watched);
      toast(watched ? `“${title}” marked as watched` : `“${title}” marked as unwatched`);
    } catch (err) {
      toast(describeError(err), 'error');
    } finally {
      setBusy(false);
    }
  };
  if (!entry) return null;
  // Unwatched also starts a part-watched video over, so it is offered then too.
  const offerWatched = !entry.watched;
  const offerUnwatched = entry.watched || entry.position > 0;
  return (
    <>
      {offerWatched && <button type="button" class="button" disabled={busy} onClick={() => { void mark(true); }}>✓ Mark as watched</button>}
      {offerUnwatched && <button type="button" class="button" disabled={busy} onClick={() => { void mark(false); }}>Mark as unwatched</button>}
    </>
  );
}

function PlayButtons({ item }: { item: ItemSummary }) {
  const resume = resumePosition(useVideoState(item.id).entry);
  const watch = `/watch/vod/${enc(item.id)}`;
  if (resume === undefined) {
    return <a class="button primary" href={href(`${watch}?t=0`)} aria-label={`Play ${item.title}`}>▶ Play</a>;
  }
  return (
    <>
      <a class="button primary" href={href(`${watch}?t=${Math.floor(resume)}`)}>▶ Resume from {formatDuration(resume)}</a>
      <a class="button" href={href(`${watch}?t=0`)}>Play from start</a>
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
  const series = parents.data?.series;
  const meta = [episodeCode(item), item.year, item.duration ? lengthLabel(item.duration) : undefined].filter(Boolean).join(' · ');
  return (
    <article class="item-page">
      <div class="item-hero">
        <Poster title={series?.title ?? item.title} year={series ? undefined : item.year} />
        <div class="item-summary">
          {series && <p class="item-kicker"><a href={href(`/item/${enc(series.id)}`)}>{series.title}</a>{parents.data?.season && <> · {parents.data.season.title}</>}</p>}
          <h1>{item.title}</h1>
          {meta && <p class="muted item-meta">{meta}</p>}
          <Progress videoId={item.id} />
          {progress.error && <ErrorNote error={progress.error} onRetry={progress.retry} />}
          <div class="row item-actions">
            {!progress.entry && !progress.error ? <Spinner label="Loading progress" /> : <PlayButtons item={item} />}
            <WatchedButtons videoId={item.id} title={item.title} />
          </div>
        </div>
      </div>
      <section class="section">
        <h2>{item.versions.length > 1 ? 'Versions' : 'File'}</h2>
        {item.versions.length ? item.versions.map((v) => <VersionDetails key={v.version} version={v} />) : <Empty>No playable file.</Empty>}
      </section>
      <section class="section">
        <h2>Subtitles</h2>
        <Loaded state={subtitles}>
          {({ tracks }) => tracks.length
            ? <ul class="track-list">{tracks.map((t) => <li key={t.url}>{t.label}<span class="muted"> · {t.codec ? t.codec.toUpperCase() : 'WebVTT'}{t.external ? ' · file beside the video' : ' · in the file'}</span></li>)}</ul>
            : <p class="muted">No text subtitle tracks.</p>}
        </Loaded>
      </section>
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
        {v.subtitles.length > 0 && <>
          <dt>Subtitle streams</dt>
          <dd><ul>{v.subtitles.map((s) => <li key={s.index}>{s.title ?? languageName(s.language) ?? 'Unknown language'} <span class="muted">· {codecName(s.codec)}{s.forced ? ' · forced' : ''}</span></li>)}</ul></dd>
        </>}
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
          <p class="item-kicker"><a href={href('/recordings')}>Recordings</a></p>
          <h1>{item.title}</h1>
          {item.duration ? <p class="muted">{lengthLabel(item.duration)}</p> : null}
          <Progress videoId={item.id} />
          <div class="row item-actions">
            {recording && <a class="button primary" href={href(`/watch/recording/${recording}`)}>▶ Play</a>}
            <WatchedButtons videoId={item.id} title={item.title} />
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
      <div class="item-hero">
        <Poster title={show.title} year={show.year} />
        <div class="item-summary">
          <h1>{show.title}</h1>
          <p class="muted item-meta">{[show.year, `${seasons.length} season${seasons.length === 1 ? '' : 's'}`].filter(Boolean).join(' · ')}</p>
        </div>
      </div>
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
