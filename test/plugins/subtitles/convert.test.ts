/**
 * The converters on their own: SubRip, ASS/SSA and WebVTT text → WebVTT
 * (timings to the millisecond, cue text with line breaks, escaping, styling
 * kept or dropped), encodings (UTF-8, UTF-16 with BOM, Windows-1252) and what
 * sidecar file names say (language, forced, SDH, title).
 */
import t from 'tap';
import { decodeSubtitleText, decodeWindows1252 } from '../../../plugins/subtitles/encoding.js';
import { labelsFor, normalizeLanguage } from '../../../plugins/subtitles/language.js';
import { parseSidecarWords } from '../../../plugins/subtitles/sidecar.js';
import { toWebVtt, withTimestampMap } from '../../../plugins/subtitles/vtt.js';
import { parseVtt } from './vtt-reader.js';

t.test('SubRip → WebVTT keeps timings and text exactly', async (t) => {
  const srt = [
    '1', '00:00:01,000 --> 00:00:02,500', 'Hello & <i>world</i>, café', 'second line: 3 < 4 > 2', '',
    '2', '00:00:03,120 --> 00:00:04,005 X1:10 X2:20 Y1:1 Y2:2', '<font color="red">Red</font> {\\an8}top', '',
    '3', '01:59:59,999 --> 02:00:01,001', '<I>Unclosed italic', 'still italic', '',
    // A cue whose text includes a number line and an arrow.
    '4', '00:00:05.000 --> 00:00:06.000', '42', 'a --> b', '', '',
  ].join('\r\n');
  const vtt = toWebVtt(srt, 'srt');
  t.match(vtt, /^WEBVTT\n\n/, 'header');
  const cues = parseVtt(vtt);
  t.strictSame(cues.map((c) => [c.start, c.end, c.text]), [
    [1000, 2500, 'Hello & world, café\nsecond line: 3 < 4 > 2'],
    [3120, 4005, 'Red top'],
    [5000, 6000, '42\na --> b'],
    [7_199_999, 7_201_001, 'Unclosed italic\nstill italic'],
  ], 'cue times in ms and text (tags removed, entities decoded) survive, sorted by start');
  t.match(vtt, '00:00:01.000 --> 00:00:02.500\nHello &amp; <i>world</i>, café\nsecond line: 3 &lt; 4 &gt; 2\n', '&, < and > are escaped; <i> kept');
  t.match(vtt, '<i>Unclosed italic</i>\n<i>still italic</i>', 'unclosed tags are closed on every line');
  t.notMatch(vtt, /font|an8/, '<font> and {\\an8} dropped');
  t.notMatch(vtt, /-->\s*b/, 'no arrow inside cue text');
  const squeezed = toWebVtt('1\n00:00:01,000 --> 00:00:02,000\nOne\n2\n00:00:03,000 --> 00:00:04,000\nTwo\n7\n\n3\n00:00:05,000 --> 00:00:06,000\nThree\n', 'srt');
  t.strictSame(parseVtt(squeezed).map((c) => c.text), ['One', 'Two\n7', 'Three'], 'a counter without the blank line before it is still a counter; other numbers are text');
});

t.test('ASS → WebVTT keeps timings and text, drops styling it cannot carry', async (t) => {
  const ass = `\uFEFF[Script Info]
ScriptType: v4.00+
WrapStyle: 0

[V4+ Styles]
Format: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, BackColour, Bold, Italic, Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, BorderStyle, Outline, Shadow, Alignment, MarginL, MarginR, MarginV, Encoding
Style: Default,Arial,16,&Hffffff,&Hffffff,&H0,&H0,0,0,0,0,100,100,0,0,1,1,0,2,10,10,10,0
Style: Thoughts,Arial,16,&Hffffff,&Hffffff,&H0,&H0,0,-1,0,0,100,100,0,0,1,1,0,2,10,10,10,0

[Events]
Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text
Dialogue: 0,0:00:03.12,0:00:04.01,Default,,0,0,0,,{\\an8\\c&H0000FF&}Top & red\\hspace
Dialogue: 0,0:00:01.00,0:00:02.50,Default,Bob,0,0,0,,Hello, {\\i1}world{\\i0}\\Nnew line
Comment: 0,0:00:01.00,0:00:02.50,Default,,0,0,0,,not shown
Dialogue: 0,0:00:05.00,0:00:06.00,Default,,0,0,0,,{\\b1}bold{\\b0} {\\u1}u{\\u0} {\\p1}m 0 0 l 100 0{\\p0}after
Dialogue: 1,0:00:05.00,0:00:06.00,Default,,0,0,0,,{\\b1}bold{\\b0} {\\u1}u{\\u0} {\\p1}m 0 0 l 100 0{\\p0}after
Dialogue: 0,1:02:03.45,1:02:04.00,Thoughts,,0,0,0,,I think {\\i0}therefore {\\b1}soft{\\r}\\nbreak
`;
  const vtt = toWebVtt(ass, 'ass');
  const cues = parseVtt(vtt);
  t.strictSame(cues.map((c) => [c.start, c.end, c.text]), [
    [1000, 2500, 'Hello, world\nnew line'],
    [3120, 4010, 'Top & red\u00a0space'],
    [5000, 6000, 'bold u after'],
    [3_723_450, 3_724_000, 'I think therefore soft break'],
  ], 'timings (centiseconds → ms) and text; comments skipped, drawings dropped, layer duplicates merged');
  t.match(vtt, 'Hello, <i>world</i>\nnew line', 'italic override → <i>');
  t.match(vtt, '<b>bold</b> <u>u</u> after', 'bold and underline → <b>, <u>');
  t.match(vtt, '<i>I think </i>therefore <b>soft</b><i> break</i>', 'an italic style; \\r resets to it');
  t.match(vtt, 'Top &amp; red', 'escaped');
});

