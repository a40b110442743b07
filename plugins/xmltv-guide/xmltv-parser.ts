/**
 * Streaming XMLTV reader for the xmltv-guide plugin.
 *
 * Bytes in (any encoding TextDecoder knows), GuideChannel /
 * GuideProgramme batches out, without ever holding the document: the input is
 * decoded chunk by chunk and pushed through saxes; only the element being read
 * is kept, programmes leave in batches and reading pauses while the sink
 * stores a batch.
 *
 * saxes only slices text when a text handler is installed, so the handler is
 * switched on just inside the elements we keep (title, desc…) and off
 * everywhere else (the whitespace between elements, credits, ratings…).
 *
 * Rules (see shared/realdata/SOURCES.md for the files that motivated them):
 * - root must be <tv>; a DOCTYPE declaring entities is refused (no expansion);
 *   the stream ending before </tv> rejects (the importer keeps the old guide).
 * - a programme without channel, without/invalid start, with stop < start,
 *   zero-length, or an exact duplicate (channel + start + trimmed title) is
 *   skipped: counted in `skipped`, one warning each (messages capped).
 * - a missing stop is the start of the next programme on the same channel
 *   (resolved as soon as it is known in per-channel sorted files, at the end
 *   of the file for channels that are not sorted); none → skipped.
 * - programmes whose stop is older than now - maxAgeMs are dropped (counted in
 *   `skipped`, mentioned in the final progress message, not a warning each).
 * - saxes errors inside <tv> are warnings and parsing goes on, except those
 *   that destroy the element structure (an unmatched close tag pops every
 *   open element in saxes, a second root) which reject.
 * - a bare `&` (not starting an entity reference) outside comments/CDATA is
 *   read as `&amp;` with a warning: saxes would otherwise swallow everything
 *   up to the next `;`, tags included.
 * - sink.channel() is called once per channel id, after all <channel>
 *   elements seen before the first <programme> (so duplicate ids merge their
 *   display names); a duplicate id appearing later is merged and sent again
 *   (the sink must treat channel() as an upsert).
 */
import type { Readable } from 'node:stream';
import { TextDecoder } from 'node:util';
import { SaxesParser } from 'saxes';
import type { SaxesTagPlain } from 'saxes';
import type { GuideChannel, GuideLoadResult, GuideProgramme, GuideSink } from '../../sdk/livetv.js';

export interface XmltvParseOptions {
  signal?: AbortSignal;
  /** title/sub-title/desc in this lang when present, else the first one. */
  preferredLanguage?: string;
  /** Drop programmes whose stop is older than now - maxAgeMs (default 24 h). */
  maxAgeMs?: number;
  /** ms, for tests. */
  now?: number;
  /** Programmes per sink.programmes() call (default 100). */
  batchSize?: number;
  /** When known, progress = bytesRead() / totalBytes. */
  totalBytes?: number;
  /** Bytes of totalBytes read so far (the compressed ones, for a gzip source); default: the bytes parsed. */
  bytesRead?: () => number;
}

const DEFAULT_MAX_AGE_MS = 24 * 3600 * 1000;
/** Small: what a batch holds lives until the sink has it, and the sink gathers batches into statements itself. */
const DEFAULT_BATCH_SIZE = 100;
/** Warning messages sent to the sink; all are counted. */
const MAX_WARNING_MESSAGES = 50;
/** Bytes read before sniffing the encoding from the XML declaration. */
const SNIFF_BYTES = 1024;
/** The root element must start within this many characters (bounds DOCTYPE/prolog memory). */
const MAX_PROLOG_CHARS = 1 << 20;
/**
 * The longest text, attribute value, comment or name saxes may gather: it gathers each whole
 * before handing it over, and a broken or hostile file may hold one of 100 MB. Real guides stay
 * far below (descriptions: a few thousand characters).
 */
const MAX_TEXT_CHARS = 1 << 20;
/** Attributes of one element, and elements open at once (XMLTV: a few, four deep); saxes holds both until the tag ends. */
const MAX_ATTRIBUTES = 1000;
const MAX_DEPTH = 1000;
/**
 * Categories kept per programme and display names per channel (real guides: a handful). Each new
 * one is looked for among those kept: 100,000 in one programme made that quadratic.
 */
const MAX_LIST = 64;
/** Guide channels at most (the largest real guides have tens of thousands): each holds state. */
export const MAX_GUIDE_CHANNELS = 200_000;

/** Rejection for documents that are not usable XMLTV. */
export class XmltvError extends Error {
  override name = 'XmltvError';
}

function abortError(signal: AbortSignal): Error {
  const err = new Error('XMLTV parse aborted', { cause: signal.reason });
  err.name = 'AbortError';
  (err as Error & { code: string }).code = 'ABORT_ERR';
  return err;
}

// ---------------------------------------------------------------------------
// Times

