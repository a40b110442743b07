/**
 * Metadata and artwork on generated media: NFO files (movie, show, episode),
 * images beside the media (poster, fanart, a season's poster, an episode's
 * thumb, `<name>-poster` in a shared folder), cover art and tags inside the
 * files, a frame where there is nothing, and a metadata-provider plugin over
 * a web server the test runs (its fields only fill gaps; its picture is
 * downloaded; a path outside the library and a file:// URL are refused).
 * Pictures are scaled, cached (a second request makes nothing) and carry
 * ETags; a symlink out of the library is never followed; keys and grants
 * hold. Rescans read again only what changed; genre filters and rating sort.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdir, readFile, readdir, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { definePlugin, vodMetadataExtensionPoint, type MetadataRequest } from '../../../sdk/index.js';
import { expectError } from '../../helpers/http.js';
import { clip, FFMPEG, runFfmpeg, tempDir, vodHost } from './fixtures.js';

/** A solid-colour picture made by ffmpeg. */
const picture = (file: string, colour: string, size: string) =>
  runFfmpeg(['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', `color=c=${colour}:s=${size}`, '-frames:v', '1', file]);

/** Width, height and mean colour (r, g, b) of a picture, read back by ffmpeg. */
async function look(bytes: Buffer, dir: string): Promise<{ width: number; height: number; rgb: number[] }> {
  const file = path.join(dir, `look-${Math.random().toString(36).slice(2)}.img`);
  await writeFile(file, bytes);
  const { stderr } = await promisify(execFile)(FFMPEG, ['-hide_banner', '-i', file, '-f', 'null', '-']).catch((e) => e as { stderr: string });
  const [, width, height] = /, (\d+)x(\d+)/.exec(stderr) ?? [];
  const { stdout } = await promisify(execFile)(FFMPEG, ['-hide_banner', '-loglevel', 'error', '-i', file, '-vf', 'scale=1:1:flags=area', '-f', 'rawvideo', '-pix_fmt', 'rgb24', '-'], { encoding: 'buffer' });
  return { width: Number(width), height: Number(height), rgb: [...(stdout as Buffer).subarray(0, 3)] };
}
const near = (rgb: number[], want: number[]) => rgb.every((v, i) => Math.abs(v - want[i]!) < 40);
const RED = [255, 0, 0], GREEN = [0, 128, 0], BLUE = [0, 0, 255], YELLOW = [255, 255, 0], MAGENTA = [255, 0, 255], CYAN = [0, 255, 255], ORANGE = [255, 165, 0], WHITE = [255, 255, 255];

const MOVIE_NFO = `<?xml version="1.0" encoding="UTF-8" standalone="yes" ?>
<movie>
  <title>Arrival</title>
  <originaltitle>Story of Your Life</originaltitle>
  <year>2016</year>
  <plot>A linguist works with the military to communicate with alien lifeforms.</plot>
  <tagline>Why are they here?</tagline>
  <runtime>116</runtime>
  <mpaa>Rated PG-13</mpaa>
  <genre>Drama</genre>
  <genre>Science Fiction</genre>
  <director>Denis Villeneuve</director>
  <premiered>2016-11-11</premiered>
  <ratings><rating name="imdb" max="10" default="true"><value>7.9</value><votes>700000</votes></rating></ratings>
  <actor><name>Jeremy Renner</name><role>Ian Donnelly</role><order>1</order></actor>
  <actor><name>Amy Adams</name><role>Louise Banks</role><order>0</order></actor>
  <thumb aspect="poster">https://image.example/never-fetched.jpg</thumb>
</movie>
https://www.imdb.com/title/tt2543164/
`;

