/**
 * The live player's controls, in place of the <video>'s own (which show a
 * live stream as a short clip): play/pause, a seek bar over the time-shift
 * window with the programmes' boundaries, the LIVE badge and "Jump to live",
 * "Start over", channel up/down (buttons, Page Up/Down and a remote's
 * Channel keys) and a mini-guide of now and next on nearby channels (G).
 */
import './live-controls.css';
import type HlsType from 'hls.js';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api.js';
import { behindLive, LIVE_SLACK_SECONDS, liveEdge, livePosition, miniGuide, programmesOf, zapTargets, type GuideRow, type LivePosition } from '../player/live.js';
import { navigate } from '../router.js';
import type { Channel, Program } from '../types.js';
import { describeError, formatClock } from '../ui.js';

const TICK_MS = 500;
const GUIDE_REFRESH_MS = 60_000;

interface Props {
  id: string;
  video: () => HTMLVideoElement | null;
  hls: () => HlsType | undefined;
  fullscreen: () => void;
}

const clock = (ms: number) => new Date(ms).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });

function minutesSeconds(seconds: number): string {
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const rest = String(s % 60).padStart(2, '0');
  return h ? `${h}:${String(m).padStart(2, '0')}:${rest}` : `${m}:${rest}`;
}

function isField(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  return !!el?.tagName && (el.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName));
}

