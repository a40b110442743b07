/**
 * IPTV M3U playlist tokenizer for the m3u-tuner plugin.
 *
 * Why hand-written: m3u8-parser is an HLS parser; it drops the IPTV
 * attributes (tvg-*, group-title, catchup…), the #EXTVLCOPT / #KODIPROP /
 * #EXTHTTP directives and the Kodi `url|Header=…` suffixes that real
 * playlists depend on. Real files are also messy (see
 * shared/realdata/SOURCES.md): BOMs, CRLF, indented lines, separator lines,
 * placeholders, comments between #EXTINF and its URL. This module handles all
 * of that in one pass over the lines, scanning char codes instead of running
 * regexes per line, so a 100k-entry (25 MB) playlist parses in a few hundred ms.
 *
 * Pure: no imports from the rest of the repo, never touches the network or a
 * shell. `pipe://` URLs (shell commands run by Kodi/Tvheadend) are dropped here
 * so that nothing downstream can ever execute them.
 */
import { isAscii } from 'node:buffer';

export interface M3uEntry {
  /** Display name: text after the first comma outside quotes, trimmed. Falls back to tvg-name, then the URL. */
  name: string;
  /** #EXTINF duration (-1 for live streams, 0, 17 …); -1 when absent or unparsable. */
  duration: number;
  /** Every key="value" (or key=value) attribute of the #EXTINF, keys lower-cased (tvg-ID -> tvg-id). */
  attrs: Record<string, string>;
  /** tvg-id, tvg-name, tvg-logo; undefined when missing or empty (tvg-id="" is common and means "none"). */
  tvgId?: string;
  tvgName?: string;
  tvgLogo?: string;
  /** Channel number: tvg-chno, else channel-number, tvg-num, else channel-id/channelid when numeric. May be "22.1" or "BS101". */
  number?: string;
  /** group-title split on ';' ("General;News"); a #EXTGRP line overrides it. */
  groups: readonly string[];
  /** Stream URL without any Kodi `|Header=…` suffix; relative URLs resolved against options.baseUrl. */
  url: string;
  /** Shortcuts for headers['user-agent'] / headers['referer']. */
  userAgent?: string;
  referrer?: string;
  /**
   * HTTP headers to send when fetching the stream, lower-case names. Sources,
   * later ones winning: #EXTINF attrs (user-agent, http-user-agent,
   * http-referrer, http-origin), then #EXTVLCOPT / #EXTHTTP / KODIPROP
   * stream_headers in file order, then the URL's `|…` suffix (the most specific
   * to the URL itself).
   */
  headers: Readonly<Record<string, string>>;
  /** #KODIPROP:key=value lines, keys as written (Kodi property names are case-sensitive). */
  kodiProps: Readonly<Record<string, string>>;
  /** 1-based line of the #EXTINF (of the URL for entries that have no #EXTINF). */
  line: number;
}

export interface M3uPlaylist {
  /** Attributes of the first #EXTM3U line, keys lower-cased. Later #EXTM3U lines (concatenated files) are ignored. */
  header: Record<string, string>;
  /** EPG URLs from x-tvg-url / url-tvg / tvg-url of the header, comma-separated lists split, deduplicated. */
  guideUrls: string[];
  entries: M3uEntry[];
  /** Entries dropped: pipe:// commands, placeholders like "[NO PUBLIC STREAM]", #EXTINF without a URL. */
  skipped: number;
  /** First `maxWarnings` warnings, each "line N: …". */
  warnings: string[];
  /** Total number of warnings, including those not kept. */
  warningCount: number;
}

export interface M3uParseOptions {
  /** URL of the playlist itself; enables relative stream URLs (resolved against it). */
  baseUrl?: string;
  /** How many warning messages to keep (default 100); warningCount still counts them all. */
  maxWarnings?: number;
}

// Char codes used by the scanners.
const TAB = 9, LF = 10, VT = 11, FF = 12, CR = 13, SPACE = 32, DQUOTE = 34, HASH = 35, PERCENT = 37,
  AMP = 38, SQUOTE = 39, PLUS = 43, COMMA = 44, MINUS = 45, DOT = 46, SLASH = 47, COLON = 58, EQ = 61,
  LBRACKET = 91, RBRACKET = 93, UNDERSCORE = 95, PIPE = 124, TILDE = 126, NBSP = 0xa0, BOM = 0xfeff;

/** Whitespace, incl. NBSP and a stray BOM. Printable ASCII (the hot case) costs two compares. */
function isWs(c: number): boolean {
  if (c > SPACE) return c === NBSP || c === BOM;
  return c === SPACE || c === TAB || c === CR || c === LF || c === VT || c === FF;
}
function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}
function isAlpha(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
}

/**
 * Attribute names the parser knows, by id. Ids below K_FIELDS feed entry
 * fields (see noteKnown); the rest are merely common. Recognising these in the
 * raw text gives a constant (already internalized) key string, so the hot path
 * neither slices nor internalizes a new key for each of the ~6 attributes of
 * every entry, and an integer to dispatch on instead of string compares.
 */
