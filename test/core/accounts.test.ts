/**
 * The account API over HTTP against a real core (SQLite file in a temp dir):
 * login, /me, tokens, logout, inactive users, password change, avatar upload,
 * login rate limits and /api/version. Every error body is exactly {"error"}.
 */
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createTestHost, type TestHost } from '../../sdk/testing.js';
import { routeTable } from '../../core/http/app.js';
import { hashingLoad, MAX_WAITING_HASHES, verifyPassword } from '../../core/auth/password.js';
import {
  REPO_ROOT, decodeJwtPayload, expectError, expectFetchError, multipart, pngOfSize, signJwt, tamperSignature,
  tinyGif, tinyJpeg, tinyPng, tinyWebp, b64url,
} from '../helpers/http.js';

const PKG_VERSION: string = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')).version;
const MiB = 1024 * 1024;

async function login(host: TestHost, username: string, password: string, headers: Record<string, string> = {}, remoteAddress?: string) {
  return host.inject({ method: 'POST', url: '/login', payload: { username, password }, headers, ...(remoteAddress ? { remoteAddress } : {}) });
}
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

const me = (host: TestHost, headers: Record<string, string>) => host.inject({ method: 'GET', url: '/me', headers });

t.test('account API', async (t) => {
  // A high per-address limit: every inject comes from 127.0.0.1, and this group fails logins on purpose.
  const host = await createTestHost({ listen: true, config: { auth: { maxFailuresPerAddress: 1000, maxFailuresPerUser: 1000 } } });
  t.teardown(() => host.close());

  t.test('POST /login returns a token and the Device-Id header as device_id', async (t) => {
    const id = await host.createUser('alice', 'alice-password');
    const res = await login(host, 'alice', 'alice-password', { 'device-id': 'living-room-stb', 'device-os': 'STB' });
    t.equal(res.statusCode, 200);
    const body = res.json();
    t.strictSame(Object.keys(body), ['auth']);
    t.strictSame(Object.keys(body.auth).sort(), ['device_id', 'token']);
    t.equal(body.auth.device_id, 'living-room-stb');
    t.match(body.auth.token, /^[\w-]+\.[\w-]+\.[\w-]+$/, 'a JWT');
    t.equal(decodeJwtPayload(body.auth.token).sub, id, 'the token names the user');
    t.equal((await me(host, bearer(body.auth.token))).statusCode, 200, 'the token works');
    // Usernames are matched case-insensitively.
    t.equal((await login(host, 'ALICE', 'alice-password', { 'device-id': 'other' })).statusCode, 200);
  });

  t.test('without Device-Id the device id is derived stably from the User-Agent', async (t) => {
    await host.createUser('uauser', 'uauser-password');
    const idFor = async (ua: string) => {
      const res = await login(host, 'uauser', 'uauser-password', { 'user-agent': ua });
      t.equal(res.statusCode, 200);
      return res.json().auth.device_id as string;
    };
    const a1 = await idFor('Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0');
    const a2 = await idFor('Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0');
    const b = await idFor('Antenna-TV/2.1 (Android 12)');
    t.type(a1, 'string');
    t.ok(a1.length > 0, 'not empty');
    t.equal(a1, a2, 'same User-Agent, same device id');
    t.not(a1, b, 'different User-Agent, different device id');
    t.not(a1, 'Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0', 'not the raw User-Agent');
  });

  t.test('a new login from the same device replaces that device\'s session', async (t) => {
    await host.createUser('samedevice', 'samedevice-password');
    const first = (await login(host, 'samedevice', 'samedevice-password', { 'device-id': 'tv' })).json().auth.token;
    const other = (await login(host, 'samedevice', 'samedevice-password', { 'device-id': 'phone' })).json().auth.token;
    const second = (await login(host, 'samedevice', 'samedevice-password', { 'device-id': 'tv' })).json().auth.token;
    expectError(t, await me(host, bearer(first)), 401);
    t.equal((await me(host, bearer(second))).statusCode, 200);
    t.equal((await me(host, bearer(other)))
      .statusCode, 200, 'other devices keep their session');
  });

  t.test('wrong password and unknown user: 401 with the same message', async (t) => {
    await host.createUser('bob', 'bob-password');
    const wrong = expectError(t, await login(host, 'bob', 'not-the-password'), 401, undefined, 'wrong password');
    const unknown = expectError(t, await login(host, 'nobody-here', 'bob-password'), 401, undefined, 'unknown user');
    t.equal(wrong.error, unknown.error, 'the message does not reveal whether the user exists');
    t.notMatch(String(wrong.error), /bob|nobody/, 'the message does not echo the username');
  });

  t.test('malformed and invalid login bodies: 400 naming the field', async (t) => {
    const raw = (payload: string, contentType = 'application/json') =>
      host.inject({ method: 'POST', url: '/login', payload, headers: { 'content-type': contentType } });
    expectError(t, await raw('{"username": "a", "password": '), 400, /JSON/i, 'truncated JSON');
    expectError(t, await raw('{username: a}'), 400, /JSON/i, 'not JSON');
    expectError(t, await raw(''), 400, undefined, 'empty body');
    expectError(t, await raw('{}'), 400, /username/, 'no fields');
    expectError(t, await raw('{"username":"bob"}'), 400, /password/, 'no password');
    expectError(t, await raw('{"password":"bob-password"}'), 400, /username/, 'no username');
    expectError(t, await raw('{"username":123,"password":"bob-password"}'), 400, /username/, 'username: 123');
    expectError(t, await raw('{"username":"bob","password":null}'), 400, /password/, 'password: null');
    expectError(t, await raw('{"username":["bob"],"password":"x"}'), 400, /username/, 'username: array');
    expectError(t, await raw('[{"username":"bob","password":"bob-password"}]'), 400, /body/, 'body is an array');
    expectError(t, await raw('"bob"'), 400, /body/, 'body is a string');
    expectError(t, await raw('username=bob&password=bob-password', 'application/x-www-form-urlencoded'), 415, undefined, 'form-encoded');
    expectError(t, await raw('{"username":"","password":"bob-password"}'), 400, /username/, 'empty username');
  });

  t.test('GET /me: exactly the spec\'s user object', async (t) => {
    const id = await host.createUser('carol', 'carol-password');
    const token = (await login(host, 'carol', 'carol-password')).json().auth.token;
    const res = await me(host, bearer(token));
    t.equal(res.statusCode, 200);
    t.match(res.headers['content-type'], /^application\/json/);
    t.strictSame(res.json(), { user: { id, username: 'carol', active: true, admin: false, all_libraries_access: true, favorites: [] } });
    t.strictSame(Object.keys(res.json().user), ['id', 'username', 'active', 'admin', 'all_libraries_access', 'favorites']);

    const adminMe = (await me(host, host.authHeaders)).json();
    t.equal(adminMe.user.username, 'admin');
    t.equal(adminMe.user.admin, true);
    t.equal(adminMe.user.all_libraries_access, true);

    const restricted = await host.createUser('dora', 'dora-password', { libraries: ['3'] });
    const dora = (await login(host, 'dora', 'dora-password')).json().auth.token;
    t.strictSame((await me(host, bearer(dora))).json().user, { id: restricted, username: 'dora', active: true, admin: false, all_libraries_access: false, favorites: [] });
  });

  t.test('bad tokens: 401 {error}', async (t) => {
    await host.createUser('erin', 'erin-password');
    const token = (await login(host, 'erin', 'erin-password')).json().auth.token as string;
    const claims = decodeJwtPayload(token);
    const secret = (await readFile(path.join(host.dataDir, 'jwt-secret'), 'utf8')).trim();

    // Controls: the real token, and one built by hand with the real secret, work, so the failures below are about the one thing changed.
    t.equal((await me(host, bearer(token))).statusCode, 200, 'the real token works');
    t.equal((await me(host, bearer(signJwt({ sid: claims.sid, sub: claims.sub }, secret)))).statusCode, 200, 'a hand-signed token with the real secret works');
    t.equal((await me(host, { authorization: `bearer ${token}` })).statusCode, 200, 'the scheme is case-insensitive');

    const cases: [string, Record<string, string>][] = [
      ['no Authorization header', {}],
      ['tampered signature', bearer(tamperSignature(token))],
      ['tampered payload', bearer(`${token.split('.')[0]}.${b64url({ sid: claims.sid, sub: claims.sub + 1 })}.${token.split('.')[2]}`)],
      ['alg: none', bearer(`${b64url({ alg: 'none' })}.${b64url({ sid: claims.sid, sub: claims.sub })}.`)],
      ['alg: none, typ JWT', bearer(`${b64url({ alg: 'none', typ: 'JWT' })}.${b64url({ sid: claims.sid, sub: claims.sub })}.`)],
      ['signed with another secret', bearer(signJwt({ sid: claims.sid, sub: claims.sub }, 'another-secret-another-secret-another-secret'))],
      ['HS512 with the real secret', bearer((() => {
        const input = `${b64url({ alg: 'HS512', typ: 'JWT' })}.${b64url({ sid: claims.sid, sub: claims.sub })}`;
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        return `${input}.${require('node:crypto').createHmac('sha512', secret).update(input).digest('base64url')}`;
      })())],
      ['unknown session, real secret', bearer(signJwt({ sid: 'no-such-session', sub: claims.sub }, secret))],
      ['session of erin, other user id, real secret', bearer(signJwt({ sid: claims.sid, sub: 1 }, secret))],
      ['sub as a string', bearer(signJwt({ sid: claims.sid, sub: String(claims.sub) }, secret))],
      ['no claims', bearer(signJwt({}, secret))],
      ['empty bearer', { authorization: 'Bearer ' }],
      ['Bearer without token', { authorization: 'Bearer' }],
      ['empty header', { authorization: '' }],
      ['garbage token', bearer('garbage')],
      ['garbage header', { authorization: 'garbage' }],
      ['Basic scheme', { authorization: `Basic ${Buffer.from('erin:erin-password').toString('base64')}` }],
      ['token without scheme', { authorization: token }],
      ['two tokens', { authorization: `Bearer ${token} ${token}` }],
    ];
    for (const [what, headers] of cases) expectError(t, await me(host, headers), 401, undefined, what);
    // Tokens are not accepted in the query string of non-media routes.
    expectError(t, await host.inject({ method: 'GET', url: `/me?api_key=${token}` }), 401, undefined, 'api_key on /me');
    t.equal((await me(host, bearer(token))).statusCode, 200, 'the real token still works');
  });

  t.test('POST /logout revokes the calling session only', async (t) => {
    await host.createUser('frank', 'frank-password');
    const a = (await login(host, 'frank', 'frank-password', { 'device-id': 'a' })).json().auth.token;
    const b = (await login(host, 'frank', 'frank-password', { 'device-id': 'b' })).json().auth.token;
    t.equal((await me(host, bearer(a))).statusCode, 200);
    const out = await host.inject({ method: 'POST', url: '/logout', headers: bearer(a) });
    t.equal(out.statusCode, 200);
    t.strictSame(out.json(), { ok: true });
    expectError(t, await me(host, bearer(a)), 401, undefined, 'after logout');
    expectError(t, await host.inject({ method: 'POST', url: '/logout', headers: bearer(a) }), 401, undefined, 'logout twice');
    t.equal((await me(host, bearer(b))).statusCode, 200, 'the other device is still signed in');
    expectError(t, await host.inject({ method: 'POST', url: '/logout' }), 401, undefined, 'logout without a token');
  });

  t.test('inactive user: 403 "User Account Inactive" on login', async (t) => {
    await host.createUser('ghost', 'ghost-password', { active: false });
    const res = await login(host, 'ghost', 'ghost-password');
    t.equal(res.statusCode, 403);
    t.equal(res.body, '{"error":"User Account Inactive"}');
    t.match(res.headers['content-type'], /^application\/json/);
    // A wrong password does not reveal that the account exists and is inactive.
    expectError(t, await login(host, 'ghost', 'wrong-password'), 401);
  });

  t.test('a user deactivated after login gets 403 on every authenticated call', async (t) => {
    const id = await host.createUser('henry', 'henry-password');
    const token = (await login(host, 'henry', 'henry-password')).json().auth.token;
    t.equal((await me(host, bearer(token))).statusCode, 200);

    await host.host.accounts.update(id, { active: false });
    host.host.auth.invalidateUser(id);

    // Every route that needs a token (it answers 401 without one) answers 403 to henry's token.
    const checked: string[] = [];
    for (const route of routeTable(host.app)) {
      const url = route.url.replace(/:[A-Za-z0-9_]+(\([^)]*\))?/g, '1').replace(/\*/g, '1');
      const method = route.method as 'GET';
      const anonymous = await host.inject({ method, url });
      if (anonymous.statusCode !== 401) continue;
      const res = await host.inject({ method, url, headers: bearer(token) });
      t.equal(res.statusCode, 403, `${route.method} ${route.url}`);
      if (route.method !== 'HEAD') t.equal(res.body, '{"error":"User Account Inactive"}', `${route.method} ${route.url} body`);
      checked.push(`${route.method} ${route.url}`);
    }
    for (const must of ['GET /me', 'POST /logout', 'PUT /api/user/me/password', 'POST /api/user/me/avatar', 'GET /api/user/me/avatar', 'GET /api/docs/json']) {
      t.ok(checked.includes(must), `${must} was checked`);
    }
    const relogin = await login(host, 'henry', 'henry-password');
    t.equal(relogin.statusCode, 403);
    t.equal(relogin.body, '{"error":"User Account Inactive"}');

    // Reactivated, the same token works again: it was the flag, not the token.
    await host.host.accounts.update(id, { active: true });
    host.host.auth.invalidateUser(id);
    t.equal((await me(host, bearer(token))).statusCode, 200);
  });

  t.test('PUT /api/user/me/password', async (t) => {
    await host.createUser('iris', 'iris-old-password');
    const caller = (await login(host, 'iris', 'iris-old-password', { 'device-id': 'laptop' })).json().auth.token;
    const other = (await login(host, 'iris', 'iris-old-password', { 'device-id': 'tv' })).json().auth.token;
    const put = (token: string, payload: unknown) => host.inject({ method: 'PUT', url: '/api/user/me/password', headers: bearer(token), payload: payload as object });

    expectError(t, await put(caller, { current_password: 'wrong-password', new_password: 'iris-new-password' }), 403, undefined, 'wrong current password');
    expectError(t, await put(caller, { current_password: 'iris-old-password', new_password: 'short' }), 400, /new_password/, 'short new password');
    expectError(t, await put(caller, { current_password: 'iris-old-password', new_password: '1234567' }), 400, /new_password/, '7 characters');
    expectError(t, await put(caller, { current_password: 'iris-old-password' }), 400, /new_password/, 'missing new_password');
    expectError(t, await put(caller, { new_password: 'iris-new-password' }), 400, /current_password/, 'missing current_password');
    expectError(t, await put(caller, { current_password: 'iris-old-password', new_password: 12345678 }), 400, /new_password/, 'new_password a number');
    expectError(t, await host.inject({ method: 'PUT', url: '/api/user/me/password', payload: { current_password: 'iris-old-password', new_password: 'iris-new-password' } }), 401, undefined, 'no token');
    t.equal((await me(host, bearer(other))).statusCode, 200, 'failed attempts revoked nothing');
    t.equal((await login(host, 'iris', 'iris-old-password', { 'device-id': 'check' })).statusCode, 200, 'failed attempts changed nothing');

    const ok = await put(caller, { current_password: 'iris-old-password', new_password: 'iris-new-password' });
    t.equal(ok.statusCode, 200);
    t.strictSame(ok.json(), { ok: true });
    expectError(t, await me(host, bearer(other)), 401, undefined, 'the other device is signed out');
    t.equal((await me(host, bearer(caller))).statusCode, 200, 'the caller stays signed in');
    expectError(t, await login(host, 'iris', 'iris-old-password'), 401, undefined, 'old password no longer works');
    t.equal((await login(host, 'iris', 'iris-new-password')).statusCode, 200, 'new password works');
    // Exactly 8 characters is enough.
    t.equal((await put(caller, { current_password: 'iris-new-password', new_password: '12345678' })).statusCode, 200, '8 characters accepted');
    t.equal((await login(host, 'iris', '12345678')).statusCode, 200);
  });

  t.test('avatar upload and download', async (t) => {
    await host.createUser('jane', 'jane-password');
    const token = (await login(host, 'jane', 'jane-password')).json().auth.token as string;
    const auth = bearer(token);
    const upload = (parts: Parameters<typeof multipart>[0]) => {
      const { body, contentType } = multipart(parts);
      return fetch(`${host.url}/api/user/me/avatar`, { method: 'POST', headers: { ...auth, 'content-type': contentType }, body });
    };
    const download = () => fetch(`${host.url}/api/user/me/avatar`, { headers: auth });

    let res = await download();
    expectFetchError(t, res, await res.text(), 404, undefined, 'GET before any upload');

    const images: [string, Buffer, string][] = [
      ['image/png', tinyPng(), 'me.png'], ['image/jpeg', tinyJpeg(), 'me.jpg'],
      ['image/webp', tinyWebp(), 'me.webp'], ['image/gif', tinyGif(), 'me.gif'],
    ];
    for (const [type, data, filename] of images) {
      res = await upload([{ name: 'avatar', filename, contentType: type, data }]);
      t.equal(res.status, 200, `${type} upload`);
      t.equal(await res.text(), '{"avatar_url":"/api/user/me/avatar"}', `${type} body`);
      res = await download();
      t.equal(res.status, 200, `${type} download`);
      t.equal(res.headers.get('content-type'), type, `${type} content-type`);
      t.ok(Buffer.from(await res.arrayBuffer()).equals(data), `${type} bytes round-trip`);
    }

    // By content, not by name or declared type: a JPEG named .png with the wrong type is a JPEG.
    res = await upload([{ name: 'avatar', filename: 'photo.png', contentType: 'image/png', data: tinyJpeg() }]);
    t.equal(res.status, 200);
    await res.text();
    res = await download();
    t.equal(res.headers.get('content-type'), 'image/jpeg', 'type sniffed from the bytes');
    await res.arrayBuffer();

    // The FormData + Blob path a browser takes.
    const form = new FormData();
    form.append('avatar', new Blob([tinyGif()], { type: 'image/gif' }), 'avatar.gif');
    res = await fetch(`${host.url}/api/user/me/avatar`, { method: 'POST', headers: auth, body: form });
    t.equal(res.status, 200, 'FormData upload');
    t.strictSame(await res.json(), { avatar_url: '/api/user/me/avatar' });

    const current = tinyGif();
    const bad: [string, Parameters<typeof multipart>[0], number, RegExp | undefined][] = [
      ['shell script named avatar.png', [{ name: 'avatar', filename: 'avatar.png', contentType: 'image/png', data: '#!/bin/sh\nrm -rf ~\n' }], 415, /PNG|image/i],
      ['SVG', [{ name: 'avatar', filename: 'a.svg', contentType: 'image/svg+xml', data: '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>' }], 415, undefined],
      ['empty file', [{ name: 'avatar', filename: 'a.png', contentType: 'image/png', data: Buffer.alloc(0) }], 415, undefined],
      ['PNG signature cut short', [{ name: 'avatar', filename: 'a.png', contentType: 'image/png', data: tinyPng().subarray(0, 5) }], 415, undefined],
      ['wrong field name', [{ name: 'picture', filename: 'a.png', contentType: 'image/png', data: tinyPng() }], 400, /avatar/],
      ['text field only', [{ name: 'avatar', data: 'not a file' }], 400, /avatar/],
      ['6 MiB image', [{ name: 'avatar', filename: 'big.png', contentType: 'image/png', data: pngOfSize(6 * MiB) }], 413, undefined],
    ];
    for (const [what, parts, status, message] of bad) {
      res = await upload(parts);
      expectFetchError(t, res, await res.text(), status, message, what);
    }
    res = await fetch(`${host.url}/api/user/me/avatar`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ avatar: 'x' }) });
    expectFetchError(t, res, await res.text(), 415, undefined, 'JSON body');
    res = await fetch(`${host.url}/api/user/me/avatar`, { method: 'POST', headers: { ...auth, 'content-type': 'image/png' }, body: tinyPng() });
    expectFetchError(t, res, await res.text(), 415, undefined, 'raw image body');
    res = await fetch(`${host.url}/api/user/me/avatar`, { method: 'POST', headers: auth });
    t.ok([400, 415].includes(res.status), `no body: ${res.status}`);
    expectFetchError(t, res, await res.text(), res.status, undefined, 'no body');

    res = await download();
    t.equal(res.headers.get('content-type'), 'image/gif', 'failed uploads left the avatar alone');
    t.ok(Buffer.from(await res.arrayBuffer()).equals(current));

    // Over the 1 MiB JSON body limit but within the avatar limit; exactly the limit is allowed.
    for (const size of [2 * MiB, 5 * MiB]) {
      res = await upload([{ name: 'avatar', filename: 'big.png', contentType: 'image/png', data: pngOfSize(size) }]);
      t.equal(res.status, 200, `${size} bytes accepted`);
      await res.text();
    }
    res = await upload([{ name: 'avatar', filename: 'big.png', contentType: 'image/png', data: pngOfSize(5 * MiB + 1) }]);
    expectFetchError(t, res, await res.text(), 413, undefined, 'one byte over 5 MiB');
    res = await download();
    t.equal(Buffer.from(await res.arrayBuffer()).length, 5 * MiB, 'the 5 MiB avatar is kept');

    // Avatars are per user, and need a token.
    await host.createUser('kate', 'kate-password');
    const kate = (await login(host, 'kate', 'kate-password')).json().auth.token;
    expectError(t, await host.inject({ method: 'GET', url: '/api/user/me/avatar', headers: bearer(kate) }), 404, undefined, 'another user has none');
    expectError(t, await host.inject({ method: 'GET', url: '/api/user/me/avatar' }), 401, undefined, 'GET without token');
    const anon = multipart([{ name: 'avatar', filename: 'a.png', contentType: 'image/png', data: tinyPng() }]);
    expectError(t, await host.inject({ method: 'POST', url: '/api/user/me/avatar', headers: { 'content-type': anon.contentType }, payload: anon.body }), 401, undefined, 'POST without token');
  });

  t.test('an avatar an older version kept in the data dir moves into the database when first asked for', async (t) => {
    const id = await host.createUser('leo', 'leo-password');
    const auth = bearer((await login(host, 'leo', 'leo-password')).json().auth.token);
    const file = path.join(host.dataDir, 'avatars', String(id));
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, tinyJpeg());
    await host.host.knex('users').where({ id }).update({ avatar_type: 'image/jpeg' });
    for (const when of ['first', 'again, from the database']) {
      const res = await fetch(`${host.url}/api/user/me/avatar`, { headers: auth });
      t.equal(res.status, 200, `served ${when}`);
      t.equal(res.headers.get('content-type'), 'image/jpeg');
      t.ok(Buffer.from(await res.arrayBuffer()).equals(tinyJpeg()), 'its bytes');
      t.notOk(existsSync(file), 'the file is gone from the data dir');
    }
  });

  t.test('GET /api/version without a token', async (t) => {
    const res = await host.inject({ method: 'GET', url: '/api/version' });
    t.equal(res.statusCode, 200);
    t.strictSame(res.json(), { version: PKG_VERSION });
    t.type(PKG_VERSION, 'string');
    const withToken = await host.inject({ method: 'GET', url: '/api/version', headers: host.authHeaders });
    t.strictSame(withToken.json(), { version: PKG_VERSION });
    // A bad token on a public route does no harm.
    t.equal((await host.inject({ method: 'GET', url: '/api/version', headers: bearer('garbage') })).statusCode, 200);
  });

  t.test('a burst of sign-ins does not hold up other requests', async (t) => {
    // Password hashes run in the thread pool that SQLite shares. Sixteen at once used to queue
    // sixteen hashes ahead of /me's query, which then came back after nearly all of them.
    const token = (await login(host, 'alice', 'alice-password')).json().auth.token;
    const burst = 16;
    let finished = 0;
    let mostRunning = 0;
    const logins = Array.from({ length: burst }, (_, i) =>
      login(host, `burst-${i}`, 'not-the-password', {}, `10.9.0.${i + 1}`).then((res) => {
        finished++;
        return res.statusCode;
      }));
    const watch = setInterval(() => { mostRunning = Math.max(mostRunning, hashingLoad().running); }, 1);
    const during = await me(host, bearer(token));
    const finishedBefore = finished;
    const statuses = await Promise.all(logins);
    clearInterval(watch);
    t.equal(during.statusCode, 200);
    t.ok(finishedBefore < burst / 2, `/me answered while sign-ins were still hashing (${finishedBefore} of ${burst} had finished)`);
    t.ok(mostRunning <= 2, `at most two hashes at a time (${mostRunning})`);
    t.strictSame(statuses, new Array(burst).fill(401), 'every sign-in still answered');
    t.strictSame(hashingLoad(), { running: 0, waiting: 0 });
  });

  t.test('beyond MAX_WAITING_HASHES waiting password checks, another is refused at once', async (t) => {
    // A cheap stored hash (scrypt N=1024): the queue is what is tested, not the hash.
    const stored = `scrypt$1024$8$1$${Buffer.alloc(16, 1).toString('base64')}$${Buffer.alloc(32, 2).toString('base64')}`;
    const started: Promise<unknown>[] = [];
    for (;;) {
      started.push(verifyPassword('guess', stored).then((ok) => ok, (err: unknown) => err));
      if (hashingLoad().waiting === MAX_WAITING_HASHES) break;
    }
    const { running } = hashingLoad();
    t.ok(running >= 1, `${running} running, ${MAX_WAITING_HASHES} waiting`);
    const refused = await verifyPassword('guess', stored).then(() => undefined, (err: { statusCode?: number; headers?: Record<string, string>; message?: string }) => err);
    t.equal(refused?.statusCode, 429, 'one more: 429');
    t.equal(refused?.headers?.['retry-after'], '3', 'with Retry-After');
    t.match(refused?.message, /try again/);
    t.strictSame(await Promise.all(started), new Array(running + MAX_WAITING_HASHES).fill(false), 'every check already waiting still answered');
    t.strictSame(hashingLoad(), { running: 0, waiting: 0 });
    const res = await login(host, 'alice', 'alice-password');
    t.equal(res.statusCode, 200, 'and sign-ins work again');
  });

  t.test('unknown routes: 404 {error}', async (t) => {
    expectError(t, await host.inject({ method: 'GET', url: '/no/such/route?api_key=secret-token' }), 404, /no\/such\/route/);
    const res = await host.inject({ method: 'GET', url: '/no/such/route?api_key=secret-token' });
    t.notMatch(res.body, /secret-token/, 'credentials are not echoed');
  });
});

