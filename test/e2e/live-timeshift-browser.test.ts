/**
 * Time-shift in a real browser: Chromium (playwright-core) plays one live
 * channel with hls.js and with dash.js side by side (cross-origin, from
 * Antenna's URLs with ?api_key=). Each player pauses for 20 s and resumes
 * where it paused, the session kept alive by the paused players' own
 * requests only (idleTimeout is shorter than the pause); then each goes to
 * the live edge, seeks back 60 s from there and plays on from there.
 */
import t from 'tap';
import type { Page } from 'playwright-core';
import { createTestHost } from '../../sdk/testing.js';
import { PLAYER_PAGE, PlayerRig, artifactDir, redact, skipWithoutChromium, tally } from '../helpers/browser.js';
import { REPO_ROOT } from '../helpers/repo.js';

declare const document: any;
declare const window: any;

const PAUSE_MS = 20_000;
const BACK_SECONDS = 60;
/** Shorter than the pause: only the paused players' requests keep the session. */
const IDLE_SECONDS = 8;

t.setTimeout(240_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Where the page's <video> is: its time, whether it plays, what it has played. */
const videoState = () => {
  const v = document.querySelector('video');
  let played = 0;
  for (let i = 0; i < v.played.length; i++) played += v.played.end(i) - v.played.start(i);
  const seekable = v.seekable.length ? [v.seekable.start(0), v.seekable.end(v.seekable.length - 1)] : null;
  return { time: v.currentTime as number, paused: v.paused as boolean, played, seekable: seekable as [number, number] | null, errors: window.__state.errors as string[], fatal: window.__state.fatal as boolean };
};

t.test('hls.js and dash.js pause 20 s, resume, seek back 60 s and play on', { skip: skipWithoutChromium }, async (t) => {
  const rig = new PlayerRig();
  await artifactDir(t, 'antenna-live-timeshift-browser-', () => rig.close());
  const { host, pages, browser } = await rig.start(createTestHost({
    listen: true,
    baseDir: REPO_ROOT,
    plugins: {
      'live-tv': { initialImport: 'await', idleTimeout: `${IDLE_SECONDS}s`, timeshift: '10m' },
      './dist/examples/tuner-test-pattern': { channels: 1, size: '320x180' },
    },
  }), PLAYER_PAGE);
  const list = (await host.inject({ method: 'GET', url: '/channels', headers: { authorization: `Bearer ${host.adminToken}` } })).json().channels as { id: number }[];
  const channelId = list[0].id;
  const key = `api_key=${encodeURIComponent(host.adminToken)}`;
  const sources = { hls: `${host.url}/watch/live/${channelId}?${key}`, dash: `${host.url}/watch/live/${channelId}/master.mpd?${key}` };
  const job = () => host.host.jobs.get<{ run: number }>(`live:${channelId}`);
  // The session starts now: its window grows from here.
  const tuned = Date.now();
  t.equal((await fetch(sources.hls)).status, 200, 'the channel is tuned');
  const session = job();

  const open = async (player: 'hls' | 'dash') => {
    const context = await browser.newContext({ viewport: { width: 320, height: 180 } });
    t.teardown(() => context.close());
    const page: Page = await context.newPage();
    const failed: string[] = [];
    page.on('response', (r) => { if (r.status() >= 400) failed.push(redact(`${r.url().split('?')[0]}: HTTP ${r.status()}`)); });
    page.on('pageerror', (e) => failed.push(`page error: ${e.message}`));
    await page.goto(`${pages.url}/player.html?player=${player}&src=${encodeURIComponent(sources[player])}`, { waitUntil: 'load' });
    return { page, failed };
  };
  const state = (page: Page) => page.evaluate(videoState);
  /** Waits until the video has played `seconds` past `from` (its currentTime), or a fatal error. */
  const playsPast = (page: Page, from: number, seconds: number, timeout = 30_000) => page.waitForFunction(({ from, seconds }) => {
    const v = document.querySelector('video');
    return window.__state.fatal || (!v.paused && v.currentTime > from + seconds);
  }, { from, seconds }, { timeout, polling: 200 }).then(() => true, () => false);

  const players = await Promise.all((['hls', 'dash'] as const).map(async (player) => ({ player, ...(await open(player)) })));
  for (const { player, page } of players) t.ok(await playsPast(page, 0, 3, 60_000), `${player}: plays`);

  // Pause both for 20 s.
  const before = await Promise.all(players.map(async ({ page }) => {
    await page.evaluate(() => document.querySelector('video').pause());
    return state(page);
  }));
  await sleep(PAUSE_MS);
  t.equal(job(), session, `the session ran on through the ${PAUSE_MS / 1000} s pause (idleTimeout ${IDLE_SECONDS} s)`);
  for (const [i, { player, page }] of players.entries()) {
    const paused = await state(page);
    t.ok(paused.paused && Math.abs(paused.time - before[i].time) < 0.5, `${player}: still paused where it paused (${before[i].time.toFixed(1)} → ${paused.time.toFixed(1)})`);
    await page.evaluate(() => { void document.querySelector('video').play(); });
  }
  for (const [i, { player, page }] of players.entries()) {
    t.ok(await playsPast(page, before[i].time, 2), `${player}: resumes`);
    const resumed = await state(page);
    // Where it paused, not at the live edge (20 s on).
    t.ok(resumed.time < before[i].time + 10, `${player}: resumed from its pause (${before[i].time.toFixed(1)} → ${resumed.time.toFixed(1)} s)`);
  }

  // Back to the live edge, then 60 s back from there, once the window holds that much (and the
  // few seconds the edge is behind the newest segment).
  for (const { player, page } of players) {
    const held = await page.waitForFunction((seconds) => {
      const v = document.querySelector('video');
      return window.__state.fatal || (v.seekable.length > 0 && v.seekable.end(v.seekable.length - 1) - v.seekable.start(0) >= seconds);
    }, BACK_SECONDS + 8, { timeout: 120_000, polling: 500 }).then(() => true, () => false);
    t.ok(held, `${player}: the seekable window reaches ${BACK_SECONDS + 8} s (${((Date.now() - tuned) / 1000).toFixed(0)} s after the tune)`);
  }
  for (const { player, page } of players) {
    const edge = (await state(page)).seekable![1] - 4;
    await page.evaluate((to) => { document.querySelector('video').currentTime = to; }, edge);
    t.ok(await playsPast(page, edge, 1), `${player}: plays at the live edge`);
    const now = await state(page);
    const target = now.time - BACK_SECONDS;
    t.ok(now.seekable && target >= now.seekable[0], `${player}: ${BACK_SECONDS} s back is inside the seekable window (${now.seekable?.map((s) => s.toFixed(1)).join('–')}, target ${target.toFixed(1)})`);
    await page.evaluate((to) => { document.querySelector('video').currentTime = to; }, target);
    t.ok(await playsPast(page, target, 4), `${player}: plays on from ${BACK_SECONDS} s back`);
    const after = await state(page);
    t.ok(after.time >= target && after.time < target + 15, `${player}: from there, not from the live edge (at ${after.time.toFixed(1)}, target ${target.toFixed(1)})`);
  }
  for (const { player, page, failed } of players) {
    const s = await state(page);
    for (const f of tally(failed)) t.comment(`${player}: ${f}`);
    t.strictSame(s.errors.filter((e) => !/^dash\.js error 16 /.test(e)), [], `${player}: no player errors`);
    t.notOk(s.fatal, `${player}: nothing fatal`);
  }
  t.equal(job(), session, 'one session all along');
});
