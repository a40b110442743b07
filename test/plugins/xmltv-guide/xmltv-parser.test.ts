import t from 'tap';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import { MAX_GUIDE_CHANNELS, parseXmltv, parseXmltvTime, type XmltvParseOptions } from '../../../plugins/xmltv-guide/xmltv-parser.js';
import type { GuideChannel, GuideLoadResult, GuideProgramme, GuideSink } from '../../../sdk/livetv.js';
import { streamSource } from '../../../core/sources.js';
import { REALDATA, realXmltv } from '../../helpers/realdata.js';

interface Parsed {
  result: GuideLoadResult;
  channels: GuideChannel[];
  programmes: GuideProgramme[];
  batches: number[];
  warnings: string[];
  progress: Array<[number, string | undefined]>;
}

/** Real guides are years old: keep everything unless a test says otherwise. */
const KEEP_ALL: XmltvParseOptions = { maxAgeMs: Infinity };

async function parse(input: AsyncIterable<Buffer>, options: XmltvParseOptions = {}, sinkOverrides: Partial<GuideSink> = {}): Promise<Parsed> {
  const out: Omit<Parsed, 'result'> = { channels: [], programmes: [], batches: [], warnings: [], progress: [] };
  const sink: GuideSink = {
    channel: (c) => void out.channels.push(c),
    programmes: async (batch) => {
      out.batches.push(batch.length);
      out.programmes.push(...batch);
    },
    warning: (w) => void out.warnings.push(w),
    progress: (f, m) => void out.progress.push([f, m]),
    ...sinkOverrides,
  };
  const result = await parseXmltv(input, sink, { ...KEEP_ALL, ...options });
  return { result, ...out };
}

const bytes = (name: string): Buffer => readFileSync(realXmltv(name));
const fromBuffer = (buf: Buffer | string, chunkSize = 64 * 1024): Readable => {
  const b = typeof buf === 'string' ? Buffer.from(buf) : buf;
  const chunks: Buffer[] = [];
  for (let i = 0; i < b.length; i += chunkSize) chunks.push(b.subarray(i, i + chunkSize));
  return Readable.from(chunks, { objectMode: false });
};
/** A real guide; a .gz one through the sources service, which gunzips for xmltv-guide. */
const parseReal = async (name: string, options: XmltvParseOptions = {}): Promise<Parsed> =>
  parse(name.endsWith('.gz') ? (await streamSource(realXmltv(name))).chunks : fromBuffer(bytes(name)), options);
/** A real file with a small in-memory edit (e.g. a stop added so that a stop-less programme is kept). */
const parseEdited = (name: string, edit: (text: string) => string, options: XmltvParseOptions = {}, encoding: BufferEncoding = 'utf8'): Promise<Parsed> =>
  parse(fromBuffer(Buffer.from(edit(bytes(name).toString(encoding)), encoding)), options);
const parseText = (text: string | Buffer, options: XmltvParseOptions = {}, chunkSize?: number): Promise<Parsed> => parse(fromBuffer(text, chunkSize), options);

const utc = (y: number, mo: number, d: number, h = 0, mi = 0, s = 0): number => Date.UTC(y, mo - 1, d, h, mi, s);
const byTitle = (p: Parsed, title: string): GuideProgramme => {
  const found = p.programmes.filter((x) => x.title === title);
  if (found.length !== 1) throw new Error(`${found.length} programmes titled ${JSON.stringify(title)}`);
  return found[0]!;
};
const programmeTags = (buf: Buffer): number => (buf.toString('latin1').match(/<programme[\s>]/g) ?? []).length;

const tv = (body: string, decl = '<?xml version="1.0" encoding="UTF-8"?>\n'): string => `${decl}<tv>\n${body}\n</tv>\n`;
const prog = (attrs: string, inner = '<title>T</title>'): string => `  <programme ${attrs}>${inner}</programme>\n`;

// ---------------------------------------------------------------------------
// Every real guide. Counts follow the rules: a stop-less programme takes the next
// start on its channel, and is skipped when there is none; zero-length, exact
// duplicates (channel + start + trimmed title) and stop < start are skipped.
// programmes + skipped always equals the number of <programme> tags in the file.
// A new file in shared/realdata/xmltv without a row here fails the first test.
const EXPECTED: Record<string, { channels: number; programmes: number; skipped: number; why?: string }> = {
  'XMLTV--test.xml': { channels: 2, programmes: 0, skipped: 1, why: 'its only programme has no stop and no successor' },
  'XMLTV--overlap.xml': { channels: 0, programmes: 8, skipped: 6, why: '4 stop-less without a later start on channel 1, 2 zero-length' },
  'XMLTV--amp.xml': { channels: 0, programmes: 1, skipped: 1, why: 'the BST programme has no stop' },
  'XMLTV--dups.xml': { channels: 0, programmes: 2, skipped: 5, why: '3 duplicates, 2 stop-less last programmes' },
  'XMLTV--attrs.xml': { channels: 0, programmes: 1, skipped: 0 },
  'XMLTV--whitespace.xml': { channels: 0, programmes: 0, skipped: 5, why: '4 duplicates after trimming, the kept one has no stop' },
  'XMLTV--x-whatever.xml': { channels: 0, programmes: 0, skipped: 2, why: 'no stops, one programme per channel' },
  'XMLTV--intervals.xml': { channels: 0, programmes: 5, skipped: 1, why: 'one zero-length' },
  'XMLTV--test_livre.xml': { channels: 0, programmes: 0, skipped: 1, why: 'no stop' },
  'XMLTV--sort.xml': { channels: 0, programmes: 3, skipped: 1, why: 'carlton.com has one stop-less programme' },
  'XMLTV--clump.xml': { channels: 0, programmes: 2, skipped: 0 },
  'XMLTV--empty.xml': { channels: 0, programmes: 0, skipped: 0 },
  'XMLTV--test_empty.xml': { channels: 0, programmes: 0, skipped: 1, why: 'no stop' },
  'XMLTV--length.xml': { channels: 0, programmes: 1, skipped: 0 },
  'XMLTV--simple.xml': { channels: 0, programmes: 0, skipped: 2, why: 'no stops, one programme per channel' },
  'XMLTV--Movie21-accents.xml': { channels: 0, programmes: 0, skipped: 13, why: '13 stop-less programmes at the same start' },
  'XMLTV--tv_augment_automatic_type_5-2.xml': { channels: 1, programmes: 99, skipped: 0 },
  'jellyfin--UK_Data.xml': { channels: 5, programmes: 1964 - 49, skipped: 49, why: '49 zero-length programmes' },
  'jellyfin--MultilanguageData.xml': { channels: 1, programmes: 2, skipped: 0 },
  'jellyfin--schedulesdirect.xml': { channels: 2, programmes: 2, skipped: 0 },
  'jellyfin--custom.xml': { channels: 1, programmes: 1, skipped: 0 },
  'iptv-org--epg.tmacaraibes.com--content.xml': { channels: 1, programmes: 318, skipped: 0 },
  'iptv-org--epg.iptvx.one--content.xml': { channels: 1, programmes: 230, skipped: 0 },
  'iptv-org--epg.iptvx.one--content.xml.gz': { channels: 1, programmes: 230, skipped: 0 },
  'iptv-org--energeek.cl--content.xml': { channels: 5, programmes: 294, skipped: 0 },
  'iptv-org--epgshare01.online--content.xml': { channels: 2, programmes: 203, skipped: 0 },
  'iptv-org--vantagetv.ee--content.xml': { channels: 3, programmes: 332, skipped: 0 },
  'iptv-org--x1co.com.br--content.xml': { channels: 1, programmes: 91, skipped: 0 },
  'iptv-org--makrodigitaltelevision.com--content.xml': { channels: 1, programmes: 64, skipped: 2, why: '2 exact duplicate slots' },
  'iptv-org--nzxmltv.com--content.xml': { channels: 1, programmes: 2, skipped: 0 },
  'iptv-org--multiple_channels.guide.xml': { channels: 6, programmes: 12, skipped: 0, why: '7 <channel>, one id twice; the same-slot programmes differ in title' },
  'iptv-org--guide.xml': { channels: 1, programmes: 27, skipped: 0 },
  'chrisliatas--xmltv_GREECE_el.xml': { channels: 110, programmes: 1961 - 1, skipped: 1, why: 'one programme stops at 06:00 the day it starts at 22:10' },
  'nice-shot--tvguide.xml': { channels: 13, programmes: 3354, skipped: 0 },
  'nice-shot--eu_listings.xml': { channels: 2, programmes: 87, skipped: 0 },
};

