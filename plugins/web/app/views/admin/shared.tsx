/** Pieces the admin screens share: polling, progress bars, the config file's state, a change's outcome, confirm steps. */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from '../../api.js';
import { describeError, toast } from '../../ui.js';
import type { ConfigChange, Editable, JobState } from './types.js';

/**
 * Loads `load` now, again every `fastMs` while `busy(data)` says something runs (a scan, an import),
 * else every `slowMs`; at once when `deps` change, and on reload() (after an action).
 */
export function usePolled<T>(load: (signal: AbortSignal) => Promise<T>, busy: (data: T) => boolean, fastMs = 1000, slowMs = 15_000, deps: unknown[] = []) {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<unknown>();
  const [nonce, setNonce] = useState(0);
  useEffect(() => {
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async () => {
      let delay = slowMs;
      try {
        const fresh = await load(controller.signal);
        if (controller.signal.aborted) return;
        setData(fresh);
        setError(undefined);
        if (busy(fresh)) delay = fastMs;
      } catch (err) {
        if (controller.signal.aborted) return;
        setError(err);
      }
      timer = setTimeout(() => { void run(); }, delay);
    };
    void run();
    return () => { controller.abort(); clearTimeout(timer); };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [nonce, ...deps]);
  return { data, setData, error, reload: () => setNonce((n) => n + 1) };
}

export function ProgressBar({ job, label }: { job: JobState; label: string }) {
  const pct = Math.round(job.progress * 100);
  return (
    <div class="admin-progress">
      <div class="admin-progress-bar" role="progressbar" aria-label={label} aria-valuemin={0} aria-valuemax={100} aria-valuenow={pct}>
        <span style={{ width: `${pct}%` }} />
      </div>
      <span class="admin-progress-text">{pct} %{job.message ? ` · ${job.message}` : ''}</span>
    </div>
  );
}

/** Why changes cannot be saved, when they cannot. */
export function ReadOnlyNote({ state }: { state: Editable | undefined }) {
  if (!state || state.editable) return null;
  return <p class="notice admin-readonly" role="note"><strong>Read-only.</strong> {state.reason}</p>;
}

/** What a saved change did: applied at once, or waiting for a restart. */
export function changeMessage(result: ConfigChange, what: string): string {
  if (result.error) return `${what} saved to the config file, but not applied: ${result.error}. It takes effect when Antenna restarts.`;
  if (result.restartNeeded.length) return `${what} saved. Restart Antenna to apply: ${result.restartNeeded.join(', ')}.`;
  return `${what} saved and applied.`;
}

/** A ref that puts the focus on its element when `when` becomes true (a form opened by a button). */
export function useFocusWhen<T extends HTMLElement>(when = true) {
  const ref = useRef<T>(null);
  useEffect(() => { if (when) ref.current?.focus(); }, [when]);
  return ref;
}

/** Runs an action, toasting its outcome (a message, or one made from the answer); returns whether it succeeded. */
export async function act<T>(work: () => Promise<T>, done?: string | ((result: T) => string)): Promise<boolean> {
  try {
    const result = await work();
    const message = typeof done === 'function' ? done(result) : done;
    if (message) toast(message);
    return true;
  } catch (err) {
    toast(err instanceof ApiError ? err.message : describeError(err), 'error');
    return false;
  }
}

/** A form's submit: runs `work`, shows a failure inline (the server's message names the field); returns whether it succeeded. */
export function useSubmit() {
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const run = async <T,>(work: () => Promise<T>, done?: (result: T) => string): Promise<boolean> => {
    setError(undefined);
    setBusy(true);
    try {
      const result = await work();
      if (done) toast(done(result));
      return true;
    } catch (err) {
      setError(describeError(err));
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { error, busy, run };
}

/** A button that asks "are you sure" in place; focus moves onto "Yes" and back. */
export function ConfirmButton({ label, question, yes, onConfirm, children }: {
  label: string; question: string; yes: string; onConfirm(): void; children?: ComponentChildren;
}) {
  const [open, setOpen] = useState(false);
  const yesRef = useRef<HTMLButtonElement>(null);
  const openRef = useRef<HTMLButtonElement>(null);
  const was = useRef(false);
  useEffect(() => {
    if (open) yesRef.current?.focus();
    else if (was.current) openRef.current?.focus();
    was.current = open;
  }, [open]);
  if (!open) return <button ref={openRef} type="button" class="button small danger" onClick={() => setOpen(true)}>{children ?? label}</button>;
  return (
    <span class="admin-confirm" role="group" aria-label={question} onKeyDown={(e) => { if (e.key === 'Escape') { e.stopPropagation(); setOpen(false); } }}>
      <span class="admin-confirm-question">{question}</span>
      <button ref={yesRef} type="button" class="button small danger" onClick={() => { setOpen(false); onConfirm(); }}>{yes}</button>
      <button type="button" class="button small" onClick={() => setOpen(false)}>Keep</button>
    </span>
  );
}

/** What a duration setting accepts (an <input pattern>): 30s, 15m, 12h, 1.5d. */
export const DURATION = String.raw`\s*\d+(\.\d+)?\s*(ms|s|m|h|d)\s*`;

/** "1 file", "16 files". */
export const count = (n: number | undefined, noun: string) => `${n ?? 0} ${noun}${n === 1 ? '' : 's'}`;

/** "3 min ago", "in 2 h". */
export function relativeTime(iso: string, now = Date.now()): string {
  const diff = Date.parse(iso) - now;
  const abs = Math.abs(diff);
  const text = abs < 60_000 ? `${Math.max(1, Math.round(abs / 1000))} s` : abs < 3_600_000 ? `${Math.round(abs / 60_000)} min`
    : abs < 86_400_000 ? `${Math.round(abs / 3_600_000)} h` : `${Math.round(abs / 86_400_000)} d`;
  return diff >= 0 ? `in ${text}` : `${text} ago`;
}

/** 12h from 43 200 000 ms. */
export function formatInterval(ms: number | null): string {
  if (!ms) return 'never';
  for (const [unit, size] of [['d', 86_400_000], ['h', 3_600_000], ['min', 60_000], ['s', 1000]] as const) {
    if (ms % size === 0 || ms >= size * 10) return `every ${Math.round(ms / size)} ${unit}`;
  }
  return `every ${ms} ms`;
}
