/**
 * The VOD player (#/watch/vod/:id?t=&audio=): full-bleed video with its own
 * controls (play/pause, a seek bar that shows the time under the pointer,
 * audio, subtitles, quality with the reason when the server does not play
 * the file as it is, volume, full screen), hidden while playing until the
 * pointer moves. A track or quality changed while paused stays paused. When
 * an episode ends, the next one is offered with a countdown and plays unless
 * cancelled.
 */
import './vod-player.css';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError } from '../api.js';
import { Engine, type SubtitleChoice } from '../player/engine.js';
import { playerKeys } from '../player/keyboard.js';
import { audioLabel } from '../player/labels.js';
import { ProgressReporter } from '../player/progress.js';
import { episodeCode, heading, prepare, type Heading } from '../player/sources.js';
import { useSubtitleChoice } from '../player/subtitle-choice.js';
import { currentPath, navigate, routeQuery } from '../router.js';
import type { AudioStream, ItemDetail, PlayInfo, SubtitleTrack } from '../types.js';
import { describeError, formatDuration, Spinner, useTitle } from '../ui.js';

const enc = encodeURIComponent;
/** Seconds the next episode waits before it plays. */
export const UP_NEXT_SECONDS = 10;
/** The chrome hides this long after the pointer last moved, while playing. */
const IDLE_MS = 3000;
/** Qualities to ask for (maxBitrate, bits per second); "Auto" lets the server decide from the device. */
const QUALITIES: { label: string; maxBitrate?: number }[] = [
  { label: 'Auto' },
  { label: '1080p (7 Mb/s)', maxBitrate: 7_500_000 },
  { label: '720p (3.5 Mb/s)', maxBitrate: 3_800_000 },
  { label: '480p (1.5 Mb/s)', maxBitrate: 1_800_000 },
  { label: '360p (1 Mb/s)', maxBitrate: 1_300_000 },
];

interface Load {
  n: number;
  audioTrack?: number;
  maxBitrate?: number;
  start?: number;
  /** Load without playing (the video was paused when a track changed). */
  paused?: boolean;
}

/** How the server plays this load, in words: "Original file", or "Transcoded to 720p: video codec hevc not supported". */
function methodText(info: PlayInfo | undefined): string | undefined {
  if (!info) return undefined;
  const why = info.reasons?.length ? `: ${info.reasons.join(', ')}` : '';
  if (info.method === 'direct') return 'Original file';
  if (info.method === 'remux') return `Original streams, repackaged${why}`;
  if (info.method === 'audio-only') return `Original video, audio converted${why}`;
  return `Transcoded${info.height ? ` to ${info.height}p` : ''}${why}`;
}

export function VodPlayerView({ id }: { id: string }) {
  // A new title is a new player: nothing of the last one's state carries over.
  return <VodPlayer key={id} id={id} />;
}

