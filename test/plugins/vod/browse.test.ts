/**
 * Browsing a movies and a shows library built from generated clips:
 * /libraries, /library/{id} paging and sorting, /item/{id} with versions and
 * children, and access control (a restricted user sees only granted libraries;
 * everything else is 404, ids never leak).
 */
import t from 'tap';
import { copyFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { expectError } from '../../helpers/http.js';
import { clip, tempDir, vodHost } from './fixtures.js';

t.test('browsing libraries, items, versions and episodes', async (t) => {
  const dir = await tempDir(t);
  const movies = path.join(dir, 'movies');
  const shows = path.join(dir, 'shows');
  const base = path.join(dir, 'base.mp4');
  await clip(base, { seconds: 2, width: 320, height: 180 });
  const big = path.join(dir, 'big.mkv');
  await clip(big, { seconds: 2, width: 640, height: 360, audio: 'ac3', channels: 6 });
  const place = async (rel: string, from = base) => {
    await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
    await copyFile(from, path.join(dir, rel));
  };
  await place('movies/Alpha (2001)/Alpha (2001).mp4');
  await place('movies/Charlie (1999)/Charlie (1999) - 720p.mp4');
  await place('movies/Charlie (1999)/Charlie (1999) - 360p.mkv', big);
  await place('movies/Bravo (2010).mp4');
  await place('shows/Show One/Season 01/Show One - S01E02.mp4');
  await place('shows/Show One/Season 01/Show One - S01E01.mp4');
  await place('shows/Show One/Season 02/Show One - S02E01.mp4');

  const host = await vodHost([
    { name: 'Movies', type: 'movies', paths: [movies] },
    { name: 'Shows', type: 'shows', paths: [shows] },
  ]);
  t.teardown(() => host.close());
  const get = (url: string, headers: Record<string, string> = host.authHeaders) => host.inject({ method: 'GET', url, headers });

  const libs = (await get('/libraries')).json().libraries;
  t.strictSame(libs.map((l: any) => [l.name, l.type, l.item_count]), [['Movies', 'movies', 3], ['Shows', 'shows', 1]], 'both libraries with their top-level counts');
  const [movieLib, showLib] = libs;

  const page = (await get(`/library/${movieLib.id}`)).json();
  t.equal(page.total, 3);
  t.strictSame(page.items.map((i: any) => [i.title, i.year, i.type]), [['Alpha', 2001, 'movie'], ['Bravo', 2010, 'movie'], ['Charlie', 1999, 'movie']], 'sorted by title');
  t.ok(page.items.every((i: any) => typeof i.id === 'string' && i.duration > 1.5 && i.duration < 2.6), 'ids and durations');

  const byYear = (await get(`/library/${movieLib.id}?sort=year&order=desc&limit=2`)).json();
  t.strictSame(byYear.items.map((i: any) => i.year), [2010, 2001], 'sorted by year, descending, limited');
  const second = (await get(`/library/${movieLib.id}?sort=year&limit=2&offset=2`)).json();
  t.strictSame(second.items.map((i: any) => i.year), [2010], 'offset pages on');
  t.equal(second.total, 3);

  const charlie = page.items.find((i: any) => i.title === 'Charlie');
  const detail = (await get(`/item/${charlie.id}`)).json();
  t.equal(detail.versions.length, 2, 'two versions of one title');
  t.equal(detail.versions[0].video.height, 360, 'the best picture is version 0');
  t.strictSame(detail.versions.map((v: any) => v.version), [0, 1]);
  t.equal(detail.versions[0].audio[0].codec, 'ac3');
  t.equal(detail.versions[0].audio[0].channels, 6);
  t.strictSame(detail.children, []);

  const series = (await get(`/library/${showLib.id}`)).json().items;
  t.strictSame(series.map((s: any) => [s.title, s.type, s.child_count]), [['Show One', 'series', 2]]);
  const seasons = (await get(`/item/${series[0].id}`)).json().children;
  t.strictSame(seasons.map((s: any) => [s.type, s.season_number, s.child_count]), [['season', 1, 2], ['season', 2, 1]]);
  const episodes = (await get(`/item/${seasons[0].id}`)).json().children;
  t.strictSame(episodes.map((e: any) => [e.type, e.season_number, e.episode_number]), [['episode', 1, 1], ['episode', 1, 2]], 'episodes in number order');
  const episode = (await get(`/item/${episodes[1].id}`)).json();
  t.equal(episode.parent_id, seasons[0].id);
  t.equal(episode.versions.length, 1);

  // Bad input
  expectError(t, await get('/item/nope'), 404);
  expectError(t, await get('/item/..%2F..%2Fetc%2Fpasswd'), 404);
  expectError(t, await get('/library/999'), 404);
  expectError(t, await get('/library/abc'), 400);
  expectError(t, await get(`/library/${movieLib.id}?limit=-5`), 400);
  expectError(t, await get(`/library/${movieLib.id}?sort=size`), 400);
  expectError(t, await get(`/library/${movieLib.id}?offset=1e99`), 400);
  expectError(t, await get('/libraries', {}), 401);
  expectError(t, await get(`/item/${charlie.id}`, {}), 401);

  // A user granted only the shows library
  await host.createUser('kid', 'kid-password', { libraries: [String(showLib.id)] });
  const kid = { authorization: `Bearer ${await host.login('kid', 'kid-password')}` };
  t.strictSame((await get('/libraries', kid)).json().libraries.map((l: any) => l.name), ['Shows'], 'only the granted library is listed');
  expectError(t, await get(`/library/${movieLib.id}`, kid), 404);
  expectError(t, await get(`/item/${charlie.id}`, kid), 404);
  t.equal((await get(`/item/${episodes[0].id}`, kid)).statusCode, 200, 'granted items answer');
  const unknown = await get('/item/aaaaaaaaaaaaaaaa', kid);
  t.equal((await get(`/item/${charlie.id}`, kid)).json().error, unknown.json().error.replace('aaaaaaaaaaaaaaaa', charlie.id), 'a forbidden id looks exactly like an unknown one');
});
