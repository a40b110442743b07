/**
 * The web app's recordings and account pages in Chromium: the empty list,
 * recordings made on the server showing up with their status, cancelling and
 * deleting through the confirm step (and a refused cancel rolled back), the
 * avatar upload with the server's refusals, changing the password, an
 * inactive account, keyboard navigation, and the phone layout.
 */
import { deflateSync } from 'node:zlib';
import t from 'tap';
import type { Page } from 'playwright-core';
import { redact } from '../helpers/browser.js';
import { skipWithoutChromium, startWebApp } from '../helpers/web-app.js';

// The functions given to page.evaluate()/waitForFunction() run in the page; the project compiles without the DOM lib.
declare const document: any;
declare const window: any;

t.setTimeout(240_000);

/** A valid RGB PNG of the given size, one colour per row band. */
function png(width: number, height: number): Buffer {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (buf: Buffer) => {
    let c = 0xffffffff;
    for (const byte of buf) c = crcTable[(c ^ byte) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const out = Buffer.alloc(body.length + 8);
    out.writeUInt32BE(data.length, 0);
    body.copy(out, 4);
    out.writeUInt32BE(crc(body), body.length + 4);
    return out;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // RGB
  const rows: Buffer[] = [];
  for (let y = 0; y < height; y++) {
    const row = Buffer.alloc(1 + width * 3);
    for (let x = 0; x < width; x++) row.set(y < height / 2 ? [230, 90, 40] : [40, 120, 230], 1 + x * 3);
    rows.push(row);
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header), chunk('IDAT', deflateSync(Buffer.concat(rows))), chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** Polls until `check` returns something truthy (the server's state settles on its own clock). */
async function until<T>(check: () => Promise<T | undefined | false>, what: string, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

t.test('recordings and account', { skip: skipWithoutChromium }, async (t) => {
  const app = await startWebApp(t, { media: false, channels: 2 });
  const { page, host } = app;
  const NEW_PASSWORD = 'a-brand-new-password';
  let token = host.adminToken;
  const get = async (url: string) => {
    const res = await host.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } });
    return { status: res.statusCode, body: res.statusCode < 300 ? res.json() : undefined };
  };

  await app.signIn();

  await t.test('keyboard: Tab from the top reaches the navigation, Enter opens a page', async (t) => {
    await page.evaluate(() => { (document.activeElement as any)?.blur?.(); window.scrollTo(0, 0); });
    await page.evaluate(() => document.body.focus());
    const seen: string[] = [];
    for (let i = 0; i < 12; i++) {
      await page.keyboard.press('Tab');
      const name = await page.evaluate(() => (document.activeElement?.textContent ?? '').trim());
      seen.push(name);
      if (name.includes('Recordings')) break;
    }
    t.match(seen.at(-1), /Recordings/, `the Recordings link is reached by Tab (${seen.join(' → ')})`);
    t.ok(seen.length <= 8, 'after the skip link, the brand and the links before it');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Recordings', level: 1 }).waitFor();
    t.equal(await page.evaluate(() => document.location.hash), '#/recordings', 'Enter followed the link');
    t.equal(await page.getByRole('link', { name: /Recordings/ }).first().getAttribute('aria-current'), 'page', 'the link is marked current');
  });

  await t.test('an empty list says where recordings come from', async (t) => {
    await app.open('/recordings');
    await page.getByText(/No recordings yet/).waitFor();
    t.equal(await page.getByRole('main').getByRole('link', { name: 'Guide' }).getAttribute('href'), '#/guide', 'it links to the guide');
  });

  // A programme on air now on channel 1 (recording at once) and one an hour later (scheduled).
  const guide = await until(async () => {
    const { body } = await get('/programs');
    const first = body?.channels?.[0];
    return first?.programs?.length ? first as { id: number; name: string; programs: { id: number; title: string; start: string; stop: string }[] } : undefined;
  }, 'the guide');
  let onAir = guide.programs.find((p) => Date.parse(p.start) <= Date.now() && Date.parse(p.stop) > Date.now())!;
  if (Date.parse(onAir.stop) - Date.now() < 30_000) {
    // Too close to the end of the slot: it would finish while the test looks at it.
    await new Promise((r) => setTimeout(r, Date.parse(onAir.stop) - Date.now() + 1000));
    onAir = guide.programs.find((p) => Date.parse(p.start) <= Date.now() && Date.parse(p.stop) > Date.now())!;
  }
  const later = guide.programs.filter((p) => Date.parse(p.start) > Date.now()).sort((a, b) => Date.parse(a.start) - Date.parse(b.start))[1];
  const create = async (programId: number) => {
    const res = await host.inject({
      method: 'POST', url: '/recordings', headers: { authorization: `Bearer ${token}` },
      payload: { channel_id: guide.id, program_id: programId },
    });
    t.equal(res.statusCode, 201, `recording ${programId} created: ${res.body}`);
    return res.json() as { id: number; status: string; title: string };
  };
  const running = await create(onAir.id);
  const scheduled = await create(later.id);
  t.equal(running.status, 'recording', 'the programme on air records at once');
  t.equal(scheduled.status, 'scheduled', 'the later one is scheduled');

  await t.test('recordings are listed by status', async (t) => {
    await page.reload();
    await app.open('/recordings');
    const nowGroup = page.getByRole('region', { name: /Recording now/ });
    const row = nowGroup.getByRole('listitem', { name: running.title });
    await row.waitFor();
    t.ok(await row.getByText('Recording', { exact: true }).isVisible(), 'the running one has the recording badge');
    t.ok(await row.locator('.recordings-dot').isVisible(), 'with its red dot');
    t.ok(await row.getByText(guide.name).isVisible(), 'the channel is named');
    t.equal(await row.getByRole('link', { name: /Play/ }).getAttribute('href'), `#/watch/recording/${running.id}`, 'it can be played while it records');
    const schedRow = page.getByRole('region', { name: /Scheduled/ }).getByRole('listitem', { name: scheduled.title });
    await schedRow.waitFor();
    t.ok(await schedRow.getByText('Scheduled', { exact: true }).isVisible(), 'the later one is scheduled');
    t.equal(await schedRow.getByRole('link', { name: /Play/ }).count(), 0, 'and has nothing to play yet');
    await app.screenshot('recordings');
  });

  await t.test('a refused cancel is rolled back with the server\'s message', async (t) => {
    const refusal = 'Only an administrator or the user who scheduled it can cancel it';
    await page.route(`**/recordings/${running.id}`, (route) => (route.request().method() === 'DELETE'
      ? route.fulfill({ status: 403, contentType: 'application/json', body: JSON.stringify({ error: refusal }) })
      : route.fallback()));
    const row = page.getByRole('region', { name: /Recording now/ }).getByRole('listitem', { name: running.title });
    await row.getByRole('button', { name: /^Cancel/ }).click();
    await row.getByRole('group', { name: /Stop recording/ }).waitFor();
    t.ok(await row.getByRole('button', { name: 'Yes, cancel' }).evaluate((el) => el === document.activeElement), 'the confirm step takes the focus');
    await page.keyboard.press('Escape');
    t.ok(await row.getByRole('button', { name: /^Cancel/ }).isVisible(), 'Escape backs out of the confirm step');
    await row.getByRole('button', { name: /^Cancel/ }).click();
    await row.getByRole('button', { name: 'Yes, cancel' }).click();
    await page.getByRole('alert').filter({ hasText: refusal }).waitFor();
    await page.getByRole('region', { name: /Recording now/ }).getByRole('listitem', { name: running.title }).waitFor();
    t.pass('the recording is back under Recording now');
    t.equal((await get(`/recordings/${running.id}`)).body.status, 'recording', 'and the server still records it');
    await page.unroute(`**/recordings/${running.id}`);
  });

  await t.test('cancel a scheduled recording, then delete it', async (t) => {
    const row = page.getByRole('region', { name: /Scheduled/ }).getByRole('listitem', { name: scheduled.title });
    await row.getByRole('button', { name: /^Cancel/ }).click();
    await row.getByRole('group', { name: /Cancel this scheduled recording/ }).waitFor();
    await row.getByRole('button', { name: 'Yes, cancel' }).click();
    const cancelled = page.getByRole('region', { name: /Failed & cancelled/ }).getByRole('listitem', { name: scheduled.title });
    await cancelled.waitFor();
    t.ok(await cancelled.getByText('Cancelled', { exact: true }).isVisible(), 'it moves to cancelled');
    await until(async () => (await get(`/recordings/${scheduled.id}`)).body?.status === 'cancelled', 'the server to cancel it');
    t.pass('the server says cancelled');

    await cancelled.getByRole('button', { name: /^Delete/ }).click();
    await cancelled.getByRole('button', { name: 'Yes, delete' }).click();
    await cancelled.waitFor({ state: 'detached' });
    await until(async () => (await get(`/recordings/${scheduled.id}`)).status === 404, 'the server to delete it');
    t.pass('deleted on the server too');
  });

  await t.test('avatar: none, then uploaded; refusals explained', async (t) => {
    await app.open('/account');
    await page.getByRole('heading', { name: 'Account', level: 1 }).waitFor();
    await page.getByRole('img', { name: 'admin has no avatar' }).waitFor();
    t.ok(await page.getByText('Administrator', { exact: true }).isVisible(), 'the admin flag is shown');
    await page.getByText(/Antenna version \d/).waitFor();
    t.pass('the server version is shown');

    const fileInput = page.locator('input[type=file]');
    await fileInput.setInputFiles({ name: 'notes.png', mimeType: 'image/png', buffer: Buffer.from('these are not pixels\n'.repeat(20)) });
    await page.getByRole('alert').filter({ hasText: 'avatar must be a PNG, JPEG, WebP or GIF image' }).waitFor();
    t.pass('a text file named .png gets the server\'s 415 message');

    await fileInput.setInputFiles({ name: 'huge.png', mimeType: 'image/png', buffer: Buffer.alloc(5 * 1024 * 1024 + 1) });
    await page.getByRole('alert').filter({ hasText: /at most 5 MiB/ }).waitFor();
    t.pass('an oversized file is refused at once');

    await fileInput.setInputFiles({ name: 'me.png', mimeType: 'image/png', buffer: png(48, 48) });
    const avatar = page.getByRole('img', { name: 'Avatar of admin' });
    await avatar.waitFor();
    await page.waitForFunction(() => (document.querySelector('.account-avatar img') as any)?.naturalWidth === 48);
    t.pass('the uploaded avatar is shown');
    t.equal(await page.getByRole('alert').filter({ hasText: /MiB|avatar must/ }).count(), 0, 'the earlier error is gone');
    t.equal((await host.inject({ method: 'GET', url: '/api/user/me/avatar', headers: { authorization: `Bearer ${token}` } })).statusCode, 200, 'the server has it');
    await app.screenshot('account');
  });

  await t.test('change the password', async (t) => {
    const current = page.getByLabel('Current password', { exact: true });
    const next = page.getByLabel('New password', { exact: true });
    const confirm = page.getByLabel('Confirm new password', { exact: true });
    const submit = page.getByRole('button', { name: 'Change password' });

    await current.fill(host.adminPassword);
    await next.fill('short');
    await confirm.fill('short');
    await submit.click();
    await page.getByText(/at least 8 characters/).first().waitFor();
    t.equal(await next.getAttribute('aria-invalid'), 'true', 'a short password is refused before asking the server');

    await next.fill(NEW_PASSWORD);
    await confirm.fill(NEW_PASSWORD + 'x');
    await submit.click();
    await page.getByRole('alert').filter({ hasText: 'do not match' }).waitFor();
    t.pass('a mismatched confirmation is caught');

    await current.fill('not the current password');
    await confirm.fill(NEW_PASSWORD);
    await submit.click();
    await page.getByRole('alert').filter({ hasText: 'Current password is incorrect' }).waitFor();
    t.equal(await current.getAttribute('aria-invalid'), 'true', 'the wrong current password is marked on its field');
    t.ok(await current.evaluate((el) => el === document.activeElement), 'and focused');

    await current.fill(host.adminPassword);
    await submit.click();
    await page.getByRole('status').filter({ hasText: 'Password changed; other devices were signed out' }).waitFor();
    t.equal(await current.inputValue(), '', 'the form is cleared');

    const login = (password: string) => host.inject({ method: 'POST', url: '/login', payload: { username: 'admin', password } });
    const fresh = await login(NEW_PASSWORD);
    t.equal(fresh.statusCode, 200, 'the new password signs in');
    t.equal((await login(host.adminPassword)).statusCode, 401, 'the old one does not');
    t.equal((await host.inject({ method: 'GET', url: '/me', headers: { authorization: `Bearer ${token}` } })).statusCode, 401, 'the other session was signed out');
    token = fresh.json().auth.token;
    await app.open('/recordings');
    await page.getByRole('heading', { name: 'Recordings', level: 1 }).waitFor();
    t.ok(await page.locator('header.topbar').isVisible(), 'this browser stays signed in');
  });

  await t.test('phone width: tab bar at the bottom, the account page fits', async (t) => {
    const context = await app.browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
    t.teardown(() => context.close());
    const phone: Page = await context.newPage();
    phone.on('pageerror', (err) => app.pageErrors.push(redact(`phone page error: ${err.message}`)));
    await phone.goto(`${host.url}/`);
    await phone.getByLabel('Username').fill('admin');
    await phone.getByLabel('Password').fill(NEW_PASSWORD);
    await phone.getByRole('button', { name: 'Sign in' }).click();
    await phone.waitForSelector('header.topbar');
    await phone.evaluate(() => { document.location.hash = '/account'; });
    await phone.getByRole('img', { name: 'Avatar of admin' }).waitFor();
    const nav = phone.getByRole('navigation', { name: 'Main' });
    const box = await nav.boundingBox();
    t.ok(box && box.y + box.height >= 844 - 1 && box.y > 700, `the tab bar sits at the bottom (${JSON.stringify(box)})`);
    t.ok(await nav.getByRole('link', { name: /Account/ }).isVisible(), 'with its links');
    const { scrollWidth, innerWidth } = await phone.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth }));
    t.ok(scrollWidth <= innerWidth, `no horizontal scroll (${scrollWidth} ≤ ${innerWidth})`);
    await phone.screenshot({ path: `${app.dir}/screenshots/account-phone.png`, fullPage: true });
    await phone.evaluate(() => { document.location.hash = '/recordings'; });
    await phone.getByRole('heading', { name: 'Recordings', level: 1 }).waitFor();
    await phone.getByRole('listitem', { name: running.title }).waitFor();
    const wide = await phone.evaluate(() => document.documentElement.scrollWidth);
    t.ok(wide <= 390, `the recordings fit too (${wide})`);
    await phone.screenshot({ path: `${app.dir}/screenshots/recordings-phone.png`, fullPage: true });
  });

  await t.test('an inactive account is told so', async (t) => {
    await host.createUser('dormant', 'dormant-password', { active: false });
    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await page.getByLabel('Username').fill('dormant');
    await page.getByLabel('Password').fill('dormant-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'User Account Inactive' }).waitFor();
    t.pass('the sign-in page shows the server\'s message');
    await app.screenshot('inactive');
  });

  // The running recording is left to the host's teardown, which stops the recorder.
  t.same(app.pageErrors, [], 'no page errors');
});
