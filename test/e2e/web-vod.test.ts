/**
 * The web app's libraries and VOD player in Chromium: home lists the
 * libraries, a movie's page leads to the player, which plays (hls.js over the
 * remuxed whole-title manifest), seeks, shows the embedded subtitle track and
 * switches audio track; the position is saved, home offers to continue and
 * resume starts there; watched / unwatched from the item page; the show's page
 * lists its episodes. Skipped (with the reason) without Debian's Chromium.
 */
import t from 'tap';
import { MEDIA, skipWithoutChromium, startWebApp } from '../helpers/web-app.js';

// The functions given to page.evaluate()/waitForFunction() run in the page; the project compiles without the DOM lib.
declare const document: any;

t.setTimeout(300_000);

const PLAYER_VIDEO = 'video.player-video';

t.test('libraries, item page, VOD playback, continue watching', { skip: skipWithoutChromium }, async (t) => {
  const app = await startWebApp(t, { channels: 1 });
  const { page, host } = app;
  const videoTime = () => page.evaluate((sel: string) => document.querySelector(sel)?.currentTime ?? -1, PLAYER_VIDEO);
  const waitForTime = (above: number, timeout = 60_000) =>
    page.waitForFunction(([sel, min]: [string, number]) => (document.querySelector(sel)?.currentTime ?? 0) > min, [PLAYER_VIDEO, above] as [string, number], { timeout });

  await app.signIn();
  await page.getByRole('heading', { name: 'Movies' }).waitFor();
  await page.getByRole('heading', { name: 'Shows' }).waitFor();
  await page.getByRole('link', { name: new RegExp(MEDIA.movie) }).first().waitFor();
  t.pass('home lists the libraries with what they hold');
  await app.screenshot('home');

  await page.getByRole('link', { name: 'Movies', exact: true }).click();
  await page.getByRole('heading', { level: 1, name: 'Movies' }).waitFor();
  await page.getByRole('link', { name: /Direct Clip/ }).waitFor();
  await page.getByLabel('Sort').selectOption({ label: 'Year' });
  await page.waitForFunction(() => document.location.hash.endsWith('?sort=year'));
  await page.getByRole('link', { name: /Direct Clip/ }).waitFor();
  t.pass('the library lists its movies and sorts them');
  await app.screenshot('library');

  await page.getByRole('link', { name: new RegExp(MEDIA.movie) }).click();
  await page.getByRole('heading', { level: 1, name: MEDIA.movie }).waitFor();
  await page.getByText('Details').click();
  const details = page.locator('.item-details');
  await details.getByText(/English \(AAC stereo\)/).first().waitFor();
  await details.getByText(/French \(AAC mono\)/).first().waitFor();
  await details.locator('.track-list li').first().waitFor();
  t.pass('the movie page shows its file, audio tracks and subtitle tracks');
  await app.screenshot('item');

  // Play, then seek.
  await page.getByRole('link', { name: `Play ${MEDIA.movie}` }).click();
  await page.getByRole('heading', { level: 1, name: MEDIA.movie }).waitFor();
  await waitForTime(2);
  t.pass('the movie plays');
  await app.screenshot('player-vod');
  await page.evaluate((sel: string) => { document.querySelector(sel).currentTime = 40; }, PLAYER_VIDEO);
  await waitForTime(41.5);
  t.pass('a seek to 40 s plays on from there');

  // Subtitles: the manifest's rendition becomes a showing text track with cues.
  await page.getByLabel('Subtitles').selectOption({ index: 1 });
  await page.waitForFunction(() => {
    const tracks = [...document.querySelector('video.player-video').textTracks];
    return tracks.some((tr: any) => tr.mode === 'showing' && tr.cues && tr.cues.length > 0);
  }, null, { timeout: 30_000 });
  t.pass('the subtitle track shows, with its cues');

  // Another audio track: the title reloads at the same place.
  await page.evaluate((sel: string) => { document.querySelector(sel).currentTime = 20; }, PLAYER_VIDEO);
  await waitForTime(20);
  await page.getByLabel('Audio').selectOption({ label: 'French (AAC mono)' });
  // The title reloads: the spinner comes and goes.
  await page.locator('.player-overlay.waiting').waitFor({ state: 'attached', timeout: 10_000 });
  await page.locator('.player-overlay.waiting').waitFor({ state: 'detached', timeout: 60_000 });
  await page.waitForFunction((sel: string) => {
    const v = document.querySelector(sel);
    return v.currentTime > 19 && v.currentTime < 40 && !v.paused && v.readyState >= 3;
  }, PLAYER_VIDEO, { timeout: 60_000 });
  t.pass('another audio track plays on from the same position');

  // Stop at 30 s and leave: the position is saved.
  await page.evaluate((sel: string) => { const v = document.querySelector(sel); v.currentTime = 30; v.pause(); }, PLAYER_VIDEO);
  await page.waitForFunction((sel: string) => !document.querySelector(sel).seeking, PLAYER_VIDEO);
  const saved = await videoTime();
  await page.getByRole('button', { name: 'Back' }).first().click();
  await page.getByRole('heading', { level: 1, name: MEDIA.movie }).waitFor();

  await app.open('/');
  const resume = page.getByRole('link', { name: new RegExp(`^Resume ${MEDIA.movie}`) });
  await resume.waitFor({ timeout: 15_000 });
  await page.getByRole('link', { name: /Direct Clip/ }).waitFor();
  t.pass('home offers to continue the movie');
  await app.screenshot('home-continue');
  await resume.click();
  await waitForTime(saved + 0.5);
  const at = await videoTime();
  t.ok(at >= saved - 1 && at < saved + 15, `resume starts near the saved position (${saved.toFixed(1)} s → ${at.toFixed(1)} s)`);

  // The keys: K pauses and plays, → seeks 10 s on.
  await page.locator(PLAYER_VIDEO).focus();
  await page.keyboard.press('k');
  await page.waitForFunction((sel: string) => document.querySelector(sel).paused, PLAYER_VIDEO);
  const paused = await videoTime();
  await page.keyboard.press('ArrowRight');
  await page.waitForFunction(([sel, to]: [string, number]) => Math.abs(document.querySelector(sel).currentTime - to) < 0.5, [PLAYER_VIDEO, paused + 10] as [string, number]);
  await page.keyboard.press('k');
  await waitForTime(paused + 10.5);
  t.pass('K pauses and plays, the right arrow seeks 10 s');

  // Watched / unwatched from the item page.
  await page.getByRole('button', { name: 'Back' }).first().click();
  await app.open(`/`);
  await page.getByRole('link', { name: new RegExp(`^Resume ${MEDIA.movie}`) }).waitFor();
  const token = await page.evaluate(() => document.defaultView.localStorage.getItem('antenna.token'));
  const movieId = await page.getByRole('link', { name: new RegExp(`^Resume ${MEDIA.movie}`) }).getAttribute('href').then((h) => decodeURIComponent(h!.split('/').pop()!));
  await app.open(`/item/${encodeURIComponent(movieId)}`);
  await page.getByRole('link', { name: /^▶ Resume from/ }).waitFor();
  await page.getByRole('link', { name: 'Play from start' }).waitFor();
  await page.getByRole('button', { name: /Mark as watched/ }).click();
  await page.getByText('Watched', { exact: true }).waitFor();
  const list = async () => JSON.parse((await host.inject({ method: 'GET', url: '/api/continue-watching?type=vod', headers: { authorization: `Bearer ${token}` } })).body) as { items: { videoId: string }[] };
  t.notOk((await list()).items.some((e) => e.videoId === movieId), 'marked watched, it leaves Continue watching');
  // A fresh load knows it too (the server's per-video state, not this page's memory).
  await page.reload();
  await page.getByText('Watched', { exact: true }).waitFor();
  await page.getByRole('button', { name: 'Mark as unwatched' }).waitFor();
  t.equal(await page.getByRole('button', { name: /Mark as watched/ }).count(), 0, 'after a reload the page offers only "Mark as unwatched"');
  await page.getByRole('button', { name: 'Mark as unwatched' }).click();
  await page.getByRole('button', { name: /Mark as watched/ }).waitFor();
  t.ok((await list()).items.some((e) => e.videoId === movieId), 'marked unwatched, it is back');

  // The show lists its episodes, each playable.
  await app.open('/');
  await page.getByRole('link', { name: new RegExp(MEDIA.show) }).first().click();
  await page.getByRole('heading', { level: 1, name: MEDIA.show }).waitFor();
  await page.getByRole('link', { name: /^Play S01E01/ }).waitFor();
  await page.getByRole('link', { name: /^Play S01E02/ }).waitFor();
  t.pass('the show page lists S01E01 and S01E02');
  await app.screenshot('show');
  await page.getByRole('link', { name: /^Play S01E02/ }).click();
  await waitForTime(1);
  t.match(await page.locator('.player-detail').textContent(), /Pattern Show · S01E02/, 'the player names the series and episode');

  // A file the browser plays as it is (direct play, no HLS).
  await app.open('/');
  await page.getByRole('link', { name: /Direct Clip/ }).click();
  await page.getByRole('link', { name: 'Play Direct Clip' }).click();
  await waitForTime(1);
  t.match(await page.evaluate((sel: string) => document.querySelector(sel).currentSrc, PLAYER_VIDEO), /\/watch\/vod\/[^/]+\/file\?key=/, 'an mp4 plays directly from its file');

  // Phone width: the same screens fit.
  await page.setViewportSize({ width: 390, height: 844 });
  await app.screenshot('phone-player');
  await app.open(`/item/${encodeURIComponent(movieId)}`);
  await page.getByRole('heading', { level: 1, name: MEDIA.movie }).waitFor();
  await app.screenshot('phone-item');
  await app.open('/');
  // Played a moment ago: its card may be in Continue watching as well as in the library's row.
  await page.getByRole('link', { name: /Direct Clip/ }).first().waitFor();
  await app.screenshot('phone-home');
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  t.equal(overflow, 0, 'home does not scroll sideways at phone width');

  t.same(app.pageErrors, [], 'no page errors');
});