t.test('every real guide: counts and invariants', async (t) => {
  const files = readdirSync(`${REALDATA}/xmltv`).sort();
  t.same(files.filter((f) => !(f in EXPECTED)), [], 'every file in shared/realdata/xmltv has an expectation');
  t.same(Object.keys(EXPECTED).filter((f) => !files.includes(f)), [], 'every expectation has its file');
  for (const name of files) {
    const exp = EXPECTED[name];
    if (!exp) continue;
    const p = await parseReal(name);
    t.equal(p.result.channels, exp.channels, `${name}: channels`);
    t.equal(p.channels.length, exp.channels, `${name}: sink.channel calls`);
    t.equal(p.result.programmes, exp.programmes, `${name}: programmes (${exp.why ?? 'all'})`);
    t.equal(p.programmes.length, exp.programmes, `${name}: programmes delivered`);
    t.equal(p.result.skipped, exp.skipped, `${name}: skipped`);
    const raw = name.endsWith('.gz') ? bytes(name.slice(0, -3)) : bytes(name);
    t.equal(p.result.programmes + p.result.skipped, programmeTags(raw), `${name}: every <programme> is either delivered or skipped`);
    t.ok(p.result.warnings >= p.result.skipped, `${name}: a warning for each skipped programme`);
    const bad = p.programmes.filter(
      (x) => !(x.stop > x.start) || !Number.isInteger(x.start) || !x.channel || typeof x.title !== 'string' || x.title !== x.title.trim(),
    );
    t.same(bad, [], `${name}: every programme has start < stop, a channel, a trimmed title`);
    const keys = new Set(p.programmes.map((x) => `${x.channel} ${x.start} ${x.title}`));
    t.equal(keys.size, p.programmes.length, `${name}: no exact duplicates delivered`);
    t.equal(p.progress.at(-1)?.[0], 1, `${name}: progress ends at 1`);
  }
});

// ---------------------------------------------------------------------------
// What the real files contain

t.test('XMLTV test.xml: channels, 12-digit time without zone, fields of a full programme', async (t) => {
  const p = await parseReal('XMLTV--test.xml');
  t.same(p.channels, [
    { id: '3sat.de', displayNames: ['3SAT'] },
    { id: 'das-erste.de', displayNames: ['ARD', 'Das Erste'] },
  ]);
  t.match(p.warnings[0], /no stop and no later programme on channel 3sat\.de \("blah" at 2000-06-03T16:33:00\.000Z\)/);
  // With a stop, the programme is kept with all the fields we read.
  const e = await parseEdited('XMLTV--test.xml', (s) => s.replace('start="200006031633"', 'start="200006031633" stop="200006031733"'));
  t.same(e.programmes, [
    {
      channel: '3sat.de',
      start: utc(2000, 6, 3, 16, 33),
      stop: utc(2000, 6, 3, 17, 33),
      title: 'blah',
      description: 'Blah Blah Blah.',
      categories: ['Comedy'],
      episodeNum: '2 . 9 . 0/1',
      episodeNums: [{ system: 'xmltv_ns', value: '2 . 9 . 0/1' }],
      icon: 'http://image.example.com/dgXPhzNJH8H.jpg',
    },
  ], 'credits, review, image, star-rating icon (nested) and the rest are ignored');
});

t.test('XMLTV overlap.xml: stop-less programmes take the next start, zero-length skipped', async (t) => {
  const p = await parseReal('XMLTV--overlap.xml');
  const next = utc(2001, 12, 28, 11, 31, 1);
  t.same(byTitle(p, 'A'), { channel: '1', start: utc(2001, 12, 28, 11, 31), stop: next, title: 'A' });
  t.equal(byTitle(p, 'C').stop, next, 'C (same start as A, later in the file) too');
  t.same(
    p.programmes.map((x) => x.title).sort(),
    ['A', 'C', 'G', 'H', 'I', 'J', 'K', 'One hour long'],
    'B, D, E, F start last on channel 1; two zero-length on channel a',
  );
  t.equal(p.warnings.filter((w) => /zero length/.test(w)).length, 2);
  t.equal(p.warnings.filter((w) => /no stop and no later programme/.test(w)).length, 4);
});

t.test('XMLTV amp.xml: entities and the BST named zone', async (t) => {
  const p = await parseReal('XMLTV--amp.xml');
  t.same(p.programmes, [{ channel: 'TA', start: utc(2002, 10, 10, 8, 0), stop: utc(2002, 10, 10, 8, 55), title: 'News' }], '+0100');
  t.match(p.warnings.join('\n'), /"Ampersand Land" at 2001-08-28T23:05:00\.000Z/, 'BST = +0100');
  const e = await parseEdited('XMLTV--amp.xml', (s) => s.replace('start="20010829000500 BST"', 'start="20010829000500 BST" stop="20010829003000 BST"'));
  const a = byTitle(e, 'Ampersand Land');
  t.equal(a.description, '& hello && there &amp; everyone <\n      &< <amp;', '&amp;amp; stays &amp;; inner whitespace kept');
  t.equal(a.stop, utc(2001, 8, 28, 23, 30));
  t.equal(e.result.warnings, 0, 'well-formed: no warnings');
  const second = await parseEdited('XMLTV--amp.xml', (s) => s.replace('<title>Ampersand Land</title>', '').replace('start="20010829000500 BST"', 'start="20010829000500 BST" stop="20010829003000 BST"'));
  t.ok(second.programmes.some((x) => x.title === '&'), 'a title that is only &amp;');
});

t.test('XMLTV dups.xml: exact duplicates emitted once', async (t) => {
  const p = await parseReal('XMLTV--dups.xml');
  t.same(
    p.programmes.map((x) => [x.title, x.start, x.stop]),
    [
      ['A', utc(2001, 12, 28, 11, 31, 0), utc(2001, 12, 28, 11, 31, 1)],
      ['B', utc(2001, 12, 28, 11, 31, 1), utc(2001, 12, 28, 11, 31, 2)],
    ],
  );
  t.equal(p.warnings.filter((w) => /duplicate/.test(w)).length, 3);
});

