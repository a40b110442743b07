/**
 * Live TV and recordings in the web app's player, in Chromium: a channel
 * plays through hls.js with the token in a header; with the tuner's only
 * stream in use another channel shows the server's tuner-limit message with a
 * retry; a channel whose source is dead shows the server's message with a
 * retry; a recording still being made plays from its start and its position
 * is saved for Continue watching. Skipped (with the reason) without Debian's Chromium.
 */
import t from 'tap';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { skipWithoutChromium, startWebApp } from '../helpers/web-app.js';

// The functions given to page.evaluate()/waitForFunction() run in the page; the project compiles without the DOM lib.
declare const document: any;

t.setTimeout(240_000);

const PLAYER_VIDEO = 'video.player-video';

interface Channel { id: number; name: string; tvg_chno: string }
interface GuidePage { channels: { id: number; programs: { id: number; title: string; start: string; stop: string }[] }[] }

t.test('live channel, tuner limit, recording in progress', { skip: skipWithoutChromium }, async (t) => {
  // A playlist with one channel whose upstream refuses connections (port 9 on loopback: nothing listens).
  const playlistDir = await mkdtemp(path.join(os.tmpdir(), 'antenna-web-dead-'));
  t.teardown(() => rm(playlistDir, { recursive: true, force: true }));
  const playlist = path.join(playlistDir, 'dead.m3u');
  await writeFile(playlist, '#EXTM3U\n#EXTINF:-1 tvg-id="dead.1" tvg-chno="950",Dead Channel\nhttp://127.0.0.1:9/dead.ts\n');
  const app = await startWebApp(t, {
    media: false, channels: 2, maxStreams: 1,
    plugins: { 'm3u-tuner': { sources: [{ name: 'Dead Source', url: playlist, maxStreams: 1 }] } },
  });
  const { page, host } = app;
  const waitForTime = (above: number, timeout = 90_000) =>
    page.waitForFunction(([sel, min]: [string, number]) => (document.querySelector(sel)?.currentTime ?? 0) > min, [PLAYER_VIDEO, above] as [string, number], { timeout });

  await app.signIn();
  const token = await page.evaluate(() => document.defaultView.localStorage.getItem('antenna.token')) as string;
  const get = async <T>(url: string): Promise<T> => {
    const r = await host.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } });
    if (r.statusCode !== 200) throw new Error(`GET ${url}: ${r.statusCode} ${r.body}`);
    return JSON.parse(r.body) as T;
  };
  const { channels } = await get<{ channels: Channel[] }>('/channels');
  const [first, second] = channels.filter((c) => c.name.startsWith('Test Pattern'));
  const dead = channels.find((c) => c.name === 'Dead Channel')!;
  t.ok(dead, 'the dead channel is listed');

  // A channel plays, named in the player's heading with what is on.
  await app.open(`/watch/live/${first.id}`);
  await page.getByRole('heading', { level: 1, name: `${first.tvg_chno} ${first.name}` }).waitFor({ timeout: 30_000 });
  await waitForTime(3);
  t.pass('the live channel plays');
  t.ok(await page.locator('.player-detail').textContent(), 'the programme on now is shown');
  await app.screenshot('player-live');

  // The tuner's one stream is in use: another channel is refused with the server's message.
  await app.open(`/watch/live/${second.id}`);
  const alert = page.getByRole('alert').filter({ hasText: 'All tuners are busy' });
  await alert.waitFor({ timeout: 30_000 });
  t.match(await alert.textContent(), /Tuner limit reached/, 'the server\'s tuner-limit message is shown');
  await page.getByRole('button', { name: 'Try again' }).waitFor();
  t.pass('with a retry');
  await app.screenshot('player-error-tuner-limit');

  // A channel whose source does not answer: the server's message, a hint and a retry.
  await app.open(`/watch/live/${dead.id}`);
  const failed = page.getByRole('alert').filter({ hasText: 'This channel cannot be played' });
  await failed.waitFor({ timeout: 30_000 });
  t.match(await failed.textContent(), /may be offline/, 'the stream failure is explained');
  await page.getByRole('button', { name: /Try again/ }).waitFor();
  await app.screenshot('player-error-dead-upstream');

  // Record what is on the first channel now (it shares the stream being watched) and play it as it grows.
  const now = new Date();
  const guide = await get<GuidePage>(`/programs?from=${now.toISOString()}&to=${new Date(now.getTime() + 1000).toISOString()}`);
  const program = guide.channels.find((c) => c.id === first.id)!.programs.find((p) => Date.parse(p.start) <= now.getTime() && Date.parse(p.stop) > now.getTime())!;
  const created = await host.inject({ method: 'POST', url: '/recordings', headers: { authorization: `Bearer ${token}` }, payload: { channel_id: first.id, program_id: program.id } });
  t.equal(created.statusCode < 300, true, `POST /recordings: ${created.statusCode}`);
  const recording = JSON.parse(created.body) as { id: number; status: string };
  t.equal(recording.status, 'recording', 'the programme on air records at once');

  await app.open(`/watch/recording/${recording.id}`);
  await page.getByRole('heading', { level: 1, name: program.title }).waitFor({ timeout: 30_000 });
  await waitForTime(2);
  t.match(await page.locator('.player-detail').textContent(), /Recording now/, 'the heading says it is still recording');
  t.pass('the recording plays while it is being made');
  await app.screenshot('player-recording');

  // Its position is saved under the recording's catalog item.
  await page.evaluate((sel: string) => document.querySelector(sel).pause(), PLAYER_VIDEO);
  const position = await page.evaluate((sel: string) => document.querySelector(sel).currentTime as number, PLAYER_VIDEO);
  await page.getByRole('button', { name: 'Back' }).click();
  let entry: { videoId: string; position: number } | undefined;
  for (let i = 0; i < 50 && !(entry && entry.position > 1); i++) {
    const list = await get<{ items: { videoId: string; position: number }[] }>('/api/continue-watching?type=live_tv');
    entry = list.items.find((e) => e.videoId === `rec-${recording.id}`);
    if (!(entry && entry.position > 1)) await new Promise((r) => setTimeout(r, 200));
  }
  t.ok(entry && Math.abs(entry.position - position) < 2, `the position is saved (${position.toFixed(1)} s → ${entry?.position})`);

  t.same(app.pageErrors, [], 'no page errors');
});
