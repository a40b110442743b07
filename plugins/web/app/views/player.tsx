/**
 * The live and recording player (#/watch/live|recording/:id; VOD has its own,
 * vod-player.tsx): the browser's <video>, plus back, title, subtitle choice, an error
 * overlay with retry, keyboard shortcuts and progress reports. Sources and
 * headings come from player/sources.ts, the <video> plumbing (hls.js, tracks)
 * from player/engine.ts.
 */
import './player.css';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from '../api.js';
import { Engine, type SubtitleChoice } from '../player/engine.js';
import { playerKeys } from '../player/keyboard.js';
import { ProgressReporter } from '../player/progress.js';
import { heading, prepare, type Heading, type PlayerKind } from '../player/sources.js';
import { useSubtitleChoice } from '../player/subtitle-choice.js';
import { currentPath, href, navigate, routeQuery } from '../router.js';
import type { SubtitleTrack } from '../types.js';
import { describeError, Spinner, useTitle } from '../ui.js';
import { LiveControls } from './live-controls.js';

/** The page the last route change came from: Back returns there when it was not another player. */
let previousPage: string | undefined;
const hashOf = (url: string) => { try { return new URL(url).hash.replace(/^#/, '') || '/'; } catch { return undefined; } };
window.addEventListener('hashchange', (e) => {
  // navigate({ replace: true }) dispatches a bare event without URLs: it moved nowhere new.
  const from = hashOf(e.oldURL);
  if (from !== undefined) previousPage = from;
});

interface Load {
  n: number;
  start?: number;
}

/** Live channels and recordings have no subtitle files of their own: only what their HLS carries. */
const NO_API_TRACKS: SubtitleTrack[] = [];

interface Failure {
  error: unknown;
  /** Date.now() before which trying again is pointless (Retry-After). */
  notBefore?: number;
}

export function PlayerView({ kind, id }: { kind: PlayerKind; id: string }) {
  // A new title is a new player: nothing of the last one's state carries over.
  return <Player key={`${kind}/${id}`} kind={kind} id={id} />;
}

function Player({ kind, id }: { kind: PlayerKind; id: string }) {
  const videoRef = useRef<HTMLVideoElement>(null);
  const frameRef = useRef<HTMLDivElement>(null);
  const engineRef = useRef<Engine>();
  const reporterRef = useRef<ProgressReporter>();
  const [head, setHead] = useState<Heading>();
  const [load, setLoad] = useState<Load>(() => {
    const query = routeQuery(currentPath());
    const t = Number(query.get('t'));
    return { n: 0, start: query.has('t') && Number.isFinite(t) && t >= 0 ? t : undefined };
  });
  const [failure, setFailure] = useState<Failure>();
  const [waiting, setWaiting] = useState(true);
  const [hlsTracks, setHlsTracks] = useState<SubtitleChoice[]>([]);
  /** How the current load plays: until known, no subtitle choice is offered. */
  const [mode, setMode] = useState<'pending' | 'hls' | 'file'>('pending');
  useTitle(head?.title ?? 'Player');

  const back = () => {
    if (previousPage !== undefined && !previousPage.startsWith('/watch/')) history.back();
    else navigate(head?.back ?? (kind === 'live' ? '/live' : kind === 'recording' ? '/recordings' : '/'), { replace: true });
  };
  const backRef = useRef(back);
  backRef.current = back;

  // Once per title: the engine, the keys, the heading and what the tracks are.
  useEffect(() => {
    const video = videoRef.current!;
    const engine = new Engine(video, {
      fatal: (error) => setFailure({ error }),
      blocked: () => setWaiting(false),
      tracks: () => setHlsTracks(engine.hlsSubtitles()),
    });
    engineRef.current = engine;
    const removeKeys = playerKeys(video, frameRef.current!, () => backRef.current());
    const controller = new AbortController();
    const { signal } = controller;
    const loadHeading = () => heading(kind, id, signal).then(setHead, () => { /* the title is a nicety: playback goes on without it */ });
    void loadHeading();
    // The programme on air changes while one watches.
    const refresh = kind === 'live' ? setInterval(loadHeading, 60_000) : undefined;
    return () => {
      controller.abort();
      clearInterval(refresh);
      removeKeys();
      // The last report before the <video> is emptied.
      reporterRef.current?.stop();
      reporterRef.current = undefined;
      engine.destroy();
      engineRef.current = undefined;
    };
  }, [kind, id]);

  // Each load: first play, retry.
  useEffect(() => {
    const video = videoRef.current!;
    const engine = engineRef.current!;
    const controller = new AbortController();
    setFailure(undefined);
    setWaiting(true);
    setHlsTracks([]);
    setMode('pending');
    const playing = () => setWaiting(false);
    video.addEventListener('playing', playing);
    prepare(kind, id, { start: load.start }, controller.signal).then((prepared) => {
      if (controller.signal.aborted) return;
      if (prepared.progressId && !reporterRef.current) reporterRef.current = new ProgressReporter(prepared.progressId, video);
      return engine.load(prepared.source, controller.signal).then(() => {
        if (!controller.signal.aborted) setMode(engine.hls ? 'hls' : 'file');
      });
    }).catch((error: Error) => {
      if (controller.signal.aborted || error.name === 'AbortError') return;
      const retryAfter = error instanceof ApiError ? error.retryAfter : undefined;
      setFailure({ error, notBefore: retryAfter ? Date.now() + retryAfter * 1000 : undefined });
    });
    return () => {
      controller.abort();
      video.removeEventListener('playing', playing);
      reporterRef.current?.pause();
    };
  }, [kind, id, load]);

  const { choices: subtitleChoices, selected: selectedSubtitle, choose: chooseSubtitle } = useSubtitleChoice(engineRef, mode, hlsTracks, NO_API_TRACKS,
    (err) => setFailure({ error: new Error(`The subtitles could not be loaded: ${describeError(err)}`) }));

  const toggleFullscreen = () => {
    if (document.fullscreenElement) void document.exitFullscreen().catch(() => {});
    else void frameRef.current?.requestFullscreen?.().catch(() => {});
  };

  const retry = () => {
    const video = videoRef.current!;
    setLoad((l) => ({ n: l.n + 1, start: kind === 'live' ? undefined : (video.currentTime || l.start) }));
  };

  return (
    <div class="player" ref={frameRef}>
      <div class="player-bar">
        <button type="button" class="button ghost player-back" onClick={back} aria-label="Back">
          <span aria-hidden="true">←</span><span class="player-back-label">Back</span>
        </button>
        <div class="player-heading">
          <h1 class="player-title">{head?.title ?? ' '}</h1>
          {head?.detail && <p class="player-detail">{head.detail}</p>}
        </div>
        <div class="player-choices">
          {subtitleChoices.length > 0 && (
            <label class="player-select">
              <span>Subtitles</span>
              <select value={selectedSubtitle} onChange={(e) => chooseSubtitle((e.target as HTMLSelectElement).value)}>
                <option value="off">Off</option>
                {subtitleChoices.map((c) => <option key={c.key} value={c.key}>{c.label}</option>)}
              </select>
            </label>
          )}
        </div>
      </div>
      <div class="player-stage">
        <video ref={videoRef} class="player-video" controls={kind !== 'live'} playsInline preload="auto" aria-label={head ? `Video: ${head.title}` : 'Video'} />
        {kind === 'live' && <LiveControls id={id} video={() => videoRef.current} hls={() => engineRef.current?.hls} fullscreen={toggleFullscreen} />}
        {waiting && !failure && <div class="player-overlay waiting"><Spinner label={kind === 'live' ? 'Tuning' : 'Loading video'} /></div>}
        {failure && <FailureOverlay kind={kind} failure={failure} onRetry={retry} onBack={back} />}
      </div>
      <p class="player-keys muted">Space or K play/pause · ← → 10 s{kind === 'live' ? ' · Page Up/Down channel · G guide' : ''} · F full screen · Esc back</p>
    </div>
  );
}

function FailureOverlay({ kind, failure, onRetry, onBack }: { kind: PlayerKind; failure: Failure; onRetry(): void; onBack(): void }) {
  const [now, setNow] = useState(Date.now());
  const retryRef = useRef<HTMLButtonElement>(null);
  const wait = failure.notBefore ? Math.ceil((failure.notBefore - now) / 1000) : 0;
  useEffect(() => {
    if (wait <= 0) return;
    const timer = setTimeout(() => setNow(Date.now()), 1000);
    return () => clearTimeout(timer);
  }, [wait, now]);
  useEffect(() => { retryRef.current?.focus(); }, [failure]);
  const status = failure.error instanceof ApiError ? failure.error.status : 0;
  const title = kind === 'live' && status === 409 ? 'All tuners are busy' : kind === 'live' ? 'This channel cannot be played' : 'This video cannot be played';
  const hint = kind === 'live' && status === 409
    ? 'Stop watching a channel on another screen, or wait for a recording to finish, then try again.'
    : kind === 'live' && (status === 502 || status === 503) ? 'The channel\'s source did not answer: it may be offline. Try again in a moment.'
    : status === 404 ? 'It may have been removed or renamed since the library was last scanned.' : undefined;
  return (
    <div class="player-overlay failure" role="alert">
      <div class="player-failure">
        <h2>{title}</h2>
        <p class="player-failure-message">{failure.error instanceof ApiError ? failure.error.message : describeError(failure.error)}</p>
        {hint && <p class="muted">{hint}</p>}
        <div class="row">
          <button type="button" class="button primary" ref={retryRef} disabled={wait > 0} onClick={onRetry}>
            {wait > 0 ? `Try again in ${wait} s` : 'Try again'}
          </button>
          <button type="button" class="button" onClick={onBack}>Back</button>
          {status === 401 && <a class="button ghost" href={href('/')}>Home</a>}
        </div>
      </div>
    </div>
  );
}