t.test('login rate limit per username and address: strangers cannot lock a user out', async (t) => {
  const host = await createTestHost({ config: { auth: { maxFailuresPerUser: 5, maxFailuresPerAddress: 1000 } } });
  t.teardown(() => host.close());
  await host.createUser('mallory', 'mallory-password');
  await host.createUser('neighbour', 'neighbour-password');

  // Five anonymous wrong passwords from one address.
  for (let i = 1; i <= 5; i++) {
    expectError(t, await login(host, 'mallory', `guess-${i}`, {}, '10.0.0.1'), 401, undefined, `failure ${i}`);
  }
  for (const [what, name, password] of [
    ['the right password', 'mallory', 'mallory-password'],
    ['another spelling of the name', 'MALLORY', 'mallory-password'],
    ['a wrong password', 'mallory', 'guess-6'],
  ]) {
    const res = await login(host, name!, password!, {}, '10.0.0.1');
    expectError(t, res, 429, undefined, `6th attempt from that address with ${what}`);
    const retry = res.headers['retry-after'];
    t.match(String(retry), /^\d+$/, `${what}: Retry-After is whole seconds`);
    t.ok(Number(retry) > 0 && Number(retry) <= 900, `${what}: Retry-After ${retry} is within the 900 s window`);
  }
  // The user, from an address with no failures, signs in: the stranger locked out only themselves.
  t.equal((await login(host, 'mallory', 'mallory-password', {}, '10.0.0.99')).statusCode, 200, 'mallory from her own address');
  // Others, even from the limited address, are not affected.
  t.equal((await login(host, 'neighbour', 'neighbour-password', {}, '10.0.0.1')).statusCode, 200, 'another user from the same address');
  t.equal((await me(host, host.authHeaders)).statusCode, 200, 'sessions already open keep working');

  // Guesses spread over many addresses are limited per address: five each.
  for (let i = 1; i <= 5; i++) expectError(t, await login(host, 'neighbour', `guess-${i}`, {}, '10.0.4.1'), 401);
  expectError(t, await login(host, 'neighbour', 'guess-6', {}, '10.0.4.1'), 429, undefined, 'a sixth from one of them');

  // Four failures then a success resets the count of that address.
  for (let i = 1; i <= 4; i++) expectError(t, await login(host, 'neighbour', `guess-${i}`, {}, '10.0.2.1'), 401);
  t.equal((await login(host, 'neighbour', 'neighbour-password', {}, '10.0.2.1')).statusCode, 200, '4 failures: still allowed');
  for (let i = 1; i <= 4; i++) expectError(t, await login(host, 'neighbour', `guess-${i}`, {}, '10.0.2.1'), 401);
  t.equal((await login(host, 'neighbour', 'neighbour-password', {}, '10.0.2.1')).statusCode, 200, 'count was reset by the success');
});