function VodPlayer({ id }: { id: string }) {
  const videoRef = useRef<HTMLVideoElement>(null);
  const frameRef = useRef<HTMLDivElement>(null);
  const engineRef = useRef<Engine>();
  const reporterRef = useRef<ProgressReporter>();
  const [head, setHead] = useState<Heading>();
  const [item, setItem] = useState<ItemDetail>();
  const [load, setLoad] = useState<Load>(() => {
    const query = routeQuery(currentPath());
    const t = Number(query.get('t'));
    const audio = Number(query.get('audio'));
    return {
      n: 0,
      start: query.has('t') && Number.isFinite(t) && t >= 0 ? t : undefined,
      audioTrack: query.has('audio') && Number.isInteger(audio) && audio >= 0 ? audio : undefined,
    };
  });
  const [info, setInfo] = useState<PlayInfo>();
  const [failure, setFailure] = useState<{ error: unknown; notBefore?: number }>();
  const [waiting, setWaiting] = useState(true);
  const [apiTracks, setApiTracks] = useState<SubtitleTrack[]>([]);
  const [hlsTracks, setHlsTracks] = useState<SubtitleChoice[]>([]);
  const [mode, setMode] = useState<'pending' | 'hls' | 'file'>('pending');
  const [ended, setEnded] = useState(false);
  useTitle(head?.title ?? 'Player');

  const back = () => navigate(head?.back ?? `/item/${enc(id)}`, { replace: true });
  const backRef = useRef(back);
  backRef.current = back;

  // Once per title: the engine, the keys, the heading, the item (tracks, next episode) and its subtitles.
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
    heading('vod', id, signal).then(setHead, () => { /* the title is a nicety: playback goes on without it */ });
    api<ItemDetail>(`/item/${enc(id)}`, { signal }).then(setItem, () => {});
    api<{ tracks: SubtitleTrack[] }>(`/api/items/${enc(id)}/subtitle-tracks`, { signal }).then((r) => setApiTracks(r.tracks), () => {});
    return () => {
      controller.abort();
      removeKeys();
      reporterRef.current?.stop();
      reporterRef.current = undefined;
      engine.destroy();
      engineRef.current = undefined;
    };
  }, [id]);

  // Each load: first play, retry, another audio track or quality.
  useEffect(() => {
    const video = videoRef.current!;
    const engine = engineRef.current!;
    const controller = new AbortController();
    setFailure(undefined);
    setWaiting(true);
    setEnded(false);
    setHlsTracks([]);
    setMode('pending');
    const ready = () => setWaiting(false);
    video.addEventListener('playing', ready);
    // Loaded paused: nothing will play, the first frame is the sign it is ready.
    if (load.paused) video.addEventListener('loadeddata', ready);
    prepare('vod', id, { audioTrack: load.audioTrack, start: load.start, maxBitrate: load.maxBitrate }, controller.signal).then((prepared) => {
      if (controller.signal.aborted) return;
      setInfo(prepared.info);
      if (prepared.progressId && !reporterRef.current) reporterRef.current = new ProgressReporter(prepared.progressId, video);
      return engine.load({ ...prepared.source, paused: load.paused }, controller.signal).then(() => {
        if (!controller.signal.aborted) setMode(engine.hls ? 'hls' : 'file');
      });
    }).catch((error: Error) => {
      if (controller.signal.aborted || error.name === 'AbortError') return;
      const retryAfter = error instanceof ApiError ? error.retryAfter : undefined;
      setFailure({ error, notBefore: retryAfter ? Date.now() + retryAfter * 1000 : undefined });
    });
    return () => {
      controller.abort();
      video.removeEventListener('playing', ready);
      video.removeEventListener('loadeddata', ready);
      reporterRef.current?.pause();
    };
  }, [id, load]);

  const audio: AudioStream[] = item?.versions[0]?.audio ?? [];
  const audioTrack = load.audioTrack ?? (audio.find((a) => a.default) ?? audio[0])?.track;

  const { choices: subtitleChoices, selected: selectedSubtitle, choose: chooseSubtitle } = useSubtitleChoice(engineRef, mode, hlsTracks, apiTracks,
    (err) => setFailure({ error: new Error(`The subtitles could not be loaded: ${describeError(err)}`) }));

  /** Loads the title again from where it is, keeping it paused if it was. */
  const reload = (change: Partial<Load>) => {
    const video = videoRef.current!;
    setLoad((l) => ({ ...l, ...change, n: l.n + 1, start: video.currentTime || l.start, paused: video.paused && !video.ended && video.readyState > 0 }));
  };

  const chooseAudio = (track: number) => {
    const hls = engineRef.current?.hls;
    const position = audio.findIndex((a) => a.track === track);
    // A manifest with every audio rendition switches in place; ours carry one, so the title reloads with the other.
    if (hls && hls.audioTracks.length > 1 && position >= 0 && position < hls.audioTracks.length) {
      hls.audioTrack = position;
      setLoad((l) => ({ ...l, audioTrack: track }));
      return;
    }
    reload({ audioTrack: track });
  };

  return (
    <div class="vod-player player" ref={frameRef}>
      <video ref={videoRef} class="player-video" playsInline preload="auto" aria-label={head ? `Video: ${head.title}` : 'Video'}
        onEnded={() => setEnded(true)} onPlay={() => setEnded(false)} />
      {waiting && !failure && <div class="player-overlay waiting"><Spinner label="Loading video" /></div>}
      {failure && <Failure failure={failure} onRetry={() => reload({})} onBack={back} />}
      {ended && item?.next_episode_id && !failure && <UpNext nextId={item.next_episode_id} onCancel={() => setEnded(false)} />}
      <Chrome videoRef={videoRef} frameRef={frameRef} head={head} onBack={back}
        audio={audio} audioTrack={audioTrack} onAudio={chooseAudio}
        subtitles={subtitleChoices} subtitle={selectedSubtitle} onSubtitle={chooseSubtitle}
        info={info} maxBitrate={load.maxBitrate} onQuality={(maxBitrate) => reload({ maxBitrate })} />
    </div>
  );
}