t.test('metadata and artwork, local first, with a provider plugin', async (t) => {
  const dir = await tempDir(t, 'antenna-vod-meta-');
  const movies = path.join(dir, 'movies');
  const shows = path.join(dir, 'shows');
  const outside = path.join(dir, 'outside');
  const clipMkv = path.join(dir, 'clip.mkv');
  const clipMp4 = path.join(dir, 'clip.mp4');
  await mkdir(outside, { recursive: true });
  await Promise.all([clip(clipMkv, { seconds: 4, width: 320, height: 180 }), clip(clipMp4, { seconds: 4, width: 320, height: 180 }),
    picture(path.join(dir, 'cover.jpg'), 'blue', '200x300'), picture(path.join(outside, 'secret.jpg'), 'red', '40x60')]);
  const copy = async (from: string, to: string, extra: string[] = []) => {
    await mkdir(path.dirname(to), { recursive: true });
    await runFfmpeg(['-hide_banner', '-loglevel', 'error', '-y', '-i', from, ...extra, to]);
  };

  // Arrival: NFO, poster, fanart — and cover art inside the file, which the poster beside it beats.
  const arrival = path.join(movies, 'Story of Your Life (2016)');
  await copy(clipMkv, path.join(arrival, 'Story of Your Life (2016).mkv'), ['-attach', path.join(dir, 'cover.jpg'), '-metadata:s:t', 'mimetype=image/jpeg', '-metadata:s:t', 'filename=cover.jpg', '-c', 'copy']);
  await writeFile(path.join(arrival, 'movie.nfo'), MOVIE_NFO);
  await picture(path.join(arrival, 'poster.jpg'), 'red', '400x600');
  await picture(path.join(arrival, 'fanart.jpg'), 'green', '1280x720');
  // Covered: only cover art and tags inside an MP4.
  await copy(clipMp4, path.join(movies, 'Covered (2020).mp4'), ['-i', path.join(dir, 'cover.jpg'), '-map', '0', '-map', '1', '-c', 'copy', '-disposition:v:1', 'attached_pic',
    '-metadata', 'description=A tale told by its tags.', '-metadata', 'genre=Documentary']);
  // Plain: nothing local; the provider plugin gives a plot and a picture.
  await copy(clipMkv, path.join(movies, 'Plain (2019).mkv'), ['-c', 'copy']);
  // A folder of two movies: its poster.jpg is nobody's; `<name>-poster` is that movie's.
  await copy(clipMkv, path.join(movies, 'Shared', 'One (2001).mkv'), ['-c', 'copy']);
  await copy(clipMkv, path.join(movies, 'Shared', 'Two (2002).mkv'), ['-c', 'copy']);
  await picture(path.join(movies, 'Shared', 'poster.jpg'), 'red', '40x60');
  await picture(path.join(movies, 'Shared', 'One (2001)-poster.jpg'), 'white', '200x300');
  // Evil: its poster is a link out of the library; Swapped's becomes one after the scan; the provider names a file outside and a file:// URL.
  await copy(clipMkv, path.join(movies, 'Evil (2000)', 'Evil (2000).mkv'), ['-c', 'copy']);
  await symlink(path.join(outside, 'secret.jpg'), path.join(movies, 'Evil (2000)', 'poster.jpg'));
  await copy(clipMkv, path.join(movies, 'Swapped (2004)', 'Swapped (2004).mkv'), ['-c', 'copy']);
  await picture(path.join(movies, 'Swapped (2004)', 'poster.jpg'), 'white', '200x300');
  await copy(clipMkv, path.join(movies, 'Sneaky (2003).mkv'), ['-c', 'copy']);
  // A show: tvshow.nfo and poster, a season poster, an episode NFO and thumb, an episode with nothing.
  const show = path.join(shows, 'Pattern Show');
  await copy(clipMp4, path.join(show, 'Season 01', 'Pattern Show S01E01.mp4'), ['-c', 'copy']);
  await copy(clipMp4, path.join(show, 'Season 01', 'Pattern Show S01E02.mp4'), ['-c', 'copy']);
  await writeFile(path.join(show, 'tvshow.nfo'), '<tvshow><title>The Pattern Show</title><plot>Colour bars, weekly.</plot><genre>Comedy / Drama</genre></tvshow>');
  await writeFile(path.join(show, 'Season 01', 'Pattern Show S01E01.nfo'), '<episodedetails><title>Pilot</title><season>1</season><episode>1</episode><plot>It begins.</plot><aired>2020-01-01</aired></episodedetails>');
  await picture(path.join(show, 'poster.jpg'), 'yellow', '200x300');
  await picture(path.join(show, 'season01-poster.jpg'), 'magenta', '200x300');
  await picture(path.join(show, 'Season 01', 'Pattern Show S01E01-thumb.jpg'), 'cyan', '320x180');

  // The provider's web server: one picture.
  await picture(path.join(dir, 'web.jpg'), 'orange', '300x450');
  const webJpg = await readFile(path.join(dir, 'web.jpg'));
  const served: string[] = [];
  const server = http.createServer((req, res) => {
    served.push(req.url ?? '');
    if (req.url === '/plain.jpg') res.writeHead(200, { 'content-type': 'image/jpeg' }).end(webJpg);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }));
  const web = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const asked: MetadataRequest[] = [];
  let failOnce = true;
  const provider = definePlugin({
    id: 'web-metadata', version: '1.0.0', host: '^1.1', dependsOn: ['vod'],
    register(env) {
      env.registerInit({
        deps: { metadata: vodMetadataExtensionPoint },
        init({ metadata }) {
          metadata.addProvider({
            id: 'web-db', name: 'A web database',
            async fetch(request) {
              asked.push(request);
              if (request.title === 'Plain') return { plot: 'From the web.', genres: ['Thriller'], rating: 6.1, poster: { url: `${web}/plain.jpg` } };
              // Fields the NFO gave stay the NFO's; the provider fills what is missing.
              if (request.title === 'Story of Your Life') return { title: 'Web Title', plot: 'Web plot.', studios: ['Lava Bear Films'] };
              if (request.title === 'Sneaky') return { poster: { path: path.join(outside, 'secret.jpg') }, backdrop: { url: `file://${path.join(outside, 'secret.jpg')}` } };
              if (request.title === 'Two' && failOnce) { failOnce = false; throw new Error('the web database is down'); }
              return undefined;
            },
          });
        },
      });
    },
  });

  const host = await vodHost([{ name: 'Movies', type: 'movies', paths: [movies] }, { name: 'Shows', type: 'shows', paths: [shows] }], { definitions: [provider], plugins: { 'web-metadata': {} } });
  t.teardown(() => host.close());
  const get = (url: string, headers: Record<string, string> = host.authHeaders) => host.inject({ method: 'GET', url, headers });
  const libs = (await get('/libraries')).json().libraries as { id: number; name: string }[];
  const moviesLib = libs.find((l) => l.name === 'Movies')!.id;
  const showsLib = libs.find((l) => l.name === 'Shows')!.id;
  const page = (await get(`/library/${moviesLib}?limit=-1`)).json();
  const byTitle = new Map<string, any>(page.items.map((i: any) => [i.title, i]));
  const image = async (url: string, headers: Record<string, string> = {}) => get(url, headers);
  const lookAt = async (url: string) => {
    const res = await image(url);
    t.equal(res.statusCode, 200, `${url.split('?')[0]} answers`);
    return { ...(await look(res.rawPayload, dir)), res };
  };

  t.test('an NFO, a poster and fanart beside the movie', async (t) => {
    t.ok(byTitle.has('Arrival'), `the NFO's title is shown (titles: ${[...byTitle.keys()].join(', ')})`);
    const item = (await get(`/item/${byTitle.get('Arrival').id}`)).json();
    t.match(item, {
      title: 'Arrival', original_title: 'Story of Your Life', year: 2016, plot: /^A linguist/, tagline: 'Why are they here?',
      genres: ['Drama', 'Science Fiction'], directors: ['Denis Villeneuve'], rating: 7.9, content_rating: 'PG-13', premiered: '2016-11-11',
      studios: ['Lava Bear Films'],
    });
    t.strictSame(item.cast, [{ name: 'Amy Adams', role: 'Louise Banks' }, { name: 'Jeremy Renner', role: 'Ian Donnelly' }], 'cast in billing order');
    t.notOk(item.plot.includes('Web'), 'the provider does not override the NFO');
    const poster = await lookAt(item.poster_url);
    t.ok(near(poster.rgb, RED), `the poster beside it, not the cover inside (${poster.rgb})`);
    t.strictSame([poster.width, poster.height], [400, 600], 'as it is, without ?width');
    t.same(poster.res.rawPayload, await readFile(path.join(arrival, 'poster.jpg')), 'the very file');
    const backdrop = await lookAt(item.backdrop_url);
    t.ok(near(backdrop.rgb, GREEN), 'the fanart is the backdrop');
    t.equal(item.poster_url, byTitle.get('Arrival').poster_url.replace(/key=[^&]+/, `key=${new URL(item.poster_url, 'http://x').searchParams.get('key')}`), 'cards and the page name the same picture');
  });

  t.test('cover art and tags inside the file; a frame where there is nothing', async (t) => {
    const covered = (await get(`/item/${byTitle.get('Covered').id}`)).json();
    t.equal(covered.plot, 'A tale told by its tags.');
    t.strictSame(covered.genres, ['Documentary']);
    const cover = await lookAt(`${covered.poster_url}&width=100`);
    t.ok(near(cover.rgb, BLUE), `the MP4's cover art (${cover.rgb})`);
    t.strictSame([cover.width, cover.height], [100, 150], 'scaled to the width asked, aspect kept');
    t.equal(cover.res.headers['content-type'], 'image/jpeg');

    const two = (await get(`/item/${byTitle.get('Two').id}`)).json();
    const frame = await lookAt(`${two.poster_url}&width=160`);
    t.strictSame([frame.width, frame.height], [160, 90], "a frame of the video (16:9), not the shared folder's poster.jpg");
    const one = await lookAt(byTitle.get('One').poster_url);
    t.ok(near(one.rgb, WHITE), '`One (2001)-poster.jpg` is One\'s, in a shared folder');
  });

  t.test('a provider plugin fills the gaps, and its picture is downloaded once', async (t) => {
    const plain = (await get(`/item/${byTitle.get('Plain').id}`)).json();
    t.match(plain, { plot: 'From the web.', genres: ['Thriller'], rating: 6.1 });
    const first = await lookAt(`${plain.poster_url}&width=300`);
    t.ok(near(first.rgb, ORANGE), `the provider's picture (${first.rgb})`);
    await lookAt(`${plain.poster_url}&width=120`);
    t.equal(served.filter((u) => u === '/plain.jpg').length, 1, 'downloaded once for every size');
    t.ok(asked.some((r) => r.title === 'Pattern Show' && r.type === 'series' && r.folder === show), 'providers learn the show\'s folder');
    const episode = asked.find((r) => r.type === 'episode' && r.episodeNumber === 1);
    t.equal(episode?.found.title, 'Pilot', 'a provider sees what the providers before it found');
  });

  t.test('pictures only from the library\'s folders', async (t) => {
    const evil = await lookAt(byTitle.get('Evil').poster_url);
    t.strictSame([evil.width, evil.height], [320, 180], 'a poster.jpg linking out of the library is not taken: a frame instead');
    const swapped = byTitle.get('Swapped').poster_url;
    const file = path.join(movies, 'Swapped (2004)', 'poster.jpg');
    await rm(file);
    await symlink(path.join(outside, 'secret.jpg'), file);
    for (const url of [swapped, `${swapped}&width=100`]) {
      const res = await image(url);
      expectError(t, res, 404, /no longer in the library/, 'a poster replaced by a link out of the library since the scan');
      t.notOk(res.rawPayload.length > 200, 'and none of its bytes');
    }
    const sneaky = (await get(`/item/${byTitle.get('Sneaky').id}`)).json();
    t.equal(sneaky.backdrop_url, null, 'a file:// URL from a provider is dropped');
    const frame = await lookAt(sneaky.poster_url);
    t.strictSame([frame.width, frame.height], [320, 180], "a provider's path outside the library is dropped: the frame instead");
    for (const bad of ['/api/items/..%2F..%2Fetc/images/poster', `/api/items/${sneaky.id}/images/..%2F..%2Fetc%2Fpasswd`, `/api/items/${sneaky.id}/images/poster?width=0`]) {
      t.ok([400, 404].includes((await get(bad)).statusCode), `${bad} is refused`);
    }
  });

  t.test('cached, with ETags; keys and grants hold', async (t) => {
    const covered = byTitle.get('Covered');
    const url = `${covered.poster_url}&width=300`;
    const a = await image(url);
    const etag = a.headers.etag as string;
    t.match(etag, /^"[0-9a-f]+-300"$/);
    t.match(a.headers['cache-control'], /immutable/, 'a URL with the current tag is cached for good');
    const tag = new URL(url, 'http://x').searchParams.get('tag')!;
    const files = await readdir(path.join(host.dataDir, 'plugins', 'vod', 'images', tag));
    t.ok(files.includes('w300.jpg'), `kept in the cache (${files.join(', ')})`);
    t.equal((await image(url.replace('width=300', 'width=290'))).headers.etag, etag, '290 is served at 300');
    t.equal((await image(url, { 'if-none-match': etag })).statusCode, 304, 'If-None-Match → 304');
    t.match((await image(url.replace(/tag=[^&]+/, 'tag=old'))).headers['cache-control'], /no-cache/, 'an old tag is revalidated');

    expectError(t, await image(url.replace(/key=[^&]+/, 'key=forged.key')), 401);
    const otherKey = new URL(byTitle.get('Plain').poster_url, 'http://x').searchParams.get('key');
    expectError(t, await image(url.replace(/key=[^&]+/, `key=${otherKey}`)), 401, undefined, "another item's key");
    await host.createUser('kid', 'kid-password', { libraries: [String(showsLib)] });
    const kid = { authorization: `Bearer ${await host.login('kid', 'kid-password')}` };
    expectError(t, await get(covered.poster_url.split('?')[0], kid), 404, undefined, 'an ungranted library\'s picture');
  });

  t.test('shows: tvshow.nfo, posters of the show and its season, an episode\'s NFO and thumb', async (t) => {
    const series = (await get(`/library/${showsLib}`)).json().items[0];
    t.equal(series.title, 'The Pattern Show');
    const detail = (await get(`/item/${series.id}`)).json();
    t.match(detail, { plot: 'Colour bars, weekly.', genres: ['Comedy', 'Drama'] });
    t.ok(near((await lookAt(`${series.poster_url}&width=100`)).rgb, YELLOW), 'the show\'s poster');
    const season = detail.children[0];
    t.ok(near((await lookAt(`${season.poster_url}&width=100`)).rgb, MAGENTA), 'season01-poster.jpg');
    const episodes = (await get(`/item/${season.id}`)).json().children;
    t.strictSame(episodes.map((e: any) => e.title), ['Pilot', 'Episode 2']);
    const pilot = (await get(`/item/${episodes[0].id}`)).json();
    t.match(pilot, { plot: 'It begins.', premiered: '2020-01-01', series_id: series.id, series_title: 'The Pattern Show', next_episode_id: episodes[1].id });
    t.ok(near((await lookAt(`${pilot.poster_url}&width=100`)).rgb, CYAN), "the episode's thumb");
    t.equal((await get(`/item/${episodes[1].id}`)).json().next_episode_id, null, 'the last episode has none after it');
  });

  t.test('filters and sorts by what the metadata says', async (t) => {
    const drama = (await get(`/library/${moviesLib}?genre=Drama`)).json();
    t.strictSame(drama.items.map((i: any) => i.title), ['Arrival']);
    t.equal(drama.total, 1);
    t.equal(drama.item_count, page.total, 'item_count is the whole library');
    t.ok(['Documentary', 'Drama', 'Science Fiction', 'Thriller'].every((g) => drama.genres.includes(g)), `the library's genres (${drama.genres})`);
    const rated = (await get(`/library/${moviesLib}?sort=rating`)).json().items.map((i: any) => i.title);
    t.strictSame(rated.slice(0, 2), ['Arrival', 'Plain'], 'best rated first, unrated after');
    const letters = (await get(`/library/${moviesLib}`)).json().letters;
    t.strictSame(letters.map((l: any) => l.letter), ['a', 'c', 'e', 'o', 'p', 's', 't'], 'where each letter starts');
    t.strictSame(letters.filter((l: any) => l.letter === 's').map((l: any) => l.offset), [5], 'Sneaky and Swapped under s');
    t.equal(letters.find((l: any) => l.letter === 'c').offset, 1);
    expectError(t, await get(`/library/${moviesLib}?sort=plot`), 400);
  });

  t.test('a rescan reads again only what changed, and what a provider failed on', async (t) => {
    asked.length = 0;
    const scan = () => host.inject({ method: 'POST', url: `/api/admin/libraries/${moviesLib}/scan`, headers: host.authHeaders });
    const scanned = async () => {
      const before = Date.now();
      t.equal((await scan()).statusCode, 202);
      for (let i = 0; i < 200; i++) {
        const lib = (await get('/api/admin/libraries')).json().libraries.find((l: any) => l.id === moviesLib);
        if (lib.last_scan && Date.parse(lib.last_scan.at) >= before) return lib.last_scan;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error('no scan');
    };
    await scanned();
    t.strictSame(asked.map((r) => r.title).sort(), ['Swapped', 'Two'], 'asked again: what changed (Swapped\'s poster, now a link) and what the provider failed on');
    t.strictSame([(await look((await image(byTitle.get('Swapped').poster_url.replace(/tag=[^&]+/, ''))).rawPayload, dir)).width], [320], 'Swapped has a frame now');
    asked.length = 0;
    const nfo = path.join(arrival, 'movie.nfo');
    await writeFile(nfo, MOVIE_NFO.replace('A linguist', 'A changed linguist'));
    await utimes(nfo, new Date(), new Date(Date.now() + 5000));
    await scanned();
    t.strictSame(asked.map((r) => r.title), ['Story of Your Life'], 'a changed NFO: its movie is read again');
    t.match((await get(`/item/${byTitle.get('Arrival').id}`)).json().plot, /^A changed linguist/);
  });
});