t.test('WebVTT is kept as it is', async (t) => {
  const src = 'WEBVTT - title\r\n\r\nSTYLE\r\n::cue { color: yellow }\r\n\r\n00:01.000 --> 00:02.000 line:0\r\n<c.yellow>Hi</c>\r\n';
  t.equal(toWebVtt(Buffer.from(`\uFEFF${src}`), 'vtt'), src.replace(/\r\n/g, '\n'), 'BOM and CRLF removed, nothing else');
  t.equal(toWebVtt('00:01.000 --> 00:02.000\nHi\n', 'vtt'), 'WEBVTT\n\n00:01.000 --> 00:02.000\nHi\n', 'a missing header is added');
  t.equal(toWebVtt('WEBVTT\n\n00:01.000 --> 00:02.000\nA & B, 3 < 4 &amp; <i>x</i> &#233;\n', 'vtt'),
    'WEBVTT\n\n00:01.000 --> 00:02.000\nA &amp; B, 3 &lt; 4 &amp; <i>x</i> &#233;\n', 'a bare & and a < that starts no tag are escaped; entities and tags kept');
});

t.test('X-TIMESTAMP-MAP for HLS renditions', async (t) => {
  const vtt = 'WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nHi\n';
  const mapped = withTimestampMap(vtt, 900000);
  t.equal(mapped, 'WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:900000,LOCAL:00:00:00.000\n\n00:00:01.000 --> 00:00:02.000\nHi\n', 'in the header, before the first blank line');
  t.equal(withTimestampMap(mapped, 0), vtt.replace('WEBVTT\n', 'WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:0,LOCAL:00:00:00.000\n'), 'an existing map is replaced');
  t.strictSame(parseVtt(mapped).map((c) => [c.start, c.text]), [[1000, 'Hi']], 'the cues are unchanged');
});

t.test('encodings', async (t) => {
  const text = 'Ça coûte 5 € – “déjà vu”… Œuvre';
  const cp1252 = Buffer.from([0xc7, 0x61, 0x20, 0x63, 0x6f, 0xfb, 0x74, 0x65, 0x20, 0x35, 0x20, 0x80, 0x20, 0x96, 0x20, 0x93, 0x64, 0xe9, 0x6a, 0xe0, 0x20, 0x76, 0x75, 0x94, 0x85, 0x20, 0x8c, 0x75, 0x76, 0x72, 0x65]);
  t.equal(decodeWindows1252(cp1252), text, 'Windows-1252, 0x80-0x9F included');
  t.equal(decodeSubtitleText(cp1252), text, 'invalid UTF-8 is read as Windows-1252');
  t.equal(decodeSubtitleText(Buffer.from(text, 'utf8')), text, 'UTF-8');
  t.equal(decodeSubtitleText(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text, 'utf8')])), text, 'UTF-8 with BOM');
  t.equal(decodeSubtitleText(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')])), text, 'UTF-16LE with BOM');
  t.equal(decodeSubtitleText(Buffer.from('Gr\xfc\xdfe', 'latin1')), 'Grüße', 'Latin-1');
});

t.test('sidecar names, languages and labels', async (t) => {
  const parse = (name: string) => parseSidecarWords(name ? name.split('.') : []);
  t.match(parse(''), { language: null, title: null, forced: false, hearingImpaired: false, default: false });
  t.match(parse('en'), { language: 'en', forced: false });
  t.match(parse('fr.forced'), { language: 'fr', forced: true });
  t.match(parse('eng.sdh'), { language: 'en', hearingImpaired: true });
  t.match(parse('English.default'), { language: 'en', default: true });
  t.match(parse('pt-BR'), { language: 'pt-BR' });
  t.match(parse('hi'), { language: 'hi', hearingImpaired: false }, 'hi alone is Hindi');
  t.match(parse('en.hi'), { language: 'en', hearingImpaired: true }, 'hi after a language is hearing impaired');
  t.match(parse('Commentary.de'), { language: 'de', title: 'Commentary' });
  t.equal(normalizeLanguage('fre'), 'fr');
  t.equal(normalizeLanguage('und'), null);
  t.equal(normalizeLanguage('xx'), null);
  t.strictSame(labelsFor([
    { language: 'en', external: false }, { language: 'en', external: false }, { language: 'fr', forced: true, external: true },
    { language: null, external: false }, { language: 'de', title: 'Commentary', hearingImpaired: true, external: false },
  ]), ['English', 'English 2', 'French (Forced, External)', 'Unknown', 'Commentary (German, SDH)']);
});