const K_NONE = 0, K_TVG_ID = 1, K_TVG_NAME = 2, K_TVG_LOGO = 3, K_GROUP_TITLE = 4, K_TVG_CHNO = 5,
  K_CHANNEL_NUMBER = 6, K_TVG_NUM = 7, K_CHANNEL_ID = 8, K_CHANNELID = 9, K_USER_AGENT = 10,
  K_HTTP_USER_AGENT = 11, K_HTTP_REFERRER = 12, K_HTTP_REFERER = 13, K_REFERRER = 14, K_HTTP_ORIGIN = 15,
  K_FIELDS = 16;
const KEY_NAMES: readonly string[] = [
  '', 'tvg-id', 'tvg-name', 'tvg-logo', 'group-title', 'tvg-chno', 'channel-number', 'tvg-num', 'channel-id',
  'channelid', 'user-agent', 'http-user-agent', 'http-referrer', 'http-referer', 'referrer', 'http-origin',
  // K_FIELDS and up: common, no entry field.
  'radio', 'catchup', 'tvg-url', 'url-tvg', 'x-tvg-url', 'tvg-shift', 'tvg-country', 'catchup-days', 'tvg-language',
  'catchup-source', 'tvg-rec', 'timeshift', 'catchup-type', 'lang',
];
const KEY_IDS = new Map<string, number>(KEY_NAMES.map((k, i) => [k, i]));
/**
 * Attributes with few distinct values (countries, groups, flags): their value
 * strings are interned per parse, so 100k entries share a few hundred strings
 * instead of each retaining its own copy.
 */
const LOW_CARDINALITY: readonly boolean[] = KEY_NAMES.map((k) =>
  ['group-title', 'radio', 'catchup', 'tvg-shift', 'tvg-country', 'catchup-days', 'tvg-language', 'tvg-rec',
    'timeshift', 'catchup-type', 'lang'].includes(k));
const INTERN_MAX = 20_000;

/**
 * Known names are recognised from an exact numeric encoding computed while
 * the key is scanned (no second pass over its chars, no hashing, so no
 * collisions): 7 bits per char of [a-z-], 7 chars per number (< 2^49, exact
 * in a double), three numbers for names of up to 21 chars.
 */
const ENC_MAX_LEN = 21;
function encodeName(name: string): [number, number, number] {
  const h = [0, 0, 0];
  for (let i = 0; i < name.length; i++) h[Math.floor(i / 7)] = h[Math.floor(i / 7)] * 128 + name.charCodeAt(i);
  return [h[0], h[1], h[2]];
}
/** By name length: flat [id, h1, h2, h3, id, h1, …]. */
const ENC_BY_LEN: number[][] = Array.from({ length: ENC_MAX_LEN + 1 }, () => []);
KEY_NAMES.forEach((name, id) => {
  if (id !== K_NONE) ENC_BY_LEN[name.length].push(id, ...encodeName(name));
});

function lookupEncoded(len: number, h1: number, h2: number, h3: number): number {
  const t = ENC_BY_LEN[len];
  for (let j = 0; j < t.length; j += 4) {
    if (t[j + 1] === h1 && t[j + 2] === h2 && t[j + 3] === h3) return t[j];
  }
  return K_NONE;
}

/**
 * text.startsWith(str, s) for short str, as an inlinable charCode loop
 * (the builtin call costs more than the compare on these short strings).
 */
function sameAt(text: string, s: number, str: string): boolean {
  const n = str.length;
  for (let i = 0; i < n; i++) {
    if (text.charCodeAt(s + i) !== str.charCodeAt(i)) return false;
  }
  return true;
}

/**
 * Scans `key=value` attributes in text[i, e). Values may be double- or
 * single-quoted (and then contain commas and spaces) or bare (ending at
 * whitespace, or at a comma when stopAtComma). Keys are lower-cased.
 * Returns the index of the first comma outside quotes (the #EXTINF name
 * separator) or e. Bounded by e, so an unterminated quote cannot make it
 * scan the rest of the file.
 */
function scanAttrs(
  text: string, i: number, e: number, attrs: Record<string, string>, stopAtComma: boolean, known: Known | null,
  intern: Map<string, string> | null,
): number {
  while (i < e) {
    let c = text.charCodeAt(i);
    if (isWs(c)) { i++; continue; }
    if (c === COMMA && stopAtComma) return i;
    const ks = i;
    let upper = false;
    let plain = true; // only [a-z-] so far: h1..h3 encode the key exactly (see encodeName)
    let h1 = 0, h2 = 0, h3 = 0;
    while (i < e) {
      c = text.charCodeAt(i);
      if ((c >= 97 && c <= 122) || c === MINUS) { // nearly every key char
        const n = i - ks;
        if (n < 7) h1 = h1 * 128 + c;
        else if (n < 14) h2 = h2 * 128 + c;
        else h3 = h3 * 128 + c;
        i++;
        continue;
      }
      if (c === EQ || isWs(c) || (c === COMMA && stopAtComma)) break;
      if (c >= 65 && c <= 90) upper = true;
      plain = false;
      i++;
    }
    if (i === ks) { i++; continue; } // a lone comma when !stopAtComma
    if (i >= e || c !== EQ) continue; // bare word without '=': not an attribute, ignore it
    let id = plain && i - ks <= ENC_MAX_LEN ? lookupEncoded(i - ks, h1, h2, h3) : K_NONE;
    let key: string;
    if (id !== K_NONE) {
      key = KEY_NAMES[id];
    } else {
      key = text.slice(ks, i);
      if (upper) key = key.toLowerCase();
      id = KEY_IDS.get(key) ?? K_NONE; // e.g. tvg-ID, channelID, http-referer
    }
    i++; // '='
    let value: string;
    const q = i < e ? text.charCodeAt(i) : 0;
    if (q === DQUOTE || q === SQUOTE) {
      // Native indexOf skips the value (logos, user agents: most of the line) far faster than a
      // charCode loop. An unterminated quote runs to the end of the line; the search then stops at
      // the next quote in the file, so over a whole file the extra scanning stays linear.
      let j = text.indexOf(q === DQUOTE ? '"' : "'", i + 1);
      if (j < 0 || j > e) j = e;
      value = text.slice(i + 1, j);
      i = j + 1; // past the closing quote (or past e when unterminated)
    } else {
      const vs = i;
      while (i < e) {
        c = text.charCodeAt(i);
        if (isWs(c) || (c === COMMA && stopAtComma)) break;
        i++;
      }
      value = text.slice(vs, i);
    }
    if (intern !== null && LOW_CARDINALITY[id]) {
      const v = intern.get(value);
      if (v !== undefined) value = v;
      else if (intern.size < INTERN_MAX) intern.set(value, value);
    }
    if (key !== '__proto__') {
      attrs[key] = value;
      if (known !== null && id !== K_NONE && id < K_FIELDS) noteKnown(known, id, value);
    }
  }
  return e;
}

