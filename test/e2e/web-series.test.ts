/**
 * Series recording in the web app (Chromium): "Record series…" in a programme's
 * dialog makes a rule (new only off, this channel, keep 3), the Series rules screen
 * lists it with its next airings, Recordings shows them as the rule's, and deleting
 * the rule there removes its scheduled airings.
 */
import t from 'tap';
import { skipWithoutChromium, startWebApp } from '../helpers/web-app.js';

declare const document: any;

t.setTimeout(240_000);

t.test('Record series from the guide, then the rules screen', { skip: skipWithoutChromium }, async (t) => {
  const app = await startWebApp(t, { media: false, channels: 2 });
  const { page, host } = app;
  const rules = async () => (await host.inject({ method: 'GET', url: '/api/dvr/rules', headers: host.authHeaders })).json().rules as any[];
  await app.signIn();
  await app.open('/guide');
  await page.locator('.guide-prog').first().waitFor();
  const key = await page.evaluate(() => {
    const later = [...document.querySelectorAll('.guide-prog[data-row="0"]')].find((b: any) => Date.parse(b.dataset.start) > Date.now() + 3600_000) as any;
    return later?.dataset.key as string | undefined;
  });
  if (!key) throw new Error('no programme an hour ahead is rendered');
  await page.locator(`.guide-prog[data-key="${key}"]`).click();
  const dialog = page.getByRole('dialog');
  await dialog.waitFor();
  const title = (await dialog.getByRole('heading').textContent())!;
  await dialog.getByRole('button', { name: 'Record series…' }).click();
  await dialog.getByLabel('New episodes only').uncheck();
  await dialog.getByLabel('Any channel').uncheck();
  await dialog.getByLabel(/Keep/).fill('3');
  await dialog.getByRole('button', { name: '● Record series' }).click();
  await page.getByText(`Recording the series “${title}”`).waitFor();
  const [rule] = await rules();
  t.match(rule, { title, airings: 'all', keep: { latest: 3 } }, 'the rule as chosen');
  t.ok(rule.channel_id > 0, 'on this channel');
  t.ok(rule.next.length >= 1, `${rule.next.length} airings scheduled`);
  await app.screenshot('record-series');

  await app.open('/recordings/rules');
  await page.getByRole('heading', { name: 'Series rules', level: 1 }).waitFor();
  await page.getByText(`“${title}” · every airing`).waitFor();
  t.equal(await page.locator('.rules-next li').count(), rule.next.length, 'each next airing is listed');

  await app.open('/recordings');
  await page.getByText('Series rule').first().waitFor();
  t.pass('Recordings marks the rule\'s recordings');

  await app.open('/recordings/rules');
  await page.getByRole('button', { name: `Delete rule ${rule.id}` }).click();
  await page.getByText('No series rules.').waitFor();
  t.strictSame(await rules(), [], 'deleted on the server');
  const left = (await host.inject({ method: 'GET', url: '/recordings', headers: host.authHeaders })).json();
  t.equal(left.filter((r: any) => r.status === 'scheduled').length, 0, 'its scheduled airings went with it');
  t.strictSame(app.pageErrors, [], 'no page errors');
});
