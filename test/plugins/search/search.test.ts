/**
 * GET /api/search over a real host: a movie library, a show, channels from a
 * playlist and a guide of past, current and later programmes. Finds a movie,
 * a show, an episode, a channel (by name and number) and a programme; case,
 * accents and articles aside; titles starting with the query first; past
 * programmes and ungranted libraries left out; bad input is a 400.
 */
import t from 'tap';
import { copyFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { createTestHost } from '../../../sdk/testing.js';
import { expectError } from '../../helpers/http.js';
import { closedPort, m3u, tempDir, write, xmltv, xt } from '../live-tv/fixtures.js';
import { clip } from '../vod/fixtures.js';

t.test('search across libraries, channels and the guide', async (t) => {
  const dir = await tempDir(t, 'antenna-search-');
  const media = path.join(dir, 'clip.mp4');
  await clip(media, { seconds: 1, width: 160, height: 90 });
  const put = async (rel: string) => { await mkdir(path.dirname(path.join(dir, rel)), { recursive: true }); await copyFile(media, path.join(dir, rel)); };
  await put('movies/The Matrix (1999)/The Matrix (1999).mp4');
  await put('movies/Matrix Reloaded (2003).mp4');
  await put('movies/Amélie (2001).mp4');
  await put('movies/Heat (1995).mp4');
  await put('shows/Matrix Stories/Season 01/Matrix Stories S01E01 - Pilot.mp4');
  await put('shows/Other Show/Season 01/Other Show S01E01 - The Matrix Job.mp4');

  const dead = await closedPort();
  const playlist = await write(dir, 'tv.m3u', m3u([
    { name: 'Matrix TV', tvgId: 'mtv', chno: '7', url: `http://127.0.0.1:${dead}/a.ts` },
    { name: 'News One', tvgId: 'news', chno: '42', url: `http://127.0.0.1:${dead}/b.ts` },
  ]));
  const hour = 3600_000;
  const now = Math.floor(Date.now() / hour) * hour;
  const iso = (ms: number) => new Date(ms).toISOString();
  const guide = await write(dir, 'guide.xml', xmltv(
    [{ id: 'mtv', names: ['Matrix TV'] }, { id: 'news', names: ['News One'] }],
    [
      { channel: 'news', start: xt(iso(now - 3 * hour)), stop: xt(iso(now - 2 * hour)), title: 'The Matrix Revisited' }, // over
      { channel: 'news', start: xt(iso(now - hour)), stop: xt(iso(now + hour)), title: 'Evening News' },
      { channel: 'news', start: xt(iso(now + 2 * hour)), stop: xt(iso(now + 3 * hour)), title: 'Inside the MATRIX' },
      { channel: 'mtv', start: xt(iso(now + hour)), stop: xt(iso(now + 2 * hour)), title: 'Matrix Marathon' },
    ],
  ));
  const host = await createTestHost({
    plugins: {
      search: {},
      vod: { libraries: [{ name: 'Movies', type: 'movies', paths: [path.join(dir, 'movies')] }, { name: 'Shows', type: 'shows', paths: [path.join(dir, 'shows')] }], initialScan: 'await' },
      'live-tv': { initialImport: 'await' },
      'm3u-tuner': { sources: [{ name: 'IPTV', url: playlist }] },
      'xmltv-guide': { sources: [{ url: guide }], maxAge: '100000d' },
    },
  });
  t.teardown(() => host.close());
  const search = (q: string, headers: Record<string, string> = host.authHeaders) => host.inject({ method: 'GET', url: `/api/search?q=${encodeURIComponent(q)}`, headers });

  const res = await search('matrix');
  t.equal(res.statusCode, 200);
  const found = res.json();
  t.strictSame(found.movies.map((m: any) => m.title), ['The Matrix', 'Matrix Reloaded'], 'movies: both, by title, the article aside');
  t.match(found.movies[0], { type: 'movie', year: 1999, poster_url: /^\/api\/items\/[\w-]+\/images\/poster\?tag=\w+&key=/ });
  t.strictSame(found.shows.map((s: any) => s.title), ['Matrix Stories']);
  t.strictSame(found.episodes.map((e: any) => [e.title, e.series_title, e.season_number, e.episode_number]), [['The Matrix Job', 'Other Show', 1, 1]], 'an episode, with its series');
  t.strictSame(found.channels.map((c: any) => [c.name, c.number]), [['Matrix TV', '7']]);
  t.strictSame(found.programmes.map((p: any) => [p.title, p.channel_name]), [['Matrix Marathon', 'Matrix TV'], ['Inside the MATRIX', 'News One']], 'later programmes by start, case aside; the one that is over is left out');
  t.match(found.programmes[0], { channel_number: '7', sub_title: null, start: new Date(now + hour).toISOString() });
  const item = await host.inject({ method: 'GET', url: `/item/${found.movies[0].id}`, headers: host.authHeaders });
  t.equal(item.json().title, 'The Matrix', 'ids are those of /item/{id}');
  t.strictSame((await search('job')).json().episodes.map((e: any) => e.title), ['The Matrix Job']);
  t.strictSame((await search('stories')).json().shows.map((e: any) => e.title), ['Matrix Stories'], 'a word inside the title');
  t.strictSame((await search('reloaded matrix')).json().movies, [], 'words in their order');

  t.strictSame((await search('AMELIE')).json().movies.map((m: any) => m.title), ['Amélie'], 'accents and case aside');
  t.strictSame((await search('42')).json().channels.map((c: any) => c.name), ['News One'], 'a channel by its number');
  t.strictSame((await search('evening')).json().programmes.map((p: any) => p.title), ['Evening News'], 'a programme on now');
  t.match((await search('zzz')).json(), { movies: [], shows: [], episodes: [], channels: [], programmes: [] });
  const limited = await host.inject({ method: 'GET', url: '/api/search?q=matrix&limit=1', headers: host.authHeaders });
  t.equal(limited.json().movies.length, 1, 'limit applies to each kind');

  const shows = found.shows[0].library_id;
  await host.createUser('kid', 'kid-password', { libraries: [String(shows)] });
  const kid = { authorization: `Bearer ${await host.login('kid', 'kid-password')}` };
  const kidFound = (await search('matrix', kid)).json();
  t.strictSame(kidFound.movies, [], 'nothing of a library the user may not see');
  t.strictSame([kidFound.shows.length, kidFound.episodes.length], [1, 1], 'the granted one is searched');
  t.equal(kidFound.channels.length, 1, 'channels are everyone\'s');

  expectError(t, await search('   '), 400, /q must not be empty/);
  expectError(t, await host.inject({ method: 'GET', url: '/api/search', headers: host.authHeaders }), 400);
  expectError(t, await search('x'.repeat(201)), 400);
  expectError(t, await host.inject({ method: 'GET', url: '/api/search?q=matrix&limit=0', headers: host.authHeaders }), 400);
  expectError(t, await search('matrix', {}), 401);
  t.equal((await search('%_\\')).statusCode, 200, 'LIKE wildcards are plain text');
});