interface ChromeProps {
  videoRef: { current: HTMLVideoElement | null };
  frameRef: { current: HTMLDivElement | null };
  head?: Heading;
  onBack(): void;
  audio: AudioStream[];
  audioTrack?: number;
  onAudio(track: number): void;
  subtitles: SubtitleChoice[];
  subtitle: string;
  onSubtitle(key: string): void;
  info?: PlayInfo;
  maxBitrate?: number;
  onQuality(maxBitrate: number | undefined): void;
}

/** What the <video> is doing, re-rendered on its events. */
function useVideoClock(videoRef: { current: HTMLVideoElement | null }) {
  const [, setTick] = useState(0);
  useEffect(() => {
    const video = videoRef.current!;
    const update = () => setTick((n) => n + 1);
    const names = ['play', 'pause', 'timeupdate', 'durationchange', 'volumechange', 'seeking', 'seeked', 'loadedmetadata', 'emptied'];
    for (const name of names) video.addEventListener(name, update);
    document.addEventListener('fullscreenchange', update);
    return () => {
      for (const name of names) video.removeEventListener(name, update);
      document.removeEventListener('fullscreenchange', update);
    };
  }, []);
  return videoRef.current;
}

function Chrome(props: ChromeProps) {
  const { videoRef, frameRef, head, info } = props;
  const video = useVideoClock(videoRef);
  const [active, setActive] = useState(true);
  const [hover, setHover] = useState<{ x: number; time: number }>();
  const timer = useRef<ReturnType<typeof setTimeout>>();
  const paused = !video || video.paused;
  const duration = video && Number.isFinite(video.duration) ? video.duration : 0;
  const time = video?.currentTime ?? 0;

  // Any pointer movement or key shows the chrome; it hides again after a while of playing.
  useEffect(() => {
    const frame = frameRef.current!;
    const wake = () => {
      setActive(true);
      clearTimeout(timer.current);
      timer.current = setTimeout(() => setActive(false), IDLE_MS);
    };
    wake();
    const events = ['pointermove', 'pointerdown', 'keydown', 'focusin'];
    for (const name of events) frame.addEventListener(name, wake);
    return () => { clearTimeout(timer.current); for (const name of events) frame.removeEventListener(name, wake); };
  }, []);
  const hidden = !active && !paused;
  // A tap on hidden controls only shows them (touch screens have no hover).
  const wasHidden = useRef(false);

  const toggle = () => { if (!video) return; if (video.paused) void video.play().catch(() => {}); else video.pause(); };
  const seekTo = (t: number) => { if (video && duration) video.currentTime = Math.max(0, Math.min(duration, t)); };
  const fullscreen = () => {
    if (document.fullscreenElement) void document.exitFullscreen().catch(() => {});
    else void frameRef.current?.requestFullscreen?.().catch(() => {});
  };
  const onSeekHover = (e: PointerEvent) => {
    const bar = e.currentTarget as HTMLElement;
    const box = bar.getBoundingClientRect();
    const fraction = Math.max(0, Math.min(1, (e.clientX - box.left) / box.width));
    setHover({ x: fraction * box.width, time: fraction * duration });
  };
  const quality = QUALITIES.findIndex((q) => q.maxBitrate === props.maxBitrate);
  const how = methodText(info);

  return (
    <div class={`vp-chrome${hidden ? ' hidden' : ''}`} onPointerDownCapture={() => { wasHidden.current = hidden; }}
      onClick={(e) => { if (e.target === e.currentTarget && !wasHidden.current) toggle(); }}>
      <div class="vp-top">
        <button type="button" class="button ghost player-back" onClick={props.onBack} aria-label="Back">
          <span aria-hidden="true">←</span><span class="player-back-label">Back</span>
        </button>
        <div class="player-heading">
          <h1 class="player-title">{head?.title ?? ' '}</h1>
          {head?.detail && <p class="player-detail">{head.detail}</p>}
        </div>
      </div>
      <div class="vp-bottom">
        <div class="vp-seek" onPointerMove={onSeekHover} onPointerLeave={() => setHover(undefined)}>
          {hover && duration > 0 && <span class="vp-preview" style={{ left: `${hover.x}px` }} aria-hidden="true">{formatDuration(hover.time)}</span>}
          <input type="range" class="vp-range" min={0} max={duration || 0} step={0.1} value={time} aria-label="Seek"
            aria-valuetext={`${formatDuration(time)} of ${formatDuration(duration)}`} disabled={!duration}
            onInput={(e) => seekTo(Number((e.target as HTMLInputElement).value))} />
        </div>
        <div class="vp-controls">
          <button type="button" class="vp-button" onClick={toggle} aria-label={paused ? 'Play' : 'Pause'}>{paused ? '▶' : '❚❚'}</button>
          <span class="vp-time">{formatDuration(time)} / {formatDuration(duration)}</span>
          <Volume video={video} />
          <span class="vp-spacer" />
          {props.audio.length > 1 && (
            <label class="inline-select vp-select">
              <span>Audio</span>
              <select value={String(props.audioTrack ?? '')} onChange={(e) => props.onAudio(Number((e.target as HTMLSelectElement).value))}>
                {props.audio.map((a) => <option key={a.track} value={String(a.track)}>{audioLabel(a)}</option>)}
              </select>
            </label>
          )}
          {props.subtitles.length > 0 && (
            <label class="inline-select vp-select">
              <span>Subtitles</span>
              <select value={props.subtitle} onChange={(e) => props.onSubtitle((e.target as HTMLSelectElement).value)}>
                <option value="off">Off</option>
                {props.subtitles.map((c) => <option key={c.key} value={c.key}>{c.label}</option>)}
              </select>
            </label>
          )}
          <label class="inline-select vp-select" title={how}>
            <span>Quality</span>
            <select value={String(Math.max(0, quality))} onChange={(e) => props.onQuality(QUALITIES[Number((e.target as HTMLSelectElement).value)].maxBitrate)}>
              {QUALITIES.map((q, i) => <option key={q.label} value={String(i)}>{q.label}</option>)}
            </select>
          </label>
          <button type="button" class="vp-button" onClick={fullscreen} aria-label={document.fullscreenElement ? 'Leave full screen' : 'Full screen'}><Icon d={FULL_SCREEN} /></button>
        </div>
        {how && <p class="vp-method" role="status">{how}</p>}
      </div>
    </div>
  );
}

