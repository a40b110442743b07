/**
 * The web app's live TV in Chromium: the channel list (numbers, what's on,
 * search, categories, favorites that persist on the server), the guide grid
 * (channels, programme blocks, the now line, scrolling, keyboard), recording a
 * programme from the guide (and the server's refusal of a duplicate), opening a
 * channel, and the guide at phone width.
 */
import t from 'tap';
import type { Page } from 'playwright-core';
import { skipWithoutChromium, startWebApp } from '../helpers/web-app.js';

declare const document: any;
declare const location: any;

t.setTimeout(240_000);

interface ApiChannel { id: number; name: string; tvg_chno: string }

async function waitForCount(page: Page, selector: string, count: number) {
  await page.waitForFunction(([s, n]) => document.querySelectorAll(s).length === n, [selector, count] as const, { timeout: 10_000 });
}

t.test('channels, favorites, the guide and recording from it', { skip: skipWithoutChromium }, async (t) => {
  const app = await startWebApp(t, { media: false, channels: 3 });
  const { page, host } = app;
  const channels = (await host.inject({ method: 'GET', url: '/channels', headers: host.authHeaders })).json().channels as ApiChannel[];
  t.equal(channels.length, 3, 'the tuner has three channels');
  const byName = (name: string) => channels.find((c) => c.name === name)!;
  const favoritesOnServer = async () => (await host.inject({ method: 'GET', url: '/me', headers: host.authHeaders })).json().user.favorites as number[];

  await app.signIn();
  await app.open('/live');

  // The list: every channel with its number, and what is on now.
  await waitForCount(page, '.channel-main', 3);
  for (const c of channels) {
    t.match(await page.getByRole('link', { name: new RegExp(`${c.tvg_chno}\\s+${c.name}\\b`) }).textContent(), c.tvg_chno, `${c.name} is listed with its number`);
  }
  await page.locator('.channel-progress').first().waitFor();
  t.match(await page.locator('.channel-now').first().textContent(), /On now: \S/, 'what is on now is shown');
  await app.screenshot('channels');

  // Search (debounced, on the server).
  await page.getByLabel('Search channels').fill('pattern 2');
  await waitForCount(page, '.channel-main', 1);
  t.match(await page.locator('.channel-main').textContent(), 'Test Pattern 2', 'search finds the channel');
  await page.getByLabel('Search channels').fill('no such channel');
  await page.getByText('No channel matches “no such channel”.').waitFor();
  t.pass('a search without results says so');
  await page.getByLabel('Search channels').fill('');
  await waitForCount(page, '.channel-main', 3);

  // Favorites: the star, the server, the filter, a reload.
  const second = byName('Test Pattern 2');
  await page.getByRole('button', { name: 'Favorite Test Pattern 2' }).click();
  await page.getByRole('button', { name: 'Favorite Test Pattern 2', pressed: true }).waitFor();
  for (let i = 0; i < 50 && !(await favoritesOnServer()).includes(second.id); i++) await page.waitForTimeout(100);
  t.same(await favoritesOnServer(), [second.id], 'the favorite is stored on the server');
  await page.getByRole('button', { name: /Favorites/ }).click();
  await waitForCount(page, '.channel-main', 1);
  t.match(await page.locator('.channel-main').textContent(), 'Test Pattern 2', 'the Favorites filter shows only the favorite');
  await page.reload();
  await page.getByRole('button', { name: 'Favorite Test Pattern 2', pressed: true }).waitFor();
  t.equal(await page.getByRole('button', { name: 'Favorite Test Pattern 1', pressed: false }).count(), 1, 'after a reload the star is still on, and only there');
  await page.getByRole('button', { name: 'Favorite Test Pattern 2' }).click();
  await page.getByRole('button', { name: 'Favorite Test Pattern 2', pressed: false }).waitFor();
  for (let i = 0; i < 50 && (await favoritesOnServer()).length; i++) await page.waitForTimeout(100);
  t.same(await favoritesOnServer(), [], 'removing the star removes the favorite on the server');

  // Categories from the tuner's groups.
  await page.getByRole('button', { name: 'Test Patterns (3)' }).click();
  await page.getByRole('button', { name: 'Test Patterns (3)', pressed: true }).waitFor();
  await waitForCount(page, '.channel-main', 3);
  t.pass('the category filter lists the category\'s channels');
  await page.getByRole('button', { name: 'All channels' }).click();

  // The guide.
  await app.open('/guide');
  await page.locator('.guide-prog').first().waitFor();
  for (const c of channels) await page.getByRole('link', { name: `${c.tvg_chno} ${c.name}` }).waitFor();
  t.pass('the guide lists the channels');
  t.ok(await page.locator('.guide-prog').count() >= 6, 'with programme blocks');
  t.equal(await page.locator('.guide-prog.live').count(), 3, 'one programme on air per channel');
  await page.locator('.guide-now-line').waitFor();
  const nowLineInView = await page.locator('.guide-scroller').evaluate((el: any) => {
    const line = el.querySelector('.guide-now-line').getBoundingClientRect();
    const box = el.getBoundingClientRect();
    return line.left > box.left && line.left < box.right;
  });
  t.ok(nowLineInView, 'the guide opens at now, with the now line in view');
  await app.screenshot('guide');
  await page.getByLabel('Category').selectOption('Test Patterns');
  await page.getByRole('link', { name: `${channels[2]!.tvg_chno} ${channels[2]!.name}` }).waitFor();
  t.equal(await page.locator('.guide-channel').count(), 3, 'the category filter keeps the category\'s channels');
  await page.getByLabel('Category').selectOption('');
  await page.locator('.guide-prog.live').first().waitFor();

  // Scrolling through the day renders the later programmes; Now comes back.
  const latestStart = () => page.evaluate(() => Math.max(...[...document.querySelectorAll('.guide-prog')].map((b: any) => Date.parse(b.dataset.start))));
  const before = await latestStart();
  await page.locator('.guide-scroller').evaluate((el: any) => { el.scrollLeft += 3000; });
  await page.waitForFunction((b) => [...document.querySelectorAll('.guide-prog')].some((el: any) => Date.parse(el.dataset.start) > b), before);
  t.ok(await latestStart() > before + 3 * 3600_000, 'scrolling right shows programmes hours later');
  await page.getByRole('button', { name: 'Now', exact: true }).click();
  await page.waitForFunction(() => document.querySelectorAll('.guide-prog.live').length === 3);
  t.pass('Now brings the programmes on air back into view');

  // The keyboard moves between programmes.
  await page.locator('.guide-prog.live').first().focus();
  const focusedKey = () => page.evaluate(() => document.activeElement?.dataset?.key);
  const start = await focusedKey();
  await page.keyboard.press('ArrowRight');
  const right = await focusedKey();
  t.ok(right && right !== start && right.split(':')[0] === start!.split(':')[0], 'ArrowRight moves to the next programme on the channel');
  await page.keyboard.press('ArrowDown');
  t.equal((await focusedKey())?.split(':')[0], String(Number(start!.split(':')[0]) + 1), 'ArrowDown moves to the next channel');

  // A programme a few hours ahead on the second channel: its details, then Record.
  const target = await page.evaluate(() => {
    const later = [...document.querySelectorAll('.guide-prog[data-row="1"]')].find((b: any) => Date.parse(b.dataset.start) > Date.now() + 3600_000) as any;
    return later ? { key: later.dataset.key as string, pid: Number(later.dataset.pid) } : undefined;
  });
  if (!target) throw new Error('no programme an hour ahead is rendered');
  // A second tab opened before the recording exists: recording there again meets the server's 409.
  const other = await app.context.newPage();
  other.on('pageerror', (err) => app.pageErrors.push(`second tab: ${err.message}`));
  await other.goto(`${host.url}/#/guide`);
  await other.locator(`.guide-prog[data-key="${target.key}"]`).waitFor();

  const block = page.locator(`.guide-prog[data-key="${target.key}"]`);
  await block.click();
  await page.getByRole('dialog').waitFor();
  const title = (await page.getByRole('dialog').getByRole('heading').textContent())!;
  t.ok((await block.getAttribute('aria-label'))!.startsWith(`${title}, `), 'the dialog is the programme clicked');
  const dialog = page.getByRole('dialog', { name: title });
  t.match(await dialog.textContent(), /Episode \d+/, 'the details show the sub-title');
  t.match(await dialog.textContent(), /a \d+ Hz tone over colour bars/, 'and the description');
  t.equal(await dialog.getByRole('link', { name: /Watch/ }).count(), 0, 'no Watch for a programme not on air yet');
  await app.screenshot('programme');
  await dialog.getByRole('button', { name: '● Record' }).click();
  await page.getByRole('status').filter({ hasText: `“${title}” will be recorded` }).waitFor();
  const recordings = (await host.inject({ method: 'GET', url: '/recordings', headers: host.authHeaders })).json() as { program_id: number; channel_id: number; status: string }[];
  t.match(recordings, [{ program_id: target.pid, channel_id: byName('Test Pattern 2').id, status: 'scheduled' }], 'the server has the recording scheduled');
  await dialog.getByText('Scheduled to record').waitFor();
  t.equal(await dialog.getByRole('button', { name: 'Cancel recording' }).count(), 1, 'the dialog offers to cancel it');
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'detached' });
  t.ok(await block.evaluate((el: any) => el.classList.contains('rec')), 'the block is marked as recording');
  t.equal(await block.locator('.rec-dot').count(), 1, 'with a red dot');

  await other.locator(`.guide-prog[data-key="${target.key}"]`).click();
  const otherDialog = other.getByRole('dialog', { name: title });
  await otherDialog.getByRole('button', { name: '● Record' }).click();
  await otherDialog.getByRole('alert').filter({ hasText: /already recorded/ }).waitFor();
  t.pass('recording it again shows the server\'s 409 message');
  await otherDialog.getByText('Scheduled to record').waitFor();
  t.pass('and the dialog then shows it scheduled');
  await other.close();

  // On air now: Watch.
  await page.locator('.guide-prog.live').first().click();
  await page.getByRole('dialog').getByRole('link', { name: /Watch/ }).waitFor();
  await page.getByRole('dialog').getByRole('button', { name: 'Close' }).last().click();
  await page.getByRole('dialog').waitFor({ state: 'detached' });
  t.pass('a programme on air offers Watch');

  // A channel in the list opens the player.
  await app.open('/live');
  const third = byName('Test Pattern 3');
  await page.getByRole('link', { name: /Test Pattern 3/ }).click();
  await page.waitForFunction((id) => location.hash === `#/watch/live/${id}`, third.id);
  t.pass('a channel opens #/watch/live/<id>');
  await app.open('/live');

  t.same(app.pageErrors, [], 'no page errors');
});

t.test('the guide and channel list at phone width', { skip: skipWithoutChromium }, async (t) => {
  const app = await startWebApp(t, { media: false, channels: 3, phone: true });
  const { page } = app;
  await app.signIn();
  await app.open('/guide');
  await page.locator('.guide-prog.live').first().waitFor();
  const fits = await page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth);
  t.ok(fits, 'the page does not scroll sideways: the grid scrolls inside itself');
  await app.screenshot('guide-phone');
  await page.locator('.guide-prog.live').first().click();
  await page.getByRole('dialog').waitFor();
  await app.screenshot('programme-phone');
  await page.keyboard.press('Escape');
  await app.open('/live');
  await waitForCount(page, '.channel-main', 3);
  await app.screenshot('channels-phone');
  t.same(app.pageErrors, [], 'no page errors');
});
