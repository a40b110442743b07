/**
 * Device sessions and media keys: a media key never renews itself (play-info
 * asked with `?key=` and no token hands back keys that expire with it); a
 * session unused for auth.sessionIdleDays expires; a user lists their
 * sessions and signs a device out (GET/DELETE /api/user/me/sessions).
 */
import t from 'tap';
import path from 'node:path';
import { createTestHost } from '../../sdk/testing.js';
import { expectError } from '../helpers/http.js';
import { catalog, clip, tempDir, vodHost } from '../plugins/vod/fixtures.js';

const DAY = 86_400_000;
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
/** The expiry (s since epoch) a media key carries. */
const expiryOf = (key: string) => Number(Buffer.from(key.split('.')[0]!, 'base64url').toString().split('.')[2]);

t.test('a request signed in by a media key never gets a key that outlives it', async (t) => {
  const dir = await tempDir(t);
  await clip(path.join(dir, 'Clip (2020).mp4'), { seconds: 1, width: 160, height: 90 });
  let now = Date.now();
  const host = await vodHost([{ name: 'Movies', type: 'movies', paths: [dir] }], { clock: { now: () => now } });
  t.teardown(() => host.close());
  const id = (await catalog(host)).id('Clip');
  const playInfo = async (query: string, headers: Record<string, string> = {}) => host.inject({ method: 'GET', url: `/watch/vod/${id}/play-info${query}`, headers });
  const keyIn = (url: string) => new URL(url, 'http://x').searchParams.get('key')!;

  const first = await playInfo('', host.authHeaders);
  t.equal(first.statusCode, 200);
  const k1 = keyIn(first.json().url);
  t.ok(expiryOf(k1) * 1000 > now + 5 * 3600_000, 'a bearer token gets a key good for the configured lifetime (6 h)');

  now += 2 * 3600_000;
  const renewed = await playInfo(`?key=${k1}`);
  t.equal(renewed.statusCode, 200, 'the key opens play-info');
  const k2 = keyIn(renewed.json().url);
  t.equal(k2, k1, 'but what it hands back is the very same key, not a fresh one');
  t.equal(expiryOf(k2), expiryOf(k1), 'expiring when it does');
  const viaApiKey = await playInfo(`?api_key=${host.adminToken}`);
  t.ok(expiryOf(keyIn(viaApiKey.json().url)) > expiryOf(k1), 'api_key (a token) still gets a fresh one');

  now = expiryOf(k1) * 1000 + 1000;
  expectError(t, await playInfo(`?key=${k1}`), 401, 'Media key expired', 'past its expiry the leaked key is dead');
  expectError(t, await host.inject({ method: 'GET', url: `/watch/vod/${id}/file?key=${k1}` }), 401, undefined, 'for the file too');
});

t.test('a session unused for auth.sessionIdleDays expires; one in use does not', async (t) => {
  let now = Date.now();
  const host = await createTestHost({ clock: { now: () => now }, config: { auth: { sessionIdleDays: 90 } } });
  t.teardown(() => host.close());
  await host.createUser('sam', 'sam-password-1');
  const idle = await host.login('sam', 'sam-password-1', { 'device-id': 'old-tablet' });
  const used = await host.login('sam', 'sam-password-1', { 'device-id': 'phone' });
  for (let day = 0; day < 120; day += 30) {
    now += 30 * DAY;
    t.equal((await host.inject({ method: 'GET', url: '/me', headers: bearer(used) })).statusCode, 200, `day ${day + 30}: the phone, used monthly, is signed in`);
  }
  expectError(t, await host.inject({ method: 'GET', url: '/me', headers: bearer(idle) }), 401, 'Session expired; sign in again', 'the tablet, unused for 120 days, is not');
  const sessions = (await host.inject({ method: 'GET', url: '/api/user/me/sessions', headers: bearer(used) })).json().sessions;
  t.strictSame(sessions.map((s: { device_id: string }) => s.device_id), ['phone'], 'and is no longer listed');

  const never = await createTestHost({ clock: { now: () => now }, config: { auth: { sessionIdleDays: 0 } } });
  t.teardown(() => never.close());
  now += 400 * DAY;
  t.equal((await never.inject({ method: 'GET', url: '/me', headers: never.authHeaders })).statusCode, 200, 'sessionIdleDays: 0 keeps sessions for ever');
});

