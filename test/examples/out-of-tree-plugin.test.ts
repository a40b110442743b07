/**
 * Plugins built outside this repository, with nothing from it but the packed
 * tarball: Antenna installed from `npm pack`'s tarball into a fresh project;
 * examples/tuner-test-pattern and examples/subtitle-folder copied there as
 * they are, as the project's npm workspaces (so their `antenna` peer
 * dependency is the installed server's, one copy of the SDK); compiled by
 * their own build script, tsc against the installed types; and the installed
 * `antenna` binary serving them, listed in its config by package name.
 */
import t from 'tap';
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, cp, mkdir, readFile, realpath, writeFile } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { cleanEnv, unusedPort } from '../helpers/env.js';
import { REPO_ROOT } from '../helpers/repo.js';
import { waitFor } from '../helpers/wait.js';
import { clip, tempDir } from '../plugins/vod/fixtures.js';

t.setTimeout(300_000);

const EXAMPLES = ['tuner-test-pattern', 'subtitle-folder'];

/**
 * npm as a user's shell runs it: none of the npm_* variables `npm test` sets
 * (npm_config_local_prefix would send the install into this repository), but
 * the same cache and registry.
 */
const NPM_ENV = Object.fromEntries(Object.entries(cleanEnv())
  .filter(([k]) => !/^npm_/i.test(k) || /^npm_config_(cache|registry|userconfig)$/i.test(k)));

async function npm(cwd: string, ...args: string[]): Promise<string> {
  const { stdout } = await promisify(execFile)('npm', args, { cwd, env: NPM_ENV, maxBuffer: 64 * 2 ** 20 })
    .catch((err) => { throw new Error(`npm ${args.join(' ')} (in ${cwd}) failed: ${err.stderr || err.message}`); });
  return stdout;
}

const version = async (dir: string): Promise<string> => JSON.parse(await readFile(path.join(dir, 'package.json'), 'utf8')).version;

/**
 * sqlite3's install script builds its addon from source when no prebuilt
 * binary can be downloaded (here, with no internet but the registry: 2.5 min
 * on 2 cores). The project denies that one script in its package.json
 * (`allowScripts`, npm 11) and gets the addon this repository already built
 * for the same sqlite3 version (N-API, so any Node); another version is built.
 * Every other install script runs (ffprobe's makes its binary executable).
 */
const SITE_PACKAGE = { name: 'my-antenna', private: true, workspaces: ['plugins/*'], allowScripts: { sqlite3: false } };

async function provideSqliteAddon(site: string): Promise<void> {
  const ours = path.dirname(require.resolve('sqlite3/package.json', { paths: [REPO_ROOT] }));
  const theirs = path.join(site, 'node_modules/sqlite3');
  const addon = 'build/Release/node_sqlite3.node';
  if (existsSync(path.join(theirs, addon))) return; // an npm without allowScripts built it
  if (await version(ours) === await version(theirs) && existsSync(path.join(ours, addon))) {
    await mkdir(path.dirname(path.join(theirs, addon)), { recursive: true });
    await copyFile(path.join(ours, addon), path.join(theirs, addon));
  } else {
    await npm(site, 'rebuild', 'sqlite3', '--dangerously-allow-all-scripts'); // past the denial above
  }
}

