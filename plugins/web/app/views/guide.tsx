/**
 * The programme guide: channels down, time across, from a little before now
 * to a day ahead. Sticky channel column and time ruler; a "now" line that
 * moves. Built for hundreds of channels: both axes are virtualised (only the
 * rows in view, plus a few, and only programmes overlapping the visible time
 * are in the DOM, all absolutely positioned), the window is recomputed once
 * per animation frame while scrolling, and channels are fetched by pages as
 * they come into view.
 */
import './guide.css';
import { Component } from 'preact';
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api } from '../api.js';
import { href } from '../router.js';
import type { Recording } from '../types.js';
import { Empty, ErrorNote, Spinner, useTitle } from '../ui.js';
import type { Category } from './channels.js';
import { ChannelLogo } from './guide-channel-logo.js';
import { activeRecordings, firstEndingAfter, GuidePages, recordingKey, type GuideProgram, type GuideRow } from './guide-data.js';
import { ProgramDialog } from './guide-details.js';

const MINUTE = 60_000;
const SLOT = 30 * MINUTE;

interface Dims {
  /** Row height, channel column width and ruler height in px; px per minute of programme. */
  row: number;
  col: number;
  ruler: number;
  ppm: number;
  /** Widest average width of a character of a title and of the times, in px (see fit()); lines a title may take. */
  titleChar: number;
  titleLines: number;
  timeChar: number;
}
const DESKTOP: Dims = { row: 64, col: 220, ruler: 38, ppm: 5, titleChar: 8, titleLines: 1, timeChar: 6.8 };
const PHONE: Dims = { row: 58, col: 92, ruler: 34, ppm: 3.5, titleChar: 8.2, titleLines: 2, timeChar: 7 };

/**
 * Text cut to about what fits, with an ellipsis. Blocks do not clip their text
 * (CSS overflow clipping costs a paint chunk per block, which made every
 * scrolled frame slower); the rare overflow is covered by the next block,
 * which paints over it.
 */
function fit(text: string, width: number, charWidth: number): string {
  const max = Math.floor(width / charWidth);
  if (text.length <= max) return text;
  return max <= 1 ? '' : `${text.slice(0, max - 1).trimEnd()}…`;
}
/** Rows rendered beyond the visible ones on each side, and the step the row window moves by. */
const ROW_BUFFER = 6;
const ROW_STEP = 4;

/** From an hour before now (on a half hour) to 24 h after now. */
function daySpan(now = Date.now()): { from: number; to: number } {
  const from = Math.floor(now / SLOT) * SLOT - 2 * SLOT;
  return { from, to: Math.ceil((now + 24 * 3600_000) / SLOT) * SLOT };
}

// Intl formatters are costly to create: one each, and each time's text once.
const clockFormat = new Intl.DateTimeFormat([], { hour: 'numeric', minute: '2-digit' });
const dayFormat = new Intl.DateTimeFormat([], { weekday: 'short', day: 'numeric', month: 'short' });
const clockTexts = new Map<number, string>();
function clock(ms: number): string {
  let text = clockTexts.get(ms);
  if (text === undefined) {
    if (clockTexts.size > 5000) clockTexts.clear();
    clockTexts.set(ms, (text = clockFormat.format(ms)));
  }
  return text;
}
function dayLabel(ms: number, now: number): string {
  const day = (t: number) => new Date(t).toDateString();
  if (day(ms) === day(now)) return 'Today';
  if (day(ms) === day(now + 86400_000)) return 'Tomorrow';
  return dayFormat.format(ms);
}

function useMedia(query: string): boolean {
  const [matches, setMatches] = useState(() => matchMedia(query).matches);
  useEffect(() => {
    const list = matchMedia(query);
    const update = () => setMatches(list.matches);
    list.addEventListener('change', update);
    return () => list.removeEventListener('change', update);
  }, [query]);
  return matches;
}

/** Rows and minutes (from the span's start) to render; moves in steps so most scroll frames change nothing. */
interface View { r0: number; r1: number; m0: number; m1: number; left: number }

function viewOf(el: HTMLElement, d: Dims): View {
  const top = el.scrollTop;
  const height = el.clientHeight;
  const left = el.scrollLeft;
  const width = el.clientWidth - d.col;
  const r0 = Math.max(0, Math.floor((top / d.row - ROW_BUFFER) / ROW_STEP) * ROW_STEP);
  const r1 = Math.ceil(((top + height) / d.row + ROW_BUFFER) / ROW_STEP) * ROW_STEP;
  const m0 = Math.max(0, Math.floor(left / d.ppm / 30) * 30 - 60);
  const m1 = Math.ceil((left + width) / d.ppm / 30) * 30 + 60;
  return { r0, r1, m0, m1, left: Math.floor(left / d.ppm / 30) };
}
const sameView = (a: View, b: View) => a.r0 === b.r0 && a.r1 === b.r1 && a.m0 === b.m0 && a.m1 === b.m1 && a.left === b.left;

