/**
 * SubRip, ASS/SSA and WebVTT text → WebVTT. One converter for every source:
 * sidecar files and the streams ffmpeg copies out of media files (it copies
 * them as SRT or ASS rather than encoding WebVTT itself, because its webvtt
 * encoder neither escapes `&`/`<` nor understands `\h` or ASS drawings).
 *
 * What survives: every cue's text (line breaks included) and its timings to
 * the millisecond; italic, bold and underline as <i>/<b>/<u>. What does not:
 * positions, colours, fonts, karaoke and vector drawings, which WebVTT cannot
 * carry the same way. Cues are sorted by start time, as WebVTT requires.
 */
import type { SubtitleFormat } from 'antenna/sdk';
import { decodeSubtitleText } from './encoding.js';

export interface Cue {
  /** Milliseconds. */
  start: number;
  end: number;
  /** WebVTT cue text: escaped, with <i>/<b>/<u> only, no empty lines. */
  text: string;
}

interface Style { i: boolean; b: boolean; u: boolean }
interface Run extends Style { text: string }
type Line = Run[];

const PLAIN: Style = { i: false, b: false, u: false };
// Explicit literals rather than spreads: one object shape for every run and style, on the hot path
// of a two-hour film's thousands of cues.
const styleOf = (s: Style): Style => ({ i: s.i, b: s.b, u: s.u });
const run = (s: Style, text: string): Run => ({ i: s.i, b: s.b, u: s.u, text });
const TAGS = ['b', 'i', 'u'] as const;

export function toWebVtt(data: Uint8Array | string, format: SubtitleFormat): string {
  const text = (typeof data === 'string' ? data.replace(/^\uFEFF/, '') : decodeSubtitleText(data)).replace(/\r\n?/g, '\n');
  switch (format) {
    case 'srt': return writeVtt(parseSrt(text));
    case 'ass': case 'ssa': return writeVtt(parseAss(text));
    case 'vtt': return normalizeVtt(text);
    default: throw new Error(`unknown subtitle format ${String(format)}`);
  }
}

// ---------------------------------------------------------------- WebVTT out

const p2 = (n: number) => (n < 10 ? `0${n}` : `${n}`);
const p3 = (n: number) => (n < 10 ? `00${n}` : n < 100 ? `0${n}` : `${n}`);

export function vttTime(ms: number): string {
  const t = Math.max(0, Math.round(ms));
  return `${p2(Math.floor(t / 3_600_000))}:${p2(Math.floor(t / 60_000) % 60)}:${p2(Math.floor(t / 1000) % 60)}.${p3(t % 1000)}`;
}

export function writeVtt(cues: Cue[]): string {
  const sorted = cues.filter((c) => c.end > c.start && c.text).sort((a, b) => a.start - b.start || a.end - b.end);
  const out = ['WEBVTT', ''];
  let last: Cue | undefined;
  for (const c of sorted) {
    // ASS scripts often repeat a line on several layers (outline, shadow): one cue is enough.
    if (last && last.start === c.start && last.end === c.end && last.text === c.text) continue;
    out.push(`${vttTime(c.start)} --> ${vttTime(c.end)}`, c.text, '');
    last = c;
  }
  return out.join('\n');
}

/**
 * HLS players (hls.js, Safari) place WebVTT cues on the media's timeline
 * through X-TIMESTAMP-MAP: without it they assume the segments' timestamps
 * start at 0, and a transcode whose timestamps start later shows no cues.
 * `mpegts` is the media timestamp (90 kHz) of the title's time 0.
 */
export function withTimestampMap(vtt: string, mpegts: number): string {
  const header = vtt.indexOf('\n');
  const first = header < 0 ? vtt : vtt.slice(0, header);
  const rest = header < 0 ? '' : vtt.slice(header + 1).replace(/^X-TIMESTAMP-MAP=[^\n]*\n/, '');
  return `${first}\nX-TIMESTAMP-MAP=MPEGTS:${mpegts},LOCAL:00:00:00.000\n${rest}`;
}

/**
 * A WebVTT file kept as it is (regions, positions, styles, tags), with a
 * proper header and line ends, and the two things some writers leave bare
 * escaped: `&` outside an entity, and `<` that cannot start a tag (ffmpeg
 * 4.1 writes `A & B` and `3 < 4` unescaped).
 */
