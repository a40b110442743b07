/**
 * Usernames have one form (trimmed, NFKC, case-folded), used by sign-in, its
 * rate limit and `user add`: `" bob"`, `"bob\u00a0"`, `"\ufeffbob"` and
 * full-width `ｂｏｂ` are bob, so none of them gets its password checked once
 * bob is limited. Names with control, invisible or direction characters, `.`
 * and `..` are refused; a database whose users clash once normalised refuses
 * to start, naming them.
 */
import t from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createTestHost, type TestHost } from '../../sdk/testing.js';
import { decodeJwtPayload, expectError } from '../helpers/http.js';

async function login(host: TestHost, username: string, password: string, headers: Record<string, string> = {}, remoteAddress?: string) {
  return host.inject({ method: 'POST', url: '/login', payload: { username, password }, headers, ...(remoteAddress ? { remoteAddress } : {}) });
}
/** Asserts that the promise rejects with an error of that HTTP status. */
async function refusedWith(t: { equal(...args: any[]): unknown }, promise: Promise<unknown>, status: number, what: string): Promise<void> {
  const err = await promise.then(() => undefined, (e: { statusCode?: number }) => e);
  t.equal(err?.statusCode, status, what);
}

t.test('a padded or look-alike username is the same username, for the limit and for sign-in', async (t) => {
  const host = await createTestHost({ config: { auth: { maxFailuresPerUser: 5, maxFailuresPerAddress: 1000 } } });
  t.teardown(() => host.close());
  await host.createUser('bob', 'bob-password');
  for (let i = 1; i <= 5; i++) expectError(t, await login(host, 'bob', `guess-${i}`, {}, '198.51.100.7'), 401);
  // Once bob is limited from this address, no spelling of bob gets its password checked there.
  const spellings = [' bob', 'bob ', 'bob\u00a0', '\u00a0bob', '\ufeffbob', 'BOB', 'Bob\t', '\u3000bob', 'ｂｏｂ', 'ＢＯＢ', '\u2003bob\u2003'];
  for (const name of spellings) {
    expectError(t, await login(host, name, 'bob-password', {}, '198.51.100.7'), 429, undefined, `${JSON.stringify(name)} from the limited address`);
  }
  // From elsewhere, each spelling is bob: the right password signs bob in.
  for (const name of spellings) {
    const res = await login(host, name, 'bob-password', { 'device-id': `spelling-${name.codePointAt(0)}` }, '198.51.100.8');
    t.equal(res.statusCode, 200, `${JSON.stringify(name)} signs in as bob`);
    if (res.statusCode === 200) t.equal(decodeJwtPayload(res.json().auth.token).sub, (await host.host.accounts.findByUsername('bob'))!.id);
  }
  // Invisible characters inside a name make another name, which does not exist.
  expectError(t, await login(host, 'b\u200bob', 'bob-password', {}, '198.51.100.8'), 401, undefined, 'a zero-width space inside');
});

t.test('usernames with control, invisible or direction characters are refused at creation, as are . and ..', async (t) => {
  const host = await createTestHost();
  t.teardown(() => host.close());
  const refused = [
    'b\u200bob', '\u200bbob', 'bob\u200d', 'bo\u00adb', 'bob\u2060', '\u202eboB', 'bob\u2066', 'bob\u200f', 'bo\u0000b', 'bo\u001bb', 'bo\u007fb',
    'bo\u0085b', 'bob\u034f', 'bob\ufe0f', '\u3164', 'bo b', 'bo/b', 'bo\\b', '.', '..', ' . ', '', '   ', 'x'.repeat(65),
  ];
  for (const name of refused) {
    await refusedWith(t, host.createUser(name, 'long-enough-password'), 400, `${JSON.stringify(name)} refused`);
  }
  t.equal(await host.createUser('  Zoë\u00a0', 'long-enough-password') > 0, true, 'trimmed, then kept');
  await refusedWith(t, host.createUser('ZOË', 'long-enough-password'), 409, 'the same name in capitals is taken');
  await refusedWith(t, host.createUser('Ｚｏë', 'long-enough-password'), 409, 'so is its full-width form');
  await host.createUser('Straße', 'long-enough-password');
  await refusedWith(t, host.createUser('STRASSE', 'long-enough-password'), 409, 'ß folds to ss');
  for (const ok of ['a.b', '...', 'Zoë-2', 'élodie', '李雷', 'user@example.com']) t.ok(await host.createUser(ok, 'long-enough-password'), `${ok} accepted`);
});

t.test('a database from before: keys are recomputed; users whose names clash once normalised stop the start, named', async (t) => {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'antenna-usernames-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  /** Users inserted as the old rule stored them (key: trimmed and lower-cased), the new migration to run again. */
  const legacy = async (names: string[]) => {
    const host = await createTestHost({ dataDir });
    const now = Date.now();
    await host.host.knex('users').insert(names.map((username) => ({ username, username_key: username.trim().toLowerCase(), password_hash: 'x', created_at: now, updated_at: now })));
    await host.host.knex('migrations_core').where({ name: '003_username_keys' }).delete();
    await host.close();
  };

  await legacy(['Ｃａｒｏｌ', 'Dave']);
  const host = await createTestHost({ dataDir });
  const keys = Object.fromEntries((await host.host.knex('users').select('username', 'username_key')).map((r: { username: string; username_key: string }) => [r.username, r.username_key]));
  t.equal(keys['Ｃａｒｏｌ'], 'carol', 'a full-width name gets its normalised key');
  t.equal(keys.Dave, 'dave', 'others keep theirs');
  t.equal((await host.host.accounts.findByUsername(' CAROL '))?.username, 'Ｃａｒｏｌ', 'and is found by any spelling');
  await host.close();

  await legacy(['bob', 'ｂｏｂ', 'Strasse', 'STRAßE']);
  const refused = await createTestHost({ dataDir }).then((h) => h.close().then(() => undefined), (err: Error) => err);
  t.ok(refused, 'the server does not start');
  t.match(refused?.message, /"bob" \(id \d+\) and "ｂｏｂ" \(id \d+\); "Strasse" \(id \d+\) and "STRAßE" \(id \d+\)/, 'naming each group of users');
  t.match(refused?.message, /UPDATE users SET username = 'ｂｏｂ-\d+', username_key = 'bob-\d+' WHERE id = \d+;/, 'and how to rename one');
});
