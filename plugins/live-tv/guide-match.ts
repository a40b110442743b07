/**
 * Which guide channel feeds a playlist channel. The steps, in order, the first that matches
 * wins: a manual mapping; the tvg-id equal to a guide channel id; equal ignoring case and
 * spacing; equal normalised names (normaliseName); a fuzzy score (trigram Dice coefficient of
 * the normalised names) of at least FUZZY_THRESHOLD with FUZZY_MARGIN over the next guide channel.
 */
import { fold } from './text.js';

export type MatchMethod = 'manual' | 'tvg_id' | 'tvg_id_folded' | 'name' | 'fuzzy';

export interface GuideRef { sourceId: string; guideId: string }
export interface GuideEntry extends GuideRef { names: string[] }
export interface MatchableChannel { name: string; tvgId: string | null; tvgName: string | null }
export interface GuideMatch { ref: GuideRef; method: MatchMethod; score: number }
export interface Candidate { ref: GuideRef; name: string; score: number }

export const FUZZY_THRESHOLD = 0.75;
export const FUZZY_MARGIN = 0.08;
/** A fuzzy match below this is listed with the unmatched channels, for an admin to confirm. */
export const CONFIDENT_SCORE = 0.9;

/** Quality and format tags that say nothing about which channel it is. */
const QUALITY = new Set(['hd', 'fhd', 'uhd', 'sd', 'hq', 'lq', '4k', '8k', '1080p', '1080i', '720p', '576i', '2160p', 'hevc', 'h264', 'h265',
  'hdr', '50fps', '60fps', 'backup', 'raw']);
/** A bracketed tag of letters only this long is a region or quality tag: "[UK]", "(DE)", "[FHD]". */
const BRACKETED_TAG = /[[(]\s*([\p{L}\d ]{1,4})\s*[\])]/gu;
/** A country prefix: "US: ", "UK | ", "|FR| ". */
const COUNTRY_PREFIX = /^\s*\|?\s*\p{L}{2,3}\s*[:|]\s*/u;
/** A timeshift marker, kept as a token of its own: "+1", "+24", "+1h". */
const TIMESHIFT = /\+\s*(\d{1,2})\s*(?:h\b|hours?\b)?/g;
/** Circled letters playlists append as flags ("Arte Ⓖ": geo-blocked), which NFKD would make letters. */
const ENCLOSED = /[\u2460-\u24ff\u{1F100}-\u{1F1FF}]/gu;
const ASCII = /^[\x00-\x7f]*$/;
const NUMBER_WORDS = new Map(['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten'].map((w, i) => [w, String(i)]));
/** Words that many channel names add or leave out ("Skai TV", "SKAI"): ignored by the fuzzy score only. */
const GENERIC = new Set(['tv', 'channel', 'television']);

/**
 * A channel name reduced to what identifies the channel: "US: CNN HD" and "cnn" and "CNN
 * [US]" give "cnn"; "Télé-Québec" gives "tele quebec"; "BBC One +1" gives "bbc one plus1",
 * never "bbc one" (a timeshift channel has other programmes).
 */
export function normaliseName(name: string): string {
  // Each rewrite only when its character is there: a 20,000-channel guide is normalised at every import.
  const ascii = ASCII.test(name);
  let s = fold(ascii ? name : name.replace(ENCLOSED, ' '));
  if (s.includes(':') || s.includes('|')) s = s.replace(COUNTRY_PREFIX, ' ');
  if (s.includes('[') || s.includes('(')) {
    s = s.replace(BRACKETED_TAG, (whole, inner: string) => (/^\s*\+/.test(inner) || /\d/.test(inner) && !QUALITY.has(inner.trim()) ? ` ${inner} ` : ' '));
  }
  if (s.includes('+')) s = s.replace(TIMESHIFT, ' plus$1 ');
  if (s.includes('&')) s = s.replace(/&/g, ' and ');
  s = ascii ? s.replace(/[^a-z0-9]+/g, ' ') : s.replace(/[^\p{L}\p{N}]+/gu, ' ');
  let out = '';
  for (const t of s.split(' ')) {
    if (!t || QUALITY.has(t)) continue;
    out += (out ? ' ' : '') + (NUMBER_WORDS.get(t) ?? t);
  }
  return out;
}

/** The tvg-id or guide id compared ignoring case and spacing. */
export const foldId = (id: string): string => id.toLowerCase().replace(/\s+/g, '');

