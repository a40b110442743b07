/**
 * Passwords: at least 8 characters besides leading and trailing spaces (eight
 * spaces are no password), for the API and `user add`; a password change is
 * rate limited per user, so a stolen token cannot guess the current password.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { createTestHost, type TestHost } from '../../sdk/testing.js';
import { cleanEnv } from '../helpers/env.js';
import { CLI, expectError, tmpDir } from '../helpers/http.js';

async function login(host: TestHost, username: string, password: string, headers: Record<string, string> = {}, remoteAddress?: string) {
  return host.inject({ method: 'POST', url: '/login', payload: { username, password }, headers, ...(remoteAddress ? { remoteAddress } : {}) });
}
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

t.test('password policy: 8 characters besides leading and trailing spaces, for the API and the CLI', async (t) => {
  const host = await createTestHost();
  t.teardown(() => host.close());
  for (const weak of ['        ', '\t\t\t\t\t\t\t\t\t', '   abc   ', ' 1234567 ', '\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0']) {
    await t.rejects(host.createUser(`weak${weak.length}${weak.charCodeAt(0)}`, weak), { statusCode: 400, message: /at least 8 characters/ }, `user add with ${JSON.stringify(weak)}`);
    const res = await host.inject({ method: 'PUT', url: '/api/user/me/password', headers: host.authHeaders, payload: { current_password: host.adminPassword, new_password: weak } });
    expectError(t, res, 400, /new_password must be at least 8 characters/, `new password ${JSON.stringify(weak)}`);
  }
  t.equal((await login(host, 'admin', host.adminPassword)).statusCode, 200, 'the refusals changed nothing');
  t.ok(await host.createUser('spaced', '  pass word 1  '), 'inner and outer spaces are allowed with 8 other characters');
  t.equal((await login(host, 'spaced', '  pass word 1  ')).statusCode, 200, 'and the password is kept exactly as given');
});

t.test('PUT /api/user/me/password is rate limited: a stolen token cannot guess the password', async (t) => {
  const host = await createTestHost({ config: { auth: { maxFailuresPerUser: 3, maxFailuresPerAddress: 1000 } } });
  t.teardown(() => host.close());
  await host.createUser('pat', 'pat-password-1');
  const token = await host.login('pat', 'pat-password-1');
  const put = (current: string) => host.inject({ method: 'PUT', url: '/api/user/me/password', headers: bearer(token), payload: { current_password: current, new_password: 'pat-password-2' } });
  for (let i = 1; i <= 3; i++) expectError(t, await put(`guess-${i}`), 403, undefined, `guess ${i}`);
  const limited = await put('pat-password-1');
  expectError(t, limited, 429, /Too many wrong passwords/, 'then even the right one waits');
  t.match(String(limited.headers['retry-after']), /^[1-9]\d*$/, 'with Retry-After');
  t.equal((await login(host, 'pat', 'pat-password-1')).statusCode, 200, 'the password did not change');
  // Another user's changes are not affected.
  const admin = await host.inject({ method: 'PUT', url: '/api/user/me/password', headers: host.authHeaders, payload: { current_password: host.adminPassword, new_password: 'admin-password-2' } });
  t.equal(admin.statusCode, 200, 'another user changes theirs');
});

t.test('antenna user add applies the same policy and the same username form', async (t) => {
  const dataDir = await tmpDir(t, 'antenna-passwords-cli-');
  const cli = (args: string[]) => spawnSync(process.execPath, [CLI, ...args], { env: cleanEnv({ ANTENNA_DATA_DIR: dataDir }), encoding: 'utf8', timeout: 60_000 });
  const spaces = cli(['user', 'add', 'erin', '--password', '        ']);
  t.equal(spaces.status, 1, 'eight spaces: exit 1');
  t.match(spaces.stderr, /at least 8 characters, not counting leading and trailing spaces/);
  t.equal(cli(['user', 'add', 'alice', '--password', 'alice-password']).status, 0);
  const padded = cli(['user', 'add', ' ALICE\u00a0', '--password', 'another-password']);
  t.equal(padded.status, 1, 'a padded spelling of an existing name: exit 1');
  t.match(padded.stderr, /already exists/);
});
