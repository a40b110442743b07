/**
 * The admin Channels screen in Chromium: the table with guide matches, an inline name edit,
 * a guide channel picked from a search, a stream detached and attached, and no such screen
 * for a user who is not an administrator.
 */
import t from 'tap';
import { skipWithoutChromium, startWebApp } from '../helpers/web-app.js';
import { m3u, tempDir, write, xmltv } from '../plugins/live-tv/fixtures.js';

t.setTimeout(300_000);

t.test('the Channels screen', { skip: skipWithoutChromium }, async (t) => {
  const dir = await tempDir(t, 'antenna-web-channels-');
  const playlist = await write(dir, 'tv.m3u', m3u([
    { name: 'Harbour News', url: 'http://127.0.0.1:9/news.ts', tvgId: 'news.tv', chno: '1', group: 'News' },
    { name: 'Mystery Box', url: 'http://127.0.0.1:9/mb.ts', chno: '2' },
    { name: 'Kids Corner', url: 'http://127.0.0.1:9/kids.ts', chno: '3' },
  ]));
  const guide = await write(dir, 'guide.xml', xmltv([{ id: 'news.tv', names: ['Harbour News'] }, { id: 'mb', names: ['The Box of Mysteries'] }], []));
  const app = await startWebApp(t, {
    media: false, channels: 1,
    plugins: { 'live-tv': { initialImport: 'await' }, 'm3u-tuner': { sources: [{ name: 'IPTV', url: playlist }] }, 'xmltv-guide': { sources: [{ url: guide }] } },
  });
  const { page, host } = app;
  const admin = async () => new Map(((await host.inject({ method: 'GET', url: '/api/admin/channels', headers: host.authHeaders })).json().channels as any[]).map((c) => [c.name, c]));
  const before = await admin();

  await app.signIn();
  await app.open('/admin/channels');
  const row = (name: string) => page.locator('table.admin-channels tbody tr', { has: page.getByLabel(`Number of ${name}`, { exact: true }) });
  await row('Harbour News').waitFor();
  t.match(await row('Harbour News').textContent(), /news\.tv\s*tvg-id/, 'the guide match and its method');
  t.match(await row('Mystery Box').textContent(), /no guide/);

  // Inline edit: Enter saves.
  const name = page.getByLabel('Name of channel 1', { exact: true });
  await name.fill('Harbour News Live');
  await name.press('Enter');
  await page.getByText('Name saved: Harbour News Live').waitFor();
  t.equal((await admin()).get('Harbour News Live')?.id, before.get('Harbour News').id, 'saved through the API');

  // The guide picker.
  await page.getByRole('button', { name: 'Map… Mystery Box' }).click();
  const search = page.getByLabel('Search guide channels for Mystery Box');
  await search.fill('mysteries');
  await search.press('Enter');
  await page.getByRole('button', { name: 'The Box of Mysteries' }).click();
  await page.getByText('Mystery Box mapped to mb').waitFor();
  t.match((await admin()).get('Mystery Box').guide, { channel_id: 'mb', method: 'manual' });

  // Streams: attach Kids Corner's to Mystery Box, then detach it.
  const kids = before.get('Kids Corner');
  const attach = row('Mystery Box').getByLabel('Stream id to attach');
  await attach.fill(String(kids.id));
  await attach.press('Enter');
  await page.getByText(`Stream ${kids.id} attached`).waitFor();
  t.strictSame((await admin()).get('Mystery Box').streams.map((s: any) => s.name), ['Mystery Box', 'Kids Corner']);
  await page.getByRole('button', { name: `Move stream ${kids.id} up` }).click();
  await page.getByText('Stream order saved').waitFor();
  t.strictSame((await admin()).get('Mystery Box').streams.map((s: any) => s.name), ['Kids Corner', 'Mystery Box'], 'reordered');
  await row('Mystery Box').getByRole('button', { name: 'Detach' }).click();
  await page.getByText(`Stream ${kids.id} detached`).waitFor();
  t.ok((await admin()).has('Kids Corner'), 'a channel of its own again');

  // Not an administrator: no dashboard, no Channels screen.
  await host.createUser('viewer', 'viewer-password');
  const other = await app.browser.newContext();
  const viewer = await other.newPage();
  await viewer.goto(`${host.url}/`);
  await viewer.getByLabel('Username').fill('viewer');
  await viewer.getByLabel('Password').fill('viewer-password');
  await viewer.getByRole('button', { name: 'Sign in' }).click();
  await viewer.waitForSelector('header.topbar');
  await viewer.evaluate(() => { (globalThis as any).document.location.hash = '/admin/channels'; });
  await viewer.waitForTimeout(500);
  t.equal(await viewer.locator('table.admin-channels').count(), 0, 'no Channels table for a user');
  t.equal(await viewer.getByRole('link', { name: 'Admin' }).count(), 0, 'nor an Admin link');
  await other.close();
  t.strictSame(app.pageErrors, [], 'no page errors');
});
