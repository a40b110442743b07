/**
 * IPTV M3U playlist parser for the m3u-tuner plugin.
 *
 * Why hand-written: m3u8-parser is an HLS parser; it drops the IPTV
 * attributes (tvg-*, group-title, catchup…), the #EXTVLCOPT / #KODIPROP /
 * #EXTHTTP directives and the Kodi `url|Header=…` suffixes that real
 * playlists depend on. Real files are also messy (see
 * shared/realdata/SOURCES.md): BOMs, CRLF, indented lines, separator lines,
 * placeholders, comments between #EXTINF and its URL.
 *
 * It reads the playlist's bytes as they arrive and decodes each value it keeps
 * on its own, so an entry holds its own strings rather than pieces of the
 * playlist's text (which would keep the whole text alive for as long as the
 * channels are). Delimiters are ASCII, so they are never part of a UTF-8
 * character.
 *
 * Pure: no imports from the rest of the repo, never touches the network or a
 * shell. `pipe://` URLs (shell commands run by Kodi/Tvheadend) are dropped here
 * so that nothing downstream can ever execute them.
 */

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

export interface M3uStreamOptions extends M3uParseOptions {
  /**
   * Called with each entry as soon as it is complete, instead of collecting it
   * in `entries` (which end() then returns empty): a caller that keeps only
   * part of each entry holds far less than 100,000 entries at once.
   */
  onEntry?: (entry: M3uEntry) => void;
}

/**
 * The longest line gathered from pieces: real lines run to a few KB (a data: URI logo, tens of
 * KB). A download with no line end for megabytes (binary data, a broken file) would otherwise be
 * gathered whole.
 */
export const MAX_LINE_BYTES = 1 << 20;

/**
 * Parses an IPTV M3U playlist. Never throws on malformed input: unparsable
 * lines are skipped and counted in warnings; garbage yields zero entries.
 */
export function parseM3u(input: string | Buffer, options: M3uParseOptions = {}): M3uPlaylist {
  const parser = new M3uParser(options);
  parser.write(input);
  return parser.end();
}

const LF = 0x0a, SPACE = 0x20, DQUOTE = 0x22, HASH = 0x23, SQUOTE = 0x27, COMMA = 0x2c, COLON = 0x3a, EQ = 0x3d;

/** Bytes of the whitespace character at b[i] (ASCII whitespace, NBSP or a stray BOM), or 0. */
function wsAt(b: Buffer, i: number, end: number): number {
  const c = b[i];
  if (c > SPACE && c < 0x80) return 0; // nearly every byte
  if (c === SPACE || (c >= 0x09 && c <= 0x0d)) return 1;
  if (c === 0xc2 && i + 1 < end && b[i + 1] === 0xa0) return 2;
  if (c === 0xef && i + 2 < end && b[i + 1] === 0xbb && b[i + 2] === 0xbf) return 3;
  return 0;
}

/** Bytes of the whitespace character ending just before b[i], or 0. */
function wsBefore(b: Buffer, i: number, start: number): number {
  const c = b[i - 1];
  if (c === SPACE || (c >= 0x09 && c <= 0x0d)) return 1;
  if (c === 0xa0 && i - 2 >= start && b[i - 2] === 0xc2) return 2;
  if (c === 0xbf && i - 3 >= start && b[i - 2] === 0xbb && b[i - 3] === 0xef) return 3;
  return 0;
}

function skipWs(b: Buffer, i: number, end: number): number {
  for (let n; i < end && (n = wsAt(b, i, end)); i += n);
  return i;
}

/** UTF-16 playlists exist (Windows tools); everything else is read as UTF-8. */
const isUtf16Le = (bytes: Buffer): boolean => bytes[0] === 0xff && bytes[1] === 0xfe;

