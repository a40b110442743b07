/**
 * The demo (PRODUCT.md §1): `antenna serve` with no config file, in an empty
 * directory, serves the web app at the URL it prints, generates its VOD
 * library on first start and a newcomer can browse and play it; a second
 * start reuses the clips.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CLI } from '../../helpers/repo.js';
import { cleanEnv, unusedPort } from '../../helpers/env.js';

// Generating the clips takes tens of seconds on a loaded 2-core machine (other test files run beside it).
t.setTimeout(400_000);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function serveDemo(t: { teardown(fn: () => unknown): void }, cwd: string, port: number) {
  const child = spawn(process.execPath, [CLI, 'serve'], {
    cwd, env: cleanEnv({ ANTENNA_PORT: String(port), ANTENNA_HOST: '127.0.0.1', ANTENNA_ADMIN_PASSWORD: 'demo-admin-password' }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let exited = false;
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => { exited = true; resolve(code); }));
  // Logs (stdout) and messages (stderr) together: what the test looks for is in either.
  let output = '';
  const collect = (d: string) => { output += d; if (output.length > 200_000) output = output.slice(-100_000); };
  child.stderr!.setEncoding('utf8').on('data', collect);
  child.stdout!.setEncoding('utf8').on('data', collect);
  const stop = async () => { if (!exited) { child.kill('SIGTERM'); await exit; } };
  t.teardown(async () => { if (!exited) { child.kill('SIGKILL'); await exit; } });
  return { stop, stderr: () => output, exited: () => exited };
}

t.test('the demo generates and serves its VOD library', async (t) => {
  const cwd = await mkdtemp(path.join(os.tmpdir(), 'antenna-demo-'));
  t.teardown(() => rm(cwd, { recursive: true, force: true }));
  const port = await unusedPort();
  const base = `http://127.0.0.1:${port}`;
  const server = await serveDemo(t, cwd, port);

  let token: string | undefined;
  for (let i = 0; i < 600 && !server.exited() && !token; i++) {
    const res = await fetch(`${base}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: 'demo-admin-password' }) }).catch(() => undefined);
    if (res?.status === 200) token = ((await res.json()) as any).auth.token;
    else await sleep(100);
  }
  if (!t.ok(token, 'the demo server signs the admin in')) t.comment(server.stderr().slice(-4000));
  const get = async (url: string) => (await fetch(`${base}${url}`, { headers: { authorization: `Bearer ${token}` } })).json() as Promise<any>;

  // The printed URL opens the web app (no token needed for the page).
  const page = await fetch(`${base}/`);
  t.equal(page.status, 200, 'the web app is served at /');
  t.match(await page.text(), /<script type="module" src="\/web\/app-[A-Z0-9]+\.js">/, 'with its script');

  // Generation and the first scan run in the background after start: wait for them (generous: CI is slow).
  let libraries: any[] = [];
  for (let i = 0; i < 480; i++) {
    // The DVR's Recordings library is listed too (empty here): the demo's own are the ones named Demo.
    libraries = (await get('/libraries')).libraries.filter((l: any) => l.name.startsWith('Demo '));
    if (libraries.length === 2 && libraries[0].item_count === 3 && libraries[1].item_count === 1) break;
    await sleep(500);
  }
  if (!t.strictSame(libraries.map((l) => [l.name, l.type, l.item_count]), [['Demo Movies', 'movies', 3], ['Demo Shows', 'shows', 1]], 'three movies and a show')) {
    t.comment(server.stderr().slice(-4000));
    return;
  }

  const movies = (await get(`/library/${libraries[0].id}`)).items;
  const detail = await Promise.all(movies.map((m: any) => get(`/item/${m.id}`)));
  const surround = detail.find((d) => d.title === 'Surround Sound');
  t.match(surround?.versions[0], { container: 'mkv', audio: [{ codec: 'ac3', channels: 6 }, {}], subtitles: [{ codec: 'subrip', language: 'en', language_name: 'English' }] }, 'an MKV with AC-3 5.1 and an embedded subtitle (its language in BCP 47)');
  t.ok(existsSync(path.join(cwd, 'data', 'demo-media', 'movies', 'Surround Sound (2023)', 'Surround Sound (2023).en.srt')), 'and a sidecar .srt');
  t.equal(detail.find((d) => d.title === 'Deep Colour')?.versions[0].video.codec, 'hevc', 'an HEVC file');
  t.equal(detail.find((d) => d.title === 'Test Pattern')?.versions[0].container, 'mp4', 'an MP4');
  const show = (await get(`/library/${libraries[1].id}`)).items[0];
  const season = (await get(`/item/${show.id}`)).children[0];
  t.equal((await get(`/item/${season.id}`)).children.length, 2, 'two episodes');

  const mp4 = detail.find((d) => d.title === 'Test Pattern');
  const info = await get(`/watch/vod/${mp4.id}/play-info`);
  t.match(info, { method: 'direct', format: 'mp4' }, 'the MP4 plays directly in a browser');
  const file = await fetch(`${base}${info.url}`, { headers: { range: 'bytes=0-99' } });
  t.equal(file.status, 206, 'and its url serves the file');

  await server.stop();
  // A second start finds the clips and does not make them again.
  const again = await serveDemo(t, cwd, port);
  for (let i = 0; i < 300 && !/library scanned/.test(again.stderr()) && !again.exited(); i++) await sleep(100);
  await again.stop();
  t.notMatch(again.stderr(), /generating the demo VOD library/, 'no second generation');
});