/** The name's key for equality: normalised, without spaces ("BBC One" = "BBCOne"). */
const compact = (normalised: string) => normalised.replace(/ /g, '');
/** What a fuzzy match must agree on: numbers ("Channel 4" is not "Channel 5") and timeshift markers ("+1" is not "1"). */
const pinned = (normalised: string) => (normalised.match(/plus\d+|\d+/g) ?? []).sort().join(' ');
/** The key the fuzzy score compares: the compact name without generic words, unless that leaves nothing. */
const fuzzyKey = (normalised: string) => {
  const key = compact(normalised.split(' ').filter((t) => !GENERIC.has(t)).join(' ')) || compact(normalised);
  return key.length >= 5 && key.endsWith('tv') ? key.slice(0, -2) : key; // "AlphaTV"
};

interface Name { entry: number; display: string; key: string; grams: Int32Array }
const GRAM_IDS = 2 ** 24;
/** Rarest trigram lists read beyond the prefix's: a candidate must then appear in this many of them to be compared in full. */
const EXTRA_LISTS = 2;
interface Scored { entry: number; name: number; score: number }

/**
 * The fuzzy step's candidates are only the guide names that can score at least this (Dice
 * coefficient): a best at the threshold needs its runner-up known down to threshold - margin.
 */
const PROBE_SCORE = FUZZY_THRESHOLD - FUZZY_MARGIN;

function trigrams(key: string): string[] {
  const padded = `  ${key} `;
  const out = new Set<string>();
  for (let i = 0; i + 3 <= padded.length; i++) out.add(padded.slice(i, i + 3));
  return [...out];
}

/** How many of the sorted ids of `a` are in the sorted ids of `b`. */
function overlap(a: Int32Array, b: Int32Array): number {
  let n = 0;
  for (let i = 0, j = 0; i < a.length && j < b.length;) {
    if (a[i] === b[j]) { n++; i++; j++; } else if (a[i] < b[j]) i++; else j++;
  }
  return n;
}

/**
 * The guide channels of every source, indexed for matching: entries come in source order (the
 * first source's channel wins a tie), and the names of all of them in trigram indexes.
 */
export class GuideMatcher {
  private readonly byId = new Map<string, number>();
  private readonly byFoldedId = new Map<string, number>();
  private readonly byName = new Map<string, number>();
  private readonly names: Name[] = [];
  private readonly gramIds = new Map<string, number>();
  /** Names by trigram id, for the candidates of any name. */
  private readonly postings: number[][] = [];
  /** Names by `pinned` value and trigram id (pinId * 2^24 + gram id), for the fuzzy step (which needs the same numbers). */
  private readonly pinIds = new Map<string, number>();
  private readonly pinnedPostings = new Map<number, number[]>();
  /** Shared trigrams per name in the current query, and the query that last counted it (so counts need no clearing). */
  private readonly counts: Int32Array;
  private readonly marks: Int32Array;
  private query = 0;

  constructor(readonly entries: readonly GuideEntry[]) {
    entries.forEach((e, i) => {
      if (!this.byId.has(e.guideId)) this.byId.set(e.guideId, i);
      const folded = foldId(e.guideId);
      if (!this.byFoldedId.has(folded)) this.byFoldedId.set(folded, i);
      const seen = new Set<string>();
      for (const display of e.names) {
        const normalised = normaliseName(display);
        const key = compact(normalised);
        if (!key || seen.has(key)) continue;
        seen.add(key);
        if (!this.byName.has(key)) this.byName.set(key, i);
        const n = this.names.length;
        const pin = this.pinIdOf(pinned(normalised), true);
        const ids = trigrams(fuzzyKey(normalised)).map((g) => {
          let id = this.gramIds.get(g);
          if (id === undefined) {
            this.gramIds.set(g, (id = this.gramIds.size));
            this.postings.push([]);
          }
          this.postings[id].push(n);
          const k = pin * GRAM_IDS + id;
          const list = this.pinnedPostings.get(k);
          if (list) list.push(n); else this.pinnedPostings.set(k, [n]);
          return id;
        });
        this.names.push({ entry: i, display, key, grams: Int32Array.from(ids).sort() });
      }
    });
    this.counts = new Int32Array(this.names.length);
    this.marks = new Int32Array(this.names.length);
  }

  private pinIdOf(pin: string, add = false): number {
    let id = this.pinIds.get(pin);
    if (id === undefined && add) this.pinIds.set(pin, (id = this.pinIds.size));
    return id ?? -1;
  }