t.test('XMLTV attrs.xml, clump.xml, length.xml, sort.xml, intervals.xml: times', async (t) => {
  const attrs = await parseReal('XMLTV--attrs.xml');
  t.same(attrs.programmes, [{ channel: 'bbc2.bbc.co.uk', start: utc(2001, 8, 28, 23, 5), stop: utc(2001, 8, 28, 23, 30), title: 'Attrib Rameau' }]);

  const clump = await parseReal('XMLTV--clump.xml');
  t.same(
    clump.programmes.map((x) => [x.title, x.start, x.stop, x.categories]),
    [
      ['First in clump', utc(2002, 4, 20, 17, 25), utc(2002, 4, 20, 18, 0), ['b']],
      ['Second in clump', utc(2002, 4, 20, 17, 25), utc(2002, 4, 20, 18, 0), ['g']],
    ],
    '12-digit times without zone are UTC; same slot, different titles: both kept',
  );

  const length = await parseReal('XMLTV--length.xml');
  t.same(length.programmes.map((x) => [x.start, x.stop, x.description]), [[utc(2002, 2, 23, 23, 0), utc(2002, 2, 23, 23, 30), 'Lots of news.']], '12 digits + +0100');

  const sort = await parseReal('XMLTV--sort.xml');
  const b = byTitle(sort, 'B');
  t.equal(b.start, utc(2003, 5, 13, 4, 6), '-0400');
  t.equal(byTitle(sort, 'A').stop, b.start, 'A ends when B starts');
  t.equal(byTitle(sort, 'Motorsport Mundial').stop, utc(2001, 12, 18, 4, 30));

  const intervals = await parseReal('XMLTV--intervals.xml');
  const first = intervals.programmes.find((x) => x.start === utc(2003, 2, 16, 13, 0) && x.title.startsWith("On 'before' but not"));
  t.equal(first?.stop, utc(2003, 2, 16, 13, 30), 'the stop-less 13:00 programme ends at the next start (13:30)');
});

t.test('XMLTV whitespace.xml: duplicates after trimming', async (t) => {
  const p = await parseReal('XMLTV--whitespace.xml');
  t.equal(p.warnings.filter((w) => /duplicate/.test(w)).length, 4);
  const e = await parseEdited('XMLTV--whitespace.xml', (s) => s.replaceAll('start="20010829000500 BST"', 'start="20010829000500 BST" stop="20010829003000 BST"'));
  t.same(e.programmes, [{ channel: 'foo.tv', start: utc(2001, 8, 28, 23, 5), stop: utc(2001, 8, 28, 23, 30), title: 'T', description: 'Blah.' }]);
  t.equal(e.result.skipped, 4);
});

t.test('XMLTV x-whatever.xml and simple.xml: unknown elements ignored, sub-title, category', async (t) => {
  const addStops = (s: string): string =>
    s.replace('start="20010829000500 BST"', 'start="20010829000500 BST" stop="20010829003000 BST"').replace('start="20010829095500 BST"', 'start="20010829095500 BST" stop="20010829102500 BST"');
  for (const name of ['XMLTV--x-whatever.xml', 'XMLTV--simple.xml']) {
    const p = await parseEdited(name, addStops);
    t.same(byTitle(p, 'King of the Hill'), {
      channel: 'channel4.com',
      start: utc(2001, 8, 29, 8, 55),
      stop: utc(2001, 8, 29, 9, 25),
      title: 'King of the Hill',
      subTitle: 'Meet the Propaniacs',
      description: 'Bobby tours with a comedy troupe who specialize in\n       propane-related mirth.',
      categories: ['animation'],
      previouslyShown: {},
    }, name);
    t.equal(byTitle(p, 'The Phil Silvers Show').description?.startsWith('Bilko claims'), true, `${name}: <x-extra> text is not part of the programme`);
    t.equal(p.result.warnings, 0, `${name}: no warnings`);
  }
});

t.test('XMLTV test_livre.xml: ISO-8859-1 £', async (t) => {
  const p = await parseReal('XMLTV--test_livre.xml');
  t.match(p.warnings[0], /\("£" at 2001-12-11T18:00:00\.000Z\)/);
  const e = await parseEdited('XMLTV--test_livre.xml', (s) => s.replace('start="20011211180000"', 'start="20011211180000" stop="20011211183000"'), {}, 'latin1');
  t.equal(e.programmes[0]?.title, '£');
});

t.test('XMLTV Movie21-accents.xml: MST and accented capitals', async (t) => {
  const p = await parseReal('XMLTV--Movie21-accents.xml');
  t.match(p.warnings.join('\n'), /"Movie21 ÀÈÌÒÙæÇÑßÝ¿" at 2001-08-29T07:05:00\.000Z/, 'MST = -0700');
  const e = await parseEdited('XMLTV--Movie21-accents.xml', (s) => s.replaceAll('start="20010829000500 MST"', 'start="20010829000500 MST" stop="20010829010000 MST"'));
  t.equal(e.result.programmes, 13, 'same slot, 13 different titles');
  t.ok(e.programmes.some((x) => x.title === 'Movie21 aeiouaecnßy'));
});

t.test('XMLTV tv_augment: sub-titles, 12-digit +0100', async (t) => {
  const p = await parseReal('XMLTV--tv_augment_automatic_type_5-2.xml');
  t.same(p.channels, [{ id: 'itv1.itv.com', displayNames: ['ITV1'] }]);
  t.same(p.programmes[0], {
    channel: 'itv1.itv.com',
    start: utc(2016, 6, 30, 20, 0),
    stop: utc(2016, 6, 30, 21, 0),
    title: 'Midsomer Murders',
    subTitle: "Dead Man's Eleven : Series 2/10",
    description: 'Barnaby and Troy blah blah blah blah blah.',
    previouslyShown: {},
  });
});

t.test('jellyfin UK_Data.xml: ISO-8859-1, &apos;, partial xmltv_ns, zero-length', async (t) => {
  const p = await parseReal('jellyfin--UK_Data.xml');
  t.same(p.channels[0], { id: 'UK_RT_2667', displayNames: ['BBC1 HD', '7-1'], icon: 'Logo_UK_RT_2667' });
  t.match(p.programmes.find((x) => x.title === 'Fake Britain')?.description, /^The 'edible' glitter/);
  t.ok(p.programmes.some((x) => x.episodeNum === '5.3/10.'), 'episode-num kept as written');
  t.equal(p.warnings.filter((w) => /zero length/.test(w)).length, 49);
  // The file is declared ISO-8859-1 but holds the UTF-8 bytes of U+FFFD where a £ was lost upstream:
  // read as declared, that is "ï¿½" (what the file says).
  t.ok(p.programmes.some((x) => x.description?.includes('budget of ï¿½500,000')), 'bytes decoded as declared');
  t.notOk(p.programmes.some((x) => x.title.includes('\uFFFD')), 'no decoding errors');
});

t.test('jellyfin MultilanguageData.xml: preferredLanguage', async (t) => {
  const first = async (lang?: string): Promise<GuideProgramme> => (await parseReal('jellyfin--MultilanguageData.xml', lang ? { preferredLanguage: lang } : {})).programmes[0]!;
  t.equal((await first()).title, 'Homes Under the Hammer - Spanish', 'no preference: the first');
  t.equal((await first('en')).title, 'Homes Under the Hammer - English', 'the first English one');
  t.equal((await first('EN-gb')).title, 'Homes Under the Hammer - English', 'primary subtag, case-insensitive');
  t.equal((await first('es')).title, 'Homes Under the Hammer - Spanish');
  t.equal((await first('fr')).title, 'Homes Under the Hammer - Spanish', 'absent language: the first');
  t.same((await first()).categories, ['Property - English', 'Property - Spanish', 'Property - Empty Language', 'Property - No Language']);
  t.equal((await first()).episodeNum, '18.50/30.');
});

