/**
 * The subtitles plugin over real HTTP with generated media: a Matroska file
 * with an embedded SubRip track, an image-based (PGS) track and an ASS track,
 * sidecar files in UTF-8 and in Windows-1252, and an MP4 with mov_text.
 * Listing, WebVTT conversion (cue text and timings exactly), one-pass
 * extraction and its cache, invalidation when the file changes, and access
 * (404 for unknown tracks and ungranted items, 401 without a token).
 */
import t from 'tap';
import { mkdir, readdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expectError } from '../../helpers/http.js';
import { clip, runFfmpeg, tempDir, vodHost } from '../vod/fixtures.js';
import { muxSubtitled, srtText, type SourceCue } from './media.js';
import { parseVtt } from './vtt-reader.js';

const ENGLISH: SourceCue[] = [
  { start: 500, end: 1750, lines: ['<i>Hello</i> & welcome — café', 'Line two: 3 < 4 > 2'] },
  { start: 2001, end: 2999, lines: ['Naïve “quotes” cost 5 €'] },
  { start: 3210, end: 3999, lines: ['- Who?', '- Me.'] },
];
const FRENCH: SourceCue[] = [
  { start: 250, end: 1500, lines: ['Bonjour, ça va ?'] },
  { start: 1510, end: 2990, lines: ['Très bien & vous…', 'À demain'] },
];
const SIDECAR_EN: SourceCue[] = [{ start: 100, end: 900, lines: ['Sidecar in UTF-8: Grüße, 東京'] }, { start: 1000, end: 2500, lines: ['Second ‘cue’'] }];
const SIDECAR_FR: SourceCue[] = [{ start: 1234, end: 2345, lines: ['Forcé : l’été à 20 € – « déjà vu »…'] }];
const WEBVTT: SourceCue[] = [{ start: 600, end: 1600, lines: ['WebVTT &amp; <b>friends</b>'] }];
const REPLACED: SourceCue[] = [{ start: 700, end: 1700, lines: ['A changed file'] }];

/** What a viewer sees of a source cue. */
const expected = (cues: SourceCue[]) => cues.map((c) => [c.start, c.end, c.lines.join('\n').replace(/<\/?i>/g, '')]);
const seen = (vtt: string) => parseVtt(vtt).map((c) => [c.start, c.end, c.text]);

const CP1252: Record<string, number> = { '€': 0x80, '…': 0x85, '‘': 0x91, '’': 0x92, '“': 0x93, '”': 0x94, '–': 0x96, '—': 0x97 };
const windows1252 = (text: string) => Buffer.from([...text].map((ch) => CP1252[ch] ?? (ch.charCodeAt(0) < 256 ? ch.charCodeAt(0) : 0x3f)));