/**
 * If text[s, e) starts with a URL scheme followed by "://", returns the
 * scheme's length, else 0. Schemes are short; the scan stops early.
 */
function urlScheme(text: string, s: number, e: number): number {
  if (!isAlpha(text.charCodeAt(s))) return 0;
  let i = s + 1;
  const max = Math.min(e, s + 32);
  while (i < max) {
    const c = text.charCodeAt(i);
    if (isAlpha(c) || isDigit(c) || c === PLUS || c === MINUS || c === DOT) { i++; continue; }
    if (c === COLON && i + 2 < e && text.charCodeAt(i + 1) === SLASH && text.charCodeAt(i + 2) === SLASH) return i - s;
    return 0;
  }
  return 0;
}

/** Is text[s, s+4) "pipe", any case? (c | 0x20 lower-cases ASCII letters.) */
function isPipeScheme(text: string, s: number): boolean {
  return (text.charCodeAt(s) | 0x20) === 112 && (text.charCodeAt(s + 1) | 0x20) === 105 &&
    (text.charCodeAt(s + 2) | 0x20) === 112 && (text.charCodeAt(s + 3) | 0x20) === 101;
}

/**
 * Could text[s, e) be a relative or absolute-path URL ("stream/x.m3u8",
 * "/live/a.ts", "movie.m3u8")? Only asked when a baseUrl is known and an
 * #EXTINF is waiting. Separator lines ("=====sudan=====", "--- News ---") and
 * plain text start with other characters or contain neither '.' nor '/'.
 */
function looksLikePath(text: string, s: number, e: number): boolean {
  const c0 = text.charCodeAt(s);
  if (!(isAlpha(c0) || isDigit(c0) || c0 === SLASH || c0 === DOT || c0 === UNDERSCORE || c0 === TILDE || c0 === PERCENT)) {
    return false;
  }
  for (let i = s; i < e; i++) {
    const c = text.charCodeAt(i);
    if (c === SLASH || c === DOT) return true;
  }
  return false;
}

/** Maps the many spellings of the three headers IPTV playlists set to their HTTP names. */
function headerName(key: string): string {
  switch (key) {
    case 'http-user-agent':
    case 'useragent':
      return 'user-agent';
    case 'referrer':
    case 'http-referrer':
    case 'http-referer':
      return 'referer';
    case 'http-origin':
      return 'origin';
    default:
      return key;
  }
}

/**
 * Parses Kodi-style header lists: `User-Agent=a&Referer=b` (values
 * URL-encoded, '&'-separated, as Kodi reads them) and the iptv-org form
 * `Referer="…"|User-Agent="…"|Origin="…"` (quoted, '|'-separated).
 */
function parseHeaderList(s: string, out: Record<string, string>): void {
  const n = s.length;
  let i = 0;
  while (i < n) {
    let c = s.charCodeAt(i);
    if (c === PIPE || c === AMP || isWs(c)) { i++; continue; }
    const ks = i;
    while (i < n && (c = s.charCodeAt(i)) !== EQ && c !== PIPE && c !== AMP) i++;
    if (i >= n || c !== EQ) continue; // token without '=': ignore
    const key = headerName(s.slice(ks, i).trim().toLowerCase());
    i++;
    let value: string;
    if (s.charCodeAt(i) === DQUOTE) {
      let j = i + 1;
      while (j < n && s.charCodeAt(j) !== DQUOTE) j++;
      value = s.slice(i + 1, j);
      i = j + 1;
    } else {
      const vs = i;
      while (i < n && (c = s.charCodeAt(i)) !== PIPE && c !== AMP) i++;
      value = s.slice(vs, i).trim();
      if (value.indexOf('%') >= 0) {
        try { value = decodeURIComponent(value); } catch { /* not encoded after all: keep as written */ }
      }
    }
    if (key && key !== '__proto__') out[key] = value;
  }
}

function stripQuotes(v: string): string {
  const n = v.length;
  if (n >= 2) {
    const a = v.charCodeAt(0);
    if ((a === DQUOTE || a === SQUOTE) && v.charCodeAt(n - 1) === a) return v.slice(1, n - 1);
  }
  return v;
}