t.test('a title with lang="" is a title without a language', async (t) => {
  const guide = tv(prog('channel="a" start="20240101120000 +0000" stop="20240101130000 +0000"',
    '<title lang="">Empty</title><title lang="en">English</title><title>None</title>'));
  t.equal((await parseText(guide)).programmes[0]!.title, 'Empty', 'no preference: the first, lang="" or not');
  t.equal((await parseText(guide, { preferredLanguage: 'en' })).programmes[0]!.title, 'English', 'a preference skips lang=""');
  t.equal((await parseText(guide, { preferredLanguage: 'fr' })).programmes[0]!.title, 'Empty', 'no title in the preferred language: the first');
  const only = tv(prog('channel="a" start="20240101120000 +0000" stop="20240101130000 +0000"', '<title lang="">Only</title>'));
  t.equal((await parseText(only, { preferredLanguage: 'en' })).programmes[0]!.title, 'Only', 'the only title is kept whatever its lang');
});

t.test('CRLF and CR line ends inside a text become LF, as XML reads them', async (t) => {
  const p = await parseText(tv(prog('channel="a" start="20240101120000 +0000" stop="20240101130000 +0000"',
    '<title>Two\r\nlines</title>\r\n<desc>Line one\r\nLine two\rthree</desc>'), '<?xml version="1.0"?>\r\n'));
  t.same([p.programmes[0]!.title, p.programmes[0]!.description], ['Two\nlines', 'Line one\nLine two\nthree']);
});

t.test('real guides with CRLF line ends: no carriage return reaches a text', async (t) => {
  for (const name of ['iptv-org--energeek.cl--content.xml', 'iptv-org--epg.iptvx.one--content.xml', 'iptv-org--epgshare01.online--content.xml',
    'iptv-org--makrodigitaltelevision.com--content.xml']) {
    t.ok(bytes(name).includes('\r\n'), `${name} has CRLF line ends`);
    const p = await parseReal(name);
    t.ok(p.programmes.length > 0, `${name}: programmes`);
    const texts = [...p.programmes.flatMap((x) => [x.title, x.subTitle, x.description, x.episodeNum, x.icon, ...(x.categories ?? [])]),
      ...p.channels.flatMap((c) => [c.id, c.icon, ...c.displayNames])];
    t.notOk(texts.some((x) => x?.includes('\r')), `${name}: no \\r in titles, descriptions, categories or channel names`);
  }
});

t.test('jellyfin schedulesdirect.xml and custom.xml: BOM, many display-names, several icons', async (t) => {
  for (const name of ['jellyfin--schedulesdirect.xml', 'jellyfin--custom.xml']) {
    t.strictSame([...bytes(name).subarray(0, 3)], [0xef, 0xbb, 0xbf], `${name} starts with a UTF-8 BOM`);
    const p = await parseReal(name);
    t.same(p.channels[0], { id: 'EPG123.10108.schedulesdirect.org', displayNames: ['CFTO', 'CTV Toronto', '201 CFTO', '201', 'CTV'], icon: 's10108_dark_360w_270h.png' }, name);
    const u = byTitle(p, 'Unforgettable');
    t.same([u.start, u.stop, u.subTitle, u.episodeNum, u.icon, u.categories], [utc(2020, 7, 29, 1, 0), utc(2020, 7, 29, 2, 1), 'Trajectories', '0.9.0/1', 'p8680420_b_v3_bc.jpg', ['Series', 'Crime Drama']], `${name}: xmltv_ns preferred to dd_progid; the first icon`);
  }
});

t.test('iptv-org iptvx.one: Cyrillic, desc before title; the .gz gives the same result', async (t) => {
  const plain = await parseReal('iptv-org--epg.iptvx.one--content.xml');
  const gz = await parseReal('iptv-org--epg.iptvx.one--content.xml.gz');
  t.same(plain.channels, [{ id: '12-omsk', displayNames: ['12 канал Омск', '12 канал (Омск)'], icon: 'https://iptvx.one/picons/12-omsk.png' }]);
  t.equal(plain.programmes[0]?.title, 'д/с Необыкновенные люди');
  t.match(plain.programmes[0]?.description, /^В этом документальном цикле/);
  t.equal(plain.programmes[0]?.start, utc(2025, 9, 21, 22, 45), '+0300');
  t.same(gz.result, plain.result);
  t.same(gz.channels, plain.channels);
  t.same(gz.programmes, plain.programmes);
  const small = await parse(fromBuffer(bytes('iptv-org--epg.iptvx.one--content.xml'), 7));
  t.same(small.programmes, plain.programmes, 'read in 7-byte chunks');
});

t.test('iptv-org tmacaraibes: four languages per programme, -0400', async (t) => {
  const fr = await parseReal('iptv-org--epg.tmacaraibes.com--content.xml');
  const en = await parseReal('iptv-org--epg.tmacaraibes.com--content.xml', { preferredLanguage: 'en' });
  t.same([fr.programmes[0]?.start, fr.programmes[0]?.description], [utc(2026, 5, 3, 4, 0), 'Toutes les musiques africaines et caribéennes.']);
  t.equal(en.programmes[0]?.description, 'All African and Caribbean music.');
  t.equal(en.programmes[0]?.icon, 'http://www.tmacaraibes.com/images/global/global-001.jpg');
});

t.test('iptv-org energeek, epgshare01, vantagetv, x1co, guide.xml', async (t) => {
  const energeek = await parseReal('iptv-org--energeek.cl--content.xml');
  t.same(energeek.channels[0], { id: 'EnerGeek Retro', displayNames: ['EnerGeek Retro'], icon: 'https://i.imgur.com/PzEK6DI.png' }, 'id with a space');
  t.same([energeek.programmes[0]?.channel, energeek.programmes[0]?.title, energeek.programmes[0]?.start], ['EnerGeek Retro', 'Noir', utc(2022, 11, 29, 3, 0)], '-0300');

  const share = await parseReal('iptv-org--epgshare01.online--content.xml');
  t.equal(share.channels[0]?.icon, 'http://www.aljazeera.com/mritems/assets/images/aj-logo-lg.png', 'duplicated <icon>: one');

  const vantage = await parseReal('iptv-org--vantagetv.ee--content.xml');
  t.ok(vantage.programmes.some((x) => `${x.title} ${x.description ?? ''}`.includes("'")), '&apos; decoded');
  t.notOk(vantage.programmes.some((x) => `${x.title} ${x.description ?? ''}`.includes('&apos;')));

  const x1co = await parseReal('iptv-org--x1co.com.br--content.xml');
  t.same(x1co.programmes[0], {
    channel: 'nickonline.br',
    start: utc(2026, 5, 3, 11, 42, 50),
    stop: utc(2026, 5, 3, 11, 52, 22),
    title: 'Bob Esponja',
    subTitle: 'T5 Ep37',
    description: 'Bob Esponja — T5 Ep37',
    categories: ['Infantil'],
  }, 'seconds kept; comments between programmes ignored');

  const guide = await parseReal('iptv-org--guide.xml');
  t.same(guide.programmes[0], { channel: 'ANT1Europe.gr@SD', start: utc(2026, 2, 12, 4, 0), stop: utc(2026, 2, 12, 7, 0), title: 'ΚΑΛΗΜΕΡΑ ΕΛΛΑΔΑ' });
});

t.test('iptv-org makrodigital: no declaration, single quotes, duplicate slots', async (t) => {
  const p = await parseReal('iptv-org--makrodigitaltelevision.com--content.xml');
  t.same(p.programmes[0], {
    channel: '17',
    start: utc(2025, 2, 16, 13, 0),
    stop: utc(2025, 2, 16, 17, 0),
    title: 'Programación Infantil',
    subTitle: 'Programación Infantil',
    description: 'Programación Infantil',
  });
  t.same(p.warnings.map((w) => /duplicate .*"Videoteka Musical"/.test(w)), [true, true]);
});