t.test('subtitle tracks: embedded and sidecar, listed and served as WebVTT', async (t) => {
  const dir = await tempDir(t, 'antenna-subs-');
  const movies = path.join(dir, 'movies');
  const other = path.join(dir, 'other');
  const movie = path.join(movies, 'Subbed (2020)', 'Subbed (2020).mkv');
  await muxSubtitled(runFfmpeg, movie, {
    seconds: 4,
    tracks: [
      { kind: 'srt', cues: ENGLISH, language: 'eng' },
      { kind: 'pgs', times: [1000, 3000], language: 'eng' },
      { kind: 'ass', cues: FRENCH, language: 'fre', title: 'Français', forced: true },
      { kind: 'vtt', cues: WEBVTT, language: 'ger' },
    ],
  });
  await writeFile(path.join(movies, 'Subbed (2020)', 'Subbed (2020).en.srt'), srtText(SIDECAR_EN, '\r\n'));
  await writeFile(path.join(movies, 'Subbed (2020)', 'Subbed (2020).fr.forced.srt'), windows1252(srtText(SIDECAR_FR)));
  await writeFile(path.join(movies, 'Subbed (2020)', 'Another (2019).en.srt'), srtText(SIDECAR_EN));
  await writeFile(path.join(movies, 'Subbed (2020)', 'Subbed (2020).nfo'), '<movie/>');
  await clip(path.join(movies, 'Texty (2021)', 'Texty (2021).mp4'), { seconds: 4, width: 320, height: 180, subtitle: true });
  await clip(path.join(other, 'Elsewhere (2000).mp4'), { seconds: 1, width: 320, height: 180, audio: 'none' });

  const host = await vodHost([{ name: 'Movies', type: 'movies', paths: [movies] }, { name: 'Other', type: 'movies', paths: [other] }], {
    plugins: { subtitles: {} },
  });
  t.teardown(() => host.close());
  const get = (url: string, headers: Record<string, string> = host.authHeaders) => host.inject({ method: 'GET', url, headers });

  const libs = (await get('/libraries')).json().libraries as { id: number; name: string }[];
  const items = (await get(`/library/${libs.find((l) => l.name === 'Movies')!.id}`)).json().items as { id: string; title: string }[];
  const subbed = items.find((i) => i.title === 'Subbed')!.id;
  const texty = items.find((i) => i.title === 'Texty')!.id;

  // ---- listing
  const list = await get(`/api/items/${subbed}/subtitle-tracks`);
  t.equal(list.statusCode, 200);
  const tracks = list.json().tracks as Record<string, unknown>[];
  t.strictSame(tracks, [
    { label: 'English', language: 'en', url: `/api/items/${subbed}/subtitle/embedded/0`, codec: 'subrip', forced: false, default: true, external: false, hearing_impaired: false },
    { label: 'Français (French, Forced)', language: 'fr', url: `/api/items/${subbed}/subtitle/embedded/2`, codec: 'ass', forced: true, default: true, external: false, hearing_impaired: false },
    { label: 'German', language: 'de', url: `/api/items/${subbed}/subtitle/embedded/3`, codec: 'webvtt', forced: false, default: true, external: false, hearing_impaired: false },
    { label: 'English (External)', language: 'en', url: `/api/items/${subbed}/subtitle/external/0`, codec: 'subrip', forced: false, default: false, external: true, hearing_impaired: false },
    { label: 'French (Forced, External)', language: 'fr', url: `/api/items/${subbed}/subtitle/external/1`, codec: 'subrip', forced: true, default: false, external: true, hearing_impaired: false },
  ], 'embedded SubRip, ASS and WebVTT, then the two sidecars; the PGS track and unrelated files are not listed');

  // ---- the first embedded track: one extraction of every text track
  const jobs = async () => ((await get('/api/jobs')).json().jobs as { key: string; kind: string; state: string }[]).filter((j) => j.kind === 'subtitles');
  /** Until no extraction is running (a request is answered as soon as its own track is ready). */
  const settled = async () => {
    for (let i = 0; i < 100 && (await jobs()).some((j) => j.state === 'running'); i++) await new Promise((r) => setTimeout(r, 50));
  };
  const first = await get(`/api/items/${subbed}/subtitle/embedded/0`);
  t.equal(first.statusCode, 200, 'embedded SubRip track');
  t.match(first.headers['content-type'], /^text\/vtt; charset=utf-8/);
  t.strictSame(seen(first.body), expected(ENGLISH), 'SubRip cue text and timings survive exactly');
  t.match(first.body, '<i>Hello</i> &amp; welcome', 'italics kept, & escaped');
  t.equal((await jobs()).length, 1, 'one extraction job');
  const ass = await get(`/api/items/${subbed}/subtitle/embedded/2`);
  t.equal(ass.statusCode, 200, 'embedded ASS track');
  t.strictSame(seen(ass.body), expected(FRENCH), 'ASS cue text and timings survive exactly (styling dropped)');
  t.notMatch(ass.body, /an8|\\c|&H/, 'no ASS override codes left');
  const vtt = await get(`/api/items/${subbed}/subtitle/embedded/3`);
  t.strictSame(seen(vtt.body), [[600, 1600, 'WebVTT & friends']], 'embedded WebVTT track');
  t.equal((await jobs()).length, 1, 'the other tracks came from the first extraction, without another one');
  await settled();
  const cacheRoot = path.join(host.dataDir, 'plugins', 'subtitles', 'embedded');
  const [fileDir] = await readdir(cacheRoot);
  const [versionDir] = await readdir(path.join(cacheRoot, fileDir!));
  t.strictSame((await readdir(path.join(cacheRoot, fileDir!, versionDir!))).sort(), ['.complete', 's0.vtt', 's2.vtt', 's3.vtt'], 'the text tracks are in the cache, nothing else');

  const mapped = await get(`/api/items/${subbed}/subtitle/embedded/0?mpegts=900000`);
  t.match(mapped.body, /^WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:900000,LOCAL:00:00:00\.000\n\n/, '?mpegts= adds the HLS timestamp map');
  t.strictSame(seen(mapped.body), expected(ENGLISH), 'and changes nothing else');
  expectError(t, await get(`/api/items/${subbed}/subtitle/embedded/0?mpegts=-1`), 400, /mpegts/);

  // ---- sidecars
  const en = await get(`/api/items/${subbed}/subtitle/external/0`);
  t.equal(en.statusCode, 200);
  t.match(en.headers['content-type'], /^text\/vtt/);
  t.strictSame(seen(en.body), expected(SIDECAR_EN), 'UTF-8 sidecar with CRLF line ends');
  const fr = await get(`/api/items/${subbed}/subtitle/external/1`);
  t.strictSame(seen(fr.body), expected(SIDECAR_FR), 'Windows-1252 sidecar converted to UTF-8 (€, ’, «, … included)');

  // ---- mov_text in MP4
  const textyTracks = (await get(`/api/items/${texty}/subtitle-tracks`)).json().tracks;
  t.match(textyTracks, [{ codec: 'mov_text', language: 'en', url: `/api/items/${texty}/subtitle/embedded/0`, external: false }]);
  t.equal(textyTracks.length, 1);
  const mov = await get(`/api/items/${texty}/subtitle/embedded/0`);
  t.strictSame(seen(mov.body), [[0, 1000, 'Line 1: the tone is 440 Hz'], [2000, 3000, 'Line 2: the tone is 441 Hz']], 'mov_text → WebVTT');

  // ---- unknown tracks, providers, items, versions
  expectError(t, await get(`/api/items/${subbed}/subtitle/embedded/1`), 404, undefined, 'the image-based track');
  expectError(t, await get(`/api/items/${subbed}/subtitle/embedded/4`), 404, undefined, 'an index past the last stream');
  expectError(t, await get(`/api/items/${subbed}/subtitle/embedded/01`), 404, undefined, 'a leading zero');
  expectError(t, await get(`/api/items/${subbed}/subtitle/embedded/x`), 404, undefined, 'not a number');
  expectError(t, await get(`/api/items/${subbed}/subtitle/external/2`), 404, undefined, 'a sidecar index past the last');
  expectError(t, await get(`/api/items/${subbed}/subtitle/opensubtitles/0`), 404, undefined, 'an unknown provider');
  expectError(t, await get(`/api/items/${subbed}/subtitle/external/..%2F..%2Fetc%2Fpasswd`), 404, undefined, 'path tricks');
  expectError(t, await get('/api/items/nope/subtitle-tracks'), 404, undefined, 'an unknown item');
  expectError(t, await get('/api/items/nope/subtitle/embedded/0'), 404);
  expectError(t, await get(`/api/items/${subbed}/subtitle-tracks?version=1`), 404, undefined, 'a version the item does not have');
  expectError(t, await get(`/api/items/${subbed}/subtitle-tracks?version=x`), 400, /version/, 'a malformed version');

  // ---- auth
  expectError(t, await get(`/api/items/${subbed}/subtitle-tracks`, {}), 401, undefined, 'list without a token');
  expectError(t, await get(`/api/items/${subbed}/subtitle/embedded/0`, {}), 401, undefined, 'track without a token');
  const viaApiKey = await get(`/api/items/${subbed}/subtitle/embedded/0?api_key=${encodeURIComponent(host.adminToken)}`, {});
  t.equal(viaApiKey.statusCode, 200, 'a track with ?api_key=');
  const playUrl = (await get(`/watch/vod/${subbed}/play-info`)).json().url as string;
  const key = new URL(playUrl, 'http://x').searchParams.get('key')!;
  t.ok(key, 'play-info hands out a signed key');
  t.equal((await get(`/api/items/${subbed}/subtitle/external/1?key=${encodeURIComponent(key)}`, {})).statusCode, 200, 'a track with the item\'s signed key');
  expectError(t, await get(`/api/items/${texty}/subtitle/embedded/0?key=${encodeURIComponent(key)}`, {}), 401, undefined, 'another item\'s signed key');

  const otherLib = libs.find((l) => l.name === 'Other')!.id;
  await host.createUser('restricted', 'restricted-password', { libraries: [String(otherLib)] });
  const restricted = { authorization: `Bearer ${await host.login('restricted', 'restricted-password')}` };
  expectError(t, await get(`/api/items/${subbed}/subtitle-tracks`, restricted), 404, undefined, 'a restricted user: the list');
  expectError(t, await get(`/api/items/${subbed}/subtitle/embedded/0`, restricted), 404, undefined, 'a restricted user: a track');
  expectError(t, await get(`/api/items/${subbed}/subtitle/external/0`, restricted), 404, undefined, 'a restricted user: a sidecar');
  const elsewhere = (await get(`/library/${otherLib}`, restricted)).json().items[0].id;
  t.strictSame((await get(`/api/items/${elsewhere}/subtitle-tracks`, restricted)).json(), { tracks: [] }, 'a granted item without subtitles: an empty list');

  // ---- the file changes: the cache is invalidated, concurrent first requests share one extraction
  const replacement = path.join(dir, 'replacement.mkv');
  await muxSubtitled(runFfmpeg, replacement, {
    seconds: 2,
    tracks: [{ kind: 'srt', cues: REPLACED, language: 'eng' }, { kind: 'pgs', times: [500] }, { kind: 'ass', cues: REPLACED, language: 'fre' }],
  });
  await rename(replacement, movie);
  const [a, b] = await Promise.all([get(`/api/items/${subbed}/subtitle/embedded/0`), get(`/api/items/${subbed}/subtitle/embedded/2`)]);
  t.strictSame([a.statusCode, b.statusCode], [200, 200]);
  t.strictSame(seen(a.body), expected(REPLACED), 'the changed file\'s SubRip track, not the cached one');
  t.strictSame(seen(b.body), expected(REPLACED), 'the changed file\'s ASS track');
  t.equal((await jobs()).filter((j) => j.key.startsWith(`subtitles:${fileDir}-`)).length, 2, 'two concurrent first requests ran one extraction');
  await settled();
  t.equal((await readdir(path.join(cacheRoot, fileDir!))).length, 1, 'the old version\'s cache was removed');
});

