/**
 * The real `antenna` CLI as a child process (node dist/core/cli/main.js) on a
 * temp data dir: user add / list / passwd / set, help, errors, and `serve`
 * announcing the first admin's password. A test host running on the same data
 * dir shows the server sees what the CLI did.
 */
import t from 'tap';
import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createTestHost } from '../../sdk/testing.js';
import { CLI, expectError, tmpDir } from '../helpers/http.js';
import { cleanEnv, unusedPort } from '../helpers/env.js';

// Each command is a node process of its own (and `help` loads the plugins to list their commands):
// seconds apiece on a busy 2-core machine.
t.setTimeout(300_000);

t.test('antenna user …', async (t) => {
  const cwd = await tmpDir(t, 'antenna-cli-cwd-');
  const dataDir = path.join(await tmpDir(t, 'antenna-cli-data-'), 'data');
  const cli = (args: string[], input?: string): SpawnSyncReturns<string> =>
    spawnSync(process.execPath, [CLI, ...args], { cwd, env: cleanEnv({ ANTENNA_DATA_DIR: dataDir }), encoding: 'utf8', timeout: 60_000, input });

  // A server on the same data dir, running while the CLI changes things. It trusts cached
  // session and user state for 5 s, so its clock is moved past that after each change.
  let offset = 0;
  const host = await createTestHost({ dataDir, clock: { now: () => Date.now() + offset } });
  t.teardown(() => host.close());
  const later = () => { offset += 6_000; };
  const login = (username: string, password: string, deviceId = 'cli-test') =>
    host.inject({ method: 'POST', url: '/login', payload: { username, password }, headers: { 'device-id': deviceId } });
  const me = (token: string) => host.inject({ method: 'GET', url: '/me', headers: { authorization: `Bearer ${token}` } });

  t.test('help', async (t) => {
    const help = cli(['help']);
    t.equal(help.status, 0);
    t.match(help.stdout, /user add NAME --password P \[--admin\] \[--inactive\] \[--library ID/);
    t.match(help.stdout, /user passwd NAME/);
    t.match(help.stdout, /user list/);
    t.match(help.stdout, /user set NAME/);
    t.match(help.stdout, /serve/);
  });

  t.test('user add and user list', async (t) => {
    let r = cli(['user', 'add', 'alice', '--password', 'alice-password']);
    t.equal(r.status, 0, r.stderr);
    t.match(r.stdout, /^created user alice \(id \d+\)\n$/);
    r = cli(['user', 'add', 'bob', '--password', 'bob-password', '--admin']);
    t.equal(r.status, 0, r.stderr);
    t.match(r.stdout, /created user bob \(id \d+\) admin/);
    r = cli(['user', 'add', 'carol', '--password', 'carol-password', '--inactive']);
    t.equal(r.status, 0, r.stderr);
    t.match(r.stdout, /created user carol \(id \d+\) inactive/);
    r = cli(['user', 'add', 'dave', '--password', 'dave-password', '--library', '3', '--library', '7']);
    t.equal(r.status, 0, r.stderr);
    t.notOk(existsSync(path.join(cwd, 'data')), 'ANTENNA_DATA_DIR was used, not ./data');

    r = cli(['user', 'list']);
    t.equal(r.status, 0, r.stderr);
    const rows = r.stdout.trim().split('\n').map((l) => l.split('\t'));
    t.strictSame(rows[0], ['ID', 'USERNAME', 'ADMIN', 'ACTIVE', 'LIBRARIES']);
    const byName = Object.fromEntries(rows.slice(1).map((row) => [row[1], row]));
    t.strictSame(Object.keys(byName).sort(), ['admin', 'alice', 'bob', 'carol', 'dave']);
    t.strictSame(byName.admin!.slice(2), ['yes', 'yes', 'all']);
    t.strictSame(byName.alice!.slice(2), ['no', 'yes', 'all']);
    t.strictSame(byName.bob!.slice(2), ['yes', 'yes', 'all']);
    t.strictSame(byName.carol!.slice(2), ['no', 'no', 'all']);
    t.strictSame(byName.dave!.slice(2), ['no', 'yes', '3,7']);
    for (const row of rows.slice(1)) t.match(row[0], /^\d+$/, `${row[1]} has a numeric id`);

    // The running server sees them.
    const profile = async (name: string, password: string) => {
      const res = await login(name, password);
      t.equal(res.statusCode, 200, `${name} signs in`);
      return (await me(res.json().auth.token)).json().user;
    };
    t.match(await profile('alice', 'alice-password'), { username: 'alice', admin: false, active: true, all_libraries_access: true });
    t.match(await profile('bob', 'bob-password'), { username: 'bob', admin: true, all_libraries_access: true });
    t.match(await profile('dave', 'dave-password'), { username: 'dave', admin: false, all_libraries_access: false });
    t.strictSame(await host.host.accounts.libraries(Number(byName.dave![0])), ['3', '7']);
    const carol = await login('carol', 'carol-password');
    t.equal(carol.statusCode, 403);
    t.equal(carol.body, '{"error":"User Account Inactive"}');
  });

  t.test('user add errors', async (t) => {
    let r = cli(['user', 'add', 'Alice', '--password', 'another-password']);
    t.equal(r.status, 1, 'duplicate (usernames are case-insensitive): exit 1');
    t.match(r.stderr, /already exists/);
    r = cli(['user', 'add', 'erin', '--password', 'short']);
    t.equal(r.status, 1, 'short password: exit 1');
    t.match(r.stderr, /at least 8/);
    r = cli(['user', 'add', '--password', 'long-enough']);
    t.equal(r.status, 2, 'no NAME: usage error, exit 2');
    t.match(r.stderr, /needs a NAME/);
    t.match(r.stderr, /Usage:/);
    t.equal((await host.host.accounts.listUsers()).length, 5, 'nothing was created');
  });

  t.test('user passwd signs the user out everywhere', async (t) => {
    const token = (await login('alice', 'alice-password', 'alice-tv')).json().auth.token;
    t.equal((await me(token)).statusCode, 200);

    // alice's sessions: 'cli-test' (signed in above) and 'alice-tv'.
    const r = cli(['user', 'passwd', 'alice', '--password', 'alice-new-password']);
    t.equal(r.status, 0, r.stderr);
    t.match(r.stdout, /password of alice changed; 2 session\(s\) signed out/);
    later();
    expectError(t, await me(token), 401, undefined, 'the old token');
    expectError(t, await login('alice', 'alice-password'), 401, undefined, 'the old password');
    t.equal((await login('alice', 'alice-new-password')).statusCode, 200, 'the new password works');

    // Without --password it is read from stdin.
    const prompted = cli(['user', 'passwd', 'alice'], 'alice-typed-password\n');
    t.equal(prompted.status, 0, prompted.stderr);
    t.match(prompted.stderr, /New password for alice/);
    t.equal((await login('alice', 'alice-typed-password')).statusCode, 200, 'the typed password works');

    const bad = cli(['user', 'passwd', 'nobody', '--password', 'whatever-password']);
    t.equal(bad.status, 1);
    t.match(bad.stderr, /no user named nobody/);
  });

  t.test('user set --inactive / --active / --no-admin / --library / --all-libraries', async (t) => {
    const token = (await login('bob', 'bob-password', 'bob-tv')).json().auth.token;
    t.equal((await me(token)).statusCode, 200);

    let r = cli(['user', 'set', 'bob', '--inactive']);
    t.equal(r.status, 0, r.stderr);
    t.match(r.stdout, /updated user bob/);
    later();
    const denied = await me(token);
    t.equal(denied.statusCode, 403, 'a signed-in user made inactive is refused');
    t.equal(denied.body, '{"error":"User Account Inactive"}');
    const relogin = await login('bob', 'bob-password');
    t.equal(relogin.statusCode, 403);
    t.equal(relogin.body, '{"error":"User Account Inactive"}');

    r = cli(['user', 'set', 'bob', '--active', '--no-admin', '--library', '5']);
    t.equal(r.status, 0, r.stderr);
    later();
    const back = await me(token);
    t.equal(back.statusCode, 200, 'active again: the same token works');
    t.match(back.json().user, { admin: false, active: true, all_libraries_access: false });

    r = cli(['user', 'set', 'bob', '--all-libraries']);
    t.equal(r.status, 0, r.stderr);
    t.match(cli(['user', 'list']).stdout, /\tbob\tno\tyes\tall\n/);

    r = cli(['user', 'set', 'bob', '--active', '--inactive']);
    t.equal(r.status, 2, '--active with --inactive: usage error');
    r = cli(['user', 'set', 'nobody', '--inactive']);
    t.equal(r.status, 1);
    t.match(r.stderr, /no user named nobody/);
  });

  t.test('unknown user command', async (t) => {
    const r = cli(['user', 'frobnicate']);
    t.equal(r.status, 2);
    t.match(r.stderr, /unknown user command frobnicate/);
    t.match(r.stderr, /Usage:/);
  });
});

t.test('antenna serve: first start announces the admin password, SIGTERM stops it', async (t) => {
  const dir = await tmpDir(t, 'antenna-cli-serve-');
  const port = await unusedPort();
  const config = path.join(dir, 'antenna.yaml');
  await writeFile(config, `server:\n  host: 127.0.0.1\n  port: ${port}\n  dataDir: ./state\nlogging:\n  level: warn\n`);
  const child = spawn(process.execPath, [CLI, 'serve', '--config', config], { cwd: dir, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let exited = false;
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => { exited = true; resolve(code); }));
  t.teardown(async () => { if (!exited) { child.kill('SIGKILL'); await exit; } });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => { stderr += d; });
  child.stdout.resume();

  const base = `http://127.0.0.1:${port}`;
  let version: Response | undefined;
  for (let i = 0; i < 300 && !exited && !version; i++) {
    version = await fetch(`${base}/api/version`).catch(() => undefined);
    if (!version) await new Promise((r) => setTimeout(r, 100));
  }
  t.ok(version, `the server answers (stderr: ${stderr})`);
  t.equal(version?.status, 200);

  const m = /as admin with password: (\S+)/.exec(stderr);
  t.ok(m, 'the generated admin password is printed');
  t.equal(stderr.match(/with password:/g)?.length, 1, 'once');
  const res = await fetch(`${base}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: m?.[1] }) });
  t.equal(res.status, 200, 'the printed password signs in');
  const token = ((await res.json()) as any).auth?.token;
  const me = await fetch(`${base}/me`, { headers: { authorization: `Bearer ${token}` } });
  t.match(await me.json(), { user: { username: 'admin', admin: true } });

  child.kill('SIGTERM');
  t.equal(await exit, 0, 'SIGTERM: exit code 0');
  t.ok(existsSync(path.join(dir, 'state', 'antenna.db')), 'the data dir is the configured one');
});