// Icons as paths: the glyphs for these are missing from many system fonts.
const SPEAKER = 'M3 9v6h4l5 5V4L7 9H3zm13.5 3A4.5 4.5 0 0 0 14 8v8a4.5 4.5 0 0 0 2.5-4z';
const SPEAKER_MUTED = 'M3 9v6h4l5 5V4L7 9H3zm18.6 .4-1.4-1.4L18 10.2 15.8 8l-1.4 1.4 2.2 2.2-2.2 2.2 1.4 1.4 2.2-2.2 2.2 2.2 1.4-1.4-2.2-2.2z';
const FULL_SCREEN = 'M4 4h6v2H6v4H4V4zm10 0h6v6h-2V6h-4V4zM4 14h2v4h4v2H4v-6zm14 0h2v6h-6v-2h4v-4z';

function Icon({ d }: { d: string }) {
  return <svg viewBox="0 0 24 24" width="22" height="22" aria-hidden="true" fill="currentColor"><path d={d} /></svg>;
}

function Volume({ video }: { video: HTMLVideoElement | null }) {
  const muted = !video || video.muted || video.volume === 0;
  return (
    <span class="vp-volume">
      <button type="button" class="vp-button" aria-label={muted ? 'Unmute' : 'Mute'} onClick={() => { if (video) video.muted = !video.muted; }}>
        <Icon d={muted ? SPEAKER_MUTED : SPEAKER} />
      </button>
      <input type="range" class="vp-range vp-volume-range" min={0} max={1} step={0.05} value={video?.muted ? 0 : video?.volume ?? 1} aria-label="Volume"
        onInput={(e) => { if (!video) return; video.volume = Number((e.target as HTMLInputElement).value); video.muted = video.volume === 0; }} />
    </span>
  );
}

