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
const NUMBER_WORDS = new Map(['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten'].map((w, i) => [w, String(i)]));
/** Words that many channel names add or leave out ("Skai TV", "SKAI"): ignored by the fuzzy score only. */
const GENERIC = new Set(['tv', 'channel', 'television']);

/**
 * A channel name reduced to what identifies the channel: "US: CNN HD" and "cnn" and "CNN
 * [US]" give "cnn"; "Télé-Québec" gives "tele quebec"; "BBC One +1" gives "bbc one plus1",
 * never "bbc one" (a timeshift channel has other programmes).
 */
export function normaliseName(name: string): string {
  let s = fold(name.replace(ENCLOSED, ' ')).replace(COUNTRY_PREFIX, ' ');
  s = s.replace(BRACKETED_TAG, (whole, inner: string) => (/^\s*\+/.test(inner) || /\d/.test(inner) && !QUALITY.has(inner.trim()) ? ` ${inner} ` : ' '));
  s = s.replace(TIMESHIFT, ' plus$1 ').replace(/&/g, ' and ').replace(/[^\p{L}\p{N}]+/gu, ' ');
  const tokens = s.split(' ').filter((t) => t && !QUALITY.has(t)).map((t) => NUMBER_WORDS.get(t) ?? t);
  return tokens.join(' ');
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

interface Name { entry: number; display: string; key: string; pinned: string; grams: number }

function trigrams(key: string): string[] {
  const padded = `  ${key} `;
  const out = new Set<string>();
  for (let i = 0; i + 3 <= padded.length; i++) out.add(padded.slice(i, i + 3));
  return [...out];
}

/**
 * The guide channels of every source, indexed for matching: entries come in source order (the
 * first source's channel wins a tie), and the names of all of them in a trigram index.
 */
export class GuideMatcher {
  private readonly byId = new Map<string, number>();
  private readonly byFoldedId = new Map<string, number>();
  private readonly byName = new Map<string, number>();
  private readonly names: Name[] = [];
  private readonly postings = new Map<string, number[]>();
  /** Shared-trigram counts per name, reused by every query (and the names it touched). */
  private readonly counts: Uint16Array;

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
        const grams = trigrams(fuzzyKey(normalised));
        const n = this.names.length;
        this.names.push({ entry: i, display, key, pinned: pinned(normalised), grams: grams.length });
        for (const g of grams) {
          let list = this.postings.get(g);
          if (!list) this.postings.set(g, (list = []));
          list.push(n);
        }
      }
    });
    this.counts = new Uint16Array(this.names.length);
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
    const [best, ...others] = this.scored(names, 5);
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
   * trigram Dice coefficient. With `strict`, a guide name whose numbers or timeshift differ
   * scores 0: a fuzzy match must never take "Channel 5" for "Channel 4", nor "+1" for the original.
   */
  private scored(normalised: string[], n: number, strict = true): { entry: number; name: number; score: number }[] {
    const best = new Map<number, { entry: number; name: number; score: number }>();
    for (const name of normalised) {
      if (!name) continue;
      const pin = pinned(name);
      const grams = trigrams(fuzzyKey(name));
      const touched: number[] = [];
      for (const g of grams) {
        const list = this.postings.get(g);
        if (!list) continue;
        for (const i of list) if (this.counts[i]++ === 0) touched.push(i);
      }
      for (const i of touched) {
        const shared = this.counts[i];
        this.counts[i] = 0;
        const cand = this.names[i];
        if (strict && cand.pinned !== pin) continue;
        const score = (2 * shared) / (grams.length + cand.grams);
        const known = best.get(cand.entry);
        if (!known || score > known.score) best.set(cand.entry, { entry: cand.entry, name: i, score });
      }
    }
    const top: { entry: number; name: number; score: number }[] = [];
    const before = (a: typeof top[0], b: typeof top[0]) => a.score > b.score || (a.score === b.score && a.entry < b.entry);
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