export function LiveControls({ id, video, hls, fullscreen }: Props) {
  const [at, setAt] = useState<LivePosition>();
  const [paused, setPaused] = useState(false);
  const [muted, setMuted] = useState(false);
  const [channels, setChannels] = useState<Channel[]>([]);
  const [programmes, setProgrammes] = useState<Program[]>([]);
  const [guideOpen, setGuideOpen] = useState(false);
  const [guide, setGuide] = useState<{ rows?: GuideRow[]; error?: unknown }>({});
  const { previous, next, index } = zapTargets(channels, id);
  const zap = (channel: Channel | GuideRow | undefined) => {
    if (channel && String(channel.id) !== id) navigate(`/watch/live/${channel.id}`, { replace: true });
  };

  // The window and the position, a few times a second and at once on the <video>'s own events.
  useEffect(() => {
    const v = video();
    if (!v) return;
    const update = () => {
      setAt(livePosition(v, hls()));
      setPaused(v.paused);
      setMuted(v.muted);
    };
    const events = ['play', 'pause', 'seeked', 'volumechange', 'loadedmetadata'];
    for (const e of events) v.addEventListener(e, update);
    const timer = setInterval(update, TICK_MS);
    return () => {
      clearInterval(timer);
      for (const e of events) v.removeEventListener(e, update);
    };
  }, [id]);

  useEffect(() => {
    const controller = new AbortController();
    api<{ channels: Channel[] }>('/channels', { signal: controller.signal }).then((r) => setChannels(r.channels), () => {});
    return () => controller.abort();
  }, []);

  // The channel's programmes over the window, for the boundaries and "Start over".
  const windowStart = at?.epoch === undefined ? undefined : at.epoch + at.start * 1000;
  const minute = Math.floor(Date.now() / GUIDE_REFRESH_MS);
  useEffect(() => {
    if (index < 0 || windowStart === undefined) return;
    const controller = new AbortController();
    programmesOf(index, Number(id), windowStart - GUIDE_REFRESH_MS, Date.now() + 3600_000, controller.signal).then(setProgrammes, () => {});
    return () => controller.abort();
  }, [id, index, windowStart === undefined, minute]);

  useEffect(() => {
    if (!guideOpen || index < 0) return;
    const controller = new AbortController();
    const load = () => miniGuide(index, controller.signal).then((rows) => setGuide({ rows }), (error: Error) => {
      if (error.name !== 'AbortError') setGuide({ error });
    });
    void load();
    const timer = setInterval(load, GUIDE_REFRESH_MS);
    return () => { controller.abort(); clearInterval(timer); };
  }, [guideOpen, index]);

  const seek = (to: number) => {
    const v = video();
    if (v && at) v.currentTime = Math.max(at.start, Math.min(to, at.end));
  };
  const jumpToLive = () => {
    const v = video();
    if (!v || !at) return;
    v.currentTime = liveEdge(at, hls());
    if (v.paused) void v.play().catch(() => {});
  };
  const wallAt = (seconds: number) => (at?.epoch === undefined ? undefined : at.epoch + seconds * 1000);
  const mediaAt = (ms: number) => (at?.epoch === undefined ? undefined : (ms - at.epoch) / 1000);
  const positionWall = at && wallAt(at.position);
  const onAir = positionWall === undefined ? undefined : programmes.find((p) => Date.parse(p.start) <= positionWall && Date.parse(p.stop) > positionWall);
  const startOver = () => {
    if (!at) return;
    const programmeStart = onAir && mediaAt(Date.parse(onAir.start));
    seek(programmeStart === undefined ? at.start : Math.max(at.start, programmeStart));
  };
  const togglePlay = () => {
    const v = video();
    if (!v) return;
    if (v.paused) void v.play().catch(() => {}); else v.pause();
  };

  // The keys act on the channels as rendered last (the listener is added once).
  const zapKeys = useRef({ up: () => {}, down: () => {} });
  zapKeys.current = { up: () => zap(next), down: () => zap(previous) };
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || isField(e.target)) return;
      if (e.key === 'PageUp' || e.key === 'ChannelUp') zapKeys.current.up();
      else if (e.key === 'PageDown' || e.key === 'ChannelDown') zapKeys.current.down();
      else if (e.key.toLowerCase() === 'g') setGuideOpen((open) => !open);
      else return;
      e.preventDefault();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);

  const span = at ? Math.max(1, at.end - at.start) : 1;
  const percent = (seconds: number) => `${(100 * (seconds - at!.start)) / span}%`;
  const boundaries = at ? programmes.flatMap((p) => {
    const s = mediaAt(Date.parse(p.start));
    return s !== undefined && s > at.start && s < at.end ? [{ at: s, title: p.title, start: p.start }] : [];
  }) : [];
  const behind = at ? behindLive(at) : 0;
  const live = !!at && behind < LIVE_SLACK_SECONDS;

  return (
    <>
      <div class="live-controls">
        <div class="live-seek">
          <input
            type="range" class="live-seek-range" aria-label="Position in the time-shift window"
            min={at?.start ?? 0} max={at?.end ?? 1} step="any" value={at?.position ?? 0} disabled={!at}
            aria-valuetext={positionWall === undefined ? undefined : clock(positionWall)}
            onInput={(e) => seek(Number((e.target as HTMLInputElement).value))}
          />
          {boundaries.map((b) => <span key={b.start} class="live-boundary" style={{ left: percent(b.at) }} title={`${b.title} · ${formatClock(b.start)}`} />)}
        </div>
        <div class="live-row">
          <button type="button" class="button small" onClick={togglePlay} aria-label={paused ? 'Play' : 'Pause'}>{paused ? '▶' : '❚❚'}</button>
          <span class={`live-badge${live ? ' at-live' : ''}`} aria-label={live ? 'Live' : `${minutesSeconds(behind)} behind live`}>LIVE</span>
          {!live && at && <button type="button" class="button small" onClick={jumpToLive}>Jump to live</button>}
          <span class="live-time muted">
            {positionWall === undefined ? '' : clock(positionWall)}
            {!live && at ? ` · −${minutesSeconds(behind)}` : ''}
          </span>
          <button type="button" class="button small" onClick={startOver} disabled={!at} title={onAir ? `Back to the start of ${onAir.title}` : 'Back to the start of the window'}>Start over</button>
          <span class="live-spacer" />
          <button type="button" class="button small" onClick={() => zap(previous)} disabled={!previous} aria-label="Channel down" title={previous && `${previous.tvg_chno} ${previous.name}`}>Ch −</button>
          <button type="button" class="button small" onClick={() => zap(next)} disabled={!next} aria-label="Channel up" title={next && `${next.tvg_chno} ${next.name}`}>Ch +</button>
          <button type="button" class="button small" onClick={() => setGuideOpen((open) => !open)} aria-pressed={guideOpen}>Guide</button>
          <button type="button" class="button small" onClick={() => { const v = video(); if (v) v.muted = !v.muted; }} >{muted ? 'Unmute' : 'Mute'}</button>
          <button type="button" class="button small" onClick={fullscreen}>Full screen</button>
        </div>
      </div>
      {guideOpen && (
        <aside class="live-guide" aria-label="Channels around this one">
          <div class="live-guide-head">
            <strong>On now</strong>
            <button type="button" class="button ghost small" onClick={() => setGuideOpen(false)} aria-label="Close the guide">✕</button>
          </div>
          {guide.error !== undefined && <p class="muted">{describeError(guide.error)}</p>}
          <ul>
            {guide.rows?.map((row) => (
              <li key={row.id}>
                <button type="button" class={`live-guide-row${String(row.id) === id ? ' current' : ''}`} onClick={() => zap(row)} aria-current={String(row.id) === id ? 'true' : undefined}>
                  <span class="live-guide-channel">{row.tvg_chno} {row.name}</span>
                  <span class="live-guide-now">{row.now ? `${formatClock(row.now.start)} ${row.now.title}` : 'No guide data'}</span>
                  {row.next && <span class="live-guide-next muted">Next {formatClock(row.next.start)} {row.next.title}</span>}
                </button>
              </li>
            ))}
          </ul>
        </aside>
      )}
    </>
  );
}
