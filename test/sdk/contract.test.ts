/**
 * The SDK's promises to plugin authors, checked by compiling plugins with tsc
 * against the built SDK's types and loading what tsc wrote:
 * - init's config is typed by the plugin's configSchema (a wrong use fails tsc);
 * - plugins written for SDK 1.0 (the examples as they were, and one using
 *   live-tv's and vod's 1.0 names) compile and work unchanged under 1.1 and 1.2;
 * - coreServices.settings is typed by the schema like the config.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { createTestHost, type TestHost } from '../../sdk/testing.js';
import { REPO_ROOT } from '../helpers/repo.js';
import { clip, tempDir } from '../plugins/vod/fixtures.js';

const FIXTURES = path.join(REPO_ROOT, 'test/sdk/fixtures');
const FILES = [
  'typed-config/plugin.ts', 'typed-config/wrong.ts',
  'sdk-1.0/hello-world/index.ts', 'sdk-1.0/tuner-test-pattern/index.ts', 'sdk-1.0/subtitle-folder/index.ts', 'sdk-1.0/lookups/index.ts',
];

/** Compiles the fixtures (into dist/, where `antenna/sdk` resolves at run time as in an install); tsc's error lines. */
async function compile(outDir: string): Promise<string[]> {
  const tsconfig = {
    compilerOptions: {
      target: 'ES2022', module: 'Node16', moduleResolution: 'Node16', strict: true, esModuleInterop: true, skipLibCheck: true,
      experimentalDecorators: true, emitDecoratorMetadata: true, rootDir: FIXTURES, outDir,
      baseUrl: REPO_ROOT, paths: { 'antenna/sdk': ['dist/sdk/index.d.ts'] }, types: ['node'], typeRoots: [path.join(REPO_ROOT, 'node_modules/@types')],
    },
    files: FILES.map((f) => path.join(FIXTURES, f)),
  };
  const config = path.join(outDir, 'tsconfig.json');
  await mkdir(outDir, { recursive: true });
  await writeFile(config, JSON.stringify(tsconfig));
  const tsc = path.join(REPO_ROOT, 'node_modules/typescript/bin/tsc');
  const { stdout } = await promisify(execFile)(process.execPath, [tsc, '-p', config, '--pretty', 'false']).catch((err) => err as { stdout: string });
  return stdout.split('\n').filter((l) => /error TS\d+/.test(l));
}