t.test('GET and DELETE /api/user/me/sessions: a user sees their devices and signs one out', async (t) => {
  const host = await createTestHost();
  t.teardown(() => host.close());
  await host.createUser('lee', 'lee-password-1');
  await host.createUser('kim', 'kim-password-1');
  const tv = await host.login('lee', 'lee-password-1', { 'device-id': 'living-room', 'device-os': 'STB', 'user-agent': 'Antenna-STB/1.0' });
  const laptop = await host.login('lee', 'lee-password-1', { 'device-id': 'laptop', 'user-agent': 'Firefox/128' });
  const kim = await host.login('kim', 'kim-password-1', { 'device-id': 'kims-phone' });
  const list = async (token: string) => {
    const res = await host.inject({ method: 'GET', url: '/api/user/me/sessions', headers: bearer(token) });
    t.equal(res.statusCode, 200);
    return res.json().sessions as { id: string; device_id: string; device_os: string | null; user_agent: string | null; created_at: string; last_used_at: string; current: boolean }[];
  };

  const mine = await list(laptop);
  t.strictSame(mine.map((s) => s.device_id).sort(), ['laptop', 'living-room'], 'only lee\'s own sessions');
  const tvSession = mine.find((s) => s.device_id === 'living-room')!;
  t.match(tvSession, { device_os: 'STB', user_agent: 'Antenna-STB/1.0', current: false });
  t.match(tvSession.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  t.match(tvSession.last_used_at, /Z$/);
  t.equal(mine.find((s) => s.device_id === 'laptop')!.current, true, 'the calling one is marked current');

  // Another user's session, or one that does not exist: 404, and nothing is revoked.
  const kimsId = (await list(kim))[0]!.id;
  expectError(t, await host.inject({ method: 'DELETE', url: `/api/user/me/sessions/${kimsId}`, headers: bearer(laptop) }), 404, undefined, 'another user\'s session');
  expectError(t, await host.inject({ method: 'DELETE', url: '/api/user/me/sessions/nope', headers: bearer(laptop) }), 404, undefined, 'an unknown id');
  t.equal((await host.inject({ method: 'GET', url: '/me', headers: bearer(kim) })).statusCode, 200, 'kim is still signed in');

  const revoke = await host.inject({ method: 'DELETE', url: `/api/user/me/sessions/${tvSession.id}`, headers: bearer(laptop) });
  t.equal(revoke.statusCode, 200);
  t.strictSame(revoke.json(), { ok: true });
  expectError(t, await host.inject({ method: 'GET', url: '/me', headers: bearer(tv) }), 401, undefined, 'the TV is signed out at once');
  t.strictSame((await list(laptop)).map((s) => s.device_id), ['laptop'], 'and gone from the list');
  expectError(t, await host.inject({ method: 'DELETE', url: `/api/user/me/sessions/${tvSession.id}`, headers: bearer(laptop) }), 404, undefined, 'revoking it again');
  expectError(t, await host.inject({ method: 'GET', url: '/api/user/me/sessions' }), 401, undefined, 'a token is needed');

  // Revoking the calling session is a logout.
  const self = (await list(laptop))[0]!.id;
  t.equal((await host.inject({ method: 'DELETE', url: `/api/user/me/sessions/${self}`, headers: bearer(laptop) })).statusCode, 200);
  expectError(t, await host.inject({ method: 'GET', url: '/me', headers: bearer(laptop) }), 401, undefined, 'the caller signed itself out');

  const doc = (await host.inject({ method: 'GET', url: '/api/docs/json', headers: host.authHeaders })).json();
  t.ok(doc.paths['/api/user/me/sessions']?.get && doc.paths['/api/user/me/sessions/{id}']?.delete, 'both routes are in the OpenAPI document');
});