  /** The automatic match of a channel (steps 2 to 5), or undefined. */
  match(c: MatchableChannel): GuideMatch | undefined {
    const at = (i: number | undefined, method: MatchMethod, score = 1) =>
      (i === undefined ? undefined : { ref: this.refOf(i), method, score });
    if (c.tvgId) {
      const found = at(this.byId.get(c.tvgId), 'tvg_id') ?? at(this.byFoldedId.get(foldId(c.tvgId)), 'tvg_id_folded');
      if (found) return found;
    }
    const names = [c.name, c.tvgName].filter((n): n is string => !!n).map(normaliseName);
    for (const n of names) {
      const found = at(this.byName.get(compact(n)), 'name');
      if (found) return found;
    }
    // The runner-up is the best guide channel of another name: "SKAI" and "SKAI HD" are one channel's twins.
    const [best, ...others] = this.scored(names, 5, true);
    const next = best && others.find((o) => this.names[o.name].key !== this.names[best.name].key);
    if (best && best.score >= FUZZY_THRESHOLD && best.score - (next?.score ?? 0) >= FUZZY_MARGIN) {
      return { ref: this.refOf(best.entry), method: 'fuzzy', score: round(best.score) };
    }
    return undefined;
  }

  /** The `n` guide channels whose names come closest to the channel's, best first. */
  candidates(c: MatchableChannel, n = 5): Candidate[] {
    const names = [c.name, c.tvgName].filter((x): x is string => !!x).map(normaliseName);
    return this.scored(names, n, false).map((s) => ({ ref: this.refOf(s.entry), name: this.names[s.name].display, score: round(s.score) }));
  }

  private refOf(i: number): GuideRef {
    const e = this.entries[i];
    return { sourceId: e.sourceId, guideId: e.guideId };
  }

  /**
   * The best `n` guide channels (one score each: their best name's) for any of the names, by
   * trigram Dice coefficient. `fuzzy`: only names with the same numbers and timeshift (a fuzzy
   * match must never take "Channel 5" for "Channel 4", nor "+1" for the original) that can
   * score PROBE_SCORE: a name sharing at least that much must share one of the query's rarest
   * trigrams (prefix filtering), so the common ones' long lists are never read.
   */
  private scored(normalised: string[], n: number, fuzzy: boolean): Scored[] {
    const best = new Map<number, Scored>();
    const consider = (i: number, score: number) => {
      const entry = this.names[i].entry;
      const known = best.get(entry);
      if (!known || score > known.score) best.set(entry, { entry, name: i, score });
    };
    for (const name of normalised) {
      if (!name) continue;
      const grams = trigrams(fuzzyKey(name));
      const size = grams.length;
      const ids = Int32Array.from(grams.map((g) => this.gramIds.get(g) ?? -1).filter((id) => id >= 0)).sort();
      const q = ++this.query;
      if (!fuzzy) {
        // Every name sharing a trigram, with its exact count.
        const touched: number[] = [];
        for (const id of ids) {
          for (const i of this.postings[id]) {
            if (this.marks[i] !== q) { this.marks[i] = q; this.counts[i] = 0; touched.push(i); }
            this.counts[i]++;
          }
        }
        for (const i of touched) consider(i, (2 * this.counts[i]) / (size + this.names[i].grams.length));
        continue;
      }
      const pin = this.pinIdOf(pinned(name));
      if (pin < 0) continue;
      const lists = [...ids].map((id) => this.pinnedPostings.get(pin * GRAM_IDS + id) ?? []).sort((a, b) => a.length - b.length);
      // Dice >= s with |B| >= shared gives shared >= s|A| / (2 - s), and |B| within [s|A| / (2 - s), (2 - s)|A| / s].
      const least = Math.ceil((PROBE_SCORE * size) / (2 - PROBE_SCORE) - 1e-9);
      const longest = Math.floor(((2 - PROBE_SCORE) * size) / PROBE_SCORE + 1e-9);
      // A name sharing `least` trigrams shares `needed` of the rarest `read` (trigrams the guide lacks are the rarest of all).
      const read = Math.min(lists.length, size - least + EXTRA_LISTS - (size - ids.length));
      if (read <= 0) continue;
      const needed = Math.max(1, least - (ids.length - read));
      const touched: number[] = [];
      for (let l = 0; l < read; l++) {
        for (const i of lists[l]) {
          if (this.marks[i] !== q) { this.marks[i] = q; this.counts[i] = 0; touched.push(i); }
          this.counts[i]++;
        }
      }
      for (const i of touched) {
        const cand = this.names[i];
        if (this.counts[i] < needed || cand.grams.length < least || cand.grams.length > longest) continue;
        const shared = read === ids.length ? this.counts[i] : overlap(ids, cand.grams);
        consider(i, (2 * shared) / (size + cand.grams.length));
      }
    }
    const top: Scored[] = [];
    const before = (a: Scored, b: Scored) => a.score > b.score || (a.score === b.score && a.entry < b.entry);
    for (const s of best.values()) {
      if (top.length === n && !before(s, top[n - 1])) continue;
      let i = Math.min(top.length, n - 1);
      top[i] = s;
      for (; i > 0 && before(top[i], top[i - 1]); i--) [top[i], top[i - 1]] = [top[i - 1], top[i]];
    }
    return top;
  }
}

const round = (x: number) => Math.round(x * 1000) / 1000;
