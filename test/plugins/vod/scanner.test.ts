/**
 * The library scanner on generated media: how names become items (movie
 * folders, loose and dotted files, versions, episodes in season folders and
 * loose), a corrupt file, incremental rescans (no ffprobe for unchanged
 * files), removals, an unmounted library folder, ids that survive a rescan and
 * a restart, shared concurrent scans, and `antenna library scan`.
 *
 * One clip is generated per container and copied under every name.
 */
import 'reflect-metadata'; // the scanner (through antenna/sdk) loads tsyringe before sdk/testing would
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFile, mkdir, rename, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pino from 'pino';
import type { FfmpegService } from '../../../sdk/services.js';
import { LibraryScanner, type ScanSummary } from '../../../plugins/vod/scanner.js';
import { VodStore } from '../../../plugins/vod/store.js';
import type { Item } from '../../../plugins/vod/model.js';
import type { TestHost } from '../../../sdk/testing.js';
import { CLI } from '../../helpers/repo.js';
import { cleanEnv } from '../../helpers/env.js';
import { clip, tempDir, vodHost, type VodLibrary } from './fixtures.js';

const ID = /^[A-Za-z0-9_-]{16}$/;

/** The scanner the plugin builds, over the host's database, jobs and ffmpeg, with every ffprobe recorded. */
function spyScanner(host: TestHost, now = () => Date.now()): { scanner: LibraryScanner; store: VodStore; probes: string[] } {
  const ff = host.host.ffmpeg;
  const probes: string[] = [];
  const spy: FfmpegService = {
    ffmpegPath: ff.ffmpegPath, ffprobePath: ff.ffprobePath,
    version: () => ff.version(), spawn: (a, o) => ff.spawn(a, o), run: (a, o) => ff.run(a, o),
    probe: (input, o) => { probes.push(input); return ff.probe(input, o); },
  };
  const store = new VodStore(host.host.knex);
  const scanner = new LibraryScanner(host.host.knex, store, spy, host.host.jobs, pino({ level: 'silent' }), now, { concurrency: 2 });
  return { scanner, store, probes };
}

async function topLevel(store: VodStore, libraryId: number): Promise<Item[]> {
  return (await store.items({ libraryId, limit: -1, offset: 0 })).items;
}

const titles = (items: Item[]) => items.map((i) => i.title);

