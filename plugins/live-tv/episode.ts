/**
 * What the guide says about a programme as an episode: its season and episode numbers, whether
 * this airing is new, a repeat or live, which series it belongs to and which episode it is.
 * Computed once at import and stored with the programme (the DVR's rules and /programs read it).
 */
import type { GuideProgramme } from 'antenna/sdk';
import { fold } from './text.js';

/** Bits of the stored `airing` column. */
export const AIRING_NEW = 1;
export const AIRING_REPEAT = 2;
export const AIRING_LIVE = 4;

/** Bits of the stored `marks` column: the guide's own elements, kept as given. */
export const MARK_NEW = 1;
export const MARK_PREMIERE = 2;
export const MARK_PREVIOUSLY_SHOWN = 4;
export const MARK_LIVE = 8;

const DAY_MS = 86_400_000;

export interface EpisodeInfo {
  season: number | null;
  episode: number | null;
  /** AIRING_* bits. */
  airing: number;
  /** `dd:<series id>` when the guide names the series (dd_progid), else `t:<folded title>`. */
  seriesKey: string;
  /** Which episode this is, for telling repeats across airings and channels apart; null when the guide cannot tell. */
  episodeKey: string | null;
  /** MARK_* bits. */
  marks: number;
}

/**
 * New is `<new/>` or `<premiere>`; a repeat is `<previously-shown>` without them, unless what it
 * gives as the first showing is this airing's own day (some guides mark every programme so);
 * anything else is unknown (neither).
 */
export function airingOf(p: Pick<GuideProgramme, 'start' | 'isNew' | 'premiere' | 'previouslyShown' | 'live'>): number {
  let bits = p.live ? AIRING_LIVE : 0;
  if (p.isNew || p.premiere) return bits | AIRING_NEW;
  const shown = p.previouslyShown;
  if (shown && (shown.start === undefined || Math.floor(shown.start / DAY_MS) !== Math.floor(p.start / DAY_MS))) bits |= AIRING_REPEAT;
  return bits;
}

/** xmltv_ns `S.E.P` (zero-based, each part may be `n/total` or empty): one-based season and episode. */
function fromXmltvNs(value: string): { season: number | null; episode: number | null } {
  const [s = '', e = ''] = value.split('.');
  const num = (part: string) => {
    const m = /^\s*(\d+)\s*(?:\/|$)/.exec(part);
    return m ? Number(m[1]) + 1 : null;
  };
  return { season: num(s), episode: num(e) };
}

/** onscreen `S01E05`, `S1 E5`, `1x05`, `Season 1 Episode 5`. */
function fromOnscreen(value: string): { season: number | null; episode: number | null } {
  const m = /s(?:eason)?\s*(\d+)\D{0,12}?e(?:p(?:isode)?)?\.?\s*(\d+)/i.exec(value) ?? /^\s*(\d+)\s*x\s*(\d+)/i.exec(value);
  if (m) return { season: Number(m[1]), episode: Number(m[2]) };
  const e = /^\s*e(?:p(?:isode)?)?\.?\s*(\d+)/i.exec(value);
  return { season: null, episode: e ? Number(e[1]) : null };
}

/**
 * dd_progid `EP02420905.0022`: the series (`02420905`) and, for an episode, the episode id. Some
 * guides give a bare programme id (`10681949`, with the series in dd_seriesid): the episode id.
 */
function fromDdProgid(value: string): { series?: string; episode?: string } {
  const m = /^\s*([A-Z]{2})(\d{6,})\.?(\d*)\s*$/i.exec(value);
  if (!m) return /^\s*\d{4,}\s*$/.test(value) ? { episode: value.trim() } : {};
  const type = m[1].toUpperCase();
  const episode = type === 'EP' && m[3] && Number(m[3]) !== 0 ? `${type}${m[2]}.${m[3]}` : undefined;
  return { series: type === 'EP' || type === 'SH' ? m[2] : undefined, episode };
}

/**
 * 64 bits of two FNV-1a lanes, as 16 hex digits: a description makes a long key, and the DVR
 * compares keys by the thousand. Not SHA-1: creating a hash object costs ~20 µs a programme.
 */
function hash64(text: string): string {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995) ^ (b >>> 15);
  }
  return (a >>> 0).toString(16).padStart(8, '0') + (b >>> 0).toString(16).padStart(8, '0');
}

/** Folded titles seen in an import: titles repeat a lot, and fold() is the cost. */
export class TitleFolder {
  private readonly seen = new Map<string, string>();

  fold(title: string): string {
    let f = this.seen.get(title);
    if (f === undefined) {
      if (this.seen.size >= 100_000) this.seen.clear();
      this.seen.set(title, (f = fold(title)));
    }
    return f;
  }
}

export function episodeInfo(p: GuideProgramme, folder: TitleFolder): EpisodeInfo {
  let season: number | null = null;
  let episode: number | null = null;
  let ddSeries: string | undefined;
  let ddEpisode: string | undefined;
  let onscreen: string | undefined;
  for (const { system, value } of p.episodeNums ?? (p.episodeNum ? [{ system: 'xmltv_ns', value: p.episodeNum }] : [])) {
    if (system === 'xmltv_ns' && season === null && episode === null) ({ season, episode } = fromXmltvNs(value));
    else if (system === 'onscreen') onscreen ??= value;
    else if (system === 'dd_progid' && ddEpisode === undefined) {
      const dd = fromDdProgid(value);
      ddSeries ??= dd.series;
      ddEpisode = dd.episode;
    } else if (system === 'dd_seriesid' && /^\s*\d+\s*$/.test(value)) ddSeries = value.trim();
  }
  if (season === null && episode === null && onscreen !== undefined) ({ season, episode } = fromOnscreen(onscreen));
  const title = folder.fold(p.title);
  const seriesKey = ddSeries !== undefined ? `dd:${ddSeries}` : `t:${title}`;
  // The identity order of the issue: dd_progid episode id, (series, season, episode), (title, episode title), description
  // (folded only when needed: folding every description would cost an import seconds).
  let identity: string | null = ddEpisode !== undefined ? `dd:${ddEpisode}` : episode !== null ? `se:${seriesKey}\n${season ?? ''}\n${episode}` : null;
  if (identity === null && p.subTitle) {
    const subTitle = fold(p.subTitle);
    if (subTitle && subTitle !== title) identity = `te:${title}\n${subTitle}`;
  }
  if (identity === null && p.description) identity = `d:${title}\n${fold(p.description)}`;
  const episodeKey = identity === null ? null : hash64(identity);
  const marks = (p.isNew ? MARK_NEW : 0) | (p.premiere ? MARK_PREMIERE : 0) | (p.previouslyShown ? MARK_PREVIOUSLY_SHOWN : 0) | (p.live ? MARK_LIVE : 0);
  return { season, episode, airing: airingOf(p), seriesKey, episodeKey, marks };
}
