/**
 * A large library's grid in Chromium: only the rows near the viewport are in
 * the page, yet Tab walks past them card by card, scrolling to the end loads
 * and shows the last titles, and the A–Z jump starts at its letter. The 600
 * movies are rows written straight into vod's tables (as a scan would leave
 * them, without files: generating 600 clips would take minutes). Skipped (with
 * the reason) without Debian's Chromium.
 */
import t from 'tap';
import { skipWithoutChromium, startWebApp } from '../helpers/web-app.js';

// The functions given to page.evaluate()/waitForFunction() run in the page; the project compiles without the DOM lib.
declare const document: any;
declare const window: any;

t.setTimeout(180_000);

const COUNT = 600;
const NAMES = ['Alpha', 'Bravo', 'Charlie', 'Delta', 'Echo'];

t.test('a windowed library grid', { skip: skipWithoutChromium }, async (t) => {
  const app = await startWebApp(t, { media: false, channels: 1 });
  const { page, host } = app;
  const knex = host.host.knex;
  const library = (await knex('vod_libraries').where({ name: 'Movies' }).first('id')).id as number;
  const rows = Array.from({ length: COUNT }, (_, i) => {
    const title = `${NAMES[i % NAMES.length]} ${String(i).padStart(3, '0')}`;
    return { id: `grid${i}`, library_id: library, type: 'movie', parent_id: null, title, sort_title: title.toLowerCase(), year: 2000, season: null, episode: null, added_at: Date.now() };
  });
  for (let i = 0; i < rows.length; i += 200) await knex('vod_items').insert(rows.slice(i, i + 200));
  const titles = rows.map((r) => r.title).sort((a, b) => a.toLowerCase().localeCompare(b.toLowerCase()));
  const rendered = () => page.evaluate(() => [...document.querySelectorAll('.library-grid .card-title')].map((c: any) => c.textContent as string));

  await app.signIn();
  await app.open(`/library/${library}`);
  await page.getByText(`${COUNT} movies`).waitFor();
  await page.waitForFunction(() => document.querySelectorAll('.library-grid .card').length > 10);
  const first = await rendered();
  t.equal(first[0], titles[0], 'the grid starts at the first title');
  t.ok(first.length < 60, `only the rows near the viewport are in the page (${first.length} cards of the first page's 60)`);

  await page.locator('.library-grid .card').first().focus();
  for (let i = 0; i < 50; i++) await page.keyboard.press('Tab');
  const focused = await page.evaluate(() => document.activeElement?.querySelector('.card-title')?.textContent);
  t.equal(focused, titles[50], 'Tab walks card by card past the rows first rendered');

  // Scrolled to the end again and again: every page loads, and the last titles show.
  await page.waitForFunction((last: string) => {
    window.scrollTo(0, document.documentElement.scrollHeight);
    return [...document.querySelectorAll('.library-grid .card-title')].some((c: any) => c.textContent === last);
  }, titles[COUNT - 1], { polling: 200, timeout: 60_000 });
  const end = await rendered();
  t.strictSame(end, titles.slice(COUNT - end.length), `at the end, the last ${end.length} titles in order`);
  t.ok(end.length < 60, 'and still only the rows near the viewport');
  await app.screenshot('library-grid-end');

  await page.evaluate(() => window.scrollTo(0, 0));
  await page.getByRole('navigation', { name: 'Jump to letter' }).getByRole('button', { name: 'D' }).click();
  await page.getByRole('button', { name: 'Back to the start' }).waitFor();
  await page.waitForFunction((title: string) => document.querySelector('.library-grid .card-title')?.textContent === title, titles.find((x) => x.startsWith('Delta'))!);
  t.pass('the A-Z jump starts the grid at D');

  t.same(app.pageErrors, [], 'no page errors');
});