/**
 * Seen in the wild (iptv-org generated lists): `http-user-agent="#EXTVLCOPT:http-user-agent=Mozilla…"`
 * and `#EXTVLCOPT:http-user-agent=#EXTVLCOPT:http-user-agent=Mozilla…`: a doubled
 * prefix that would otherwise be sent as the User-Agent.
 */
function stripVlcPrefix(v: string): string {
  while (v.charCodeAt(0) === HASH && v.length > 11 && v.slice(0, 11).toUpperCase() === '#EXTVLCOPT:') {
    const eq = v.indexOf('=');
    if (eq < 0) break;
    v = v.slice(eq + 1).trim();
  }
  return v;
}

function splitGroups(v: string): string[] {
  if (v.indexOf(';') < 0) {
    const t = v.trim();
    return t ? [t] : [];
  }
  const out: string[] = [];
  for (const part of v.split(';')) {
    const t = part.trim();
    if (t) out.push(t);
  }
  return out;
}

function nonEmpty(v: string | undefined): string | undefined {
  return v === undefined || v === '' ? undefined : v;
}

function isNumeric(v: string): boolean {
  if (!v) return false;
  let dot = false;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c === DOT && !dot && i > 0) { dot = true; continue; }
    if (!isDigit(c)) return false;
  }
  return true;
}

/**
 * The attributes the entry fields are built from, picked up while scanning so
 * that building an entry needs no lookups in the (megamorphic) attrs object.
 */
interface Known {
  tvgId: string | undefined;
  tvgName: string | undefined;
  tvgLogo: string | undefined;
  chno: string | undefined;
  channelId: string | undefined;
  groupTitle: string | undefined;
  userAgent: string | undefined;
  referrer: string | undefined;
  origin: string | undefined;
  /** chno / userAgent came from an alias (tvg-num, http-user-agent): the canonical name overrides it. */
  chnoIsAlias: boolean;
  uaIsAlias: boolean;
}

function clearKnown(k: Known): void {
  k.tvgId = k.tvgName = k.tvgLogo = k.chno = k.channelId = k.groupTitle = k.userAgent = k.referrer = k.origin = undefined;
  k.chnoIsAlias = k.uaIsAlias = false;
}

/** Records an attribute that feeds an entry field (id < K_FIELDS) into `known`. */
function noteKnown(k: Known, id: number, value: string): void {
  switch (id) {
    case K_TVG_ID: k.tvgId = value; break;
    case K_TVG_NAME: k.tvgName = value; break;
    case K_TVG_LOGO: k.tvgLogo = value; break;
    case K_GROUP_TITLE: k.groupTitle = value; break;
    case K_TVG_CHNO: k.chno = value; k.chnoIsAlias = false; break;
    case K_CHANNEL_NUMBER:
    case K_TVG_NUM:
      // tvg-chno wins whatever the order.
      if (k.chno === undefined || k.chnoIsAlias) { k.chno = value; k.chnoIsAlias = true; }
      break;
    case K_CHANNEL_ID:
    case K_CHANNELID:
      k.channelId = value;
      break;
    case K_USER_AGENT: k.userAgent = value; k.uaIsAlias = false; break;
    case K_HTTP_USER_AGENT:
      if (k.userAgent === undefined || k.uaIsAlias) { k.userAgent = value; k.uaIsAlias = true; }
      break;
    case K_HTTP_REFERRER:
    case K_HTTP_REFERER:
    case K_REFERRER:
      k.referrer = value;
      break;
    case K_HTTP_ORIGIN: k.origin = value; break;
    default: break;
  }
}

/** Shared, frozen empties: most entries have no headers, Kodi props or groups. */
const EMPTY_RECORD: Readonly<Record<string, string>> = Object.freeze({});
const EMPTY_GROUPS: readonly string[] = Object.freeze([]);

/** A byte beyond ASCII, in bytes read as Latin-1 (writeBytes). */
const NON_ASCII = /[\x80-\xff]/g;

/** UTF-16 playlists exist (Windows tools); everything else is read as UTF-8. */
function isUtf16Le(bytes: Uint8Array): boolean {
  return bytes.length >= 2 && bytes[0] === 0xff && bytes[1] === 0xfe;
}

export interface M3uStreamOptions extends M3uParseOptions {
  /**
   * Called with each entry as soon as it is complete, instead of collecting it
   * in `entries` (which end() then returns empty): a caller that keeps only
   * part of each entry holds far less than 100,000 entries at once.
   */
  onEntry?: (entry: M3uEntry) => void;
}

/**
 * Parses an IPTV M3U playlist. Never throws on malformed input: unparsable
 * lines are skipped and counted in warnings; garbage yields zero entries.
 */
export function parseM3u(input: string | Buffer, options: M3uParseOptions = {}): M3uPlaylist {
  const parser = new M3uParser(options);
  parser.write(input);
  return parser.end();
}

/**
 * The longest line gathered from pieces: real lines run to a few KB (a data: URI logo, tens of
 * KB). A download with no line end for megabytes (binary data, a broken file) would otherwise be
 * gathered whole.
 */
export const MAX_LINE_BYTES = 1 << 20;