t.test('iptv-org nzxmltv: channel desc/lcn/comments ignored, episode-num systems, en_NZ', async (t) => {
  const p = await parseReal('iptv-org--nzxmltv.com--content.xml', { preferredLanguage: 'en-NZ' });
  t.same(p.channels, [{ id: '1', displayNames: ['TVNZ 1'], icon: 'https://freeviewnz.tv/nonumbracoimages/ChannelsThumb/TVNZ1100x100.png' }]);
  t.same(p.programmes.map((x) => x.episodeNum), ['2022.36.0', '7.5.0'], 'xmltv_ns among 9 systems');
  t.same(p.programmes[1]?.categories, ['Documentary', 'Factual']);
});

t.test('iptv-org multiple_channels: duplicated <channel> merged, unsorted programmes', async (t) => {
  const p = await parseReal('iptv-org--multiple_channels.guide.xml');
  t.same(p.channels.map((c) => c.id), ['Channel1.us@HD', 'Channel1.us', 'Channel4.us@HD', 'Channel3.us', '140', 'Channel2.us']);
  t.same(p.channels.find((c) => c.id === 'Channel2.us'), { id: 'Channel2.us', displayNames: ['Channel 2'], icon: 'https://i.imgur.com/qmRnD0M.png' }, '<lcn> ignored');
  const merged = await parseText(tv('<channel id="a"><display-name>One</display-name></channel><channel id="a"><display-name>Two</display-name><display-name>One</display-name><icon src="i.png"/></channel>'));
  t.same(merged.channels, [{ id: 'a', displayNames: ['One', 'Two'], icon: 'i.png' }], 'display names of a duplicated id merged');
  t.equal(p.programmes.filter((x) => x.channel === 'Channel3.us').length, 4);
});

t.test('chrisliatas GREECE: 110 channels, +0200, Greek', async (t) => {
  const p = await parseReal('chrisliatas--xmltv_GREECE_el.xml');
  t.same(p.channels[0], { id: '1', displayNames: ['Ert1'], icon: 'https://program.ert.gr/images/ChannelLogo-ERT1.png' });
  t.same(p.programmes[0], {
    channel: '1',
    start: utc(2021, 2, 6, 3, 29),
    stop: utc(2021, 2, 6, 3, 30),
    title: "ΤΟ '21 ΜΕΣΑ ΑΠΟ ΚΕΙΜΕΝΑ ΤΟΥ '21",
    description: 'Ντοκιμαντέρ Eπεισόδιο 35',
  });
  t.match(p.warnings, [/stop 20210205060000 \+0200 before start 20210205221000 \+0200/]);
  t.match(p.channels.find((c) => c.id === '6')?.icon, /ALFA%20%28id%205700%29\.jpg$/, '%-encoded icon kept as is');
});

t.test('nice-shot tvguide.xml and eu_listings.xml', async (t) => {
  const p = await parseReal('nice-shot--tvguide.xml');
  t.same(p.channels.map((c) => c.displayNames[0]), ['ARTE', 'D17', 'FRANCE 2', 'FRANCE 3', 'FRANCE 4', 'FRANCE 5', 'M6', 'NRJ 12', 'NT1', 'RTL9', 'TF1', 'TMC', 'W9']);
  const first = p.programmes[0]!;
  t.same([first.title, first.start, first.stop], ['La fin de la Nouvelle-France', utc(2013, 7, 4, 7, 0), utc(2013, 7, 4, 8, 25)], '+0200, comments inside programmes');
  t.equal(p.result.warnings, 0, 'invalid <length> units do not matter');
  t.equal(p.batches.reduce((a, b) => a + b, 0), 3354);

  const de = await parseReal('nice-shot--eu_listings.xml', { preferredLanguage: 'de' });
  t.same([de.programmes[0]?.title, de.programmes[0]?.start], ['Dünkirchen, 2. Juni 1940', utc(2015, 6, 3, 0, 50)]);
});

// ---------------------------------------------------------------------------
// Times

t.test('parseXmltvTime', async (t) => {
  const cases: Array<[string, number | undefined]> = [
    ['20250101100000 +0000', utc(2025, 1, 1, 10)],
    ['20250101100000 -0430', utc(2025, 1, 1, 14, 30)],
    ['20250101100000 +0530', utc(2025, 1, 1, 4, 30)],
    ['20250101100000+0530', utc(2025, 1, 1, 4, 30)],
    ['20250101100000 +05:30', utc(2025, 1, 1, 4, 30)],
    ['20250101100000 +05', utc(2025, 1, 1, 5)],
    ['  20250101100000   -0100 ', utc(2025, 1, 1, 11)],
    ['20250101100000', utc(2025, 1, 1, 10)],
    ['202501011000', utc(2025, 1, 1, 10)],
    ['202501011000 +0100', utc(2025, 1, 1, 9)],
    ['2025010110', utc(2025, 1, 1, 10)],
    ['20250101', utc(2025, 1, 1)],
    ['20240229120000', utc(2024, 2, 29, 12)],
    ['20250101100000 BST', utc(2025, 1, 1, 9)],
    ['20250101100000 bst', utc(2025, 1, 1, 9)],
    ['20250101100000 CEST', utc(2025, 1, 1, 8)],
    ['20250101100000 EET', utc(2025, 1, 1, 8)],
    ['20250101100000 EST', utc(2025, 1, 1, 15)],
    ['20250101100000 PDT', utc(2025, 1, 1, 17)],
    ['20250101100000 UTC', utc(2025, 1, 1, 10)],
    ['20250101100000 GMT', utc(2025, 1, 1, 10)],
    ['20250101100000Z', utc(2025, 1, 1, 10)],
    ['20251231240000', utc(2026, 1, 1, 0)],
    ['', undefined],
    ['x', undefined],
    ['2025', utc(2025, 1, 1)],
    ['202501011', undefined],
    ['20250230100000', undefined],
    ['20230229100000', undefined],
    ['20251301100000', undefined],
    ['20250101250000', undefined],
    ['20250101106000', undefined],
    ['20250101100000 +2500', undefined],
    ['20250101100000 +0100 x', undefined],
    ['20250101100000 XYZ', undefined],
    ['20250101100000 +01000', undefined],
    ['2025-01-01T10:00:00Z', undefined],
  ];
  for (const [input, expected] of cases) t.equal(parseXmltvTime(input), expected, JSON.stringify(input));
});

t.test('offsets in documents: -0430, +0530, named zones, 12 digits', async (t) => {
  const p = await parseText(
    tv(
      prog('channel="c" start="20250101100000 -0430" stop="20250101110000 -0430"', '<title>neg</title>') +
        prog('channel="c" start="20250101200000 +0530" stop="202501012100 +0530"', '<title>pos</title>') +
        prog('channel="d" start="20250701100000 CEST" stop="20250701110000 CEST"', '<title>cest</title>'),
    ),
  );
  t.same(
    p.programmes.map((x) => [x.title, new Date(x.start).toISOString(), new Date(x.stop).toISOString()]),
    [
      ['neg', '2025-01-01T14:30:00.000Z', '2025-01-01T15:30:00.000Z'],
      ['pos', '2025-01-01T14:30:00.000Z', '2025-01-01T15:30:00.000Z'],
      ['cest', '2025-07-01T08:00:00.000Z', '2025-07-01T09:00:00.000Z'],
    ],
  );
});

// ---------------------------------------------------------------------------
// Programme rules