export function GuideView() {
  useTitle('Guide');
  const phone = useMedia('(max-width: 720px)');
  const d = phone ? PHONE : DESKTOP;
  const [category, setCategory] = useState<string | undefined>();
  const [span] = useState(daySpan);
  const [now, setNow] = useState(Date.now);
  const [, setVersion] = useState(0);
  const [view, setView] = useState<View>({ r0: 0, r1: 24, m0: 0, m1: 360, left: 0 });
  const [recordings, setRecordings] = useState<Map<string, Recording>>(new Map());
  const [selected, setSelected] = useState<{ row: GuideRow; program: GuideProgram } | null>(null);
  const scroller = useRef<HTMLDivElement>(null);
  const pendingFocus = useRef<string | null>(null);

  const categories = useCategories();

  // Fetched pages are kept per category while the view is open: switching back shows them at once.
  const byCategory = useRef(new Map<string, GuidePages>());
  const pages = useMemo(() => {
    const key = category ?? '';
    let found = byCategory.current.get(key);
    if (!found) byCategory.current.set(key, (found = new GuidePages(category, span.from, span.to, () => setVersion((v) => v + 1))));
    return found;
  }, [category, span]);
  useEffect(() => () => byCategory.current.forEach((p) => p.dispose()), []);
  useEffect(() => { pages.ensure(view.r0, view.r1); }, [pages, view.r0, view.r1, pages.total]);

  const loadRecordings = useCallback(() => {
    activeRecordings().then(setRecordings, () => { /* the markers only: the guide works without them */ });
  }, []);
  useEffect(() => {
    loadRecordings();
    const timer = setInterval(loadRecordings, 60_000);
    return () => clearInterval(timer);
  }, []);

  // The now line moves; programmes turn "on now" and "ended" as time passes.
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 15_000);
    return () => clearInterval(timer);
  }, []);

  const x = (t: number) => ((t - span.from) / MINUTE) * d.ppm;
  const width = d.col + x(span.to);
  const total = pages.total ?? 0;

  const scrollToNow = useCallback((smooth: boolean) => {
    const el = scroller.current;
    if (!el) return;
    // The half hour that is on now starts at the left edge, as in a printed guide.
    const left = Math.max(0, x(Math.floor(Date.now() / SLOT) * SLOT) - 8);
    el.scrollTo({ left, behavior: smooth ? 'smooth' : 'auto' });
  }, [d, span]);

  // Recomputed at most once a frame while scrolling, and when the size changes.
  useLayoutEffect(() => {
    const el = scroller.current;
    if (!el) return;
    let frame = 0;
    const measure = () => {
      frame = 0;
      const next = viewOf(el, d);
      setView((prev) => (sameView(prev, next) ? prev : next));
    };
    const onScroll = () => { if (!frame) frame = requestAnimationFrame(measure); };
    el.addEventListener('scroll', onScroll, { passive: true });
    const resize = new ResizeObserver(onScroll);
    resize.observe(el);
    measure();
    return () => { el.removeEventListener('scroll', onScroll); resize.disconnect(); cancelAnimationFrame(frame); };
  }, [d, total > 0]);

  // Opens at now; a new category starts at the top.
  useLayoutEffect(() => { if (total > 0) scrollToNow(false); }, [total > 0, d]);
  useLayoutEffect(() => { scroller.current?.scrollTo({ top: 0 }); }, [category]);

  // Arrow keys between programmes: the target may first need scrolling into view (and rendering).
  useEffect(() => {
    if (!pendingFocus.current) return;
    const el = scroller.current?.querySelector<HTMLElement>(`[data-key="${pendingFocus.current}"]`);
    if (el) { el.focus({ preventScroll: true }); pendingFocus.current = null; }
  });

  const moveFocus = (event: KeyboardEvent) => {
    const target = event.target as HTMLElement;
    if (!target.classList.contains('guide-prog')) return;
    const rowIndex = Number(target.dataset.row);
    const row = pages.row(rowIndex);
    if (!row) return;
    const at = row.programs.findIndex((p) => String(p.id) === target.dataset.pid);
    const current = row.programs[at];
    let nextRow = rowIndex;
    let next: GuideProgram | undefined;
    if (event.key === 'ArrowRight') next = row.programs[at + 1];
    else if (event.key === 'ArrowLeft') next = row.programs[at - 1];
    else if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      nextRow = rowIndex + (event.key === 'ArrowDown' ? 1 : -1);
      const other = pages.row(nextRow);
      if (!other) return;
      const el = scroller.current!;
      const time = Math.max(current.s, span.from + (el.scrollLeft / d.ppm) * MINUTE);
      next = other.programs[firstEndingAfter(other.programs, time)];
    } else return;
    event.preventDefault();
    if (!next) return;
    const el = scroller.current!;
    const top = nextRow * d.row;
    const visibleHeight = el.clientHeight - d.ruler;
    if (top < el.scrollTop) el.scrollTop = top;
    else if (top + d.row > el.scrollTop + visibleHeight) el.scrollTop = top + d.row - visibleHeight;
    const left = Math.max(0, x(next.s));
    const visibleWidth = el.clientWidth - d.col;
    if (left < el.scrollLeft || left > el.scrollLeft + visibleWidth - 40) el.scrollLeft = Math.max(0, left - 20);
    pendingFocus.current = `${nextRow}:${next.id}`;
    const found = el.querySelector<HTMLElement>(`[data-key="${pendingFocus.current}"]`);
    if (found) { found.focus({ preventScroll: true }); pendingFocus.current = null; }
  };

  const scrollByHours = (hours: number) => scroller.current?.scrollBy({ left: hours * 60 * d.ppm, behavior: 'smooth' });
  const open = useCallback((row: GuideRow, program: GuideProgram) => setSelected({ row, program }), []);

  const rows = [];
  const last = Math.min(view.r1, total - 1);
  for (let i = view.r0; i <= last; i++) rows.push(i);
  const t0 = span.from + view.m0 * MINUTE;
  const t1 = span.from + view.m1 * MINUTE;
  const ticks = [];
  for (let t = Math.max(span.from, t0 - (t0 % SLOT)); t < Math.min(span.to, t1); t += SLOT) ticks.push(t);
  const nowX = x(now);
  const showNow = now >= span.from && now < span.to;

  return (
    <section class="guide-view" style={{ '--row': `${d.row}px`, '--col': `${d.col}px`, '--ruler': `${d.ruler}px`, '--slot': `${30 * d.ppm}px` }}>
      <div class="guide-head">
        <h1>Guide</h1>
        <div class="guide-tools">
          <label class="guide-category">
            <span class="visually-hidden">Category</span>
            <select value={category ?? ''} onChange={(e) => { const v = (e.target as HTMLSelectElement).value; setCategory(v === '' ? undefined : v); }}>
              <option value="">All channels</option>
              {(categories.data ?? []).map((c) => <option key={c.name} value={c.name}>{c.name} ({c.channel_count})</option>)}
            </select>
          </label>
          <button type="button" class="button small" aria-label="Earlier" onClick={() => scrollByHours(-2)}>‹</button>
          <button type="button" class="button small primary" onClick={() => scrollToNow(true)}>Now</button>
          <button type="button" class="button small" aria-label="Later" onClick={() => scrollByHours(2)}>›</button>
        </div>
      </div>
      {pages.error && <ErrorNote error={pages.error} onRetry={() => pages.retry(view.r0, view.r1)} />}
      {pages.total === undefined && !pages.error ? <Spinner label="Loading the guide" />
        : pages.total === 0 ? <Empty>{category === undefined ? 'No channels yet. An administrator adds a tuner and a guide source in the server configuration.' : 'No channels in this category.'}</Empty>
        : pages.total !== undefined && (
          <div class="guide-scroller" ref={scroller} onKeyDown={moveFocus} role="region" aria-label="Programme guide">
            <div class="guide-canvas" style={{ width: `${width}px`, height: `${d.ruler + total * d.row}px` }}>
              <div class="guide-ruler" style={{ width: `${width}px` }}>
                <div class="guide-corner">{dayLabel(span.from + view.left * SLOT, now)}</div>
                {ticks.map((t) => <span key={t} class="guide-tick" style={{ left: `${d.col + x(t)}px` }}>{clock(t)}</span>)}
                {showNow && <span class="guide-now-mark" style={{ left: `${d.col + nowX}px` }} aria-hidden="true" />}
              </div>
              <div class="guide-channels" style={{ height: `${total * d.row}px` }}>
                {rows.map((i) => {
                  const row = pages.row(i);
                  return row
                    ? <a key={i} class="guide-channel" href={href(`/watch/live/${row.id}`)} style={{ top: `${i * d.row}px` }} aria-label={`${row.tvg_chno} ${row.name}`} title={`Watch ${row.name}`}>
                        <span class="channel-number">{row.tvg_chno}</span>
                        <ChannelLogo name={row.name} logo={row.logo} />
                        <span class="guide-channel-name">{row.name}</span>
                      </a>
                    : <div key={i} class="guide-channel loading" style={{ top: `${i * d.row}px` }} />;
                })}
              </div>
              <div class="guide-programmes" style={{ width: `${x(span.to)}px`, height: `${total * d.row}px` }}>
                {rows.map((i) => (
                  <RowBlocks key={i} index={i} row={pages.row(i)} from={t0} to={t1} span={span} d={d}
                    nowSlot={Math.floor(now / MINUTE)} recordings={recordings} onOpen={open} />
                ))}
                {showNow && <div class="guide-now-line" style={{ left: `${nowX}px` }} aria-hidden="true" />}
              </div>
            </div>
          </div>
        )}
      {selected && (
        <ProgramDialog channel={selected.row} program={selected.program} now={now}
          recording={recordings.get(recordingKey(selected.row.id, selected.program.id))}
          onClose={() => setSelected(null)} onRecordingsChanged={loadRecordings} />
      )}
    </section>
  );
}

