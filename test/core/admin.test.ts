/**
 * The administration API over real HTTP handlers and a real config file:
 * every /api/admin route refuses anyone but an administrator (the route
 * table, core and plugins alike); users (create, grants, password,
 * (de)activate, remove, lockout); settings written back to the YAML file with
 * its comments, applied live or waiting for a restart; a config that cannot
 * be written; jobs with their schedule; the recent log lines, redacted.
 */
import t from 'tap';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createTestHost, type TestHost } from '../../sdk/testing.js';
import { routeTable } from '../../core/http/app.js';
import { expectError, tmpDir } from '../helpers/http.js';

// Four hosts with every first-party plugin, and every admin route asked four times.
t.setTimeout(300_000);

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** A config file as a person writes one: comments, flow mappings, a plugin listed with nothing under it. */
const YAML = (dir: string) => `# Antenna, as set up by hand
plugins:
  # Recordings
  dvr:
    path: ${dir}/recordings   # the big disk
    prePadding: 60s    # before the programme
    postPadding: 2m
  vod: { libraries: [], scanInterval: 6h }   # no libraries yet
  m3u-tuner:
  xmltv-guide: { sources: [] }
  web: {}
auth:
  maxFailuresPerUser: 3   # strict
`;

async function hostWithFile(t: Tap): Promise<{ host: TestHost; file: string; dir: string }> {
  const dir = await tmpDir(t, 'antenna-admin-');
  const file = path.join(dir, 'antenna.yaml');
  await writeFile(file, YAML(dir));
  const host = await createTestHost({ configFile: file });
  t.teardown(() => host.close());
  return { host, file, dir };
}

type Tap = Parameters<typeof tmpDir>[0];

t.test('every /api/admin route: 401 without a token, 403 for a user who is not an administrator', async (t) => {
  const { host } = await hostWithFile(t);
  await host.createUser('viewer', 'viewer-password');
  const user = await host.login('viewer', 'viewer-password');
  const routes = routeTable(host.app).filter((r) => r.url.startsWith('/api/admin') && r.method !== 'HEAD');
  const keys = routes.map((r) => `${r.method} ${r.url}`);
  for (const must of [
    'GET /api/admin/users', 'POST /api/admin/users', 'PATCH /api/admin/users/:id', 'DELETE /api/admin/users/:id', 'DELETE /api/admin/users/:id/lockout',
    'GET /api/admin/settings', 'PATCH /api/admin/settings', 'GET /api/admin/jobs', 'GET /api/admin/logs',
    'GET /api/admin/libraries', 'POST /api/admin/libraries', 'PATCH /api/admin/libraries/:id', 'DELETE /api/admin/libraries/:id', 'POST /api/admin/libraries/:id/scan',
    'GET /api/admin/sources', 'POST /api/admin/sources/:id/refresh',
    'GET /api/admin/sources/playlists', 'POST /api/admin/sources/playlists', 'PUT /api/admin/sources/playlists/:id', 'DELETE /api/admin/sources/playlists/:id',
    'GET /api/admin/sources/guides', 'POST /api/admin/sources/guides', 'PUT /api/admin/sources/guides/:id', 'DELETE /api/admin/sources/guides/:id',
  ]) t.ok(keys.includes(must), `${must} exists`);
  for (const r of routes) {
    const url = r.url.replace(/:[A-Za-z0-9_]+/g, '1');
    const method = r.method as 'GET';
    expectError(t, await host.inject({ method, url }), 401, undefined, `${method} ${url} without a token`);
    // With a body the route would accept, and with none: the answer never depends on it.
    for (const payload of [undefined, { username: 'x', password: 'long-enough-1', name: 'x', url: 'x', type: 'movies', paths: ['/'], section: 'logging', values: { level: 'debug' } }]) {
      expectError(t, await host.inject({ method, url, headers: bearer(user), payload }), 403, 'Administrator only', `${method} ${url} as a user`);
    }
    const admin = await host.inject({ method, url, headers: host.authHeaders });
    t.not(admin.statusCode, 403, `${method} ${url} as the administrator is not 403`);
    t.ok(admin.statusCode < 500, `${method} ${url} as the administrator: no server error (${admin.statusCode})`);
  }
  const doc = (await host.inject({ method: 'GET', url: '/api/docs/json', headers: host.authHeaders })).json();
  for (const r of routes) {
    const openapi = r.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    t.ok(doc.paths[openapi]?.[r.method.toLowerCase()], `${r.method} ${r.url} is in the OpenAPI document`);
  }
});