/** The next episode, offered when one ends: it plays when the countdown reaches 0, unless cancelled. */
function UpNext({ nextId, onCancel }: { nextId: string; onCancel(): void }) {
  const [next, setNext] = useState<ItemDetail>();
  const [left, setLeft] = useState(UP_NEXT_SECONDS);
  const playRef = useRef<HTMLButtonElement>(null);
  const play = () => navigate(`/watch/vod/${enc(nextId)}?t=0`, { replace: true });
  useEffect(() => {
    const controller = new AbortController();
    api<ItemDetail>(`/item/${enc(nextId)}`, { signal: controller.signal }).then(setNext, () => {});
    return () => controller.abort();
  }, [nextId]);
  useEffect(() => {
    if (left <= 0) { play(); return; }
    const timer = setTimeout(() => setLeft((n) => n - 1), 1000);
    return () => clearTimeout(timer);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [left]);
  useEffect(() => { playRef.current?.focus(); }, []);
  const code = next ? episodeCode(next) : undefined;
  return (
    <div class="vp-up-next" role="dialog" aria-label="Up next">
      <p class="muted">Up next</p>
      <h2>{next ? [code, next.title].filter(Boolean).join(' · ') : ' '}</h2>
      <p class="vp-countdown" role="timer" aria-live="polite">Plays in {left} s</p>
      <div class="row">
        <button type="button" class="button primary" ref={playRef} onClick={play}>▶ Play now</button>
        <button type="button" class="button" onClick={onCancel}>Cancel</button>
      </div>
    </div>
  );
}

function Failure({ failure, onRetry, onBack }: { failure: { error: unknown; notBefore?: number }; onRetry(): void; onBack(): void }) {
  const [now, setNow] = useState(Date.now());
  const wait = failure.notBefore ? Math.ceil((failure.notBefore - now) / 1000) : 0;
  useEffect(() => {
    if (wait <= 0) return;
    const timer = setTimeout(() => setNow(Date.now()), 1000);
    return () => clearTimeout(timer);
  }, [wait, now]);
  const status = failure.error instanceof ApiError ? failure.error.status : 0;
  return (
    <div class="player-overlay failure" role="alert">
      <div class="player-failure">
        <h2>This video cannot be played</h2>
        <p class="player-failure-message">{describeError(failure.error)}</p>
        {status === 404 && <p class="muted">It may have been removed or renamed since the library was last scanned.</p>}
        <div class="row">
          <button type="button" class="button primary" disabled={wait > 0} onClick={onRetry}>{wait > 0 ? `Try again in ${wait} s` : 'Try again'}</button>
          <button type="button" class="button" onClick={onBack}>Back</button>
        </div>
      </div>
    </div>
  );
}