/** Every module a compiled file requires. */
const requires = (js: string): string[] => [...js.matchAll(/\brequire\((["'])([^"']+)\1\)/g)].map((m) => m[2]!);

t.test('a plugin package built outside the repository against the packed SDK', async (t) => {
  const dir = await realpath(await tempDir(t, 'antenna-out-of-tree-'));
  const site = path.join(dir, 'site');

  // No rebuild: `npm test` has built dist/, and packing must not rewrite it under the other tests.
  const [packed] = JSON.parse(await npm(REPO_ROOT, 'pack', '--ignore-scripts', '--pack-destination', dir, '--json'));
  const tarball = path.join(dir, packed.filename);

  await mkdir(site);
  await writeFile(path.join(site, 'package.json'), JSON.stringify(SITE_PACKAGE));
  for (const name of EXAMPLES) {
    await cp(path.join(REPO_ROOT, 'examples', name), path.join(site, 'plugins', name), {
      recursive: true, filter: (src) => !/[/\\](dist|node_modules)$/.test(src),
    });
  }
  await npm(site, 'install', tarball, '--prefer-offline', '--no-audit', '--no-fund');
  await provideSqliteAddon(site);

  const built = await npm(site, 'run', 'build', '--workspaces', '--', '--listFiles');
  t.ok(built.includes(path.join(site, 'node_modules/antenna/dist/sdk/index.d.ts')), 'tsc compiled them against the installed antenna/sdk types');
  for (const name of EXAMPLES) {
    const pkg = JSON.parse(await readFile(path.join(site, 'plugins', name, 'package.json'), 'utf8'));
    const main = await readFile(path.join(site, 'plugins', name, pkg.main), 'utf8');
    const external = requires(main).filter((m) => !m.startsWith('node:') && !builtinModules.includes(m));
    t.same([...new Set(external)], ['antenna/sdk'], `${name} imports nothing but antenna/sdk and Node's own modules`);
    t.notOk(existsSync(path.join(site, 'plugins', name, 'node_modules/antenna')), `${name}'s antenna is the server's`);
  }

  const movies = path.join(site, 'media', 'movies');
  await clip(path.join(movies, 'Plain (2022).mp4'), { seconds: 2, width: 320, height: 180, audio: 'none' });
  await mkdir(path.join(site, 'subtitles'));
  await writeFile(path.join(site, 'subtitles', 'Plain (2022).en.srt'), '1\n00:00:00,500 --> 00:00:01,500\nHello from the folder\n');
  const port = await unusedPort();
  const config = path.join(site, 'antenna.yaml');
  await writeFile(config, [
    'server: { host: 127.0.0.1, port: ' + port + ', dataDir: ./data }',
    'logging: { level: warn }',
    'plugins:',
    '  vod: { libraries: [{ name: Movies, type: movies, paths: [./media/movies] }] }',
    '  antenna-tuner-test-pattern: { channels: 2 }',
    '  antenna-subtitle-folder: { path: ./subtitles }',
    '',
  ].join('\n'));

  const server = spawn(path.join(site, 'node_modules/.bin/antenna'), ['serve', '--config', config], {
    cwd: site, env: cleanEnv({ ANTENNA_ADMIN_PASSWORD: 'out-of-tree-admin' }), stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = ''; // pino's lines on stdout, anything else on stderr
  for (const stream of [server.stdout, server.stderr]) stream.setEncoding('utf8').on('data', (d: string) => { output += d; });
  const exited = new Promise<number | null>((resolve) => server.on('exit', resolve));
  let running = true;
  void exited.then(() => { running = false; });
  t.teardown(async () => { if (running) { server.kill('SIGKILL'); await exited; } });

  const base = `http://127.0.0.1:${port}`;
  const answers = () => fetch(`${base}/api/version`).then((r) => r.ok, () => false);
  await waitFor(async () => !running || await answers(), 60_000);
  if (!t.ok(running && await answers(), 'the installed server answers', { output })) return;
  const login = await fetch(`${base}/login`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: 'out-of-tree-admin' }),
  });
  t.equal(login.status, 200, 'signed in');
  const headers = { authorization: `Bearer ${((await login.json()) as any).auth.token}` };
  const get = async (url: string): Promise<any> => (await fetch(base + url, { headers })).json();

  const channels = await waitFor(async () => {
    const list = (await get('/channels')).channels;
    return list?.length ? list : undefined;
  }, 60_000);
  t.same(channels?.map((c: any) => [c.name, c.tvg_chno]), [['Test Pattern 1', '901'], ['Test Pattern 2', '902']], 'the tuner plugin\'s channels in /channels');

  const item = await waitFor(async () => {
    const libraries = (await get('/libraries')).libraries ?? [];
    return libraries.length ? (await get(`/library/${libraries[0].id}`)).items?.[0] : undefined;
  }, 60_000);
  t.ok(item, 'the library was scanned');
  const tracks = (await get(`/api/items/${item.id}/subtitle-tracks`)).tracks;
  t.same(tracks.map((x: any) => [x.language, x.url]), [['en', `/api/items/${item.id}/subtitle/folder/0`]], 'the subtitle plugin\'s track in subtitle-tracks');
  const vtt = await fetch(base + tracks[0].url, { headers });
  t.match(await vtt.text(), /^WEBVTT[\s\S]*Hello from the folder/, 'served as WebVTT');

  server.kill('SIGTERM');
  t.equal(await exited, 0, 'the server stops cleanly on SIGTERM');
  t.notMatch(output, /"level":(50|60)/, 'and logged no error');
});