t.test('scanning movie and show libraries', async (t) => {
  const dir = await tempDir(t, 'antenna-vod-scan-');
  const mkvClip = path.join(dir, 'clip.mkv');
  const mp4Clip = path.join(dir, 'clip.mp4');
  await clip(mkvClip, { seconds: 1, width: 320, height: 180 });
  await clip(mp4Clip, { seconds: 1, width: 320, height: 180 });
  const movies = path.join(dir, 'movies');
  const shows = path.join(dir, 'shows');
  const put = async (file: string, from = mkvClip) => { await mkdir(path.dirname(file), { recursive: true }); await copyFile(from, file); };

  await put(path.join(movies, 'The Matrix (1999)', 'The Matrix (1999).mkv'));
  await put(path.join(movies, 'The Matrix (1999)', 'The Matrix (1999) - 720p.mkv'));
  await put(path.join(movies, 'The Matrix (1999)', 'Extras', 'Behind the code.mkv')); // extras are not versions
  await put(path.join(movies, 'Alien (1979).mp4'), mp4Clip);
  await put(path.join(movies, 'Blade.Runner.1982.1080p.BluRay.x264-GRP.mkv'));
  await put(path.join(movies, 'Nope.mkv'));
  await put(path.join(movies, '.hidden', 'Hidden (2000).mkv'));
  await put(path.join(movies, '.Secret (2003).mkv'));
  await writeFile(path.join(movies, 'Broken (2001).mkv'), randomBytes(64 * 1024));
  await writeFile(path.join(movies, 'notes.txt'), 'not media');
  await writeFile(path.join(movies, 'The Matrix (1999)', 'The Matrix (1999).srt'), '1\n00:00:00,000 --> 00:00:01,000\nhi\n');
  await symlink(movies, path.join(movies, 'loop')); // a link back to the root: must not loop nor duplicate
  await put(path.join(shows, 'Show', 'Season 01', 'Show - S01E01.mkv'));
  await put(path.join(shows, 'Show', 'Season 01', 'Show - S01E02 - The Second.mkv'));
  await put(path.join(shows, 'Show', 'Specials', 'Show - S00E01.mkv'));
  await put(path.join(shows, 'Loose.Show.S02E03.720p.HDTV.x264.mkv'));
  await put(path.join(shows, 'Show', 'Season 01', 'Behind the scenes.mkv')); // no episode in the name: skipped

  const libraries: VodLibrary[] = [{ name: 'Movies', type: 'movies', paths: [movies] }, { name: 'Shows', type: 'shows', paths: [shows] }];
  let host = await vodHost(libraries);
  const firstDataDir = host.dataDir;
  t.teardown(async () => {
    await host.close();
    await rm(firstDataDir, { recursive: true, force: true }); // the restarted host does not own it
  });
  let { scanner, store, probes } = spyScanner(host);
  const [moviesLib, showsLib] = await store.loadLibraries();
  t.same([moviesLib.name, showsLib.name], ['Movies', 'Shows']);

  let before: { id: string; title: string; addedAt: number }[] = [];
  const snapshot = async () => (await host.host.knex('vod_items').orderBy('id')).map((r) => ({ id: r.id as string, title: r.title as string, addedAt: Number(r.added_at) }));
  const fileIds = async () => (await host.host.knex('vod_files').orderBy('path')).map((r) => `${r.path}=${r.id}>${r.item_id}`);

  t.test('the first scan (at start) names every title', async (t) => {
    const top = await topLevel(store, moviesLib.id);
    t.same(titles(top), ['Alien', 'Blade Runner', 'The Matrix', 'Nope'], 'sorted by title, article ignored; Broken has no readable file');
    t.same(top.map((i) => [i.type, i.year]), [['movie', 1979], ['movie', 1982], ['movie', 1999], ['movie', null]]);
    for (const item of top) t.match(item.id, ID);

    const matrix = top.find((i) => i.title === 'The Matrix')!;
    const versions = await store.versions(matrix.id);
    t.same(versions.map((v) => path.basename(v.path)), ['The Matrix (1999).mkv', 'The Matrix (1999) - 720p.mkv']);
    t.same(versions.map((v) => v.label), [null, '720p']);
    t.match(versions[0].info, { container: 'mkv', video: { codec: 'h264', width: 320, height: 180 }, audio: [{ codec: 'aac' }] });
    t.ok(versions[0].info!.duration > 0.5 && versions[0].info!.duration < 2, `duration ${versions[0].info!.duration}`);
    const alien = await store.versions(top[0].id);
    t.equal(alien[0].info!.container, 'mp4');

    const files = await store.filesOfLibrary(moviesLib.id);
    t.same([...files.keys()].map((p) => path.relative(movies, p)).sort(), [
      'Alien (1979).mp4', 'Blade.Runner.1982.1080p.BluRay.x264-GRP.mkv', 'Broken (2001).mkv', 'Nope.mkv',
      'The Matrix (1999)/The Matrix (1999) - 720p.mkv', 'The Matrix (1999)/The Matrix (1999).mkv',
    ], 'hidden, extras, non-media and the symlink loop are skipped');
    const broken = files.get(path.join(movies, 'Broken (2001).mkv'))!;
    t.equal(broken.info, null);
    t.match(broken.error, /invalid data|EBML|could not|no audio or video/i, 'the corrupt file is recorded unreadable');

    const series = await topLevel(store, showsLib.id);
    t.same(titles(series), ['Loose Show', 'Show']);
    const show = series[1];
    const seasons = await store.children(show.id);
    t.same(seasons.map((s) => [s.type, s.title, s.seasonNumber, s.parentId]), [['season', 'Specials', 0, show.id], ['season', 'Season 1', 1, show.id]]);
    const episodes = await store.children(seasons[1].id);
    t.same(episodes.map((e) => [e.type, e.title, e.seasonNumber, e.episodeNumber]), [['episode', 'Episode 1', 1, 1], ['episode', 'The Second', 1, 2]]);
    const loose = await store.children(series[0].id);
    t.same(loose.map((s) => s.seasonNumber), [2]);
    t.same((await store.children(loose[0].id)).map((e) => [e.episodeNumber, e.title]), [[3, 'Episode 3']]);
    t.equal((await store.versions((await store.children(loose[0].id))[0].id))[0].label, '720p');
    before = await snapshot();
  });

  t.test('an unchanged rescan runs no ffprobe and keeps every id', async (t) => {
    const idsBefore = await fileIds();
    const [m, s] = await scanner.scanAll();
    t.match(m, { library: 'Movies', files: 6, added: 0, changed: 0, removed: 0, unreadable: 1, items: 4, probed: 0 });
    t.match(s, { library: 'Shows', files: 4, added: 0, changed: 0, removed: 0, unreadable: 0, items: 9, probed: 0 });
    t.same(probes, [], 'no ffprobe ran (not even for the corrupt file)');
    t.same(await snapshot(), before, 'same items, ids and added_at');
    t.same(await fileIds(), idsBefore);
  });

  t.test('concurrent callers share one scan job', async (t) => {
    const progress: number[] = [];
    const [a, b] = await Promise.all([scanner.scan(moviesLib, (f) => progress.push(f)), scanner.scan(moviesLib)]);
    t.equal(a, b, 'both callers got the one summary');
    t.equal(progress[progress.length - 1], 1);
    t.ok(host.host.jobs.list().some((j) => j.key === `vod:scan:${moviesLib.id}` && j.kind === 'vod.scan' && j.state === 'completed'));
  });

  t.test('changed files are probed again; new ones are added', async (t) => {
    await copyFile(mp4Clip, path.join(movies, 'Nope.mkv')); // now an mp4 inside: another size
    await put(path.join(movies, 'Broken (2001).mkv')); // repaired: the corrupt file is probed again only because it changed
    await put(path.join(movies, 'Heat (1995)', 'Heat (1995).mkv'));
    const later = new Date(Date.now() + 60_000);
    await utimes(path.join(movies, 'Blade.Runner.1982.1080p.BluRay.x264-GRP.mkv'), later, later); // same size, new mtime
    probes.length = 0;
    const m = await scanner.scan(moviesLib);
    t.match(m, { files: 7, added: 1, changed: 3, removed: 0, unreadable: 0, items: 6, probed: 4 });
    t.same(probes.map((p) => path.relative(movies, p)).sort(), [
      'Blade.Runner.1982.1080p.BluRay.x264-GRP.mkv', 'Broken (2001).mkv', 'Heat (1995)/Heat (1995).mkv', 'Nope.mkv',
    ]);
    const top = await topLevel(store, moviesLib.id);
    t.same(titles(top), ['Alien', 'Blade Runner', 'Broken', 'Heat', 'The Matrix', 'Nope']);
    const nope = top.find((i) => i.title === 'Nope')!;
    t.equal(nope.id, before.find((i) => i.title === 'Nope')!.id, 'a changed file keeps its item');
    t.equal((await store.versions(nope.id))[0].info!.container, 'mp4', 'the new probe result is stored');
    probes.length = 0;
    t.match(await scanner.scan(moviesLib), { added: 0, changed: 0, probed: 0 });
    t.same(probes, []);
  });

  t.test('removed files disappear, and items left without files with them', async (t) => {
    await rm(path.join(movies, 'Alien (1979).mp4'));
    await rm(path.join(movies, 'The Matrix (1999)', 'The Matrix (1999) - 720p.mkv'));
    await rm(path.join(shows, 'Loose.Show.S02E03.720p.HDTV.x264.mkv'));
    await rm(path.join(shows, 'Show', 'Specials'), { recursive: true });
    const [m, s] = await scanner.scanAll();
    t.match(m, { files: 5, removed: 2, items: 5, probed: 0 });
    t.match(s, { files: 2, removed: 2, items: 4, probed: 0 });
    t.same(titles(await topLevel(store, moviesLib.id)), ['Blade Runner', 'Broken', 'Heat', 'The Matrix', 'Nope']);
    const matrix = before.find((i) => i.title === 'The Matrix')!;
    t.same((await store.versions(matrix.id)).map((v) => v.label), [null], 'one version left');
    const series = await topLevel(store, showsLib.id);
    t.same(titles(series), ['Show'], 'a series whose episodes are gone is gone, with its season');
    t.same((await store.children(series[0].id)).map((x) => x.title), ['Season 1'], 'Specials left with its only episode');
    t.equal(await store.item(before.find((i) => i.title === 'Loose Show')!.id), undefined);
  });

  t.test('a missing library folder leaves its rows untouched', async (t) => {
    const away = `${shows}-unmounted`;
    await rename(shows, away);
    const itemsBefore = await snapshot();
    const s = await scanner.scan(showsLib);
    t.match(s, { removed: 0, files: 2, items: 4 });
    t.same(await snapshot(), itemsBefore, 'nothing deleted');
    await rename(away, shows);
  });

  t.test('ids and added_at survive a restart', async (t) => {
    const items = await snapshot();
    const files = await fileIds();
    const dataDir = host.dataDir;
    await host.host.close(); // keep the data dir: the same server comes back on it
    host = await vodHost(libraries, { dataDir });
    ({ scanner, store, probes } = spyScanner(host));
    await store.loadLibraries();
    t.same(await snapshot(), items, 'same items, ids and added_at after the start-up scan');
    t.same(await fileIds(), files);
    t.match(await scanner.scanAll(), [{ probed: 0, added: 0, removed: 0 }, { probed: 0, added: 0, removed: 0 }]);
  });

  t.test('`antenna library scan` prints the summary', async (t) => {
    const dataDir = path.join(await tempDir(t, 'antenna-vod-cli-'), 'data');
    const config = path.join(path.dirname(dataDir), 'antenna.yaml');
    await writeFile(config, JSON.stringify({ server: { dataDir }, plugins: { vod: { libraries, initialScan: 'skip' } } }));
    const cli = (...args: string[]) => spawnSync(process.execPath, [CLI, ...args, '--config', config], { env: cleanEnv(), encoding: 'utf8', timeout: 120_000 });
    let r = cli('library', 'scan');
    t.equal(r.status, 0, r.stderr);
    t.match(r.stdout, /^library 1 Movies: 5 files, 5 new, 0 changed, 0 removed, 0 unreadable, 5 items$/m);
    t.match(r.stdout, /^library 2 Shows: 2 files, 2 new, 0 changed, 0 removed, 0 unreadable, 4 items$/m);
    t.match(r.stderr, /Movies: 100%/, 'progress on stderr');
    r = cli('library', 'scan', '2');
    t.equal(r.status, 0, r.stderr);
    t.equal(r.stdout, 'library 2 Shows: 2 files, 0 new, 0 changed, 0 removed, 0 unreadable, 4 items\n');
    r = cli('library', 'scan', '9');
    t.equal(r.status, 1);
    t.match(r.stderr, /no library 9 \(libraries: 1 Movies, 2 Shows\)/);
  });
});