/**
 * The same parser fed piece by piece (a playlist as it is downloaded): write()
 * the bytes or text in any pieces, then end(). The result is the one parseM3u
 * gives for the whole input; only a line cut by a piece's end waits for the next.
 * write() throws when bytes without a line end, over several pieces, pass MAX_LINE_BYTES.
 */
export class M3uParser {
  private readonly tokenizer: Tokenizer;
  private started = false;
  /** UTF-16 input (rare; Windows tools): collected, decoded at the end. */
  private utf16 = false;
  /** The start of a line whose end has not arrived yet (bytes or text). */
  private pendingBytes: Buffer[] = [];
  private pendingLength = 0;
  private pendingText: string[] = [];

  constructor(options: M3uStreamOptions = {}) {
    this.tokenizer = new Tokenizer(options);
  }

  /** Pieces of one kind: bytes (UTF-8, or UTF-16 with its BOM) or text. */
  write(input: string | Buffer): void {
    if (typeof input === 'string') {
      this.started = true;
      this.writeText(input);
      return;
    }
    if (!this.started) {
      // The first two bytes say whether it is UTF-16.
      if (this.pendingBytes.length) input = Buffer.concat([...this.pendingBytes, input]);
      this.pendingBytes = [];
      if (input.length < 2) {
        if (input.length) this.pendingBytes.push(input);
        return;
      }
      this.started = true;
      this.utf16 = isUtf16Le(input);
    }
    if (this.utf16) this.pendingBytes.push(input);
    else this.writeBytes(input);
  }

  end(): M3uPlaylist {
    if (this.utf16) this.tokenizer.lines(Buffer.concat(this.pendingBytes).toString('utf16le', 2));
    else if (this.pendingBytes.length) this.tokenizer.lines(Buffer.concat(this.pendingBytes).toString('utf8'));
    if (this.pendingText.length) this.tokenizer.lines(this.pendingText.join(''));
    this.pendingBytes = [];
    this.pendingText = [];
    return this.tokenizer.finish();
  }

  /**
   * UTF-8 bytes: the complete lines decoded ('\n' never occurs inside a multi-byte character). All
   * ASCII (the usual piece), at once. Otherwise, the ASCII lines still are, as one Latin-1 string
   * whose positions are the bytes' (runs of it between the other lines), and each line with a byte
   * beyond ASCII is decoded as UTF-8 on its own: V8 makes a whole string two-byte for one
   * character beyond Latin-1 (a Cyrillic name), every string sliced from it (URLs, logos, ids)
   * two-byte with it, and a copy of such a slice too. (Decoding every line on its own, as before,
   * cost 18 % more instructions on the bench playlist, where one line in nine is not ASCII.)
   */
  private writeBytes(buf: Buffer): void {
    const last = buf.lastIndexOf(LF);
    if (last < 0) {
      if (buf.length) this.pendingBytes.push(buf);
      // Over several pieces only: parseM3u's one piece is in memory already, and never throws.
      if ((this.pendingLength += buf.length) > MAX_LINE_BYTES && this.pendingBytes.length > 1) {
        throw new Error(`not an M3U playlist: a line longer than ${MAX_LINE_BYTES} bytes`);
      }
      return;
    }
    let bytes: Buffer;
    if (this.pendingBytes.length) {
      this.pendingBytes.push(buf.subarray(0, last + 1));
      bytes = Buffer.concat(this.pendingBytes);
      this.pendingBytes = [];
      this.pendingLength = 0;
    } else {
      bytes = buf.subarray(0, last + 1);
    }
    const text = bytes.toString('latin1');
    if (isAscii(bytes)) {
      this.tokenizer.lines(text);
    } else {
      this.tokenizer.read(text);
      let start = 0;
      for (NON_ASCII.lastIndex = 0; NON_ASCII.test(text);) {
        const at = NON_ASCII.lastIndex - 1;
        const s = text.lastIndexOf('\n', at) + 1;
        const e = text.indexOf('\n', at) + 1 || text.length; // (the last byte is a '\n')
        if (s > start) this.tokenizer.run(start, s);
        this.tokenizer.line(bytes.toString('utf8', s, e));
        start = NON_ASCII.lastIndex = e;
      }
      if (start < text.length) this.tokenizer.run(start, text.length);
    }
    // A copy: a view would keep the whole chunk alive.
    if (last + 1 < buf.length) {
      this.pendingBytes.push(Buffer.from(buf.subarray(last + 1)));
      this.pendingLength = buf.length - last - 1;
    }
  }

  /** Text: every complete line of it; a partial last line waits for the next piece. */
  private writeText(text: string): void {
    if (text.indexOf('\n') < 0) {
      if (text) this.pendingText.push(text);
      return;
    }
    if (this.pendingText.length) {
      this.pendingText.push(text);
      text = this.pendingText.join('');
      this.pendingText = [];
    }
    const end = text.lastIndexOf('\n') + 1;
    this.tokenizer.lines(text, end);
    if (end < text.length) this.pendingText.push(text.slice(end));
  }
}

/**
 * One parse. A class rather than one big function with closures: closures
 * would put every piece of per-entry state in a heap context, and the one big
 * function took V8 ~150 ms to optimize (and re-optimize after a deopt) on a
 * cold start. Small methods compile fast; the rare paths stay out of the hot ones.
 */
