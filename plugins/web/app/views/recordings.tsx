/**
 * Recordings: what is recording now, what is scheduled, and what is finished,
 * with play, cancel and delete. Recordings are the household's (every user
 * sees them all); the server decides who may cancel or delete one.
 */
import './recordings.css';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api.js';
import { href } from '../router.js';
import type { Channel, Recording } from '../types.js';
import { Empty, ErrorNote, Spinner, describeError, formatBytes, formatClock, formatDateTime, toast, useTitle } from '../ui.js';

/** Polling runs while something records, or a scheduled recording starts within this long, so status changes show up. */
const POLL_MS = 10_000;
const SOON_MS = 15 * 60_000;

const GROUPS: { id: string; title: string; has(r: Recording): boolean; order: 1 | -1 }[] = [
  { id: 'now', title: 'Recording now', has: (r) => r.status === 'recording', order: 1 },
  { id: 'scheduled', title: 'Scheduled', has: (r) => r.status === 'scheduled', order: 1 },
  { id: 'conflict', title: 'Conflicts', has: (r) => r.status === 'conflict', order: 1 },
  { id: 'completed', title: 'Completed', has: (r) => r.status === 'completed', order: -1 },
  { id: 'ended', title: 'Failed & cancelled', has: (r) => r.status === 'failed' || r.status === 'cancelled' || r.status === 'skipped', order: -1 },
];

const STATUS_LABEL: Record<Recording['status'], string> = {
  scheduled: 'Scheduled', recording: 'Recording', completed: 'Completed', failed: 'Failed', cancelled: 'Cancelled',
  skipped: 'Skipped', conflict: 'Conflict',
};

/** Completed recordings of one series together (newest series first), the others one by one. */
function bySeries(items: Recording[]): { key: string; title: string; items: Recording[] }[] {
  const groups: { key: string; title: string; items: Recording[] }[] = [];
  const index = new Map<string, number>();
  for (const r of items) {
    const key = r.series_key ?? `rec:${r.id}`;
    const at = index.get(key);
    if (at === undefined) { index.set(key, groups.length); groups.push({ key, title: r.title, items: [r] }); } else groups[at].items.push(r);
  }
  for (const g of groups) g.items.sort((a, b) => (a.season ?? 0) - (b.season ?? 0) || (a.episode ?? 0) - (b.episode ?? 0) || Date.parse(a.start) - Date.parse(b.start));
  return groups;
}

/** "S1 E4 · The Clock". */
function episodeLabel(r: Recording): string | undefined {
  const number = r.episode != null ? `${r.season != null ? `S${r.season} ` : ''}E${r.episode}` : undefined;
  const title = r.episode_title && r.episode_title !== r.title ? r.episode_title : undefined;
  return [number, title].filter(Boolean).join(' · ') || undefined;
}

/** A recording that has media to play: finished ones, a running one (playable while it records), and cut-short ones that kept a part. */
function playable(r: Recording): boolean {
  return r.status === 'completed' || r.status === 'recording' || (r.status !== 'scheduled' && (r.size_bytes ?? 0) > 0);
}

/** When to look again: soon while something records or is about to, else when the next scheduled one comes close. */
function nextPoll(list: Recording[], now: number): number | undefined {
  const starts = list.filter((r) => r.status === 'scheduled').map((r) => Date.parse(r.start));
  if (list.some((r) => r.status === 'recording') || starts.some((s) => s - now < SOON_MS)) return POLL_MS;
  if (!starts.length) return undefined;
  return Math.min(Math.min(...starts) - SOON_MS - now, 60 * 60_000);
}

function sameDay(a: Date, b: Date): boolean {
  return a.getFullYear() === b.getFullYear() && a.getMonth() === b.getMonth() && a.getDate() === b.getDate();
}

/** "Today 20:30 – 21:00", "Mon 23 Nov, 20:30 – 21:00". */
function timeRange(startIso: string, stopIso: string, now = new Date()): string {
  const start = new Date(startIso);
  const stop = new Date(stopIso);
  const tomorrow = new Date(now.getFullYear(), now.getMonth(), now.getDate() + 1);
  const yesterday = new Date(now.getFullYear(), now.getMonth(), now.getDate() - 1);
  let from: string;
  if (sameDay(start, now)) from = `Today ${formatClock(start)}`;
  else if (sameDay(start, tomorrow)) from = `Tomorrow ${formatClock(start)}`;
  else if (sameDay(start, yesterday)) from = `Yesterday ${formatClock(start)}`;
  else from = formatDateTime(start);
  return `${from} – ${sameDay(start, stop) ? formatClock(stop) : formatDateTime(stop)}`;
}