t.test('a scan stopped at shutdown leaves what it saved and finishes later', async (t) => {
  const dir = await tempDir(t, 'antenna-vod-stop-');
  const src = path.join(dir, 'clip.mkv');
  await clip(src, { seconds: 1, width: 320, height: 180 });
  const movies = path.join(dir, 'movies');
  await mkdir(movies);
  for (let i = 1; i <= 6; i++) await copyFile(src, path.join(movies, `Film ${i} (200${i}).mkv`));
  const host = await vodHost([{ name: 'Movies', type: 'movies', paths: [movies] }], { vod: { initialScan: 'skip' } });
  t.teardown(() => host.close());
  const { scanner, store, probes } = spyScanner(host);
  const [lib] = await store.loadLibraries();
  let stopped: Promise<void> | undefined;
  const scanning = scanner.scan(lib, (_f, message) => {
    if (!stopped && message === 'probing 1/6') stopped = scanner.stop();
  });
  await t.rejects(scanning, /stopped/);
  await stopped;
  t.ok(probes.length < 6, `probes before the stop: ${probes.length}`);
  const saved = (await host.host.knex('vod_files').count({ n: '*' }))[0].n as number;
  t.ok(saved >= 1 && saved < 6, `files saved by the stopped scan: ${saved}`);
  await t.rejects(scanner.scan(lib), /scanner stopped/, 'a stopped scanner starts nothing');
  // The next server's scanner finishes the job without probing again what was saved.
  const next = spyScanner(host);
  const s: ScanSummary = await next.scanner.scan(lib);
  t.match(s, { files: 6, items: 6, added: 6 - saved, probed: 6 - saved });
  t.same(titles(await topLevel(store, lib.id)), [1, 2, 3, 4, 5, 6].map((i) => `Film ${i}`));
});