t.test('malformed programmes are skipped, counted, warned once each', async (t) => {
  const p = await parseText(
    tv(
      prog('channel="c" stop="20250101110000"', '<title>no start</title>') +
        prog('channel="c" start="" stop="20250101110000"', '<title>empty start</title>') +
        prog('channel="c" start="yesterday" stop="20250101110000"', '<title>bad start</title>') +
        prog('start="20250101100000" stop="20250101110000"', '<title>no channel</title>') +
        prog('channel="c" start="20250101100000" stop="20250101090000"', '<title>backwards</title>') +
        prog('channel="c" start="20250101120000" stop="20250101120000"', '<title>zero</title>') +
        prog('channel="c" start="20250101100000" stop="20250101110000"', '<title>good</title>'),
    ),
  );
  t.same(p.programmes.map((x) => x.title), ['good']);
  t.equal(p.result.skipped, 6);
  t.equal(p.result.warnings, 6);
  t.match(p.warnings, [/no start/, /no start/, /invalid start "yesterday"/, /no channel/, /stop 20250101090000 before start/, /zero length/]);
});

t.test('programme without title, invalid stop: kept with a warning', async (t) => {
  const p = await parseText(
    tv(
      prog('channel="c" start="20250101100000" stop="20250101110000"', '<desc>d</desc>') +
        prog('channel="c" start="20250101110000" stop="soon"', '<title>bad stop</title>') +
        prog('channel="c" start="20250101113000" stop="20250101120000"', '<title>next</title>'),
    ),
  );
  t.same(p.programmes.map((x) => [x.title, x.stop]), [['', utc(2025, 1, 1, 11)], ['bad stop', utc(2025, 1, 1, 11, 30)], ['next', utc(2025, 1, 1, 12)]]);
  t.equal(p.result.skipped, 0);
  t.match(p.warnings, [/without title/, /invalid stop "soon"/]);
});

t.test('missing stops in an unsorted channel: the next start in time, not in the file', async (t) => {
  const p = await parseText(
    tv(
      prog('channel="c" start="20250101100000"', '<title>ten</title>') +
        prog('channel="c" start="20250101080000"', '<title>eight</title>') +
        prog('channel="d" start="20250101080000" stop="20250101083000"', '<title>other channel</title>') +
        prog('channel="c" start="20250101090000"', '<title>nine</title>') +
        prog('channel="c" start="20250101120000" stop="20250101130000"', '<title>noon</title>'),
    ),
  );
  const stops = Object.fromEntries(p.programmes.map((x) => [x.title, new Date(x.stop).toISOString().slice(11, 16)]));
  t.same(stops, { eight: '09:00', nine: '10:00', ten: '12:00', noon: '13:00', 'other channel': '08:30' });
});

t.test('fields: trimming, first category kept once, episode-num preference, icon', async (t) => {
  const p = await parseText(
    tv(
      prog(
        'channel="c" start="20250101100000" stop="20250101110000"',
        `<title>  Spaced\n title  </title><sub-title> sub </sub-title><desc><![CDATA[ Tom & Jerry <b>bold</b> ]]></desc>
         <category>News</category><category lang="fr">Infos</category><category>News</category><category>  </category>
         <episode-num system="dd_progid">EP1</episode-num><episode-num system="xmltv_ns"> 0.1. </episode-num><episode-num system="onscreen">S01E02</episode-num>
         <icon src=" http://i/1.png "/><icon src="http://i/2.png"/>`,
      ) +
        prog('channel="c" start="20250101110000" stop="20250101120000"', '<title>t</title><episode-num system="dd_progid">EP9</episode-num><episode-num system="xmltv_ns">1.2.</episode-num>') +
        prog('channel="c" start="20250101120000" stop="20250101130000"', '<title>u</title><episode-num system="dd_progid">EP9</episode-num><episode-num>E7</episode-num>') +
        prog('channel="c" start="20250101130000" stop="20250101140000"', '<title>v</title><desc>in <i>line</i> markup<x-y/>.</desc>'),
    ),
  );
  t.same(p.programmes[0], {
    channel: 'c',
    start: utc(2025, 1, 1, 10),
    stop: utc(2025, 1, 1, 11),
    title: 'Spaced\n title',
    subTitle: 'sub',
    description: 'Tom & Jerry <b>bold</b>',
    categories: ['News', 'Infos'],
    episodeNum: 'S01E02',
    episodeNums: [{ system: 'dd_progid', value: 'EP1' }, { system: 'xmltv_ns', value: '0.1.' }, { system: 'onscreen', value: 'S01E02' }],
    icon: 'http://i/1.png',
  });
  t.equal(p.programmes[1]?.episodeNum, '1.2.', 'xmltv_ns over other systems');
  t.equal(p.programmes[2]?.episodeNum, 'EP9', 'else the first');
  t.same(p.programmes[2]?.episodeNums, [{ system: 'dd_progid', value: 'EP9' }, { system: '', value: 'E7' }], 'every system kept, a missing one as ""');
  t.equal(p.programmes[3]?.description, 'in line markup.', 'text of child elements of a kept element is kept');
});

t.test('maxAgeMs and now: programmes already over are dropped', async (t) => {
  const name = 'iptv-org--x1co.com.br--content.xml';
  const all = await parseReal(name);
  const now = utc(2026, 5, 4, 12, 0);
  const p = await parseReal(name, { now, maxAgeMs: undefined });
  const cutoff = now - 24 * 3600 * 1000;
  const expected = all.programmes.filter((x) => x.stop >= cutoff).length;
  t.ok(expected > 0 && expected < all.programmes.length, 'the cut-off falls inside the file');
  t.equal(p.result.programmes, expected, 'default maxAge is 24 h');
  t.equal(p.result.skipped, all.programmes.length - expected);
  t.equal(p.result.warnings, 0, 'old programmes are not warnings');
  t.match(p.progress.at(-1)?.[1], /already over/);
  const hour = await parseReal(name, { now: utc(2026, 5, 3, 16, 0), maxAgeMs: 3600 * 1000 });
  t.equal(hour.programmes.every((x) => x.stop >= utc(2026, 5, 3, 15, 0)), true);
  t.ok(hour.result.programmes < all.result.programmes);
});

t.test('warning messages are capped, all are counted', async (t) => {
  let body = '';
  for (let i = 0; i < 120; i++) body += prog('channel="c"', `<title>n${i}</title>`);
  const p = await parseText(tv(body));
  t.equal(p.result.skipped, 120);
  t.equal(p.result.warnings, 120);
  t.equal(p.warnings.length, 51, '50 messages + a summary');
  t.match(p.warnings.at(-1), /70 more warnings not shown \(120 in total\)/);
});

// ---------------------------------------------------------------------------
// Encodings and compression

t.test('encodings: declared latin1/windows-1252 with single quotes, UTF-16 BOM, UTF-8 BOM, string streams', async (t) => {
  const body = prog('channel="c" start="20250101100000" stop="20250101110000"', '<title>Café € ½</title>');
  // '€' is not latin1: write its windows-1252 byte (0x80) by hand.
  const cp1252 = Buffer.from(tv(body, "<?xml version='1.0' encoding='windows-1252'?>\n").replace('\u20ac', '\u0080'), 'latin1');
  t.equal((await parseText(cp1252)).programmes[0]?.title, 'Café € ½', 'windows-1252 0x80 is €');
  const iso = Buffer.from(tv(prog('channel="c" start="20250101100000" stop="20250101110000"', '<title>Café ½</title>'), '<?xml version="1.0" encoding="ISO-8859-1"?>\n'), 'latin1');
  t.equal((await parseText(iso, {}, 3)).programmes[0]?.title, 'Café ½', 'ISO-8859-1 in 3-byte chunks');
  const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(tv(body, '<?xml version="1.0" encoding="UTF-16"?>\n'), 'utf16le')]);
  t.equal((await parseText(utf16, {}, 5)).programmes[0]?.title, 'Café € ½', 'UTF-16LE with BOM, odd chunks');
  const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(tv(body))]);
  t.equal((await parseText(bom, {}, 1)).programmes[0]?.title, 'Café € ½', 'UTF-8 BOM, 1-byte chunks (split multi-byte characters)');
  const lying = Buffer.from(tv(body, '<?xml version="1.0" encoding="UTF-16"?>\n'));
  t.equal((await parseText(lying)).programmes[0]?.title, 'Café € ½', 'UTF-16 declared without BOM on 8-bit bytes: UTF-8');
  const unknown = await parseText(Buffer.from(tv(body, '<?xml version="1.0" encoding="x-klingon"?>\n')));
  t.equal(unknown.programmes[0]?.title, 'Café € ½');
  t.match(unknown.warnings, [/unknown encoding "x-klingon"/]);
});