export function RecordingsView() {
  useTitle('Recordings');
  const [list, setList] = useState<Recording[] | undefined>();
  const [error, setError] = useState<unknown>();
  const [channels, setChannels] = useState<Map<number, Channel>>(new Map());
  const [nonce, setNonce] = useState(0);
  // Changes made here but not yet answered by the server: a poll must not undo them on screen.
  const pending = useRef(new Map<number, Recording | null>());
  const listRef = useRef(list);
  listRef.current = list;

  const applyPending = (fresh: Recording[]) => fresh.flatMap((r) => {
    if (!pending.current.has(r.id)) return [r];
    const override = pending.current.get(r.id);
    return override ? [override] : [];
  });

  // The channel names, once: a recording only carries the channel's id.
  useEffect(() => {
    const controller = new AbortController();
    api<{ channels: Channel[] }>('/channels', { signal: controller.signal })
      .then(({ channels: all }) => setChannels(new Map(all.map((c) => [c.id, c]))))
      .catch(() => { /* names are a nicety: the list still shows, with channel numbers */ });
    return () => controller.abort();
  }, []);

  // The list, then again every POLL_MS while something is recording or about to; stops when the view goes.
  useEffect(() => {
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const load = async () => {
      try {
        const fresh = await api<Recording[]>('/recordings', { signal: controller.signal });
        if (controller.signal.aborted) return;
        setList(applyPending(fresh));
        setError(undefined);
        const delay = nextPoll(fresh, Date.now());
        if (delay !== undefined) timer = setTimeout(() => { void load(); }, delay);
      } catch (err) {
        if (controller.signal.aborted) return;
        setError(err);
        // A list already on screen stays; polling carries on so a blip heals itself.
        if (listRef.current && nextPoll(listRef.current, Date.now()) !== undefined) timer = setTimeout(() => { void load(); }, POLL_MS);
      }
    };
    void load();
    return () => { controller.abort(); clearTimeout(timer); };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [nonce]);

  const remove = async (rec: Recording) => {
    const before = listRef.current ?? [];
    // Scheduled and running ones become cancelled (a running one keeps what it recorded); finished ones go.
    // A rule's airing is skipped: the rule never schedules it again.
    const after: Recording | null = rec.rule_id != null && (rec.status === 'scheduled' || rec.status === 'conflict') ? { ...rec, status: 'skipped' }
      : rec.status === 'scheduled' || rec.status === 'recording' ? { ...rec, status: 'cancelled' } : null;
    pending.current.set(rec.id, after);
    setList(after ? before.map((r) => (r.id === rec.id ? after : r)) : before.filter((r) => r.id !== rec.id));
    try {
      await api(`/recordings/${rec.id}`, { method: 'DELETE' });
      pending.current.delete(rec.id);
      toast(after ? `Cancelled “${rec.title}”` : `Deleted “${rec.title}”`);
      setNonce((n) => n + 1);
    } catch (err) {
      pending.current.delete(rec.id);
      setList((current) => {
        const restored = (current ?? []).filter((r) => r.id !== rec.id);
        const at = before.findIndex((r) => r.id === rec.id);
        restored.splice(Math.min(at, restored.length), 0, rec);
        return restored;
      });
      toast(describeError(err), 'error');
    }
  };

  if (!list) {
    return (
      <section class="recordings">
        <h1>Recordings</h1>
        {error ? <ErrorNote error={error} onRetry={() => { setError(undefined); setNonce((n) => n + 1); }} /> : <Spinner label="Loading recordings" />}
      </section>
    );
  }

  const now = Date.now();
  return (
    <section class="recordings">
      <div class="section-head">
        <h1>Recordings</h1>
        {list.length > 0 && <span class="muted">{list.length === 1 ? '1 recording' : `${list.length} recordings`}</span>}
        <a class="button small" href={href('/recordings/rules')}>Series rules</a>
      </div>
      {error !== undefined && <ErrorNote error={error} onRetry={() => { setError(undefined); setNonce((n) => n + 1); }} />}
      {list.length === 0 && (
        <div class="recordings-empty">
          <Empty>
            No recordings yet. Find a programme in the <a href={href('/guide')}>Guide</a> and choose Record:
            it shows up here while it is scheduled, while it records, and when it is ready to watch.
          </Empty>
        </div>
      )}
      {GROUPS.map((group) => {
        const items = list.filter(group.has)
          .sort((a, b) => group.order * (Date.parse(a.start) - Date.parse(b.start)) || a.id - b.id);
        if (!items.length) return null;
        return (
          <section key={group.id} class="section recordings-group" aria-labelledby={`rec-group-${group.id}`}>
            <h2 id={`rec-group-${group.id}`}>{group.title} <span class="recordings-count">{items.length}</span></h2>
            {group.id === 'completed'
              ? bySeries(items).map((s) => (s.items.length === 1
                ? <ul key={s.key} class="recordings-list"><RecordingRow rec={s.items[0]} channel={channels.get(s.items[0].channel_id)} now={now} onRemove={remove} /></ul>
                : (
                  <details key={s.key} class="recordings-series">
                    <summary>{s.title} <span class="recordings-count">{s.items.length}</span></summary>
                    <ul class="recordings-list">
                      {s.items.map((r) => <RecordingRow key={r.id} rec={r} channel={channels.get(r.channel_id)} now={now} onRemove={remove} />)}
                    </ul>
                  </details>
                )))
              : (
                <ul class="recordings-list">
                  {items.map((r) => <RecordingRow key={r.id} rec={r} channel={channels.get(r.channel_id)} now={now} onRemove={remove} />)}
                </ul>
              )}
          </section>
        );
      })}
    </section>
  );
}

function RecordingRow({ rec, channel, now, onRemove }: {
  rec: Recording; channel?: Channel; now: number; onRemove(rec: Recording): Promise<void>;
}) {
  const [confirming, setConfirming] = useState(false);
  const confirmRef = useRef<HTMLButtonElement>(null);
  const actionRef = useRef<HTMLButtonElement>(null);
  const wasConfirming = useRef(false);
  const titleId = `rec-title-${rec.id}`;
  const active = rec.status === 'scheduled' || rec.status === 'recording' || rec.status === 'conflict';
  const start = Date.parse(rec.start);
  const stop = Date.parse(rec.stop);
  const progress = rec.status === 'recording' && stop > start ? Math.min(1, Math.max(0, (now - start) / (stop - start))) : undefined;

  // Focus follows the confirm step: onto "Yes" when it opens, back to the button that opened it when it closes.
  useEffect(() => {
    if (confirming) confirmRef.current?.focus();
    else if (wasConfirming.current) actionRef.current?.focus();
    wasConfirming.current = confirming;
  }, [confirming]);

  const question = rec.rule_id != null && active && rec.status !== 'recording' ? 'Skip this airing? Its series rule will not record it.'
    : rec.status === 'scheduled' ? 'Cancel this scheduled recording?'
    : rec.status === 'recording' ? 'Stop recording? What is recorded so far is kept.'
      : 'Delete this recording and its files?';

  return (
    <li class={`recordings-row status-${rec.status}`} aria-labelledby={titleId}>
      <div class="recordings-main">
        <div class="recordings-title-line">
          <h3 id={titleId} class="recordings-title">{rec.title}</h3>
          <span class={`recordings-status ${rec.status}`}>
            {rec.status === 'recording' && <span class="recordings-dot" aria-hidden="true" />}
            {STATUS_LABEL[rec.status]}
          </span>
        </div>
        <p class="recordings-meta">
          <span>{channel ? `${channel.tvg_chno ? `${channel.tvg_chno} · ` : ''}${channel.name}` : `Channel ${rec.channel_id}`}</span>
          <span>{timeRange(rec.start, rec.stop)}</span>
          {episodeLabel(rec) && <span>{episodeLabel(rec)}</span>}
          {rec.rule_id != null && <span>Series rule</span>}
          {rec.status !== 'scheduled' && (rec.size_bytes ?? 0) > 0 && <span>{formatBytes(rec.size_bytes!)}</span>}
        </p>
        {progress !== undefined && (
          <div class="recordings-progress" role="progressbar" aria-label="Recorded so far"
            aria-valuemin={0} aria-valuemax={100} aria-valuenow={Math.round(progress * 100)}>
            <span style={{ width: `${progress * 100}%` }} />
          </div>
        )}
        {rec.status === 'failed' && rec.error && <p class="recordings-error">{rec.error}</p>}
        {rec.status === 'conflict' && rec.reason && <p class="recordings-error">{rec.reason}</p>}
      </div>
      <div class="recordings-actions">
        {confirming ? (
          <div class="recordings-confirm" role="group" aria-label={question}
            onKeyDown={(e) => { if (e.key === 'Escape') { e.stopPropagation(); setConfirming(false); } }}>
            <span class="recordings-confirm-question">{question}</span>
            <button ref={confirmRef} type="button" class="button small danger"
              onClick={() => { setConfirming(false); void onRemove(rec); }}>
              {active ? 'Yes, cancel' : 'Yes, delete'}
            </button>
            <button type="button" class="button small" onClick={() => setConfirming(false)}>
              {active ? 'Keep' : 'Keep it'}
            </button>
          </div>
        ) : (
          <>
            {playable(rec) && (
              <a class="button small primary" href={href(`/watch/recording/${rec.id}`)}>
                <span aria-hidden="true">▶</span> Play<span class="visually-hidden"> {rec.title}</span>
              </a>
            )}
            <button ref={actionRef} type="button" class={`button small${active ? '' : ' danger'}`} onClick={() => setConfirming(true)}>
              {active ? 'Cancel' : 'Delete'}<span class="visually-hidden"> {rec.title}</span>
            </button>
          </>
        )}
      </div>
    </li>
  );
}