/**
 * Reads `key=value` attributes in b[i, end) into `attrs`. Values may be double- or single-quoted
 * (and then contain commas and spaces) or bare (ending at whitespace, or at a comma when
 * stopAtComma). Keys are lower-cased. Returns where the first comma outside quotes is (the
 * #EXTINF name separator), or `end`. An unterminated quote runs to the end of the line.
 * `line` is the line from `start` read as Latin-1, where ASCII keys (nearly all) are taken from:
 * one decoding per line rather than one per key.
 */
function readAttrs(b: Buffer, line: string, start: number, i: number, end: number, attrs: Record<string, string>, stopAtComma: boolean): number {
  // Where a key (or a bare value, `key` false) ends: whitespace, a comma when stopAtComma, '=' after a key.
  const ends = (at: number, key: boolean): boolean => {
    const c = b[at];
    return (key && c === EQ) || (stopAtComma && c === COMMA) || wsAt(b, at, end) > 0;
  };
  /** Past the printable ASCII bytes that cannot end a key or value (nearly all), from `at`. */
  const plain = (at: number): number => {
    for (let c; at < end && (c = b[at]) > SPACE && c < 0x80 && c !== EQ && c !== COMMA; at++);
    return at;
  };
  while ((i = skipWs(b, i, end)) < end) {
    if (stopAtComma && b[i] === COMMA) return i;
    const keyStart = i;
    let ascii = true;
    for (i = plain(i); i < end && !ends(i, true); i++) if (b[i] >= 0x80) ascii = false;
    if (i === keyStart) { i++; continue; } // a lone comma when !stopAtComma
    if (i >= end || b[i] !== EQ) continue; // a bare word without '=': not an attribute
    const key = (ascii ? line.slice(keyStart - start, i - start) : b.toString('utf8', keyStart, i)).toLowerCase();
    i++;
    let value: string;
    if (i < end && (b[i] === DQUOTE || b[i] === SQUOTE)) {
      // The closing quote, or the end of the line. (Each search stops at the next quote in the
      // input, so over the whole input the searching stays linear.)
      let close = b.indexOf(b[i], i + 1);
      if (close < 0 || close > end) close = end;
      value = b.toString('utf8', i + 1, close);
      i = close + 1;
    } else {
      const valueStart = i;
      for (i = plain(i); i < end && !ends(i, false); i++);
      value = b.toString('utf8', valueStart, i);
    }
    if (key !== '__proto__') attrs[key] = value;
  }
  return end;
}

/** The attributes entry fields come from, of an #EXTINF's attrs in the order they were written. */
interface Known {
  tvgId?: string; tvgName?: string; tvgLogo?: string; groupTitle?: string;
  /** tvg-chno, else the last of its aliases. */
  chno?: string;
  channelId?: string;
  /** user-agent, else http-user-agent. */
  userAgent?: string;
  referrer?: string;
  origin?: string;
}

function known(attrs: Record<string, string>): Known {
  const k: Known = {};
  let chnoAlias: string | undefined;
  let uaAlias: string | undefined;
  for (const key in attrs) {
    const value = attrs[key];
    switch (key) {
      case 'tvg-id': k.tvgId = value; break;
      case 'tvg-name': k.tvgName = value; break;
      case 'tvg-logo': k.tvgLogo = value; break;
      case 'group-title': k.groupTitle = value; break;
      case 'tvg-chno': k.chno = value; break;
      case 'channel-number': case 'tvg-num': chnoAlias = value; break;
      case 'channel-id': case 'channelid': k.channelId = value; break;
      case 'user-agent': k.userAgent = value; break;
      case 'http-user-agent': uaAlias = value; break;
      case 'http-referrer': case 'http-referer': case 'referrer': k.referrer = value; break;
      case 'http-origin': k.origin = value; break;
      default:
    }
  }
  k.chno ??= chnoAlias;
  k.userAgent ??= uaAlias;
  return k;
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
  for (const m of s.matchAll(/([^=|&]+)=(?:"([^"]*)"?|([^|&]*))/g)) {
    const key = headerName(m[1].trim().toLowerCase());
    let value = m[2] ?? m[3].trim();
    if (m[2] === undefined && value.includes('%')) {
      try { value = decodeURIComponent(value); } catch { /* not encoded after all: keep as written */ }
    }
    if (key && key !== '__proto__') out[key] = value;
  }
}