/** Named zones seen in XMLTV files (minutes east of UTC). Ambiguous names (IST…) are left out. */
const ZONES = new Map<string, number>([
  ['UTC', 0], ['UT', 0], ['GMT', 0], ['Z', 0], ['WET', 0], ['WEST', 60], ['BST', 60],
  ['CET', 60], ['MET', 60], ['CEST', 120], ['MEST', 120], ['EET', 120], ['EEST', 180], ['MSK', 180],
  ['AST', -240], ['ADT', -180], ['NST', -210], ['NDT', -150],
  ['EST', -300], ['EDT', -240], ['CST', -360], ['CDT', -300], ['MST', -420], ['MDT', -360],
  ['PST', -480], ['PDT', -420], ['AKST', -540], ['AKDT', -480], ['HST', -600],
  ['AWST', 480], ['ACST', 570], ['ACDT', 630], ['AEST', 600], ['AEDT', 660],
  ['NZST', 720], ['NZDT', 780], ['JST', 540], ['KST', 540], ['HKT', 480], ['SGT', 480], ['WIB', 420],
]);

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
function daysFromCivil(y: number, m: number, d: number): number {
  y -= m <= 2 ? 1 : 0;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

function isDigits(s: string, i: number, n: number): boolean {
  for (let k = i; k < i + n; k++) {
    const c = s.charCodeAt(k);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

function twoDigits(s: string, i: number): number {
  return (s.charCodeAt(i) - 48) * 10 + (s.charCodeAt(i + 1) - 48);
}

/**
 * XMLTV time → ms since epoch (UTC). Accepts `YYYYMMDDhhmmss ±hhmm` and its
 * truncations (YYYY, YYYYMM, YYYYMMDD, …hh, …hhmm), an offset with or without
 * a space or a colon (`+0530`, `+05:30`, `+05`), a named zone from a small
 * table (BST, CEST, EST, …), or no zone (UTC). Anything else → undefined.
 */
export function parseXmltvTime(value: string): number | undefined {
  if (typeof value !== 'string') return undefined;
  let len = value.length;
  let i = 0;
  while (i < len && value.charCodeAt(i) <= 32) i++;
  while (len > i && value.charCodeAt(len - 1) <= 32) len--;
  const begin = i;
  while (i < len) {
    const c = value.charCodeAt(i);
    if (c < 48 || c > 57) break;
    i++;
  }
  const n = i - begin;
  if (n < 4 || n > 14 || n % 2 !== 0) return undefined;
  const s = begin === 0 ? value : value.slice(begin);
  const year = twoDigits(s, 0) * 100 + twoDigits(s, 2);
  const month = n >= 6 ? twoDigits(s, 4) : 1;
  const day = n >= 8 ? twoDigits(s, 6) : 1;
  const hour = n >= 10 ? twoDigits(s, 8) : 0;
  const minute = n >= 12 ? twoDigits(s, 10) : 0;
  const second = n >= 14 ? twoDigits(s, 12) : 0;
  if (month < 1 || month > 12 || day < 1) return undefined;
  const leap = month === 2 && year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (day > DAYS_IN_MONTH[month - 1]! + (leap ? 1 : 0)) return undefined;
  // 24:00:00 (end of day) is accepted, as some grabbers write it.
  if (minute > 59 || second > 59 || hour > 24 || (hour === 24 && (minute !== 0 || second !== 0))) return undefined;

  let offset = 0;
  i -= begin;
  len -= begin;
  while (i < len && (s.charCodeAt(i) === 32 || s.charCodeAt(i) === 9)) i++;
  if (i < len) {
    const sign = s.charCodeAt(i);
    if (sign === 43 /* + */ || sign === 45 /* - */) {
      // +hhmm, +hh:mm or +hh
      const rest = len - i - 1;
      let oh: number;
      let om = 0;
      if (rest === 4 && isDigits(s, i + 1, 4)) {
        oh = twoDigits(s, i + 1);
        om = twoDigits(s, i + 3);
      } else if (rest === 5 && s.charCodeAt(i + 3) === 58 && isDigits(s, i + 1, 2) && isDigits(s, i + 4, 2)) {
        oh = twoDigits(s, i + 1);
        om = twoDigits(s, i + 4);
      } else if (rest === 2 && isDigits(s, i + 1, 2)) {
        oh = twoDigits(s, i + 1);
      } else {
        return undefined;
      }
      if (oh > 18 || om > 59) return undefined;
      offset = (oh * 60 + om) * (sign === 45 ? -1 : 1);
    } else {
      const zone = ZONES.get(s.slice(i, len).toUpperCase());
      if (zone === undefined) return undefined;
      offset = zone;
    }
  }
  return (daysFromCivil(year, month, day) * 1440 + hour * 60 + minute - offset) * 60000 + second * 1000;
}

// ---------------------------------------------------------------------------
// Input: encoding sniffing

/** Encoding label from a BOM or the XML declaration in the first bytes; utf-8 when neither says. */
export function sniffXmlEncoding(head: Uint8Array): string {
  if (head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf) return 'utf-8';
  if (head[0] === 0xff && head[1] === 0xfe) return 'utf-16le';
  if (head[0] === 0xfe && head[1] === 0xff) return 'utf-16be';
  const ascii = Buffer.from(head.buffer, head.byteOffset, Math.min(head.length, SNIFF_BYTES)).toString('latin1');
  const m = /^\s*<\?xml\s[^>]*?\bencoding\s*=\s*(["'])\s*([A-Za-z][A-Za-z0-9._:-]*)\s*\1/.exec(ascii);
  const label = m ? m[2]!.toLowerCase() : 'utf-8';
  // A declaration readable as ASCII cannot be UTF-16 without a BOM: the label lies.
  return label.startsWith('utf-16') || label === 'unicode' ? 'utf-8' : label;
}

// ---------------------------------------------------------------------------
// Bare '&' repair

const ENTITY_REF = /&[^\s&;<>"'=]{1,40};/y;
const ENTITY_PREFIX = /^&[^\s&;<>"'=]{0,40}$/;
const OPENERS = ['<!--', '<![CDATA['] as const;
const CLOSERS = ['-->', ']]>'] as const;

/**
 * Escapes `&` that cannot start an entity reference (`Tom & Jerry`, `?a=1&b=2`)
 * outside comments and CDATA sections, so that saxes does not swallow markup
 * up to the next `;`. Real references, even unknown ones (`&nbsp;`), are left
 * for saxes (which decodes or reports them). Keeps back a few characters at a
 * chunk end when they could be the start of a reference or of a delimiter.
 */
class AmpRepair {
  private carry = '';
  /** -1 outside, else index in CLOSERS of the section we are in. */
  private raw = -1;
  count = 0;

  process(chunk: string, final: boolean): string {
    const s = this.carry.length !== 0 ? this.carry + chunk : chunk;
    this.carry = '';
    if (this.raw < 0 && s.indexOf('&') === -1 && s.indexOf('<!') === -1) {
      // Fast path; only a trailing '<' could start a delimiter.
      if (!final && s.charCodeAt(s.length - 1) === 60) {
        this.carry = '<';
        return s.slice(0, -1);
      }
      return s;
    }
    let out = '';
    let copied = 0;
    let i = 0;
    const len = s.length;
    let nextAmp = -2;
    let nextOpen = -2;
    let keep = len; // characters from here on are carried to the next chunk
    while (i < len) {
      if (this.raw >= 0) {
        const closer = CLOSERS[this.raw]!;
        const end = s.indexOf(closer, i);
        if (end === -1) {
          if (!final) {
            // a closer split over the chunk boundary
            for (let k = closer.length - 1; k > 0; k--) {
              if (s.endsWith(closer.slice(0, k))) { keep = len - k; break; }
            }
          }
          break;
        }
        this.raw = -1;
        i = end + closer.length;
        continue;
      }
      if (nextAmp !== -1 && nextAmp < i) nextAmp = s.indexOf('&', i);
      if (nextOpen !== -1 && nextOpen < i) nextOpen = s.indexOf('<!', i);
      if (nextAmp === -1 && nextOpen === -1) break;
      if (nextOpen !== -1 && (nextAmp === -1 || nextOpen < nextAmp)) {
        const p = nextOpen;
        let opened = false;
        for (let k = 0; k < OPENERS.length; k++) {
          const opener = OPENERS[k]!;
          if (s.startsWith(opener, p)) {
            this.raw = k;
            i = p + opener.length;
            opened = true;
            break;
          }
          if (!final && len - p < opener.length && opener.startsWith(s.slice(p))) {
            keep = p;
            break;
          }
        }
        if (keep !== len) break;
        if (!opened) i = p + 2;
        continue;
      }
      const a = nextAmp;
      ENTITY_REF.lastIndex = a;
      if (!ENTITY_REF.test(s)) {
        if (!final && len - a <= 42 && ENTITY_PREFIX.test(s.slice(a))) {
          keep = a;
          break;
        }
        out += s.slice(copied, a) + '&amp;';
        copied = a + 1;
        this.count++;
        i = a + 1;
      } else {
        i = ENTITY_REF.lastIndex;
      }
    }
    if (keep === len && !final && this.raw < 0 && s.charCodeAt(len - 1) === 60) keep = len - 1;
    // keep is never before a replaced '&' (copied <= keep)
    if (keep < len) this.carry = s.slice(keep);
    if (copied === 0) return keep === len ? s : s.slice(0, keep);
    return out + s.slice(copied, keep);
  }
}

// ---------------------------------------------------------------------------
// The reader

const SECTION_NONE = 0;
const SECTION_CHANNEL = 1;
const SECTION_PROGRAMME = 2;

const F_NONE = 0;
const F_TITLE = 1;
const F_SUBTITLE = 2;
const F_DESC = 3;
const F_CATEGORY = 4;
const F_EPISODE = 5;
const F_DISPLAY_NAME = 6;

/** Per guide channel: what is needed for missing stops and duplicate detection. */
interface ChannelState {
  /** The channel id (an own copy: see own()). */
  id: string;
  last: number;
  sorted: boolean;
  /** Start and 30-bit title hash of every accepted programme, in file order. */
  starts: number[];
  hashes: number[];
  /** start → hash(es); built when the channel turns out not to be sorted. */
  index: Map<number, number | number[]> | undefined;
  /** Programmes without stop waiting for the next start. */
  pending: GuideProgramme[] | undefined;
}

/**
 * A copy of `s` holding only its own characters. saxes' texts and attribute values are cut from
 * the decoded chunk they were read in, and a string cut from another may keep all of it alive:
 * what the reader keeps to the end of the document (a guide channel's id, names and icon) would
 * keep a chunk per channel.
 */
function own(s: string): string {
  return Buffer.from(s).toString();
}

function titleHash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h & 0x3fffffff;
}

function normLang(lang: string): string {
  return lang.trim().toLowerCase().replace(/_/g, '-');
}

class XmltvReader {
  private readonly parser = new SaxesParser();
  private readonly batchSize: number;
  private readonly cutoff: number;
  private readonly preferred: string | undefined;
  private readonly preferredPrimary: string | undefined;

  // element path
  private depth = 0;
  private section = SECTION_NONE;
  private field = F_NONE;
  private fieldRank = 0;
  private text = '';
  private rootSeen = false;
  /**
   * Characters written to saxes; its position at its last event; and where the markup it may be
   * gathering (a tag, a comment, CDATA…) began since, or -1 while it reads text outside the
   * fields we keep, which it does not gather. Bounded by MAX_TEXT_CHARS.
   */
  private written = 0;
  private markedAt = 0;
  private markupFrom = -1;
  /** Attributes of the tag being read. */
  private attributes = 0;
  private rootClosed = false;
  private ending = false;
  private prologChars = 0;
  private started = false;

  // current programme
  private pChannel: string | undefined;
  private pStart: string | undefined;
  private pStop: string | undefined;
  private pLine = 0;
  private title: string | undefined;
  private titleRank = 0;
  private subTitle: string | undefined;
  private subTitleRank = 0;
  private desc: string | undefined;
  private descRank = 0;
  private categories: string[] | undefined;
  private episodeNum: string | undefined;
  private episodeRank = 0;
  private episodeSystem = '';
  private episodeNums: { system: string; value: string }[] | undefined;
  private isNew = false;
  private premiere = false;
  private previouslyShown: { start?: number } | undefined;
  private live = false;
  private icon: string | undefined;

  // current channel
  private cId: string | undefined;
  private cNames: string[] = [];
  private cIcon: string | undefined;

  private readonly channels = new Map<string, GuideChannel>();
  private channelsSent = false;
  private readonly states = new Map<string, ChannelState>();

  private batch: GuideProgramme[] = [];
  readonly full: GuideProgramme[][] = [];
  private readonly amp = new AmpRepair();
  private ampReported = 0;

  /** Distinct channel ids seen, in <channel> elements and programmes' channel attributes. */
  private channelIds = 0;
  programmes = 0;
  skipped = 0;
  warnings = 0;
  old = 0;

  constructor(private readonly sink: GuideSink, options: XmltvParseOptions) {
    this.batchSize = Math.max(1, Math.floor(options.batchSize ?? DEFAULT_BATCH_SIZE));
    const now = options.now ?? Date.now();
    const maxAge = options.maxAgeMs ?? DEFAULT_MAX_AGE_MS;
    this.cutoff = Number.isFinite(maxAge) ? now - maxAge : -Infinity;
    if (options.preferredLanguage?.trim()) {
      this.preferred = normLang(options.preferredLanguage);
      this.preferredPrimary = this.preferred.split('-')[0];
    }
    const p = this.parser;
    p.on('opentag', this.onOpen);
    p.on('attribute', this.onAttribute);
    p.on('closetag', this.onClose);
    p.on('cdata', this.onCdata);
    p.on('doctype', this.onDoctype);
    p.on('error', this.onError);
    // No more handlers (comments, processing instructions): each one set is a property added to
    // the parser, and a few more make V8 keep all its properties in a slow dictionary, which made
    // parsing several times slower. Comments count towards MAX_TEXT_CHARS from their '<'.
  }

  // ---- feeding

  feed(chunk: string, final: boolean): void {
    let s = this.amp.process(chunk, final);
    if (this.amp.count !== this.ampReported) {
      const n = this.amp.count - this.ampReported;
      this.ampReported = this.amp.count;
      for (let k = 0; k < n; k++) this.warn("bare '&' (not an entity reference) read as '&amp;'");
    }
    if (!this.started) {
      // Leading whitespace before the XML declaration is a common producer bug.
      let i = 0;
      while (i < s.length && s.charCodeAt(i) <= 32) i++;
      if (i === s.length) {
        if (final) this.finish();
        return;
      }
      s = i === 0 ? s : s.slice(i);
      this.started = true;
    }
    if (s.length !== 0) this.parser.write(s);
    this.written += s.length;
    if (this.markupFrom < 0) {
      const at = s.indexOf('<', Math.max(0, this.markedAt - (this.written - s.length)));
      if (at >= 0) this.markupFrom = this.written - s.length + at;
    }
    if (!this.rootSeen) {
      this.prologChars += s.length;
      if (this.prologChars > MAX_PROLOG_CHARS) {
        throw new XmltvError(`not an XMLTV document: no <tv> element in the first ${MAX_PROLOG_CHARS} characters`);
      }
    }
    const gathering = this.field !== F_NONE ? this.written - this.markedAt : this.markupFrom < 0 ? 0 : this.written - this.markupFrom;
    if (gathering > MAX_TEXT_CHARS || this.text.length > MAX_TEXT_CHARS) {
      throw new XmltvError(`malformed XMLTV document: a text, attribute value, comment or name longer than ${MAX_TEXT_CHARS} characters`);
    }
    if (final) this.finish();
  }

  private finish(): void {
    this.ending = true;
    this.parser.close();
    if (!this.rootSeen) throw new XmltvError('not an XMLTV document: no root element');
    if (!this.rootClosed) {
      const where = this.section === SECTION_PROGRAMME ? ' inside <programme>' : this.section === SECTION_CHANNEL ? ' inside <channel>' : '';
      throw new XmltvError(`truncated XMLTV document: the input ended${where} before </tv>`);
    }
    this.sendChannels();
    this.resolveRemaining();
    if (this.batch.length !== 0) {
      this.full.push(this.batch);
      this.batch = [];
    }
  }

  // ---- saxes handlers (arrow functions: saxes calls them with itself as this)

  /** An event: saxes handed over what it had gathered; `inMarkup` when what follows is still markup (the rest of a tag). */
  private mark(inMarkup: boolean): void {
    this.markedAt = this.parser.position;
    this.markupFrom = inMarkup ? this.markedAt : -1;
  }

  private readonly onText = (t: string): void => {
    this.mark(true); // at the '<' that ends the text
    this.text += t;
  };

  private readonly onCdata = (t: string): void => {
    this.mark(false);
    if (this.field !== F_NONE) this.text += t;
  };

  private readonly onAttribute = (): void => {
    this.mark(true);
    if (++this.attributes > MAX_ATTRIBUTES) throw new XmltvError(`malformed XMLTV document: an element with more than ${MAX_ATTRIBUTES} attributes`);
  };

  private readonly onDoctype = (doctype: string): void => {
    this.mark(false);
    if (/<!ENTITY/i.test(doctype)) {
      throw new XmltvError('refusing XMLTV document: its DOCTYPE declares entities (<!ENTITY …>); entity expansion is not supported');
    }
  };

  private readonly onError = (err: Error): void => {
    const msg = err.message;
    if (!this.rootSeen) throw new XmltvError(`not an XMLTV document (${msg})`);
    if (this.ending) {
      // Unclosed tags at the end are reported as truncation by finish().
      if (this.rootClosed) this.warn(`XML error after </tv> ignored: ${msg}`);
      return;
    }
    if (msg.includes('unmatched closing tag')) {
      throw new XmltvError(`malformed XMLTV document, cannot recover: ${msg}`);
    }
    if (msg.includes('only one root')) {
      throw new XmltvError(`malformed XMLTV document: content after </tv> (${msg})`);
    }
    this.warn(`XML error ignored: ${msg}`);
  };

  private textOn(): void {
    this.parser.on('text', this.onText);
  }

  private textOff(): void {
    this.parser.off('text');
  }

  private readonly onOpen = (tag: SaxesTagPlain): void => {
    this.mark(false);
    this.attributes = 0;
    const d = ++this.depth;
    if (d > MAX_DEPTH) throw new XmltvError(`malformed XMLTV document: more than ${MAX_DEPTH} elements open at once`);
    if (d === 3) {
      if (this.section === SECTION_PROGRAMME) this.openProgrammeChild(tag);
      else if (this.section === SECTION_CHANNEL) this.openChannelChild(tag);
    } else if (d > 3) {
      // Inside title/desc…: children are not XMLTV (inline HTML at best); their text is kept.
    } else if (d === 2) {
      const name = tag.name;
      if (name === 'programme') this.startProgramme(tag);
      else if (name === 'channel') this.startChannel(tag);
      else this.section = SECTION_NONE;
    } else {
      // d === 1
      if (tag.name !== 'tv') throw new XmltvError(`not an XMLTV document: the root element is <${tag.name}>, not <tv>`);
      this.rootSeen = true;
    }
  };

  private readonly onClose = (): void => {
    this.mark(false);
    const d = this.depth--;
    if (d === 3) {
      if (this.field !== F_NONE) this.endField();
    } else if (d > 3) {
      // nothing to do below the kept elements
    } else if (d === 2) {
      if (this.section === SECTION_PROGRAMME) this.endProgramme();
      else if (this.section === SECTION_CHANNEL) this.endChannel();
      this.section = SECTION_NONE;
    } else if (d === 1) {
      this.rootClosed = true;
    }
  };

  /** 0: not wanted; higher is better. */
  private langRank(tag: SaxesTagPlain, current: number): number {
    let rank = 1;
    if (this.preferred !== undefined) {
      const lang = tag.attributes.lang;
      if (lang) {
        const l = normLang(lang);
        if (l === this.preferred) rank = 3;
        else if (l.split('-')[0] === this.preferredPrimary) rank = 2;
      }
    }
    return rank > current ? rank : 0;
  }

  private capture(field: number, rank: number): void {
    this.field = field;
    this.fieldRank = rank;
    this.text = '';
    this.textOn();
  }

  private openProgrammeChild(tag: SaxesTagPlain): void {
    let rank: number;
    switch (tag.name) {
      case 'title':
        if ((rank = this.langRank(tag, this.titleRank)) !== 0) this.capture(F_TITLE, rank);
        break;
      case 'desc':
        if ((rank = this.langRank(tag, this.descRank)) !== 0) this.capture(F_DESC, rank);
        break;
      case 'sub-title':
        if ((rank = this.langRank(tag, this.subTitleRank)) !== 0) this.capture(F_SUBTITLE, rank);
        break;
      case 'category':
        this.capture(F_CATEGORY, 1);
        break;
      case 'episode-num': {
        // Every system is kept; episodeNum is the one people read best.
        const system = (tag.attributes.system ?? '').trim();
        this.episodeSystem = system;
        this.capture(F_EPISODE, system === 'onscreen' ? 3 : system === 'xmltv_ns' ? 2 : 1);
        break;
      }
      case 'new':
        this.isNew = true;
        break;
      case 'premiere':
        this.premiere = true;
        break;
      case 'live':
        this.live = true;
        break;
      case 'previously-shown': {
        const start = tag.attributes.start;
        this.previouslyShown = {};
        if (start) {
          const ms = parseXmltvTime(start);
          if (ms === undefined) this.warn(`line ${this.parser.line}: invalid previously-shown start "${start}"`);
          else this.previouslyShown.start = ms;
        }
        break;
      }
      case 'icon':
        if (this.icon === undefined) {
          const src = tag.attributes.src;
          if (src) this.icon = src.trim() || undefined;
        }
        break;
      default:
    }
  }

  private openChannelChild(tag: SaxesTagPlain): void {
    const name = tag.name;
    if (name === 'display-name') this.capture(F_DISPLAY_NAME, 1);
    else if (name === 'icon' && this.cIcon === undefined) {
      const src = tag.attributes.src;
      if (src) this.cIcon = own(src.trim()) || undefined;
    }
  }

  private endField(): void {
    const value = this.text.trim();
    this.text = '';
    this.textOff();
    const field = this.field;
    this.field = F_NONE;
    if (value.length === 0) return;
    switch (field) {
      case F_TITLE:
        this.title = value;
        this.titleRank = this.fieldRank;
        break;
      case F_DESC:
        this.desc = value;
        this.descRank = this.fieldRank;
        break;
      case F_SUBTITLE:
        this.subTitle = value;
        this.subTitleRank = this.fieldRank;
        break;
      case F_CATEGORY:
        if (this.categories === undefined) this.categories = [value];
        else if (this.categories.length < MAX_LIST && !this.categories.includes(value)) this.categories.push(value);
        break;
      case F_EPISODE:
        if (this.fieldRank > this.episodeRank) {
          this.episodeNum = value;
          this.episodeRank = this.fieldRank;
        }
        if (this.episodeNums === undefined) this.episodeNums = [{ system: this.episodeSystem, value }];
        else if (this.episodeNums.length < MAX_LIST) this.episodeNums.push({ system: this.episodeSystem, value });
        break;
      case F_DISPLAY_NAME:
        if (this.cNames.length < MAX_LIST) this.cNames.push(own(value));
        break;
      default:
    }
  }

  // ---- channels

  /** A guide channel id not seen before (in a <channel> or a programme's channel attribute). */
  private countChannel(): void {
    if (++this.channelIds > MAX_GUIDE_CHANNELS) {
      throw new XmltvError(`refusing XMLTV document: more than ${MAX_GUIDE_CHANNELS} channels`);
    }
  }

  private startChannel(tag: SaxesTagPlain): void {
    this.section = SECTION_CHANNEL;
    const id = tag.attributes.id;
    this.cId = id ? own(id.trim()) : undefined;
    this.cNames = [];
    this.cIcon = undefined;
  }

  private endChannel(): void {
    const id = this.cId;
    if (!id) {
      this.warn(`line ${this.parser.line}: <channel> without id skipped`);
      return;
    }
    const existing = this.channels.get(id);
    if (existing === undefined) {
      if (!this.states.has(id)) this.countChannel();
      const channel: GuideChannel = { id, displayNames: this.cNames };
      if (this.cIcon !== undefined) channel.icon = this.cIcon;
      this.channels.set(channel.id, channel);
      if (this.channelsSent) this.sink.channel(channel);
      return;
    }
    let changed = false;
    for (const n of this.cNames) {
      if (existing.displayNames.length < MAX_LIST && !existing.displayNames.includes(n)) {
        existing.displayNames.push(n);
        changed = true;
      }
    }
    if (existing.icon === undefined && this.cIcon !== undefined) {
      existing.icon = this.cIcon;
      changed = true;
    }
    if (changed && this.channelsSent) this.sink.channel(existing);
  }

  private sendChannels(): void {
    if (this.channelsSent) return;
    this.channelsSent = true;
    for (const channel of this.channels.values()) this.sink.channel(channel);
  }

  // ---- programmes

  private startProgramme(tag: SaxesTagPlain): void {
    if (!this.channelsSent) this.sendChannels();
    this.section = SECTION_PROGRAMME;
    const a = tag.attributes;
    this.pChannel = a.channel;
    this.pStart = a.start;
    this.pStop = a.stop;
    this.pLine = this.parser.line;
    this.title = this.subTitle = this.desc = this.episodeNum = this.icon = undefined;
    this.titleRank = this.subTitleRank = this.descRank = this.episodeRank = 0;
    this.categories = this.episodeNums = this.previouslyShown = undefined;
    this.isNew = this.premiere = this.live = false;
  }

  private skip(reason: string): void {
    this.skipped++;
    this.warn(`line ${this.pLine}: programme skipped: ${reason}`);
  }

  private endProgramme(): void {
    const channel = this.pChannel?.trim();
    if (!channel) return this.skip('no channel attribute');
    const startText = this.pStart;
    if (startText === undefined || startText.trim() === '') return this.skip(`no start (channel ${channel})`);
    const start = parseXmltvTime(startText);
    if (start === undefined) return this.skip(`invalid start "${startText}" (channel ${channel})`);
    let stop: number | undefined;
    const stopText = this.pStop;
    if (stopText !== undefined && stopText.trim() !== '') {
      stop = parseXmltvTime(stopText);
      if (stop === undefined) this.warn(`line ${this.pLine}: invalid stop "${stopText}" (channel ${channel}); using the next programme's start`);
      else if (stop < start) return this.skip(`stop ${stopText} before start ${startText} (channel ${channel})`);
    }
    const title = this.title ?? '';
    if (this.title === undefined) this.warn(`line ${this.pLine}: programme without title (channel ${channel}, start ${startText})`);
    const hash = titleHash(title);

    let st = this.states.get(channel);
    if (st === undefined) {
      const id = own(channel);
      if (!this.channels.has(id)) this.countChannel();
      st = { id, last: -Infinity, sorted: true, starts: [], hashes: [], index: undefined, pending: undefined };
      this.states.set(id, st);
    }
    if (start < st.last && st.sorted) {
      st.sorted = false;
      const index = new Map<number, number | number[]>();
      for (let k = 0; k < st.starts.length; k++) addToIndex(index, st.starts[k]!, st.hashes[k]!);
      st.index = index;
    }
    if (isDuplicate(st, start, hash)) return this.skip(`duplicate of an earlier programme (channel ${channel}, start ${startText}, "${title}")`);
    st.starts.push(start);
    st.hashes.push(hash);
    if (st.index !== undefined) addToIndex(st.index, start, hash);
    if (start > st.last) {
      st.last = start;
      if (st.sorted && st.pending !== undefined) {
        // sorted so far: every pending programme started before this one
        for (const p of st.pending) {
          p.stop = start;
          this.emit(p);
        }
        st.pending = undefined;
      }
    }
    if (stop === start) return this.skip(`zero length (channel ${channel}, start ${startText})`);

    const p: GuideProgramme = { channel: st.id, start, stop: stop ?? 0, title };
    if (this.subTitle !== undefined) p.subTitle = this.subTitle;
    if (this.desc !== undefined) p.description = this.desc;
    if (this.categories !== undefined) p.categories = this.categories;
    if (this.episodeNum !== undefined) p.episodeNum = this.episodeNum;
    if (this.episodeNums !== undefined) p.episodeNums = this.episodeNums;
    if (this.isNew) p.isNew = true;
    if (this.premiere) p.premiere = true;
    if (this.previouslyShown !== undefined) p.previouslyShown = this.previouslyShown;
    if (this.live) p.live = true;
    if (this.icon !== undefined) p.icon = this.icon;
    if (stop !== undefined) this.emit(p);
    else (st.pending ??= []).push(p); // until the next start on this channel is known
  }

  /** End of file: programmes still without stop. */
  private resolveRemaining(): void {
    for (const st of this.states.values()) {
      const pending = st.pending;
      if (pending === undefined) continue;
      st.pending = undefined;
      const starts = st.sorted ? undefined : Float64Array.from(st.starts).sort();
      for (const p of pending) {
        let next: number | undefined;
        if (starts !== undefined) {
          let lo = 0;
          let hi = starts.length;
          while (lo < hi) {
            const mid = (lo + hi) >>> 1;
            if (starts[mid]! <= p.start) lo = mid + 1;
            else hi = mid;
          }
          if (lo < starts.length) next = starts[lo];
        }
        if (next === undefined) {
          this.skipped++;
          this.warn(`programme skipped: no stop and no later programme on channel ${st.id} ("${p.title}" at ${new Date(p.start).toISOString()})`);
          continue;
        }
        p.stop = next;
        this.emit(p);
      }
    }
  }

  private emit(p: GuideProgramme): void {
    if (p.stop < this.cutoff) {
      this.old++;
      this.skipped++;
      return;
    }
    this.programmes++;
    const batch = this.batch;
    batch.push(p);
    if (batch.length >= this.batchSize) {
      this.full.push(batch);
      this.batch = [];
    }
  }

  warn(message: string): void {
    this.warnings++;
    if (this.warnings <= MAX_WARNING_MESSAGES) this.sink.warning(message);
  }

  result(): GuideLoadResult {
    return { channels: this.channels.size, programmes: this.programmes, skipped: this.skipped, warnings: this.warnings };
  }
}

function addToIndex(index: Map<number, number | number[]>, start: number, hash: number): void {
  const e = index.get(start);
  if (e === undefined) index.set(start, hash);
  else if (typeof e === 'number') index.set(start, [e, hash]);
  else e.push(hash);
}

function isDuplicate(st: ChannelState, start: number, hash: number): boolean {
  if (st.index !== undefined) {
    const e = st.index.get(start);
    if (e === undefined) return false;
    return typeof e === 'number' ? e === hash : e.includes(hash);
  }
  // sorted: equal starts are at the end
  const { starts, hashes } = st;
  for (let k = starts.length - 1; k >= 0 && starts[k] === start; k--) {
    if (hashes[k] === hash) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------
// Entry point

/**
 * Reads an XMLTV document (its bytes, as the sources service gives them: already
 * gunzipped) into the sink. Resolves with the counts; rejects (XmltvError,
 * AbortError, or the stream's/sink's error) when the document is unusable, in
 * which case the caller keeps its old guide.
 */
export async function parseXmltv(input: AsyncIterable<Buffer>, sink: GuideSink, options: XmltvParseOptions = {}): Promise<GuideLoadResult> {
  const { signal } = options;
  signal?.throwIfAborted();
  const reader = new XmltvReader(sink, options);
  const total = options.totalBytes !== undefined && options.totalBytes > 0 ? options.totalBytes : undefined;
  let fed = 0;
  const bytesRead = options.bytesRead ?? (() => fed);
  let lastProgress = 0;
  // A source that is a stream stops waiting for its next bytes at once.
  const onAbort = (): void => void (input as Partial<Readable>).destroy?.(abortError(signal!));
  signal?.addEventListener('abort', onAbort, { once: true });

  const flush = async (): Promise<void> => {
    while (reader.full.length !== 0) {
      await sink.programmes(reader.full.shift()!);
      signal?.throwIfAborted();
    }
  };

  // The encoding is sniffed from the first bytes (BOM or XML declaration).
  let decoder: TextDecoder | undefined;
  let head: Buffer[] = [];
  let headLength = 0;
  const startDecoding = (): string => {
    const buf = Buffer.concat(head);
    head = [];
    let label = sniffXmlEncoding(buf);
    try {
      decoder = new TextDecoder(label, { fatal: false });
    } catch {
      reader.warn(`unknown encoding "${label}", decoding as UTF-8`);
      label = 'utf-8';
      decoder = new TextDecoder(label, { fatal: false });
    }
    return decoder.decode(buf, { stream: true });
  };

  try {
    for await (const chunk of input) {
      signal?.throwIfAborted();
      fed += chunk.length;
      let text: string;
      if (decoder === undefined) {
        head.push(chunk);
        headLength += chunk.length;
        if (headLength < SNIFF_BYTES) continue;
        text = startDecoding();
      } else {
        text = decoder.decode(chunk, { stream: true });
      }
      reader.feed(text, false);
      if (reader.full.length !== 0) await flush();
      if (total !== undefined) {
        const fraction = Math.min(1, bytesRead() / total);
        if (fraction - lastProgress >= 0.01) {
          lastProgress = fraction;
          sink.progress(fraction, `${reader.programmes} programmes`);
        }
      }
    }
    signal?.throwIfAborted();
    const tail = decoder === undefined ? startDecoding() : '';
    reader.feed(tail + decoder!.decode(), true);
    await flush();
    if (reader.warnings > MAX_WARNING_MESSAGES) sink.warning(`${reader.warnings - MAX_WARNING_MESSAGES} more warnings not shown (${reader.warnings} in total)`);
    const result = reader.result();
    const old = reader.old !== 0 ? `, ${reader.old} already over (dropped)` : '';
    sink.progress(1, `${result.channels} channels, ${result.programmes} programmes${old}, ${result.skipped} skipped`);
    return result;
  } catch (err) {
    if (signal?.aborted && !(err instanceof Error && err.name === 'AbortError')) throw abortError(signal);
    throw err;
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}