class Tokenizer {
  /** The text being scanned: the whole input, a piece of it, or one line. */
  private text = '';
  private len = 0;
  private readonly baseUrl: string | undefined;
  private readonly maxWarnings: number;
  private readonly onEntry: ((entry: M3uEntry) => void) | undefined;
  private lineNo = 0;
  private atStart = true;

  private readonly header: Record<string, string> = {};
  private readonly entries: M3uEntry[] = [];
  private readonly warnings: string[] = [];
  private warningCount = 0;
  private skipped = 0;
  private sawHeader = false;

  // The #EXTINF waiting for its URL (hasInfo), and the directives (#EXTVLCOPT,
  // #KODIPROP, #EXTHTTP, #EXTGRP) seen since the last URL: they belong to the
  // next URL line, whether they came before or after its #EXTINF.
  private hasInfo = false;
  private infoLine = 0;
  private infoDuration = -1;
  private infoName = '';
  private infoAttrs: Record<string, string> = EMPTY_RECORD;
  private readonly known: Known = {
    tvgId: undefined, tvgName: undefined, tvgLogo: undefined, chno: undefined, channelId: undefined,
    groupTitle: undefined, userAgent: undefined, referrer: undefined, origin: undefined,
    chnoIsAlias: false, uaIsAlias: false,
  };
  private blockHeaders: Record<string, string> | null = null;
  private blockKodi: Record<string, string> | null = null;
  private blockGroups: readonly string[] | null = null;
  /** First non-URL, non-comment line seen while an #EXTINF waits (for the warning). */
  private junk: string | null = null;
  private junkLine = 0;

  /** Position of the next '|' in the text (see url()), or len; -1 when not looked for yet in this text. */
  private nextPipe = -1;
  /** Values of LOW_CARDINALITY attributes, interned. */
  private readonly intern = new Map<string, string>();
  /** A playlist has few distinct group-titles: entries share one frozen array per title. */
  private readonly groupCache = new Map<string, readonly string[]>();

  constructor(options: M3uStreamOptions) {
    this.baseUrl = options.baseUrl;
    this.maxWarnings = options.maxWarnings ?? 100;
    this.onEntry = options.onEntry;
  }

  /** The lines of text[0, end): each ends at a '\n' or at `end`. */
  lines(text: string, end = text.length): void {
    this.read(text);
    this.run(0, end);
  }

  /**
   * Reads `text` from now on, with run(). (writeBytes reads a piece in runs, with lines decoded on
   * their own between them: the text's cached next '|' holds from one run to the next.)
   */
  read(text: string): void {
    this.text = text;
    this.len = text.length;
    this.nextPipe = -1;
  }

  /** The lines of the text in [start, end), after those of the runs before. */
  run(start: number, end: number): void {
    const text = this.text;
    let pos = start;
    if (this.atStart && end > start) {
      this.atStart = false;
      if (text.charCodeAt(start) === BOM) pos++;
    }
    let lineNo = this.lineNo;
    while (pos < end) {
      let nl = text.indexOf('\n', pos);
      if (nl < 0 || nl > end) nl = end;
      lineNo++;
      let s = pos;
      let e = nl;
      pos = nl + 1;
      while (s < e && isWs(text.charCodeAt(s))) s++;
      while (e > s && isWs(text.charCodeAt(e - 1))) e--;
      if (s === e) continue; // blank line, or only spaces / a lone '\r'
      if (text.charCodeAt(s) === HASH) this.directive(s, e, lineNo);
      else this.urlLine(s, e, lineNo);
    }
    this.lineNo = lineNo;
  }

  /**
   * One line decoded on its own, amid a text read in runs (writeBytes): the text and where its
   * next '|' is stay as they were, so going back to it costs no new search.
   */
  line(line: string): void {
    const { text, len, nextPipe } = this;
    this.lines(line);
    this.text = text;
    this.len = len;
    this.nextPipe = nextPipe;
  }

  finish(): M3uPlaylist {
    if (this.hasInfo) this.dropPending('has no stream URL before the end of the file');

    const guideUrls = new Set<string>(); // in header order, deduplicated
    for (const key of Object.keys(this.header)) {
      if (key !== 'x-tvg-url' && key !== 'url-tvg' && key !== 'tvg-url') continue;
      for (const part of this.header[key].split(',')) {
        const u = part.trim();
        if (u) guideUrls.add(u);
      }
    }
    return {
      header: this.header,
      guideUrls: [...guideUrls],
      entries: this.entries,
      skipped: this.skipped,
      warnings: this.warnings,
      warningCount: this.warningCount,
    };
  }

  private warn(line: number, msg: string): void {
    this.warningCount++;
    if (this.warnings.length < this.maxWarnings) this.warnings.push(`line ${line}: ${msg}`);
  }

  private resetBlock(): void {
    this.hasInfo = false;
    this.blockHeaders = null;
    this.blockKodi = null;
    this.blockGroups = null;
    this.junk = null;
  }

  private dropPending(reason: string): void {
    if (this.hasInfo) {
      this.skipped++;
      const extra = this.junk !== null ? ` (line ${this.junkLine} "${this.junk.slice(0, 80)}" is not a URL)` : '';
      this.warn(this.infoLine, `#EXTINF "${this.infoName}" ${reason}${extra}; skipped`);
    }
    this.resetBlock();
  }

