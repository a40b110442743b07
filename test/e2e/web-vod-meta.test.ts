/**
 * The web app's metadata, search, player controls and up next in Chromium:
 * a movie with an NFO and a poster beside it shows its poster, plot, genres
 * and cast (file details under "Details"), its card has the picture, the
 * library filters by its genre and jumps to its letter; the
 * header's search box finds a movie, a show, a channel and a programme while
 * typing, with fewer requests than keys typed; the VOD player's own controls
 * pause, change the audio track while paused (it stays paused, at the same
 * place), hide while playing; and when an episode ends the next one is
 * offered with a countdown and plays, its continue-watching card showing its
 * picture. Skipped (with the reason) without
 * Debian's Chromium.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { MEDIA, skipWithoutChromium, startWebApp } from '../helpers/web-app.js';
import { runFfmpeg } from '../plugins/vod/fixtures.js';

// The functions given to page.evaluate()/waitForFunction() run in the page; the project compiles without the DOM lib.
declare const document: any;

t.setTimeout(300_000);

const PLAYER_VIDEO = 'video.player-video';
const PLOT = 'A test card left running overnight finds an audience.';
const NFO = `<?xml version="1.0" encoding="UTF-8"?>
<movie>
  <title>${MEDIA.movie}</title>
  <year>2024</year>
  <plot>${PLOT}</plot>
  <genre>Documentary</genre>
  <rating>7.4</rating>
  <actor><name>Ada Bars</name><role>The Engineer</role></actor>
</movie>`;

t.test('metadata, search, player controls, up next', { skip: skipWithoutChromium }, async (t) => {
  const app = await startWebApp(t, {
    channels: 2,
    beforeScan: async (dir) => {
      const base = path.join(dir, 'movies', MEDIA.movieFile.replace(/\.mkv$/, ''));
      await writeFile(`${base}.nfo`, NFO);
      await runFfmpeg(['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'color=c=red:s=300x450', '-frames:v', '1', `${base}-poster.jpg`]);
    },
  });
  const { page } = app;
  const videoState = () => page.evaluate((sel: string) => { const v = document.querySelector(sel); return { time: v.currentTime, paused: v.paused, ready: v.readyState }; }, PLAYER_VIDEO);
  const waitForTime = (above: number, timeout = 60_000) =>
    page.waitForFunction(([sel, min]: [string, number]) => (document.querySelector(sel)?.currentTime ?? 0) > min, [PLAYER_VIDEO, above] as [string, number], { timeout });
  /** The natural width of the loaded pictures matching a selector (0: not loaded). */
  const loadedWidths = (sel: string) => page.evaluate((s: string) => [...document.querySelectorAll(s)].map((img: any) => (img.complete ? img.naturalWidth : 0)), sel);

  await app.signIn();
  let movieRoute = '';

  t.test('a movie with an NFO and a poster shows them', async (t) => {
    await app.open('/');
    await page.getByRole('link', { name: 'Movies', exact: true }).click();
    const card = page.getByRole('link', { name: new RegExp(`^${MEDIA.movie}`) });
    await card.waitFor();
    await page.waitForFunction((title: string) => [...document.querySelectorAll('.title-card')].some((c: any) => c.getAttribute('aria-label').startsWith(title) && c.querySelector('img')?.naturalWidth > 0), MEDIA.movie);
    t.pass('its card shows the poster');
    const cards = () => page.evaluate(() => [...document.querySelectorAll('.library-grid .card-title')].map((c: any) => c.textContent));
    await page.getByLabel('Genre').selectOption('Documentary');
    await page.waitForFunction(() => document.location.hash.includes('genre=Documentary') && document.querySelectorAll('.library-grid .card').length === 1);
    t.strictSame(await cards(), [MEDIA.movie], 'the genre filter keeps the movie its NFO calls a documentary');
    await page.getByLabel('Genre').selectOption('');
    await page.getByRole('navigation', { name: 'Jump to letter' }).getByRole('button', { name: 'T' }).click();
    await page.getByRole('button', { name: 'Back to the start' }).waitFor();
    t.strictSame(await cards(), [MEDIA.movie], 'the A-Z jump starts the grid at T');
    await page.getByRole('button', { name: 'Back to the start' }).click();
    await page.waitForFunction(() => document.querySelectorAll('.library-grid .card').length === 2);
    await card.click();
    await page.getByRole('heading', { level: 1, name: MEDIA.movie }).waitFor();
    movieRoute = await page.evaluate(() => document.location.hash.slice(1));
    await page.getByText(PLOT).waitFor();
    await page.getByText('Ada Bars').waitFor();
    await page.getByText(/Documentary/).first().waitFor();
    await page.waitForFunction(() => document.querySelector('.item-poster img')?.naturalWidth > 0);
    const [width] = await loadedWidths('.item-poster img');
    t.ok(width > 0 && width <= 440, `the poster is loaded, scaled to what the page shows (${width} px wide)`);
    t.notOk(await page.locator('.version').first().isVisible(), 'stream details wait under "Details"');
    await page.getByText('Details').click();
    await page.locator('.version').first().waitFor();
    t.pass('"Details" opens on the file and its streams');
    await app.screenshot('item-metadata');
  });

  t.test('search finds a movie, a show, a channel and a programme while typing', async (t) => {
    await app.open('/');
    const searches: string[] = [];
    page.on('request', (r) => { if (r.url().includes('/api/search')) searches.push(r.url()); });
    const box = page.getByRole('combobox', { name: /Search/ });
    await box.click();
    const typed = 'pattern';
    await box.pressSequentially(typed, { delay: 40 });
    const results = page.getByRole('listbox', { name: 'Search results' });
    for (const group of ['Movies', 'Shows', 'Channels', 'Programmes']) await results.getByRole('region', { name: group }).waitFor({ timeout: 15_000 });
    await results.getByRole('option', { name: new RegExp(MEDIA.movie) }).waitFor();
    await results.getByRole('option', { name: /^Test Pattern 1\b/ }).waitFor();
    await results.getByRole('option', { name: /^Pattern Report/ }).first().waitFor();
    t.ok(searches.length >= 1 && searches.length < typed.length, `typing ${typed.length} keys sent ${searches.length} request(s)`);
    await app.screenshot('search');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: MEDIA.movie }).waitFor();
    t.pass('Enter opens the first result');
  });

  t.test('the player\'s controls: pause, a track changed while paused stays paused, chrome hides while playing', async (t) => {
    await app.open(movieRoute);
    await page.getByRole('link', { name: `Play ${MEDIA.movie}` }).click();
    await waitForTime(2);
    await page.locator('.vp-chrome.hidden').waitFor({ state: 'attached', timeout: 10_000 });
    t.pass('the controls hide while it plays');
    await page.mouse.move(400, 300);
    await page.mouse.move(420, 320);
    await page.locator('.vp-chrome:not(.hidden)').waitFor({ state: 'attached' });
    t.match(await page.locator('.vp-method').textContent(), /repackaged: container mkv/, 'the player says why the file is not played as it is');
    await page.getByRole('button', { name: 'Pause' }).click();
    await page.waitForFunction((sel: string) => document.querySelector(sel).paused, PLAYER_VIDEO);
    const before = (await videoState()).time;
    await page.getByLabel('Audio').selectOption({ label: 'French (AAC mono)' });
    await page.locator('.player-overlay.waiting').waitFor({ state: 'detached', timeout: 60_000 });
    await page.waitForFunction((sel: string) => document.querySelector(sel).readyState >= 2, PLAYER_VIDEO, { timeout: 60_000 });
    await page.waitForTimeout(1000);
    const after = await videoState();
    t.ok(after.paused, 'still paused after the audio track changed');
    t.ok(Math.abs(after.time - before) < 2.5, `at the same place (${before.toFixed(1)} s → ${after.time.toFixed(1)} s)`);
    await page.getByRole('button', { name: 'Play' }).click();
    await waitForTime(after.time + 0.5);
    t.pass('Play plays on');
    await app.screenshot('player-controls');
  });

  t.test('up next: the next episode is offered with a countdown and plays', async (t) => {
    await app.open('/');
    await page.getByRole('link', { name: new RegExp(MEDIA.show) }).first().click();
    const first = page.getByRole('link', { name: /^Play S01E01/ });
    await first.waitFor();
    const episodeId = (link: string | null) => decodeURIComponent(link!.split('?')[0].split('/').pop()!);
    const secondId = episodeId(await page.getByRole('link', { name: /^Play S01E02/ }).getAttribute('href'));
    await first.click();
    await waitForTime(1);
    // Near its end.
    await page.evaluate((sel: string) => { const v = document.querySelector(sel); v.currentTime = v.duration - 2; }, PLAYER_VIDEO);
    const upNext = page.getByRole('dialog', { name: 'Up next' });
    await upNext.waitFor({ timeout: 30_000 });
    await upNext.getByText(/S01E02/).waitFor();
    t.match(await upNext.getByRole('timer').textContent(), /Plays in \d+ s/, 'with a countdown');
    await app.screenshot('up-next');
    await page.waitForFunction((id: string) => decodeURIComponent(document.location.hash).includes(`/watch/vod/${id}`), secondId, { timeout: 20_000 });
    await waitForTime(1);
    t.match(await page.locator('.player-detail').textContent(), /S01E02/, 'the next episode plays when the countdown ends');
    await app.open('/');
    await page.getByRole('region', { name: 'Continue watching' }).getByRole('link', { name: /Pattern Show · S01E02 · Episode 2, / }).waitFor({ timeout: 15_000 });
    t.pass('continue watching names the show and the episode');
    await page.waitForFunction(() => document.querySelector('.continue-row a[aria-label*="S01E02"] img.poster-image')?.naturalWidth > 0, undefined, { timeout: 15_000 });
    t.pass('and its card shows the episode\'s picture');
    await app.screenshot('continue-watching');
  });

  t.same(app.pageErrors, [], 'no page errors');
});