function useCategories() {
  const [data, setData] = useState<Category[] | undefined>();
  useEffect(() => {
    const controller = new AbortController();
    api<{ categories: Category[] }>('/channel/categories', { signal: controller.signal })
      .then((r) => setData(r.categories), () => { /* the filter is optional: without it the guide shows every channel */ });
    return () => controller.abort();
  }, []);
  return { data };
}

interface RowProps {
  index: number;
  row: GuideRow | undefined;
  from: number;
  to: number;
  span: { from: number; to: number };
  d: Dims;
  nowSlot: number;
  recordings: Map<string, Recording>;
  onOpen(row: GuideRow, program: GuideProgram): void;
}

/** One channel's programmes in the time window; re-rendered only when something it shows changed. */
class RowBlocks extends Component<RowProps> {
  shouldComponentUpdate(next: RowProps): boolean {
    const p = this.props;
    return next.row !== p.row || next.from !== p.from || next.to !== p.to || next.d !== p.d || next.nowSlot !== p.nowSlot || next.recordings !== p.recordings;
  }

  render({ index, row, from, to, span, d, nowSlot, recordings, onOpen }: RowProps) {
    const top = index * d.row;
    const x = (t: number) => ((t - span.from) / MINUTE) * d.ppm;
    if (!row) return <div class="guide-placeholder" style={{ top: `${top}px`, left: `${x(from)}px`, width: `${x(to) - x(from)}px` }} />;
    if (!row.programs.length) {
      return <div class="guide-nodata" style={{ top: `${top}px`, left: `${x(Math.max(from, span.from))}px`, width: `${x(Math.min(to, span.to)) - x(Math.max(from, span.from))}px` }}>No guide data</div>;
    }
    const now = nowSlot * MINUTE;
    const blocks = [];
    for (let i = firstEndingAfter(row.programs, from); i < row.programs.length; i++) {
      const p = row.programs[i];
      if (p.s >= to) break;
      const left = x(Math.max(p.s, span.from));
      const w = Math.max(4, x(Math.min(p.e, span.to)) - left - 2);
      const rec = recordings.get(recordingKey(row.id, p.id));
      const state = p.e <= now ? ' past' : p.s <= now ? ' live' : '';
      const time = `${clock(p.s)} – ${clock(p.e)}`;
      const status = rec ? (rec.status === 'recording' ? 'Recording: ' : 'Scheduled: ') : '';
      blocks.push(
        <button key={p.id} type="button" class={`guide-prog${state}${rec ? ' rec' : ''}`} data-row={index} data-pid={p.id} data-key={`${index}:${p.id}`}
          data-start={p.start} style={{ top: `${top}px`, left: `${left}px`, width: `${w}px` }} onClick={() => onOpen(row, p)}
          aria-label={`${status}${p.title}, ${time}`}>
          <span class="guide-prog-title">{rec && <span class="rec-dot">●</span>}{fit(p.title, (w - (rec ? 24 : 12)) * (1 + (d.titleLines - 1) * 0.85), d.titleChar)}</span>
          <span class="guide-prog-time">{fit(time, w - 12, d.timeChar)}</span>
        </button>,
      );
    }
    return <>{blocks}</>;
  }
}
