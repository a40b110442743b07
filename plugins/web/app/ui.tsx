/** Small pieces every view uses: loading data, showing errors, formatting times, toasts. */
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError } from './api.js';

export interface Async<T> {
  data?: T;
  error?: Error;
  loading: boolean;
  reload(): void;
}

/** Runs `load` when `deps` change (aborting the previous run) and on reload(). */
export function useAsync<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[]): Async<T> {
  const [state, setState] = useState<{ data?: T; error?: Error; loading: boolean }>({ loading: true });
  const [nonce, setNonce] = useState(0);
  useEffect(() => {
    const controller = new AbortController();
    setState((s) => ({ data: s.data, loading: true }));
    load(controller.signal).then(
      (data) => { if (!controller.signal.aborted) setState({ data, loading: false }); },
      (error: Error) => { if (!controller.signal.aborted) setState({ error, loading: false }); },
    );
    return () => controller.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, nonce]);
  const reload = useCallback(() => setNonce((n) => n + 1), []);
  return { ...state, reload };
}

/** A message for any error, with what the user can do about it. */
export function describeError(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.retryAfter && (error.status === 429 || error.status >= 500)) return `${error.message} (try again in ${error.retryAfter} s)`;
    return error.message;
  }
  return error instanceof Error ? error.message : String(error);
}

export function ErrorNote({ error, onRetry }: { error: unknown; onRetry?: () => void }) {
  return (
    <div class="error-note" role="alert">
      <span>{describeError(error)}</span>
      {onRetry && <button type="button" class="button small" onClick={onRetry}>Try again</button>}
    </div>
  );
}

export function Spinner({ label = 'Loading' }: { label?: string }) {
  return <div class="spinner" role="status" aria-label={label}><span /></div>;
}

/** Renders the loading, error and data states of an Async. */
export function Loaded<T>({ state, children }: { state: Async<T>; children: (data: T) => ComponentChildren }) {
  if (state.error) return <ErrorNote error={state.error} onRetry={state.reload} />;
  if (state.data === undefined) return <Spinner />;
  return <>{children(state.data)}</>;
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}

/** 1:05:09 or 4:09. */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = String(s % 60).padStart(2, '0');
  return h ? `${h}:${String(m).padStart(2, '0')}:${sec}` : `${m}:${sec}`;
}

/** 1 h 45 min, or 12 min. */
export function formatRuntime(seconds: number): string {
  const minutes = Math.round(seconds / 60);
  const h = Math.floor(minutes / 60);
  return h ? `${h} h ${minutes % 60} min` : `${minutes} min`;
}

/** 20:30 in the browser's time zone. */
export function formatClock(iso: string | Date): string {
  return new Date(iso).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
}

/** Mon 23 Nov, 20:30. */
export function formatDateTime(iso: string | Date): string {
  return new Date(iso).toLocaleString([], { weekday: 'short', day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' });
}

export function formatBytes(bytes: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) { value /= 1000; unit++; }
  return `${value >= 100 || unit === 0 ? Math.round(value) : value.toFixed(1)} ${units[unit]}`;
}

// Toasts: short confirmations and errors of actions (recording scheduled, password changed).
type Toast = { id: number; text: string; kind: 'info' | 'error' };
let toastId = 0;
const toastListeners = new Set<(toasts: Toast[]) => void>();
let toasts: Toast[] = [];

export function toast(text: string, kind: Toast['kind'] = 'info'): void {
  const item = { id: ++toastId, text, kind };
  toasts = [...toasts, item];
  toastListeners.forEach((l) => l(toasts));
  setTimeout(() => {
    toasts = toasts.filter((t) => t !== item);
    toastListeners.forEach((l) => l(toasts));
  }, kind === 'error' ? 8000 : 4000);
}

export function Toasts() {
  const [list, setList] = useState(toasts);
  useEffect(() => { toastListeners.add(setList); return () => { toastListeners.delete(setList); }; }, []);
  return (
    <div class="toasts" aria-live="polite">
      {list.map((t) => <div key={t.id} class={`toast ${t.kind}`} role={t.kind === 'error' ? 'alert' : 'status'}>{t.text}</div>)}
    </div>
  );
}

/** A colour pair derived from a title, for title cards without artwork. */
export function titleColours(title: string): [string, string] {
  let hash = 0;
  for (let i = 0; i < title.length; i++) hash = (hash * 31 + title.charCodeAt(i)) | 0;
  const hue = Math.abs(hash) % 360;
  return [`hsl(${hue} 45% 32%)`, `hsl(${(hue + 40) % 360} 55% 18%)`];
}

/** Keeps document.title in step with the view. */
export function useTitle(title: string | undefined): void {
  useEffect(() => { document.title = title ? `${title} · Antenna` : 'Antenna'; }, [title]);
}