t.test('login rate limit per client address', async (t) => {
  const host = await createTestHost({ config: { auth: { maxFailuresPerUser: 1000, maxFailuresPerAddress: 4 } } });
  t.teardown(() => host.close());
  await host.createUser('olga', 'olga-password');

  // Four failures from one address, each against a different username.
  for (let i = 1; i <= 4; i++) expectError(t, await login(host, `user-${i}`, 'whatever-password', {}, '192.0.2.7'), 401, undefined, `failure ${i}`);
  const res = await login(host, 'olga', 'olga-password', {}, '192.0.2.7');
  expectError(t, res, 429, undefined, 'the right password from the limited address');
  t.match(String(res.headers['retry-after']), /^[1-9]\d*$/, 'Retry-After is a positive integer');
  expectError(t, await login(host, 'user-9', 'x', {}, '192.0.2.7'), 429, undefined, 'yet another username');
  t.equal((await login(host, 'olga', 'olga-password', {}, '192.0.2.8')).statusCode, 200, 'another address is not limited');
});

t.test('avatar size limit is configurable', async (t) => {
  const host = await createTestHost({ config: { server: { avatarMaxBytes: 4096 } } });
  t.teardown(() => host.close());
  const send = (size: number) => {
    const { body, contentType } = multipart([{ name: 'avatar', filename: 'a.png', contentType: 'image/png', data: pngOfSize(size) }]);
    return host.inject({ method: 'POST', url: '/api/user/me/avatar', headers: { ...host.authHeaders, 'content-type': contentType }, payload: body });
  };
  t.equal((await send(4096)).statusCode, 200, 'at the limit');
  expectError(t, await send(5000), 413, undefined, 'over the limit');
});