  /** A line starting with '#': a directive, or a comment ("# foo", "#123"). */
  private directive(s: number, e: number, lineNo: number): void {
    const text = this.text;
    // Directive name: letters, digits, '-' after '#'.
    let k = s + 1;
    let lower = false;
    while (k < e) {
      const c = text.charCodeAt(k);
      if (c >= 97 && c <= 122) lower = true;
      else if (!((c >= 65 && c <= 90) || isDigit(c) || c === MINUS)) break;
      k++;
    }
    if (k - s - 1 < 6) return; // a comment: every tag we read has 6+ letters
    // Body after "TAG:" (or "TAG " for sloppy writers).
    let b = k;
    if (b < e && text.charCodeAt(b) === COLON) b++;
    else if (b < e && !isWs(text.charCodeAt(b))) return; // e.g. "#EXTINFO…": not ours
    if (k - s === 7 && !lower && sameAt(text, s + 1, 'EXTINF')) {
      this.extinf(b, e, lineNo); // the one tag on every entry
      return;
    }
    let tag = text.slice(s + 1, k);
    if (lower) tag = tag.toUpperCase(); // "#extinf" is written by some tools
    switch (tag) {
      case 'EXTINF':
        this.extinf(b, e, lineNo);
        break;
      case 'EXTM3U':
        // Only the first header counts; a second one mid-file comes from concatenated lists.
        if (!this.sawHeader) {
          this.sawHeader = true;
          scanAttrs(text, b, e, this.header, false, null, null);
        }
        break;
      case 'EXTVLCOPT':
        this.vlcOpt(text.slice(b, e));
        break;
      case 'KODIPROP':
        this.kodiProp(text.slice(b, e));
        break;
      case 'EXTHTTP':
        this.extHttp(text.slice(b, e), lineNo);
        break;
      case 'EXTGRP':
        this.blockGroups = Object.freeze(splitGroups(text.slice(b, e)));
        break;
      default:
        // #EXTGENRE, #PLAYLIST, #EXT-X-…: nothing an IPTV tuner needs.
        break;
    }
  }

  /** #EXTINF:<duration> key="value"…,<name> with text[b, e) after the colon. */
  private extinf(b: number, e: number, lineNo: number): void {
    const text = this.text;
    if (this.hasInfo) this.dropPending('has no stream URL before the next #EXTINF');
    let i = b;
    while (i < e && isWs(text.charCodeAt(i))) i++;
    const ds = i;
    let c = text.charCodeAt(i);
    if (c === MINUS || c === PLUS) c = text.charCodeAt(++i);
    let intOnly = true;
    while (i < e && (isDigit(c) || c === DOT)) {
      if (c === DOT) intOnly = false;
      c = text.charCodeAt(++i);
    }
    let duration = -1;
    if (i - ds === 2 && text.charCodeAt(ds) === MINUS && text.charCodeAt(ds + 1) === 49 /* 1 */) {
      duration = -1; // "-1": nearly every live entry
    } else if (i > ds) {
      const raw = text.slice(ds, i);
      duration = intOnly ? parseInt(raw, 10) : parseFloat(raw);
      if (Number.isNaN(duration)) duration = -1;
    }
    const attrs: Record<string, string> = {};
    const known = this.known;
    clearKnown(known);
    const comma = scanAttrs(text, i, e, attrs, true, known, this.intern);
    let ns = comma + 1;
    while (ns < e && isWs(text.charCodeAt(ns))) ns++;
    // The name often repeats tvg-name: share that string rather than retain a second copy.
    const tn = known.tvgName;
    this.infoName = ns >= e ? '' : tn !== undefined && tn.length === e - ns && sameAt(text, ns, tn) ? tn : text.slice(ns, e);
    this.hasInfo = true;
    this.infoLine = lineNo;
    this.infoDuration = duration;
    this.infoAttrs = attrs;
    this.junk = null;
  }

  /** #EXTVLCOPT:key=value. Only the three header options matter for fetching. */
  private vlcOpt(body: string): void {
    const eq = body.indexOf('=');
    if (eq < 0) return;
    const key = body.slice(0, eq).trim().toLowerCase();
    const value = stripVlcPrefix(stripQuotes(body.slice(eq + 1).trim()));
    if (key === 'http-user-agent' || key === 'http-referrer' || key === 'http-referer' || key === 'http-origin') {
      (this.blockHeaders ??= {})[headerName(key)] = value;
    }
  }

  /** #KODIPROP:key=value, kept as written. */
  private kodiProp(body: string): void {
    const eq = body.indexOf('=');
    if (eq <= 0) return;
    const key = body.slice(0, eq).trim();
    const value = body.slice(eq + 1).trim();
    if (key !== '__proto__') (this.blockKodi ??= {})[key] = value;
    // inputstream.adaptive sends these headers with every request: same meaning as a URL suffix.
    if (key === 'inputstream.adaptive.stream_headers' || key === 'inputstream.adaptive.manifest_headers') {
      parseHeaderList(value, (this.blockHeaders ??= {}));
    }
  }

  /** #EXTHTTP:{"User-Agent":"…","Referer":"…"} (TiviMate/OTT players). */
  private extHttp(body: string, lineNo: number): void {
    let obj: unknown;
    try {
      obj = JSON.parse(body);
    } catch {
      this.warn(lineNo, '#EXTHTTP is not valid JSON; ignored');
      return;
    }
    if (!obj || typeof obj !== 'object' || Array.isArray(obj)) {
      this.warn(lineNo, '#EXTHTTP is not a JSON object; ignored');
      return;
    }
    const h = (this.blockHeaders ??= {});
    for (const [k, v] of Object.entries(obj as Record<string, unknown>)) {
      const key = headerName(k.trim().toLowerCase());
      if (typeof v === 'string' && key && key !== '__proto__') h[key] = v;
    }
  }