function normalizeVtt(text: string): string {
  const body = text.replace(BARE_AMP, '&amp;').replace(BARE_LT, '&lt;');
  return /^WEBVTT(?:[ \t].*)?(?:\n|$)/.test(body) ? body : `WEBVTT\n\n${body}`;
}
const BARE_AMP = /&(?!(?:[a-zA-Z]+|#\d+|#x[0-9a-fA-F]+);)/g;
const BARE_LT = /<(?=[\s\d=<]|$)/gm;

const escape = (s: string) => (/[&<>]/.test(s) ? s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;') : s);
const CLOSE_ORDER = [...TAGS].reverse();

/** Styled lines → cue text. Each line opens and closes its own tags, so nesting is always valid. */
function renderLines(lines: Line[]): string {
  const out: string[] = [];
  for (const line of lines) {
    // Most lines are one run: no tag changes to work out.
    if (line.length === 1) {
      const only = line[0]!;
      const text = only.text.trimEnd();
      if (!text.trim()) continue;
      out.push(only.b || only.i || only.u
        ? `${only.b ? '<b>' : ''}${only.i ? '<i>' : ''}${only.u ? '<u>' : ''}${escape(text)}${only.u ? '</u>' : ''}${only.i ? '</i>' : ''}${only.b ? '</b>' : ''}`
        : escape(text));
      continue;
    }
    const runs = line.filter((r) => r.text.length > 0);
    if (!runs.some((r) => r.text.trim())) continue; // WebVTT cue text may not contain an empty line
    // Trailing blanks are not shown; they would only leave empty tags behind.
    const lastRun = runs[runs.length - 1]!;
    runs[runs.length - 1] = run(lastRun, lastRun.text.trimEnd());
    let s = '';
    let open: Style = PLAIN;
    for (const r of runs) {
      if (!r.text) continue;
      if (TAGS.some((t) => r[t] !== open[t])) {
        for (const t of CLOSE_ORDER) if (open[t]) s += `</${t}>`;
        for (const t of TAGS) if (r[t]) s += `<${t}>`;
        open = r;
      }
      s += escape(r.text);
    }
    for (const t of CLOSE_ORDER) if (open[t]) s += `</${t}>`;
    out.push(s);
  }
  return out.join('\n');
}

/** `h:mm:ss[.,]fff` parts → ms. The fraction is a decimal fraction (`.5` is 500 ms, ASS's `.12` is 120 ms). */
const FRACTION_SCALE = [0, 100, 10, 1];
const toMs = (h: string | undefined, m: string, s: string, frac: string) =>
  ((Number(h ?? 0) * 60 + Number(m)) * 60 + Number(s)) * 1000 + (frac ? Number(frac) * FRACTION_SCALE[frac.length]! : 0);

// ---------------------------------------------------------------- SubRip

const SRT_TIMING = /^\s*(?:(\d+):)?(\d{1,2}):(\d{1,2})[,.:](\d{1,3})\s*-+>\s*(?:(\d+):)?(\d{1,2}):(\d{1,2})[,.:](\d{1,3})/;
/** Tags SubRip files carry: <i>, <b>, <u>, <font …>; `<` followed by a space or digit is text. */
const SRT_MARKUP = /<\s*(\/?)\s*([a-zA-Z][a-zA-Z0-9]*)\b[^<>]*>|\{\\[^{}]*\}/g;

export function parseSrt(text: string): Cue[] {
  const lines = text.split('\n');
  const cues: { start: number; end: number; lines: string[] }[] = [];
  let current: (typeof cues)[number] | undefined;
  let counter = 0;
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n]!;
    const m = line.includes('>') ? SRT_TIMING.exec(line) : null;
    if (m) {
      // The counter line before a timing line belongs to the new cue, not to the previous one's text:
      // a number after a blank line, or the next number when the blank line is missing.
      if (current) {
        const prev = current.lines;
        while (prev.length && !prev[prev.length - 1]!.trim()) prev.pop();
        const last = prev[prev.length - 1]?.trim() ?? '';
        if (/^\d+$/.test(last) && (prev.length === 1 || !prev[prev.length - 2]!.trim() || Number(last) === counter + 1)) {
          prev.pop();
          counter = Number(last);
        }
      } else {
        counter = Number(lines[n - 1]?.trim()) || 0;
      }
      current = { start: toMs(m[1], m[2]!, m[3]!, m[4]!), end: toMs(m[5], m[6]!, m[7]!, m[8]!), lines: [] };
      cues.push(current);
    } else if (current) {
      current.lines.push(line);
    }
  }
  return cues.map((c) => ({ start: c.start, end: c.end, text: srtCueText(c.lines) }));
}

function srtCueText(lines: string[]): string {
  // Most cues carry no markup: escape their lines and be done (a two-hour film has thousands of cues).
  if (lines.some((l) => l.includes('<') || l.includes('{'))) return renderLines(srtLines(lines));
  let out = '';
  for (const line of lines) {
    const text = line.trimEnd();
    if (text.trim()) out += out ? `\n${escape(text)}` : escape(text);
  }
  return out;
}

function srtLines(lines: string[]): Line[] {
  const style: Style = styleOf(PLAIN);
  return lines.map((line) => {
    if (!line.includes('<') && !line.includes('{')) return [run(style, line)];
    const runs: Run[] = [];
    let at = 0;
    for (const m of line.matchAll(SRT_MARKUP)) {
      runs.push(run(style, line.slice(at, m.index)));
      at = m.index! + m[0].length;
      const tag = m[2]?.toLowerCase();
      if (tag === 'i' || tag === 'b' || tag === 'u') style[tag] = m[1] !== '/';
      // <font>, {\an8} and the like: dropped.
    }
    runs.push(run(style, line.slice(at)));
    return runs;
  });
}

// ---------------------------------------------------------------- ASS / SSA

const DEFAULT_EVENT_FORMAT = ['layer', 'start', 'end', 'style', 'name', 'marginl', 'marginr', 'marginv', 'effect', 'text'];
const ASS_TIME = /^\s*(\d+):(\d{1,2}):(\d{1,2})(?:[.,](\d{1,3}))?\s*$/;

/** Splits `a,b,c,rest, with, commas` into `count` fields (the last one keeps its commas). */
function splitFields(value: string, count: number): string[] {
  const out: string[] = [];
  let rest = value;
  for (let i = 0; i < count - 1; i++) {
    const comma = rest.indexOf(',');
    if (comma < 0) break;
    out.push(rest.slice(0, comma));
    rest = rest.slice(comma + 1);
  }
  out.push(rest);
  return out;
}

const assTime = (s: string | undefined): number | undefined => {
  const m = s === undefined ? null : ASS_TIME.exec(s);
  return m ? toMs(m[1], m[2]!, m[3]!, m[4] ?? '0') : undefined;
};

const fieldIndexes = (format: string[]) => ({
  start: format.indexOf('start'), end: format.indexOf('end'), style: format.indexOf('style'), text: format.indexOf('text'),
});

/** ASS booleans are -1/0; SSA v4 uses the same. */
const flag = (v: string | undefined) => v !== undefined && v.trim() !== '' && v.trim() !== '0';

export function parseAss(text: string): Cue[] {
  let section = '';
  let eventFormat = DEFAULT_EVENT_FORMAT;
  let styleFormat: string[] = [];
  let wrapStyle = 0;
  const styles = new Map<string, Style>();
  const cues: Cue[] = [];
  let at = fieldIndexes(eventFormat);
  const dialogue = (value: string) => {
    const f = splitFields(value, eventFormat.length);
    const start = assTime(f[at.start]);
    const end = assTime(f[at.end]);
    const body = f[at.text];
    if (start === undefined || end === undefined || body === undefined) return;
    const styleName = (f[at.style] ?? '').trim().replace(/^\*/, '');
    const base = styles.get(styleName) ?? styles.get('Default') ?? PLAIN;
    cues.push({ start, end, text: assPlainText(body, base, wrapStyle === 2) ?? renderLines(assLines(body, base, styles, wrapStyle === 2)) });
  };
  for (const raw of text.split('\n')) {
    // Thousands of these: straight to the point.
    if (section === 'events' && raw.startsWith('Dialogue:')) { dialogue(raw.slice(raw.charCodeAt(9) === 32 ? 10 : 9).trimEnd()); continue; }
    const line = raw.trim();
    if (!line || line.startsWith(';')) continue;
    if (line.startsWith('[') && line.endsWith(']')) { section = line.slice(1, -1).trim().toLowerCase(); continue; }
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const key = line.slice(0, colon).trim().toLowerCase();
    const value = line.charCodeAt(colon + 1) === 32 ? line.slice(colon + 2) : line.slice(colon + 1);
    if (section === 'script info' && key === 'wrapstyle') wrapStyle = Number(value.trim()) || 0;
    else if (section.endsWith('styles') && key === 'format') styleFormat = value.split(',').map((f) => f.trim().toLowerCase());
    else if (section.endsWith('styles') && key === 'style') {
      const f = splitFields(value, styleFormat.length || 1);
      const get = (name: string) => f[styleFormat.indexOf(name)];
      styles.set((get('name') ?? '').trim(), { i: flag(get('italic')), b: flag(get('bold')), u: flag(get('underline')) });
    } else if (section === 'events' && key === 'format') {
      eventFormat = value.split(',').map((f) => f.trim().toLowerCase());
      at = fieldIndexes(eventFormat);
    } else if (section === 'events' && key === 'dialogue') {
      dialogue(value); // `dialogue:` or ` Dialogue:`, written unusually
    }
  }
  return cues;
}

const SPECIAL = /[{\\]/g;
/** An override block that changes what WebVTT keeps: \i, \b, \u (with a value or none), \p (drawing), \r (reset). */
const STYLING_OVERRIDE = /\{[^}]*\\(?:[ibu]\d*|p\d+|r[^\\}]*)(?=[\\}])/;
const OVERRIDE_BLOCK = /\{[^}]*\}/g;
const BREAKS = /\\N/;
const SOFT_BREAKS = /\\[Nn]/;