t.test('gzip, read through the sources service: same result as plain; corrupt or truncated gzip rejects', async (t) => {
  const dir = t.testdir();
  const plain = bytes('jellyfin--UK_Data.xml');
  const gz = gzipSync(plain);
  const corrupt = Buffer.from(gz);
  for (let i = 100; i < 200; i++) corrupt[i] = 0x55;
  writeFileSync(`${dir}/guide.xml.gz`, gz);
  writeFileSync(`${dir}/half.xml.gz`, gz.subarray(0, gz.length >> 1));
  writeFileSync(`${dir}/corrupt.xml.gz`, corrupt);
  const viaSources = async (name: string, options: XmltvParseOptions = {}) => {
    const source = await streamSource(`${dir}/${name}`);
    return parse(source.chunks, { totalBytes: source.size, bytesRead: source.bytesRead, ...options });
  };
  const a = await parseText(plain);
  const b = await viaSources('guide.xml.gz');
  t.same(b.result, a.result);
  t.same(b.programmes, a.programmes);
  t.ok(b.progress.length > 1 && b.progress.every(([f], i) => f <= 1 && (i === 0 || f >= b.progress[i - 1]![0])), 'progress over the compressed bytes, rising to 1');
  await t.rejects(viaSources('half.xml.gz'), { statusCode: 502, message: /not valid gzip|unexpected end/i }, 'truncated gzip');
  await t.rejects(viaSources('corrupt.xml.gz'), { statusCode: 502, message: /gzip|reading/ }, 'corrupt gzip');
});

// ---------------------------------------------------------------------------
// Documents that must be refused