t.test('a file that cannot be read answers 503, not 500', async (t) => {
  const dir = await tempDir(t, 'antenna-subs-');
  const movie = path.join(dir, 'movies', 'Broken (2001)', 'Broken (2001).mkv');
  await mkdir(path.dirname(movie), { recursive: true });
  await muxSubtitled(runFfmpeg, movie, { seconds: 1, tracks: [{ kind: 'srt', cues: [{ start: 0, end: 500, lines: ['x'] }] }] });
  const host = await vodHost([{ name: 'Movies', type: 'movies', paths: [path.join(dir, 'movies')] }], { plugins: { subtitles: {} } });
  t.teardown(() => host.close());
  const id = (await host.inject({ method: 'GET', url: '/library/1', headers: host.authHeaders })).json().items[0].id;
  // Same size, other bytes, new mtime: the scan's stream list no longer holds; ffprobe/ffmpeg fail.
  const { size } = await import('node:fs/promises').then((fs) => fs.stat(movie));
  await writeFile(movie, Buffer.alloc(size, 0x41));
  const res = await host.inject({ method: 'GET', url: `/api/items/${id}/subtitle/embedded/0`, headers: host.authHeaders });
  expectError(t, res, 503);
  t.ok(Number(res.headers['retry-after']) > 0, 'with Retry-After');
});