/**
 * Most dialogue lines only position or colour their text: with no override
 * that WebVTT keeps, the text is the line without its override blocks, in the
 * style's own italic/bold/underline. Undefined when the full parse is needed.
 */
function assPlainText(body: string, base: Style, softBreaks: boolean): string | undefined {
  if (STYLING_OVERRIDE.test(body)) return undefined;
  const open = `${base.b ? '<b>' : ''}${base.i ? '<i>' : ''}${base.u ? '<u>' : ''}`;
  const close = `${base.u ? '</u>' : ''}${base.i ? '</i>' : ''}${base.b ? '</b>' : ''}`;
  let out = '';
  for (const part of body.replace(OVERRIDE_BLOCK, '').split(softBreaks ? SOFT_BREAKS : BREAKS)) {
    const text = part.replace(/\\n/g, ' ').replace(/\\h/g, '\u00a0').trimEnd();
    if (!text.trim()) continue;
    out += `${out ? '\n' : ''}${open}${escape(text)}${close}`;
  }
  return out;
}

/** ASS dialogue text: `{\…}` override blocks set styles (or start a drawing), `\N` breaks lines, `\h` is a hard space. */
function assLines(body: string, base: Style, styles: Map<string, Style>, softBreaks: boolean): Line[] {
  if (!body.includes('{') && !body.includes('\\')) return [[run(base, body)]];
  const lines: Line[] = [[]];
  let style: Style = styleOf(base);
  let drawing = false;
  let text = '';
  const flush = () => {
    if (text && !drawing) lines[lines.length - 1]!.push(run(style, text));
    text = '';
  };
  for (let i = 0; i < body.length; i++) {
    // Jump to the next `{` or `\\`: everything before it is text.
    SPECIAL.lastIndex = i;
    const found = SPECIAL.exec(body);
    if (!found) { text += body.slice(i); break; }
    if (found.index > i) text += body.slice(i, found.index);
    i = found.index;
    const ch = body[i]!;
    if (ch === '{') {
      const close = body.indexOf('}', i + 1);
      if (close > i) {
        flush();
        for (const tag of body.slice(i + 1, close).split('\\').slice(1)) {
          const t = tag.trim();
          // Only \i, \b, \u, \p and \r matter here; colours, positions, fonts… are dropped.
          if (!'ibupr'.includes(t.charAt(0))) continue;
          let m: RegExpExecArray | null;
          if ((m = /^([ibu])(\d*)$/.exec(t))) {
            const which = m[1] as 'i' | 'b' | 'u';
            // \b takes a weight too (\b700); an empty value goes back to the style.
            style = styleOf(style);
            style[which] = m[2] === '' ? base[which] : Number(m[2]) !== 0;
          } else if ((m = /^p(\d+)$/.exec(t))) {
            drawing = Number(m[1]) > 0;
          } else if ((m = /^r(.*)$/.exec(t))) {
            style = styleOf(styles.get(m[1]!.trim()) ?? base);
          }
        }
        i = close;
        continue;
      }
    }
    if (ch === '\\' && i + 1 < body.length) {
      const next = body[i + 1];
      if (next === 'N' || (next === 'n' && softBreaks)) { flush(); lines.push([]); i++; continue; }
      if (next === 'n') { text += ' '; i++; continue; }
      if (next === 'h') { text += '\u00a0'; i++; continue; }
    }
    text += ch;
  }
  flush();
  return lines;
}