  /** A line that is not a directive: a URL, a placeholder, or junk (separator lines, text). */
  private urlLine(s: number, e: number, lineNo: number): void {
    const text = this.text;
    const scheme = urlScheme(text, s, e);
    let relative = false;
    if (scheme === 0) {
      const c0 = text.charCodeAt(s);
      if (c0 === LBRACKET && text.charCodeAt(e - 1) === RBRACKET) {
        // "[NO PUBLIC STREAM]" and similar: the list admits there is no stream.
        if (this.hasInfo) this.dropPending(`has placeholder ${text.slice(s, e)} instead of a URL`);
        else this.resetBlock();
        return;
      }
      if (this.hasInfo && this.baseUrl !== undefined && looksLikePath(text, s, e)) {
        relative = true;
      } else {
        // Separator ("=====sudan=====") or a relative URL we cannot resolve: remember it for the warning.
        if (this.hasInfo && this.junk === null) {
          this.junk = text.slice(s, e);
          this.junkLine = lineNo;
        }
        return;
      }
    } else if (scheme === 4 && isPipeScheme(text, s)) {
      // Security: pipe:// URLs are shell commands ("pipe://ffmpeg -i … pipe:1"). Never keep them.
      this.skipped++;
      this.warn(
        this.hasInfo ? this.infoLine : lineNo,
        `${this.hasInfo ? `#EXTINF "${this.infoName}"` : 'entry'} has a pipe:// URL (a shell command, never executed); skipped`,
      );
      this.resetBlock();
      return;
    }

    // Split off a Kodi header suffix: url|User-Agent=…&Referer=… or url|Referer="…"|Origin="…".
    // nextPipe caches the next '|' in the whole text so this stays one linear pass (a per-line
    // indexOf would rescan to the end of a pipe-free file for every URL).
    if (this.nextPipe < s) {
      const p = text.indexOf('|', s);
      this.nextPipe = p < 0 ? this.len : p;
    }
    const suffixAt = this.nextPipe < e ? this.nextPipe : -1;
    let urlEnd = e;
    if (suffixAt >= 0) {
      urlEnd = suffixAt;
      while (urlEnd > s && isWs(text.charCodeAt(urlEnd - 1))) urlEnd--;
    }
    let url = text.slice(s, urlEnd);
    if (relative) {
      try {
        url = new URL(url, this.baseUrl).href;
      } catch {
        if (this.junk === null) { this.junk = url; this.junkLine = lineNo; }
        return;
      }
    }
    if (!url) return;
    this.addEntry(url, suffixAt >= 0 ? text.slice(suffixAt + 1, e) : null, lineNo);
  }

  private addEntry(url: string, suffix: string | null, lineNo: number): void {
    const known = this.known;
    if (!this.hasInfo) {
      // A bare URL line (no #EXTINF): a valid entry of a plain M3U, named after its URL.
      clearKnown(known);
      this.infoAttrs = {};
      this.infoName = '';
      this.infoDuration = -1;
      this.infoLine = lineNo;
    }
    // Header precedence: attributes, then directives, then the URL suffix (most specific wins).
    let headers: Record<string, string> = EMPTY_RECORD;
    if (known.userAgent !== undefined || known.referrer !== undefined || known.origin !== undefined ||
        this.blockHeaders !== null || suffix !== null) {
      headers = {};
      if (known.userAgent) headers['user-agent'] = stripVlcPrefix(known.userAgent);
      if (known.referrer) headers['referer'] = stripVlcPrefix(known.referrer);
      if (known.origin) headers['origin'] = stripVlcPrefix(known.origin);
      if (this.blockHeaders !== null) Object.assign(headers, this.blockHeaders);
      if (suffix !== null) parseHeaderList(suffix, headers);
    }
    const tvgName = nonEmpty(known.tvgName);
    let number = nonEmpty(known.chno);
    if (number === undefined && known.channelId !== undefined && isNumeric(known.channelId)) number = known.channelId;
    const gt = known.groupTitle;
    const entry: M3uEntry = {
      name: this.infoName || tvgName || url,
      duration: this.infoDuration,
      attrs: this.infoAttrs,
      tvgId: nonEmpty(known.tvgId),
      tvgName,
      tvgLogo: nonEmpty(known.tvgLogo),
      number,
      groups: this.blockGroups ?? (gt !== undefined ? this.groupsOf(gt) : EMPTY_GROUPS),
      url,
      userAgent: headers['user-agent'],
      referrer: headers['referer'],
      headers,
      kodiProps: this.blockKodi ?? EMPTY_RECORD,
      line: this.infoLine,
    };
    if (this.onEntry) this.onEntry(entry);
    else this.entries.push(entry);
    this.resetBlock();
  }

  private groupsOf(title: string): readonly string[] {
    let g = this.groupCache.get(title);
    if (g === undefined) {
      g = Object.freeze(splitGroups(title));
      if (this.groupCache.size < 10_000) this.groupCache.set(title, g);
    }
    return g;
  }
}