t.test('users: create, grant, change, lock out, remove', async (t) => {
  const { host } = await hostWithFile(t);
  const api = (method: string, url: string, payload?: unknown, token = host.adminToken) => host.inject({ method: method as 'GET', url, payload: payload as object, headers: bearer(token) });

  let res = await api('POST', '/api/admin/users', { username: 'carol', password: 'carol-password', libraries: ['7'] });
  t.equal(res.statusCode, 201);
  const carol = res.json().user;
  t.match(carol, { username: 'carol', admin: false, active: true, all_libraries_access: false, libraries: ['7'], locked_for: null });
  t.notOk('password_hash' in carol, 'no password hash in the answer');
  expectError(t, await api('POST', '/api/admin/users', { username: 'CAROL', password: 'another-password' }), 409, /already exists/);
  expectError(t, await api('POST', '/api/admin/users', { username: 'dan', password: 'short' }), 400, /at least 8/);
  expectError(t, await api('POST', '/api/admin/users', { username: 'dan', password: 'long-enough', admin: 'yes' }), 400);

  const list = (await api('GET', '/api/admin/users')).json().users;
  t.same(list.map((u: any) => u.username), ['admin', 'carol']);

  let token = await host.login('carol', 'carol-password');
  t.match((await api('GET', '/me', undefined, token)).json().user, { all_libraries_access: false });

  res = await api('PATCH', `/api/admin/users/${carol.id}`, { libraries: null, admin: true });
  t.match(res.json().user, { admin: true, all_libraries_access: true, libraries: [] });
  t.match((await api('GET', '/me', undefined, token)).json().user, { admin: true }, 'the change shows at once');
  res = await api('PATCH', `/api/admin/users/${carol.id}`, { admin: false, libraries: ['3', '4'] });
  t.match(res.json().user, { admin: false, all_libraries_access: false, libraries: ['3', '4'] });

  expectError(t, await api('PATCH', `/api/admin/users/${carol.id}`, { password: 'short' }), 400, /^password must be at least 8/);
  res = await api('PATCH', `/api/admin/users/${carol.id}`, { password: 'reset-by-admin' });
  t.equal(res.statusCode, 200);
  expectError(t, await api('GET', '/me', undefined, token), 401, undefined, 'a password reset signs the user out');
  token = await host.login('carol', 'reset-by-admin');

  res = await api('PATCH', `/api/admin/users/${carol.id}`, { active: false });
  t.match(res.json().user, { active: false });
  expectError(t, await api('GET', '/me', undefined, token), 401, undefined, 'deactivating signs the user out');
  expectError(t, await host.inject({ method: 'POST', url: '/login', payload: { username: 'carol', password: 'reset-by-admin' } }), 403, 'User Account Inactive');
  await api('PATCH', `/api/admin/users/${carol.id}`, { active: true });

  const me = (await api('GET', '/me')).json().user;
  expectError(t, await api('PATCH', `/api/admin/users/${me.id}`, { admin: false }), 409, /yourself/);
  expectError(t, await api('PATCH', `/api/admin/users/${me.id}`, { active: false }), 409, /yourself/);
  expectError(t, await api('DELETE', `/api/admin/users/${me.id}`), 409, /yourself/);
  expectError(t, await api('PATCH', '/api/admin/users/999', { active: true }), 404);
  expectError(t, await api('PATCH', `/api/admin/users/${carol.id}`, {}), 400);
  expectError(t, await api('PATCH', `/api/admin/users/${carol.id}`, { libraries: [''] }), 400);

  // Three failures lock the username out (auth.maxFailuresPerUser in the file); the admin lifts it.
  for (let i = 0; i < 3; i++) await host.inject({ method: 'POST', url: '/login', payload: { username: 'carol', password: 'wrong-password' } });
  expectError(t, await host.inject({ method: 'POST', url: '/login', payload: { username: 'carol', password: 'reset-by-admin' } }), 429);
  const locked = (await api('GET', '/api/admin/users')).json().users.find((u: any) => u.id === carol.id);
  t.ok(locked.locked_for > 0 && locked.locked_for <= 900, `locked out for ${locked.locked_for} s`);
  res = await api('DELETE', `/api/admin/users/${carol.id}/lockout`);
  t.match(res.json().user, { locked_for: null });
  token = await host.login('carol', 'reset-by-admin');

  res = await api('DELETE', `/api/admin/users/${carol.id}`);
  t.same(res.json(), { ok: true });
  expectError(t, await api('GET', '/me', undefined, token), 401, undefined, 'a removed user is signed out');
  expectError(t, await api('DELETE', `/api/admin/users/${carol.id}`), 404);
  t.same((await api('GET', '/api/admin/users')).json().users.map((u: any) => u.username), ['admin']);
});