t.test('refused documents', async (t) => {
  const billion = `<?xml version="1.0"?>
<!DOCTYPE tv [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
]>
<tv><programme channel="c" start="20250101100000" stop="20250101110000"><title>&lol3;</title></programme></tv>`;
  await t.rejects(parseText(billion), { name: 'XmltvError', message: /DOCTYPE declares entities/ }, 'billion laughs');
  const sinkCalls: string[] = [];
  await t.rejects(
    parse(fromBuffer(billion), {}, { programmes: async () => void sinkCalls.push('p'), channel: () => void sinkCalls.push('c') }),
    /DOCTYPE declares entities/,
  );
  t.same(sinkCalls, [], 'nothing delivered from a refused document');

  await t.resolves(parseText(tv(prog('channel="c" start="20250101100000" stop="20250101110000"'), '<?xml version="1.0"?>\n<!DOCTYPE tv SYSTEM "http://example.com/xmltv.dtd">\n')), 'DOCTYPE with a URL is fine');

  // One text, attribute value or comment of megabytes (a broken or hostile file): saxes gathers each
  // whole, so a 100 MB one held 450 MB and was stored as a description.
  const at = 'channel="c" start="20250101100000" stop="20250101110000"';
  const huge = 'x'.repeat(1_500_000);
  for (const [what, inner] of [
    ['a description', `<title>T</title><desc>${huge}</desc>`], ['a CDATA description', `<title>T</title><desc><![CDATA[${huge}]]></desc>`],
    ['an attribute value', `<title>T</title><icon src="${huge}"/>`], ['a comment', `<title>T</title><!-- ${huge.replace(/x/g, '<')} -->`],
    ['a description full of entities', `<title>T</title><desc>${'&amp;x'.repeat(800_000)}</desc>`],
  ] as const) {
    await t.rejects(parseText(tv(prog(at, inner))), { name: 'XmltvError', message: /longer than 1048576 characters/ }, `${what} of more than a million characters: refused`);
  }
  const attrs = Array.from({ length: 200_000 }, (_, i) => `a${i}="1"`).join(' ');
  await t.rejects(parseText(tv(`<programme ${at} ${attrs}><title>T</title></programme>`)), { name: 'XmltvError', message: /more than 1000 attributes/ }, '200,000 attributes on one element: refused');
  await t.rejects(parseText(tv(prog(at, `<title>T</title>${'<x>'.repeat(100_000)}`))), { name: 'XmltvError', message: /more than 1000 elements open/ }, '100,000 nested elements: refused');

  // Lists and channels a hostile guide could make huge: each new category or display name was looked
  // for among the others (100,000 in one programme: quadratic), and every channel holds state.
  const cats = Array.from({ length: 100_000 }, (_, i) => `<category>c${i}</category>`).join('');
  const many = await parseText(tv(prog(at, `<title>T</title>${cats}`)));
  t.strictSame(many.programmes[0]!.categories, Array.from({ length: 64 }, (_, i) => `c${i}`), '100,000 categories: the first 64 kept');
  const names = Array.from({ length: 1000 }, (_, i) => `<display-name>N${i}</display-name>`).join('');
  t.equal((await parseText(tv(`<channel id="c">${names}</channel>`))).channels[0]!.displayNames.length, 64, '1,000 display names: 64 kept');
  const channelsXml = (n: number) => Array.from({ length: n }, (_, i) => `<channel id="c${i}"><display-name>C</display-name></channel>`).join('\n');
  const progs = (n: number) => Array.from({ length: n }, (_, i) => `<programme channel="c${i}" start="20250101100000" stop="20250101110000"><title>T</title></programme>`).join('\n');
  await t.rejects(parseText(tv(channelsXml(MAX_GUIDE_CHANNELS + 1))), { name: 'XmltvError', message: /more than 200000 channels/ }, 'one channel too many: refused');
  await t.rejects(parseText(tv(channelsXml(100_000) + progs(0) + '\n' + progs(MAX_GUIDE_CHANNELS + 1).replace(/channel="c/g, 'channel="p'))), { message: /more than 200000 channels/ }, 'channels seen only in programmes count too');
  const full = await parseText(tv(channelsXml(120_000) + '\n' + progs(120_000)));
  t.equal(full.channels.length, 120_000, '120,000 channels, each with a programme: a channel counts once');

  const long = 'y'.repeat(500_000);
  t.equal((await parseText(tv(prog(at, `<title>T</title><desc>${long}</desc>`)))).programmes[0]!.description, long, 'a description of half a million characters is kept whole');

  const tvguide = bytes('nice-shot--tvguide.xml');
  await t.rejects(parseText(tvguide.subarray(0, 1_000_000)), { name: 'XmltvError', message: /truncated XMLTV document: the input ended inside <programme> before <\/tv>/ });
  await t.rejects(parseText(tv('').replace('</tv>\n', '')), /truncated/, 'just no </tv>');

  await t.rejects(parseText('<?xml version="1.0"?><rss version="2.0"><channel><title>x</title></channel></rss>'), { message: /not an XMLTV document: the root element is <rss>/ });
  const garbage = Buffer.alloc(20000);
  for (let i = 0; i < garbage.length; i++) garbage[i] = (i * 7919 + 13) % 256;
  await t.rejects(parseText(garbage), { name: 'XmltvError', message: /not an XMLTV document/ }, 'binary garbage');
  await t.rejects(parseText(''), /not an XMLTV document/, 'empty input');
  await t.rejects(parseText('  \n '), /not an XMLTV document/, 'whitespace only');
  await t.rejects(parseText(tv(prog('channel="c" start="20250101100000" stop="20250101110000"')) + tv('')), /content after <\/tv>/, 'two documents concatenated');
  await t.rejects(parseText(`<?xml version="1.0"?>\n<!-- ${'x'.repeat(1_200_000)} -->\n<tv></tv>`), /no <tv> element in the first/, 'prolog too large');
});

// ---------------------------------------------------------------------------
// XML errors that can be recovered from, and one that cannot

t.test('recoverable XML errors: warnings, parsing goes on', async (t) => {
  const p = await parseText(
    tv(
      prog('channel="c" start="20250101100000" stop="20250101110000"', '<title>Tom & Jerry</title><desc>Cats; mice</desc><icon src="http://i/?a=1&b=2"/>') +
        prog('channel="c" start="20250101110000" stop="20250101120000"', '<title>caf&eacute; &#163;5 &#x20AC;</title>') +
        prog('channel="c" start="20250101120000" stop="20250101130000"', '<title>ctrl\u0001char</title>') +
        prog('channel="c" start="20250101130000" stop="20250101140000"', '<title>html</title><desc>line<br>break</desc>') +
        '<!-- a & b in a comment -->' +
        prog('channel="c" start="20250101140000" stop="20250101150000"', '<title>last</title>'),
    ),
  );
  t.same(
    p.programmes.map((x) => [x.title, x.description, x.icon]),
    [
      ['Tom & Jerry', 'Cats; mice', 'http://i/?a=1&b=2'],
      ['caf&eacute; £5 €', undefined, undefined],
      ['ctrl\u0001char', undefined, undefined],
      ['html', 'linebreak', undefined],
      ['last', undefined, undefined],
    ],
    'a bare & is read as &amp;, an unknown entity is kept as written, <br> is an (unclosed) element whose text is kept',
  );
  t.equal(p.result.skipped, 0);
  t.equal(p.result.warnings, 5, "2 bare '&', 1 undefined entity, 1 control character, 1 unexpected close tag");
  t.match(p.warnings.join('\n'), /bare '&'/);
  t.match(p.warnings.join('\n'), /undefined entity/);
  t.match(p.warnings.join('\n'), /disallowed character/);
  t.match(p.warnings.join('\n'), /unexpected close tag/);
  // bare & split over chunk boundaries, in every position
  const doc = tv(prog('channel="c" start="20250101100000" stop="20250101110000"', '<title>A & B &amp; C &#38; D</title><desc><![CDATA[x & y]]></desc>'));
  for (let size = 1; size <= 12; size++) {
    const q = await parseText(doc, {}, size);
    t.same([q.programmes[0]?.title, q.programmes[0]?.description, q.result.warnings], ['A & B & C & D', 'x & y', 1], `chunks of ${size}`);
  }
});

t.test('unrecoverable: a stray close tag would close <tv> in saxes → rejected', async (t) => {
  await t.rejects(
    parseText(tv(prog('channel="c" start="20250101100000" stop="20250101110000"', '<title>a</title><desc>x</b>y</desc>') + prog('channel="c" start="20250101110000" stop="20250101120000"'))),
    { name: 'XmltvError', message: /cannot recover: .*unmatched closing tag: b/ },
  );
});

// ---------------------------------------------------------------------------
// Streaming: batches, backpressure, progress, abort

t.test('batches: size, order, awaited one at a time', async (t) => {
  let inFlight = 0;
  let maxInFlight = 0;
  const sizes: number[] = [];
  const p = await parse(fromBuffer(bytes('nice-shot--tvguide.xml'), 4096), { batchSize: 500 }, {
    programmes: async (batch) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      sizes.push(batch.length);
      await sleep(1);
      inFlight--;
    },
  });
  t.same(sizes, [500, 500, 500, 500, 500, 500, 354]);
  t.equal(maxInFlight, 1);
  t.equal(p.result.programmes, 3354);
});

t.test('backpressure: reading pauses while a batch is being stored', async (t) => {
  const doc = bytes('jellyfin--UK_Data.xml');
  const chunkSize = 8192;
  let pulled = 0;
  const total = Math.ceil(doc.length / chunkSize);
  async function* chunks(): AsyncGenerator<Buffer> {
    for (let i = 0; i < doc.length; i += chunkSize) {
      pulled++;
      yield doc.subarray(i, i + chunkSize);
    }
  }
  const advances: number[] = [];
  await parse(Readable.from(chunks(), { objectMode: false, highWaterMark: 1 }), { batchSize: 200 }, {
    programmes: async () => {
      const before = pulled;
      await sleep(30);
      advances.push(pulled - before);
    },
  });
  t.ok(advances.length >= 8, `${advances.length} batches`);
  t.ok(Math.max(...advances) <= 2, `at most 2 chunks read ahead while storing (saw ${Math.max(...advances)} of ${total})`);
});

t.test('progress with totalBytes', async (t) => {
  const buf = bytes('nice-shot--tvguide.xml');
  const p = await parse(fromBuffer(buf, 16384), { totalBytes: buf.length });
  const fractions = p.progress.map(([f]) => f);
  t.ok(fractions.length >= 20, `${fractions.length} progress reports`);
  t.same(fractions, [...fractions].sort((a, b) => a - b), 'monotonic');
  t.ok(fractions.every((f) => f > 0 && f <= 1));
  t.match(p.progress.at(-1), [1, /13 channels, 3354 programmes/]);
  const unknown = await parse(fromBuffer(buf, 16384));
  t.equal(unknown.progress.length, 1, 'without totalBytes: only the final report');
});

t.test('abort', async (t) => {
  const already = new AbortController();
  already.abort();
  await t.rejects(parseText(tv(''), { signal: already.signal }), { name: 'AbortError' }, 'already aborted');

  // A source that never ends: abort must not wait for more data.
  const ac = new AbortController();
  const endless = new Readable({ read() {} });
  endless.push(`<?xml version="1.0"?>\n<tv>\n${prog('channel="c" start="20250101100000" stop="20250101110000"')}`);
  setTimeout(() => ac.abort(), 50);
  const t0 = Date.now();
  await t.rejects(parseXmltv(endless, { channel() {}, async programmes() {}, warning() {}, progress() {} }, { signal: ac.signal }), { name: 'AbortError' });
  t.ok(Date.now() - t0 < 2000, 'promptly');
  t.ok(endless.destroyed, 'the input stream is destroyed');

  // Abort while a batch is being stored: no further batch is requested.
  const ac2 = new AbortController();
  let calls = 0;
  await t.rejects(
    parse(fromBuffer(bytes('nice-shot--tvguide.xml')), { signal: ac2.signal, batchSize: 100 }, {
      programmes: async () => {
        calls++;
        ac2.abort();
        await sleep(5);
      },
    }),
    { name: 'AbortError' },
  );
  t.equal(calls, 1);

  // Aborted mid-way through a longer guide
  const ac3 = new AbortController();
  let gzCalls = 0;
  await t.rejects(
    parse(fromBuffer(bytes('chrisliatas--xmltv_GREECE_el.xml'), 4096), { signal: ac3.signal, batchSize: 50 }, {
      programmes: async () => {
        if (++gzCalls === 3) ac3.abort();
      },
    }),
    { name: 'AbortError' },
  );
  t.equal(gzCalls, 3);
});

t.test('sink errors propagate', async (t) => {
  await t.rejects(
    parse(fromBuffer(bytes('iptv-org--guide.xml')), {}, {
      programmes: async () => {
        throw new Error('disk full');
      },
    }),
    /disk full/,
  );
});
