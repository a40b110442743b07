/**
 * Access keys through the real CLI (`antenna access-key create|list|revoke`)
 * beside a running server on the same data dir: the server takes a key the CLI
 * made and refuses it within a second of its revocation; the database file does
 * not hold a key; no log line shows one; the admin API's rules.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createTestHost } from '../../sdk/testing.js';
import { CLI, expectError, tmpDir } from '../helpers/http.js';
import { cleanEnv } from '../helpers/env.js';
import { redact } from '../../core/redact.js';
import { waitFor } from '../helpers/wait.js';

t.setTimeout(300_000);

t.test('access keys', async (t) => {
  const cwd = await tmpDir(t, 'antenna-keys-cwd-');
  const dataDir = path.join(await tmpDir(t, 'antenna-keys-data-'), 'data');
  const host = await createTestHost({ dataDir, plugins: { hdhomerun: {} } });
  t.teardown(() => host.close());
  // The CLI on the server's database (SQLite in the data dir, or the test's PostgreSQL database).
  const config = path.join(cwd, 'antenna.yaml');
  await writeFile(config, JSON.stringify({ server: { dataDir }, database: host.host.config.database }));
  const cli = (args: string[]) => spawnSync(process.execPath, [CLI, ...args, '--config', config], { cwd, env: cleanEnv(), encoding: 'utf8', timeout: 60_000 });

  const created = cli(['access-key', 'create', 'kodi']);
  t.equal(created.status, 0, created.stderr);
  const key = /\/hdhr\/([A-Za-z0-9_-]{32})\//.exec(created.stdout)?.[1];
  t.ok(key, 'the CLI prints the key in its URLs');
  t.match(created.stdout, `/iptv/${key}/channels.m3u`);
  t.equal((await host.inject({ method: 'GET', url: `/hdhr/${key}/discover.json` })).statusCode, 200, 'the server takes the key the CLI made');
  t.match(cli(['access-key', 'list']).stdout, new RegExp(`\\d+\\tkodi\\t${key}`), 'list shows it again');
  t.equal(cli(['access-key', 'create', 'kodi']).status, 1, 'a name in use is refused');
  t.match(cli(['access-key', 'create', 'kodi']).stderr, /exists/);
  t.equal(cli(['access-key', 'create', '42']).status, 1, 'a number is not a name');
  t.equal(cli(['access-key', 'create']).status, 2, 'create needs a name');

  const rows = JSON.stringify(await host.host.knex('access_keys').select());
  t.notOk(rows.includes(key!), 'the database does not hold the key');
  if (host.host.config.database.client === 'sqlite3') t.notOk((await readFile(path.join(dataDir, 'antenna.db'))).includes(Buffer.from(key!)), 'nor does its file');

  const revoked = cli(['access-key', 'revoke', 'kodi']);
  t.equal(revoked.status, 0, revoked.stderr);
  await waitFor(async () => (await host.inject({ method: 'GET', url: `/hdhr/${key}/discover.json` })).statusCode === 401 || undefined, 3000, 100);
  t.pass('the server refuses the key the CLI revoked within a second or so');
  t.equal(cli(['access-key', 'revoke', 'kodi']).status, 1, 'revoking it again: no active key of that name');
  t.match(cli(['access-key', 'list']).stdout, /kodi\trevoked /);

  // The admin API: the same keys, admin only.
  const api = await host.inject({ method: 'POST', url: '/api/admin/access-keys', headers: host.authHeaders, payload: { name: 'kodi' } });
  t.equal(api.statusCode, 201, 'a revoked key\'s name can be used again');
  t.not(api.json().access_key.key, key, 'by a new key');
  expectError(t, await host.inject({ method: 'POST', url: '/api/admin/access-keys', headers: host.authHeaders, payload: { name: 'a b' } }), 400, /name/);
  expectError(t, await host.inject({ method: 'POST', url: '/api/admin/access-keys', headers: host.authHeaders, payload: {} }), 400, /name is required/);
  expectError(t, await host.inject({ method: 'DELETE', url: '/api/admin/access-keys/99999', headers: host.authHeaders }), 404);
  const user = await host.createUser('viewer', 'viewer-password');
  const token = await host.login('viewer', 'viewer-password');
  void user;
  expectError(t, await host.inject({ method: 'GET', url: '/api/admin/access-keys', headers: { authorization: `Bearer ${token}` } }), 403);

  // Keys never reach a log line: requests with a wrong and a right key log their URL redacted.
  const fresh = api.json().access_key.key as string;
  await host.inject({ method: 'GET', url: `/hdhr/${fresh}/nothing-here` });
  await host.inject({ method: 'GET', url: `/hdhr/${fresh}/lineup.json?x=1` });
  const lines = JSON.stringify(host.host.logs.query({ level: 'trace', limit: 2000 }));
  t.notOk(lines.includes(fresh) || lines.includes(key!), 'no log line holds a key');
  t.match(lines, '/hdhr/***/nothing-here', 'the request line is there, redacted');
  t.equal(redact(`GET /iptv/${fresh}/guide.xml.gz`), 'GET /iptv/***/guide.xml.gz');
});
