/**
 * The web app's live player in Chromium: it shows LIVE while at the live
 * edge; after a seek back into the time-shift window it shows how far behind
 * it is and "Jump to live" brings it back to LIVE; "Start over" goes back to
 * the programme's start (or the window's); channel up and down zap (buttons
 * and Page Up/Down), and the mini-guide shows now and next on nearby channels
 * and zaps too. Skipped (with the reason) without Debian's Chromium.
 */
import t from 'tap';
import { skipWithoutChromium, startWebApp } from '../helpers/web-app.js';

declare const document: any;

t.setTimeout(240_000);

const VIDEO = 'video.player-video';
/** Seconds the window must hold before seeking back is more than the LIVE slack (12 s). */
const WINDOW_SECONDS = 24;

interface Channel { id: number; name: string; tvg_chno: string }

t.test('live player: LIVE, jump back to live, start over, zapping, mini-guide', { skip: skipWithoutChromium }, async (t) => {
  const app = await startWebApp(t, { media: false, channels: 3, maxStreams: 3 });
  const { page, host } = app;
  await app.signIn();
  const channels = (await host.inject({ method: 'GET', url: '/channels', headers: { authorization: `Bearer ${host.adminToken}` } })).json().channels as Channel[];
  const [first, second] = channels;
  const heading = (c: Channel) => page.getByRole('heading', { level: 1, name: `${c.tvg_chno} ${c.name}` });
  const video = () => page.evaluate((sel: string) => {
    const v = document.querySelector(sel);
    return { time: v.currentTime as number, start: v.seekable.length ? v.seekable.start(0) as number : 0, end: v.seekable.length ? v.seekable.end(v.seekable.length - 1) as number : 0, controls: v.controls as boolean };
  }, VIDEO);
  const playsPast = (seconds: number) => page.waitForFunction(([sel, s]: [string, number]) => {
    const v = document.querySelector(sel);
    return v && !v.paused && v.currentTime > s;
  }, [VIDEO, seconds] as [string, number], { timeout: 60_000 });

  await app.open(`/watch/live/${first.id}`);
  await heading(first).waitFor({ timeout: 30_000 });
  await playsPast(1);
  const badge = page.locator('.live-badge');
  await page.locator('.live-badge.at-live').waitFor({ timeout: 10_000 });
  t.equal(await badge.textContent(), 'LIVE', 'LIVE shows at the live edge');
  t.notOk((await video()).controls, "the <video>'s own clip-like controls are off");
  t.notOk(await page.getByRole('button', { name: 'Jump to live' }).isVisible(), 'no "Jump to live" while live');
  await app.screenshot('live-player');

  // Back to the window's start once it holds more than the LIVE slack.
  await page.waitForFunction((sel: string) => {
    const v = document.querySelector(sel);
    return v.seekable.length && v.seekable.end(v.seekable.length - 1) - v.seekable.start(0) > 24;
  }, VIDEO, { timeout: 90_000 });
  t.pass(`the window holds ${WINDOW_SECONDS} s`);
  const slider = page.getByRole('slider', { name: 'Position in the time-shift window' });
  const before = await video();
  await slider.fill(String(before.start + 1));
  const jump = page.getByRole('button', { name: 'Jump to live' });
  await jump.waitFor({ timeout: 10_000 });
  const back = await video();
  t.ok(back.end - back.time > 12, `seeked back into the window (${(back.end - back.time).toFixed(1)} s behind)`);
  t.notOk(await page.locator('.live-badge.at-live').count(), 'the badge no longer says LIVE is on');
  t.match(await page.locator('.live-time').textContent(), /−\d+:\d\d/, 'the time behind live shows');
  await app.screenshot('live-player-behind');
  await jump.click();
  await page.locator('.live-badge.at-live').waitFor({ timeout: 10_000 });
  const jumped = await video();
  t.ok(jumped.end - jumped.time < 12, `"Jump to live" is back at the live edge (${(jumped.end - jumped.time).toFixed(1)} s behind)`);
  t.notOk(await jump.isVisible(), '"Jump to live" goes away');

  // The test pattern's programmes began before the window: Start over goes to the window's start.
  await page.getByRole('button', { name: 'Start over' }).click();
  await jump.waitFor({ timeout: 10_000 });
  const over = await video();
  t.ok(over.time - over.start < 3, `"Start over" is at the window's start (${(over.time - over.start).toFixed(1)} s after it)`);
  await jump.click();

  // Zapping: the Channel up button, then Page Down back.
  await page.getByRole('button', { name: 'Channel up' }).click();
  await heading(second).waitFor({ timeout: 30_000 });
  await playsPast(1);
  t.pass(`channel up: ${second.name} plays`);
  t.match(page.url(), new RegExp(`#/watch/live/${second.id}$`), 'the route follows');
  await page.keyboard.press('PageDown');
  await heading(first).waitFor({ timeout: 30_000 });
  await playsPast(1);
  t.pass(`Page Down: back to ${first.name}`);

  // The mini-guide: now and next on the channels around, and a zap from it.
  await page.keyboard.press('g');
  const guide = page.getByRole('complementary', { name: 'Channels around this one' });
  await guide.waitFor({ timeout: 10_000 });
  const rows = guide.getByRole('button', { name: /Test Pattern/ });
  await rows.first().waitFor({ timeout: 10_000 });
  t.equal(await rows.count(), 3, 'the three channels are listed');
  const texts = await rows.allTextContents();
  t.ok(texts.every((text) => /\d\d:\d\d .+Next \d\d:\d\d /.test(text)), `each with now and next (${texts[0]})`);
  t.equal(await guide.locator('[aria-current="true"]').count(), 1, 'the channel watched is marked');
  await app.screenshot('live-player-guide');
  await rows.nth(2).click();
  await heading(channels[2]).waitFor({ timeout: 30_000 });
  t.pass('a row of the mini-guide zaps to its channel');

  t.same(app.pageErrors, [], 'no page errors');
});
