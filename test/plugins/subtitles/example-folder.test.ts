/**
 * examples/subtitle-folder, loaded by path like any third-party plugin: its
 * provider's tracks follow the built-in ones in the listing and are served
 * as WebVTT through the same routes and access rules.
 */
import t from 'tap';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expectError } from '../../helpers/http.js';
import { REPO_ROOT } from '../../helpers/repo.js';
import { clip, tempDir, vodHost } from '../vod/fixtures.js';
import { assText, srtText, type SourceCue } from './media.js';
import { parseVtt } from './vtt-reader.js';

const GERMAN: SourceCue[] = [{ start: 300, end: 1200, lines: ['Grüße aus Köln – schön!'] }];
const ENGLISH: SourceCue[] = [{ start: 1500, end: 2750, lines: ['Forced, from the folder', 'two lines'] }];
const NEXT_TO: SourceCue[] = [{ start: 0, end: 500, lines: ['next to the media'] }];

t.test('a subtitle provider plugin written against the SDK', async (t) => {
  const dir = await tempDir(t, 'antenna-subs-folder-');
  const movies = path.join(dir, 'movies');
  const folder = path.join(dir, 'subtitles');
  await clip(path.join(movies, 'Plain (2022).mp4'), { seconds: 3, width: 320, height: 180, audio: 'none' });
  await writeFile(path.join(movies, 'Plain (2022).srt'), srtText(NEXT_TO));
  await mkdir(folder, { recursive: true });
  await writeFile(path.join(folder, 'Plain (2022).de.srt'), Buffer.from(srtText(GERMAN).replace('–', '\u0096'), 'latin1'));
  await writeFile(path.join(folder, 'Plain (2022).en.forced.ass'), assText(ENGLISH));
  await writeFile(path.join(folder, 'Other (2020).en.srt'), srtText(GERMAN));

  const host = await vodHost([{ name: 'Movies', type: 'movies', paths: [movies] }], {
    baseDir: REPO_ROOT,
    plugins: { './dist/examples/subtitle-folder': { path: folder } },
  });
  t.teardown(() => host.close());
  t.ok(host.host.plugins.some((p) => p.def.id === 'subtitles'), 'the example brings the subtitles plugin it depends on');
  const get = (url: string, headers: Record<string, string> = host.authHeaders) => host.inject({ method: 'GET', url, headers });
  const id = (await get('/library/1')).json().items[0].id as string;

  const tracks = (await get(`/api/items/${id}/subtitle-tracks`)).json().tracks;
  t.strictSame(tracks.map((x: any) => [x.label, x.language, x.url, x.codec, x.forced, x.external]), [
    ['Unknown (External)', 'und', `/api/items/${id}/subtitle/external/0`, 'subrip', false, true],
    ['German (External)', 'de', `/api/items/${id}/subtitle/folder/0`, 'subrip', false, true],
    ['English (Forced, External)', 'en', `/api/items/${id}/subtitle/folder/1`, 'ass', true, true],
  ], 'the sidecar next to the media first, then the folder\'s files for this title only');

  const de = await get(`/api/items/${id}/subtitle/folder/0`);
  t.equal(de.statusCode, 200);
  t.match(de.headers['content-type'], /^text\/vtt/);
  t.strictSame(parseVtt(de.body).map((c) => [c.start, c.end, c.text]), [[300, 1200, 'Grüße aus Köln – schön!']], 'Windows-1252 SubRip through the SDK\'s toWebVtt');
  const en = await get(`/api/items/${id}/subtitle/folder/1?api_key=${encodeURIComponent(host.adminToken)}`, {});
  t.strictSame(parseVtt(en.body).map((c) => [c.start, c.end, c.text]), [[1500, 2750, 'Forced, from the folder\ntwo lines']], 'ASS');
  expectError(t, await get(`/api/items/${id}/subtitle/folder/2`), 404, undefined, 'no third file');
  expectError(t, await get(`/api/items/${id}/subtitle/folder/0`, {}), 401, undefined, 'no token');
});