t.test('the SDK contract, compiled as a plugin author compiles', async (t) => {
  const outDir = await mkdtemp(path.join(REPO_ROOT, 'dist', 'sdk-fixtures-'));
  t.teardown(() => rm(outDir, { recursive: true, force: true }));
  const errors = await compile(outDir);

  t.test('init receives the config typed by the schema: a wrong use fails tsc', async (t) => {
    const source = (await readFile(path.join(FIXTURES, 'typed-config/wrong.ts'), 'utf8')).split('\n');
    const marked = source.flatMap((line, i) => (line.includes('// ERROR') ? [i + 1] : []));
    t.equal(marked.length, 3);
    const wrong = errors.filter((e) => e.includes('typed-config/wrong.ts'));
    t.same(wrong.map((e) => Number(/\((\d+),\d+\)/.exec(e)![1])), marked, 'an error on each marked line, and nowhere else in it');
    t.match(wrong[0], /TS2322: Type 'string' is not assignable to type 'number'/);
    t.match(wrong[1], /TS2339: Property 'port' does not exist/);
    t.match(wrong[2], /TS2322: Type '"port"' is not assignable to type '"greeting"'/, 'settings.onChange names keys of the schema');
    t.same(errors.filter((e) => !e.includes('typed-config/wrong.ts')), [], 'everything else compiles: the typed plugin and every SDK 1.0 plugin');
  });

  const load = (name: string) => path.join(outDir, 'sdk-1.0', name);

  t.test('SDK 1.0 plugins load and work unchanged: hello-world', async (t) => {
    const host = await createTestHost({ plugins: { [load('hello-world')]: { greeting: 'Hi' } } });
    t.teardown(() => host.close());
    const res = await host.inject({ method: 'GET', url: '/hello', headers: host.authHeaders });
    t.same(res.json(), { message: 'Hi, admin!', visits: 1 });
    t.same(await command(host, ['hello', 'stats']), ['admin\t1'], 'its command, with no deps, still runs');
  });

  t.test('SDK 1.0 plugins load and work unchanged: a tuner, and live-tv and vod through their 1.0 names', async (t) => {
    const dir = await tempDir(t, 'antenna-sdk10-');
    await clip(path.join(dir, 'movies', 'Plain (2022).mp4'), { seconds: 2, width: 320, height: 180, audio: 'none' });
    const host = await createTestHost({
      plugins: {
        'live-tv': { initialImport: 'await' },
        vod: { libraries: [{ name: 'Movies', type: 'movies', paths: [path.join(dir, 'movies')] }], initialScan: 'await' },
        [load('tuner-test-pattern')]: { channels: 2 },
        [load('lookups')]: { label: 'by a 1.0 plugin' },
      },
    });
    t.teardown(() => host.close());
    const get = (url: string) => host.inject({ method: 'GET', url, headers: host.authHeaders });
    const channels = (await get('/channels')).json().channels;
    t.same(channels.map((c: any) => c.name), ['Test Pattern 1', 'Test Pattern 2'], 'the 1.0 tuner\'s channels');
    t.same((await get(`/lookups/channel/${channels[1].id}`)).json(),
      { label: 'by a 1.0 plugin', channel: { name: 'Test Pattern 2', number: '902', tuner: 'Test Pattern' } }, 'liveTvExtensionPoint still gives the live-tv lookups');
    const item = (await get('/library/1')).json().items[0];
    t.same((await get(`/lookups/item/${item.id}`)).json(), { label: 'by a 1.0 plugin', title: item.title }, 'vodCatalogExtensionPoint still gives the catalog');
    t.equal((await get(`/watch/vod/${item.id}/play-info`)).json().looked_up_by, 'by a 1.0 plugin', 'and still takes play-info fields');
    t.same(await command(host, ['lookups', 'calls']), ['2']);
  });

  t.test('SDK 1.0 plugins load and work unchanged: a subtitle provider', async (t) => {
    const dir = await tempDir(t, 'antenna-sdk10-subs-');
    await clip(path.join(dir, 'movies', 'Plain (2022).mp4'), { seconds: 2, width: 320, height: 180, audio: 'none' });
    await mkdir(path.join(dir, 'subs'));
    await writeFile(path.join(dir, 'subs', 'Plain (2022).en.srt'), '1\n00:00:00,500 --> 00:00:01,500\nHello\n');
    const host = await createTestHost({
      plugins: {
        vod: { libraries: [{ name: 'Movies', type: 'movies', paths: [path.join(dir, 'movies')] }], initialScan: 'await' },
        [load('subtitle-folder')]: { path: path.join(dir, 'subs') },
      },
    });
    t.teardown(() => host.close());
    const get = (url: string) => host.inject({ method: 'GET', url, headers: host.authHeaders });
    const id = (await get('/library/1')).json().items[0].id;
    const tracks = (await get(`/api/items/${id}/subtitle-tracks`)).json().tracks;
    t.same(tracks.map((x: any) => [x.language, x.url]), [['en', `/api/items/${id}/subtitle/folder/0`]]);
    t.match((await get(tracks[0].url)).body, /^WEBVTT[\s\S]*Hello/);
  });
});

async function command(host: TestHost, argv: string[]): Promise<string[]> {
  const found = host.host.findCommand(argv)!;
  const lines: string[] = [];
  await host.host.runCommand(found.entry, found.args, { progress: { update() {}, done() {} }, out: (l) => lines.push(l) });
  return lines;
}