t.test('settings: written back to the file with its comments, applied live or after a restart', async (t) => {
  const { host, file } = await hostWithFile(t);
  const get = async () => (await host.inject({ method: 'GET', url: '/api/admin/settings', headers: host.authHeaders })).json();
  const patch = (section: string, values: Record<string, unknown>) => host.inject({ method: 'PATCH', url: '/api/admin/settings', headers: host.authHeaders, payload: { section, values } });

  const page = await get();
  t.match(page.file, { path: file, editable: true });
  const section = (id: string) => page.sections.find((s: any) => s.id === id);
  const field = (s: any, key: string) => s.fields.find((f: any) => f.key === key);
  t.match(field(section('plugins.dvr'), 'prePadding'), { kind: 'duration', value: '60s', effective: '60s', default: '60s', live: false, restartNeeded: false });
  t.match(field(section('plugins.vod'), 'scanInterval'), { kind: 'duration', value: '6h', live: true });
  t.match(field(section('plugins.vod'), 'preset'), { kind: 'choice', choices: ['ultrafast', 'superfast', 'veryfast', 'faster', 'fast', 'medium'], live: false });
  t.match(field(section('logging'), 'level'), { kind: 'choice' });
  t.match(field(section('server'), 'dataDir'), { readOnly: true });
  t.notOk(field(section('plugins.vod'), 'libraries'), 'lists have screens of their own');

  let res = await patch('plugins.dvr', { prePadding: '30s', postPadding: '5m' });
  t.equal(res.statusCode, 200, res.body);
  t.same(res.json().result, { changed: ['prePadding', 'postPadding'], applied: [], restartNeeded: ['prePadding', 'postPadding'] }, 'the DVR applies padding at its next start');
  let text = await readFile(file, 'utf8');
  t.match(text, /prePadding: 30s # before the programme\n/, 'the value changed, its comment stayed');
  t.match(text, /postPadding: 5m\n/);
  for (const kept of ['# Antenna, as set up by hand', '# Recordings', '# the big disk', '# no libraries yet', '# strict', '  m3u-tuner:\n', '  web: {}\n']) t.ok(text.includes(kept), `kept: ${kept.trim()}`);
  t.ok(text.indexOf('dvr:') < text.indexOf('vod:') && text.indexOf('vod:') < text.indexOf('auth:'), 'the order of the sections is kept');

  res = await patch('plugins.vod', { scanInterval: '2h' });
  t.same(res.json().result, { changed: ['scanInterval'], applied: ['scanInterval'], restartNeeded: [] }, 'vod reschedules its scans at once');
  const task = (await host.inject({ method: 'GET', url: '/api/admin/jobs', headers: host.authHeaders })).json().tasks.find((x: any) => x.id === 'vod:scan');
  t.equal(task.every_ms, 2 * 3600_000, 'the scan schedule follows');
  t.match(await readFile(file, 'utf8'), /vod: \{ libraries: \[\], scanInterval: 2h \} +# no libraries yet/, 'a flow mapping stays one line');

  // Back to what is in effect: no restart needed any more.
  res = await patch('plugins.dvr', { prePadding: '60s' });
  t.same(res.json().result.restartNeeded, ['postPadding']);
  t.match(field(res.json().sections.find((s: any) => s.id === 'plugins.dvr'), 'postPadding'), { restartNeeded: true, value: '5m', effective: '2m' });

  // null: back to the default (the key leaves the file).
  res = await patch('auth', { maxFailuresPerUser: null });
  t.same(res.json().result, { changed: ['maxFailuresPerUser'], applied: [], restartNeeded: ['maxFailuresPerUser'] });
  text = await readFile(file, 'utf8');
  t.notMatch(text, /maxFailuresPerUser/);

  const before = await readFile(file, 'utf8');
  expectError(t, await patch('plugins.dvr', { prePadding: 'soon' }), 400, /^plugins\.dvr\.prePadding: got "soon", expected/);
  expectError(t, await patch('plugins.vod', { scanConcurrency: 99 }), 400, /plugins\.vod\.scanConcurrency: got 99/);
  expectError(t, await patch('plugins.vod', { libraries: [] }), 400, /no such setting here/);
  expectError(t, await patch('server', { dataDir: '/elsewhere' }), 400, /server\.dataDir cannot be changed here/);
  expectError(t, await patch('nowhere', { a: 1 }), 404);
  t.equal(await readFile(file, 'utf8'), before, 'a refused change leaves the file as it was');

  // A file broken by hand meanwhile is not overwritten.
  await writeFile(file, before + 'plugins: [oops\n');
  expectError(t, await patch('plugins.dvr', { prePadding: '10s' }), 409, /not valid YAML/);
  await writeFile(file, before);
});

t.test('no config file (the demo): settings are shown read-only, with the reason, and changes are refused', async (t) => {
  const host = await createTestHost({ plugins: { vod: {}, 'm3u-tuner': {} } });
  t.teardown(() => host.close());
  const page = (await host.inject({ method: 'GET', url: '/api/admin/settings', headers: host.authHeaders })).json();
  t.match(page.file, { path: null, editable: false, reason: /no config file/ });
  expectError(t, await host.inject({ method: 'PATCH', url: '/api/admin/settings', headers: host.authHeaders, payload: { section: 'plugins.vod', values: { scanInterval: '1h' } } }), 409, /no config file/);
  t.match((await host.inject({ method: 'GET', url: '/api/admin/libraries', headers: host.authHeaders })).json(), { editable: false, reason: /no config file/ });
  const dir = await tmpDir(t);
  expectError(t, await host.inject({ method: 'POST', url: '/api/admin/libraries', headers: host.authHeaders, payload: { name: 'M', type: 'movies', paths: [dir] } }), 409, /no config file/);
  expectError(t, await host.inject({ method: 'POST', url: '/api/admin/sources/playlists', headers: host.authHeaders, payload: { name: 'P', url: '/x.m3u' } }), 409, /no config file/);
});

t.test('jobs with the scheduled tasks, and the recent log lines filtered and redacted', async (t) => {
  const { host, dir } = await hostWithFile(t);
  // A playlist behind credentials that fails to import: its URL reaches the log, its password must not.
  const playlist = { name: 'Secret', url: `http://someone:hunter2-secret@127.0.0.1:1/tv.m3u?token=abc123token` };
  let res = await host.inject({ method: 'POST', url: '/api/admin/sources/playlists', headers: host.authHeaders, payload: playlist });
  t.equal(res.statusCode, 201, res.body);
  t.notMatch(res.body, /hunter2|abc123token/, 'the answer hides the credentials');

  const deadline = Date.now() + 20_000;
  let failed: any;
  while (!failed && Date.now() < deadline) {
    const sources = (await host.inject({ method: 'GET', url: '/api/admin/sources', headers: host.authHeaders })).json();
    failed = sources.tuners.find((x: any) => x.id === 'm3u:Secret' && x.last_import && !x.last_import.ok);
    if (!failed) await new Promise((r) => setTimeout(r, 100));
  }
  t.ok(failed, 'the import failed and says so');
  t.notMatch(JSON.stringify(failed), /hunter2|abc123token/);

  const jobs = (await host.inject({ method: 'GET', url: '/api/admin/jobs', headers: host.authHeaders })).json();
  t.match(jobs.jobs.find((j: any) => j.key === 'livetv:tuner:m3u:Secret'), { kind: 'livetv-import', state: 'failed', error: /./ });
  t.match(jobs.tasks.find((x: any) => x.id === 'livetv:tuner:m3u:Secret'), { kind: 'livetv.refresh', every_ms: 12 * 3600_000, next_run: /^\d{4}-/ });

  const all = (await host.inject({ method: 'GET', url: '/api/admin/logs?limit=2000', headers: host.authHeaders })).json();
  t.ok(all.entries.length > 5, `${all.entries.length} lines`);
  t.ok(all.entries.every((e: any, i: number) => i === 0 || e.time <= all.entries[i - 1].time), 'newest first');
  t.notMatch(JSON.stringify(all), /hunter2|abc123token/, 'no secret in any line');
  t.ok(all.sources.includes('live-tv') && all.sources.includes('settings'), `sources: ${all.sources.join(', ')}`);
  const warnings = (await host.inject({ method: 'GET', url: '/api/admin/logs?level=warn&source=live-tv', headers: host.authHeaders })).json();
  t.ok(warnings.entries.length > 0, 'the failed import is a warning of live-tv');
  t.ok(warnings.entries.every((e: any) => (e.level === 'warn' || e.level === 'error' || e.level === 'fatal') && e.source === 'live-tv'));
  t.match(warnings.entries.find((e: any) => e.fields.event === 'import_failed'), { msg: /import failed/ });
  expectError(t, await host.inject({ method: 'GET', url: '/api/admin/logs?level=loud', headers: host.authHeaders }), 400);

  res = await host.inject({ method: 'DELETE', url: '/api/admin/sources/playlists/m3u:Secret', headers: host.authHeaders });
  t.equal(res.statusCode, 200);
});
