/**
 * What survives a restart (tokens, revocations, the JWT secret, avatars) and the data
 * dir's permissions: owner-only, even when it was created looser or files were
 * loosened in between, and with a umask of 0.
 */
import t from 'tap';
import { chmod, readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { createTestHost } from '../../sdk/testing.js';
import { expectError, multipart, tinyPng, tmpDir } from '../helpers/http.js';

const mode = async (p: string) => (await stat(p)).mode & 0o777;

/** Every file and directory under dir (dir included), with its permission bits. */
async function walk(dir: string): Promise<[string, number][]> {
  const out: [string, number][] = [[dir, await mode(dir)]];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await walk(p)));
    else out.push([p, await mode(p)]);
  }
  return out;
}

t.test('restart on the same data dir', async (t) => {
  // With umask 0, only the modes the code asks for protect the files.
  const umask = process.umask(0);
  t.teardown(() => { process.umask(umask); });
  const parent = await tmpDir(t, 'antenna-restart-');
  await chmod(parent, 0o755);
  const dataDir = path.join(parent, 'data'); // does not exist yet: the host creates it

  const first = await createTestHost({ dataDir });
  let closed = false;
  t.teardown(() => (closed ? undefined : first.close()));
  await first.createUser('paula', 'paula-password');
  const token = await first.login('paula', 'paula-password', { 'device-id': 'tv' });
  const revoked = await first.login('paula', 'paula-password', { 'device-id': 'phone' });
  t.equal((await first.inject({ method: 'POST', url: '/logout', headers: { authorization: `Bearer ${revoked}` } })).statusCode, 200);
  const { body, contentType } = multipart([{ name: 'avatar', filename: 'a.png', contentType: 'image/png', data: tinyPng() }]);
  const up = await first.inject({ method: 'POST', url: '/api/user/me/avatar', headers: { authorization: `Bearer ${token}`, 'content-type': contentType }, payload: body });
  t.equal(up.statusCode, 200, 'avatar uploaded');

  t.equal(await mode(dataDir), 0o700, 'data dir is 0700');
  t.equal(await mode(path.join(dataDir, 'jwt-secret')), 0o600, 'jwt-secret is 0600');
  // (On PostgreSQL, ANTENNA_TEST_PG, there is no database file.)
  const sqlite = first.host.knex.client.config.client === 'sqlite3';
  if (sqlite) t.equal(await mode(path.join(dataDir, 'antenna.db')), 0o600, 'antenna.db is 0600');
  for (const [p, m] of await walk(dataDir)) t.equal(m & 0o077, 0, `${path.relative(parent, p)} (${m.toString(8)}) is not readable by group or others`);
  const secret = await readFile(path.join(dataDir, 'jwt-secret'), 'utf8');
  t.ok(secret.trim().length >= 32, 'a long secret');

  await first.close();
  closed = true;

  // Someone loosened the permissions while the server was down.
  await chmod(dataDir, 0o755);
  await chmod(path.join(dataDir, 'jwt-secret'), 0o644);
  if (sqlite) await chmod(path.join(dataDir, 'antenna.db'), 0o644);

  const second = await createTestHost({ dataDir });
  t.teardown(() => second.close());
  t.equal(await readFile(path.join(dataDir, 'jwt-secret'), 'utf8'), secret, 'the same secret is reused');
  t.equal(await mode(dataDir), 0o700, 'data dir is 0700 again');
  t.equal(await mode(path.join(dataDir, 'jwt-secret')), 0o600, 'jwt-secret is 0600 again');
  if (sqlite) t.equal(await mode(path.join(dataDir, 'antenna.db')), 0o600, 'antenna.db is 0600 again');

  const res = await second.inject({ method: 'GET', url: '/me', headers: { authorization: `Bearer ${token}` } });
  t.equal(res.statusCode, 200, 'the token still works after the restart');
  t.equal(res.json().user.username, 'paula');
  expectError(t, await second.inject({ method: 'GET', url: '/me', headers: { authorization: `Bearer ${revoked}` } }), 401, undefined, 'a logged-out token stays revoked');
  const avatar = await second.inject({ method: 'GET', url: '/api/user/me/avatar', headers: { authorization: `Bearer ${token}` } });
  t.equal(avatar.statusCode, 200, 'the avatar survived');
  t.ok(avatar.rawPayload.equals(tinyPng()));
  t.equal((await second.inject({ method: 'GET', url: '/me', headers: second.authHeaders })).statusCode, 200, 'the admin (not recreated) still signs in');
  t.equal((await second.host.accounts.listUsers()).filter((u) => u.username === 'admin').length, 1, 'one admin');
});

t.test('a secret file that is too short is replaced, and old tokens stop working', async (t) => {
  const dataDir = await tmpDir(t, 'antenna-secret-');
  const first = await createTestHost({ dataDir });
  const token = first.adminToken;
  await first.close();
  const { writeFile } = await import('node:fs/promises');
  await writeFile(path.join(dataDir, 'jwt-secret'), 'short\n');
  const second = await createTestHost({ dataDir });
  t.teardown(() => second.close());
  const secret = (await readFile(path.join(dataDir, 'jwt-secret'), 'utf8')).trim();
  t.ok(secret.length >= 32, 'a new long secret');
  t.equal(await mode(path.join(dataDir, 'jwt-secret')), 0o600);
  expectError(t, await second.inject({ method: 'GET', url: '/me', headers: { authorization: `Bearer ${token}` } }), 401, undefined, 'token signed with the old secret');
});