const stripQuotes = (v: string): string => (v.length >= 2 && (v[0] === '"' || v[0] === "'") && v.at(-1) === v[0] ? v.slice(1, -1) : v);

/**
 * Seen in the wild (iptv-org generated lists): `http-user-agent="#EXTVLCOPT:http-user-agent=Mozilla…"`
 * and `#EXTVLCOPT:http-user-agent=#EXTVLCOPT:http-user-agent=Mozilla…`: a doubled
 * prefix that would otherwise be sent as the User-Agent.
 */
function stripVlcPrefix(v: string): string {
  while (/^#EXTVLCOPT:/i.test(v) && v.length > 11 && v.includes('=')) v = v.slice(v.indexOf('=') + 1).trim();
  return v;
}

const splitGroups = (v: string): string[] => v.split(';').map((g) => g.trim()).filter((g) => g !== '');
const nonEmpty = (v: string | undefined): string | undefined => (v === '' ? undefined : v);
const isNumeric = (v: string): boolean => /^\d+(\.\d*)?$/.test(v);

/** A URL scheme and "://" at the start of the line: its scheme, else undefined. */
const SCHEME = /^[a-z][a-z0-9+.-]{0,30}:\/\//i;
/**
 * Could the line be a relative or absolute-path URL ("stream/x.m3u8", "/live/a.ts")? Only asked
 * when a baseUrl is known and an #EXTINF is waiting. Separator lines ("=====sudan=====",
 * "--- News ---") and plain text start with other characters or contain neither '.' nor '/'.
 */
const looksLikePath = (text: string): boolean => /^[a-z0-9/._~%]/i.test(text) && /[./]/.test(text);

/** Shared, frozen empties: most entries have no headers, Kodi props or groups. */
const EMPTY_RECORD: Readonly<Record<string, string>> = Object.freeze({});
const EMPTY_GROUPS: readonly string[] = Object.freeze([]);

/**
 * The parser fed piece by piece (a playlist as it is downloaded): write()
 * the bytes or text in any pieces, then end(). The result is the one parseM3u
 * gives for the whole input; only a line cut by a piece's end waits for the next.
 * write() throws when bytes without a line end, over several pieces, pass MAX_LINE_BYTES.
 */
export class M3uParser {
  private readonly baseUrl: string | undefined;
  private readonly maxWarnings: number;
  private readonly onEntry: ((entry: M3uEntry) => void) | undefined;

  /** Bytes of a line whose end has not arrived yet (or, for UTF-16 input, everything). */
  private pendingBytes: Buffer[] = [];
  private pendingLength = 0;
  /** Text of a line whose end has not arrived yet. */
  private pendingText = '';
  private kind: 'unknown' | 'utf8' | 'utf16' | 'text' = 'unknown';
  private lineNo = 0;

  private readonly header: Record<string, string> = {};
  private sawHeader = false;
  private readonly entries: M3uEntry[] = [];
  private readonly warnings: string[] = [];
  private warningCount = 0;
  private skipped = 0;

  // The #EXTINF waiting for its URL, and the directives (#EXTVLCOPT, #KODIPROP, #EXTHTTP, #EXTGRP)
  // seen since the last URL: they belong to the next URL line, whether before or after its #EXTINF.
  private info?: { line: number; duration: number; name: string; attrs: Record<string, string> };
  private blockHeaders?: Record<string, string>;
  private blockKodi?: Record<string, string>;
  private blockGroups?: readonly string[];
  /** The first line while an #EXTINF waits that is neither a URL nor a directive (for the warning). */
  private junk?: { line: number; text: string };
  /** A playlist has few distinct group-titles: entries share one frozen array per title. */
  private readonly groupArrays = new Map<string, readonly string[]>();

  constructor(options: M3uStreamOptions = {}) {
    this.baseUrl = options.baseUrl;
    this.maxWarnings = options.maxWarnings ?? 100;
    this.onEntry = options.onEntry;
  }

  /** Pieces of one kind: bytes (UTF-8, or UTF-16 with its BOM) or text. */
  write(input: string | Buffer): void {
    if (typeof input === 'string') {
      this.kind = 'text';
      this.writeText(input);
      return;
    }
    if (this.kind === 'unknown') {
      // The first two bytes say whether it is UTF-16.
      this.pendingBytes.push(input);
      this.pendingLength += input.length;
      if (this.pendingLength < 2) return;
      input = Buffer.concat(this.pendingBytes);
      this.pendingBytes = [];
      this.pendingLength = 0;
      this.kind = isUtf16Le(input) ? 'utf16' : 'utf8';
    }
    if (this.kind === 'utf16') this.pendingBytes.push(input);
    else this.writeBytes(input);
  }

  end(): M3uPlaylist {
    const rest = Buffer.concat(this.pendingBytes);
    this.pendingBytes = [];
    if (this.kind === 'utf16') this.writeText(rest.toString('utf16le', 2));
    else if (rest.length) this.lines(rest);
    if (this.pendingText) this.lines(Buffer.from(this.pendingText));
    this.pendingText = '';
    if (this.info) this.dropPending('has no stream URL before the end of the file');

    const guideUrls = new Set<string>(); // in header order, deduplicated
    for (const [key, value] of Object.entries(this.header)) {
      if (key !== 'x-tvg-url' && key !== 'url-tvg' && key !== 'tvg-url') continue;
      for (const part of value.split(',')) if (part.trim()) guideUrls.add(part.trim());
    }
    return {
      header: this.header, guideUrls: [...guideUrls], entries: this.entries,
      skipped: this.skipped, warnings: this.warnings, warningCount: this.warningCount,
    };
  }

  /** UTF-8 bytes: their complete lines; the start of a line cut by the piece's end waits for the rest. */
  private writeBytes(buf: Buffer): void {
    const last = buf.lastIndexOf(LF);
    if (last < 0) {
      this.pendingBytes.push(buf);
      // Over several pieces only: parseM3u's one piece is in memory already, and never throws.
      if ((this.pendingLength += buf.length) > MAX_LINE_BYTES && this.pendingBytes.length > 1) {
        throw new Error(`not an M3U playlist: a line longer than ${MAX_LINE_BYTES} bytes`);
      }
      return;
    }
    this.pendingBytes.push(buf.subarray(0, last + 1));
    this.lines(Buffer.concat(this.pendingBytes));
    // A copy: a view would keep the whole piece alive.
    this.pendingBytes = last + 1 < buf.length ? [Buffer.from(buf.subarray(last + 1))] : [];
    this.pendingLength = buf.length - last - 1;
  }

  /** Text: its complete lines, as UTF-8 (a line never ends inside a character). */
  private writeText(text: string): void {
    const last = text.lastIndexOf('\n');
    if (last < 0) {
      this.pendingText += text;
      return;
    }
    this.lines(Buffer.from(this.pendingText + text.slice(0, last + 1)));
    this.pendingText = text.slice(last + 1);
  }

  /** Each line of b: ending at a '\n' or at the end of b. */
  private lines(b: Buffer): void {
    for (let start = 0; start < b.length;) {
      let end = b.indexOf(LF, start);
      if (end < 0) end = b.length;
      this.line(b, start, end);
      start = end + 1;
    }
  }

  private line(b: Buffer, start: number, end: number): void {
    const lineNo = ++this.lineNo;
    start = skipWs(b, start, end);
    for (let n; end > start && (n = wsBefore(b, end, start)); end -= n);
    if (start === end) return; // blank
    if (b[start] === HASH) this.directive(b, start, end, lineNo);
    else this.urlLine(b.toString('utf8', start, end), lineNo);
  }

  private warn(line: number, msg: string): void {
    this.warningCount++;
    if (this.warnings.length < this.maxWarnings) this.warnings.push(`line ${line}: ${msg}`);
  }

  private resetBlock(): void {
    this.info = this.blockHeaders = this.blockKodi = this.blockGroups = this.junk = undefined;
  }

  private dropPending(reason: string): void {
    if (this.info) {
      this.skipped++;
      const junk = this.junk ? ` (line ${this.junk.line} "${this.junk.text.slice(0, 80)}" is not a URL)` : '';
      this.warn(this.info.line, `#EXTINF "${this.info.name}" ${reason}${junk}; skipped`);
    }
    this.resetBlock();
  }

  /** A line starting with '#': a directive, or a comment ("# foo", "#123"). */
  private directive(b: Buffer, start: number, end: number, lineNo: number): void {
    // The name: letters, digits and '-' after the '#'; every tag read here has at least 6 letters.
    const line = b.toString('latin1', start, end);
    const tag = /^#([A-Za-z0-9-]*)/.exec(line)![1];
    if (tag.length < 6) return;
    // The body, after "TAG:" (or "TAG " for sloppy writers); "#EXTINFO…" is not ours.
    let body = start + 1 + tag.length;
    if (b[body] === COLON) body++;
    else if (body < end && !wsAt(b, body, end)) return;
    const text = () => b.toString('utf8', body, end);
    switch (tag.toUpperCase()) { // "#extinf" is written by some tools
      case 'EXTINF':
        this.extinf(b, line, start, body, end, lineNo);
        break;
      case 'EXTM3U':
        // Only the first header counts; a second one mid-file comes from concatenated lists.
        if (!this.sawHeader) readAttrs(b, line, start, body, end, this.header, false);
        this.sawHeader = true;
        break;
      case 'EXTVLCOPT':
        this.vlcOpt(text());
        break;
      case 'KODIPROP':
        this.kodiProp(text());
        break;
      case 'EXTHTTP':
        this.extHttp(text(), lineNo);
        break;
      case 'EXTGRP':
        this.blockGroups = Object.freeze(splitGroups(text()));
        break;
      default:
        // #EXTGENRE, #PLAYLIST, #EXT-X-…: nothing an IPTV tuner needs.
    }
  }

  /** #EXTINF:<duration> key="value"…,<name> with b[i, end) after the colon (`line`: the line from `start`, as Latin-1). */
  private extinf(b: Buffer, line: string, start: number, i: number, end: number, lineNo: number): void {
    if (this.info) this.dropPending('has no stream URL before the next #EXTINF');
    i = skipWs(b, i, end);
    const written = /^[-+]?[\d.]*/.exec(line.slice(i - start))![0];
    const duration = written ? Number.parseFloat(written) : -1;
    i += written.length;
    const attrs: Record<string, string> = {};
    const comma = readAttrs(b, line, start, i, end, attrs, true);
    const nameStart = skipWs(b, comma + 1, end);
    const name = nameStart < end ? b.toString('utf8', nameStart, end) : '';
    this.info = { line: lineNo, duration: Number.isNaN(duration) ? -1 : duration, name, attrs };
    this.junk = undefined;
  }

  /** #EXTVLCOPT:key=value. Only the three header options matter for fetching. */
  private vlcOpt(body: string): void {
    const eq = body.indexOf('=');
    if (eq < 0) return;
    const key = body.slice(0, eq).trim().toLowerCase();
    if (key === 'http-user-agent' || key === 'http-referrer' || key === 'http-referer' || key === 'http-origin') {
      (this.blockHeaders ??= {})[headerName(key)] = stripVlcPrefix(stripQuotes(body.slice(eq + 1).trim()));
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
    const headers = (this.blockHeaders ??= {});
    for (const [k, v] of Object.entries(obj as Record<string, unknown>)) {
      const key = headerName(k.trim().toLowerCase());
      if (typeof v === 'string' && key && key !== '__proto__') headers[key] = v;
    }
  }

  /** A line that is not a directive: a URL, a placeholder, or junk (separator lines, text). */
  private urlLine(text: string, lineNo: number): void {
    const scheme = SCHEME.exec(text)?.[0].slice(0, -3);
    let relative = false;
    if (scheme === undefined) {
      if (text.startsWith('[') && text.endsWith(']')) {
        // "[NO PUBLIC STREAM]" and similar: the list admits there is no stream.
        if (this.info) this.dropPending(`has placeholder ${text} instead of a URL`);
        else this.resetBlock();
        return;
      }
      if (this.info && this.baseUrl !== undefined && looksLikePath(text)) {
        relative = true;
      } else {
        // A separator ("=====sudan=====") or a relative URL we cannot resolve: remembered for the warning.
        if (this.info && !this.junk) this.junk = { line: lineNo, text };
        return;
      }
    } else if (scheme.toLowerCase() === 'pipe') {
      // Security: pipe:// URLs are shell commands ("pipe://ffmpeg -i … pipe:1"). Never keep them.
      this.skipped++;
      this.warn(this.info?.line ?? lineNo, `${this.info ? `#EXTINF "${this.info.name}"` : 'entry'} has a pipe:// URL (a shell command, never executed); skipped`);
      this.resetBlock();
      return;
    }
    // A Kodi header suffix: url|User-Agent=…&Referer=… or url|Referer="…"|Origin="…".
    const pipe = text.indexOf('|');
    let url = pipe < 0 ? text : text.slice(0, pipe).trimEnd();
    if (relative) {
      try {
        url = new URL(url, this.baseUrl).href;
      } catch {
        this.junk ??= { line: lineNo, text: url };
        return;
      }
    }
    if (url) this.addEntry(url, pipe < 0 ? undefined : text.slice(pipe + 1), lineNo);
  }

  private addEntry(url: string, suffix: string | undefined, lineNo: number): void {
    // A URL line without an #EXTINF: an entry of a plain M3U, named after its URL.
    const info = this.info ?? { line: lineNo, duration: -1, name: '', attrs: {} };
    const k = known(info.attrs);
    // Header precedence: attributes, then directives, then the URL suffix (most specific wins).
    let headers: Record<string, string> = EMPTY_RECORD;
    if (k.userAgent !== undefined || k.referrer !== undefined || k.origin !== undefined || this.blockHeaders || suffix !== undefined) {
      headers = {};
      if (k.userAgent) headers['user-agent'] = stripVlcPrefix(k.userAgent);
      if (k.referrer) headers['referer'] = stripVlcPrefix(k.referrer);
      if (k.origin) headers['origin'] = stripVlcPrefix(k.origin);
      Object.assign(headers, this.blockHeaders);
      if (suffix !== undefined) parseHeaderList(suffix, headers);
    }
    const tvgName = nonEmpty(k.tvgName);
    const entry: M3uEntry = {
      name: info.name || tvgName || url,
      duration: info.duration,
      attrs: info.attrs,
      tvgId: nonEmpty(k.tvgId),
      tvgName,
      tvgLogo: nonEmpty(k.tvgLogo),
      number: nonEmpty(k.chno) ?? (k.channelId !== undefined && isNumeric(k.channelId) ? k.channelId : undefined),
      groups: this.blockGroups ?? (k.groupTitle !== undefined ? this.groupsOf(k.groupTitle) : EMPTY_GROUPS),
      url,
      userAgent: headers['user-agent'],
      referrer: headers['referer'],
      headers,
      kodiProps: this.blockKodi ?? EMPTY_RECORD,
      line: info.line,
    };
    if (this.onEntry) this.onEntry(entry);
    else this.entries.push(entry);
    this.resetBlock();
  }

  private groupsOf(title: string): readonly string[] {
    let groups = this.groupArrays.get(title);
    if (!groups) {
      groups = Object.freeze(splitGroups(title));
      if (this.groupArrays.size < 10_000) this.groupArrays.set(title, groups);
    }
    return groups;
  }
}
