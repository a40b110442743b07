/**
 * The administration side of the real `antenna` CLI (node dist/core/cli/main.js):
 * `help` lists the enabled plugins' commands, `user remove`, `library list`;
 * and `serve` from a config file it may not write (run as another user): the
 * banner names the URL and the first admin's password, the settings are shown
 * read-only with the reason, and a change is refused with it.
 */
import t from 'tap';
import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { statSync } from 'node:fs';
import { chmod, chown, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CLI, tmpDir } from '../helpers/http.js';
import { cleanEnv, unusedPort } from '../helpers/env.js';

const NOBODY = 65534;

/** Why another user cannot run `file` (a folder on the way to it others may not enter), or false. */
function closedToOthers(file: string): string | false {
  for (let d = path.dirname(file); ; d = path.dirname(d)) {
    if ((statSync(d).mode & 0o001) === 0) return `${d} is closed to other users`;
    if (path.dirname(d) === d) return false;
  }
}

// Each command is a node process loading the plugins; on a busy 2-core machine that is seconds apiece.
t.setTimeout(300_000);

t.test('help, user remove, library list', async (t) => {
  const dir = await tmpDir(t, 'antenna-cli-admin-');
  await mkdir(path.join(dir, 'movies'));
  const config = path.join(dir, 'antenna.yaml');
  await writeFile(config, `server: { dataDir: ./data }\nplugins:\n  vod:\n    libraries: [{ name: Films, type: movies, paths: [./movies] }]\n    initialScan: skip\n  m3u-tuner: {}\n`);
  const cli = (args: string[]): SpawnSyncReturns<string> =>
    spawnSync(process.execPath, [CLI, ...args, '--config', config], { cwd: dir, env: cleanEnv(), encoding: 'utf8', timeout: 120_000 });

  const help = cli(['help']);
  t.equal(help.status, 0, help.stderr);
  for (const line of ['user remove NAME', 'user add NAME --password P', 'plugins']) t.ok(help.stdout.includes(`  ${line}`), `help lists ${line}`);
  t.match(help.stdout, /Commands of the enabled plugins:\n/);
  t.match(help.stdout, /  library scan \[ID\]\n\s+Scan every library now, or the one with this id \(plugin vod\)/);
  t.match(help.stdout, /  library list\n\s+List the libraries with the ids .* \(plugin vod\)/);
  t.match(help.stdout, /  guide refresh\n\s+Re-import every tuner playlist and guide source now \(plugin live-tv\)/, 'a plugin enabled through another one');

  const broken = spawnSync(process.execPath, [CLI, 'help', '--config', path.join(dir, 'missing.yaml')], { cwd: dir, env: cleanEnv(), encoding: 'utf8' });
  t.equal(broken.status, 0, 'help works without a readable config');
  t.match(broken.stdout, /user remove NAME/);
  t.match(broken.stdout, /the plugins' commands are not known: cannot read config file/);

  let r = cli(['user', 'add', 'alice', '--password', 'alice-password']);
  t.equal(r.status, 0, r.stderr);
  r = cli(['user', 'add', 'boss', '--password', 'boss-password', '--admin']);
  t.equal(r.status, 0, r.stderr);
  r = cli(['user', 'remove', 'ALICE']);
  t.equal(r.status, 0, r.stderr);
  t.equal(r.stdout, 'removed user alice\n');
  t.notMatch(cli(['user', 'list']).stdout, /alice/);
  r = cli(['user', 'remove', 'alice']);
  t.equal(r.status, 1);
  t.match(r.stderr, /no user named alice/);
  r = cli(['user', 'remove', 'boss']);
  t.equal(r.status, 1, 'the only administrator stays');
  t.match(r.stderr, /boss is the only active administrator/);
  t.equal(cli(['user', 'remove']).status, 2, 'a NAME is needed');

  r = cli(['library', 'list']);
  t.equal(r.status, 0, r.stderr);
  const rows = r.stdout.trim().split('\n').map((l) => l.split('\t'));
  t.strictSame(rows[0], ['ID', 'NAME', 'TYPE', 'ITEMS', 'FOLDERS']);
  t.match(rows[1], [/^\d+$/, 'Films', 'movies', '0', path.join(dir, 'movies')]);
  t.equal(rows.length, 2);
});

t.test('serve from a config file the server may not write', { skip: process.getuid?.() !== 0 ? 'needs root to run the server as another user' : closedToOthers(CLI) }, async (t) => {
  const dir = await tmpDir(t, 'antenna-cli-readonly-');
  await chmod(dir, 0o755);
  const data = path.join(dir, 'data');
  await mkdir(data);
  await chown(data, NOBODY, NOBODY);
  const port = await unusedPort();
  const config = path.join(dir, 'antenna.yaml');
  // Nothing is probed here, and the npm-shipped ffprobe is executable by its owner only.
  const yaml = `server:\n  host: 127.0.0.1\n  port: ${port}\n  dataDir: ./data\nffmpeg: { ffprobePath: /bin/true }\nlogging: { level: warn }\nplugins:\n  vod: {}   # libraries to come\n`;
  await writeFile(config, yaml, { mode: 0o644 }); // root's: readable, not writable, by nobody

  // Without the test runner's NODE_OPTIONS: its hooks write where this user may not.
  const { NODE_OPTIONS: _runner, ...env } = cleanEnv({ HOME: dir });
  const child = spawn(process.execPath, [CLI, 'serve', '--config', config], { cwd: dir, env, uid: NOBODY, gid: NOBODY, stdio: ['ignore', 'pipe', 'pipe'] });
  let exited = false;
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => { exited = true; resolve(code); }));
  t.teardown(async () => { if (!exited) { child.kill('SIGKILL'); await exit; } });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => { stderr += d; });
  child.stdout.resume();
  for (let i = 0; i < 600 && !exited && !/with password: \S+/.test(stderr); i++) await new Promise((r) => setTimeout(r, 100));

  t.match(stderr, new RegExp(`Antenna \\S+ is running\\.\\n  Open http://127\\.0\\.0\\.1:${port}/ in a browser\\.\\n  Sign in as admin with password: \\S+\\n`), `the banner (stderr: ${stderr})`);
  const password = /with password: (\S+)/.exec(stderr)![1];
  const base = `http://127.0.0.1:${port}`;
  const login = await fetch(`${base}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password }) });
  const token = ((await login.json()) as any).auth.token;
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };

  const settings = (await (await fetch(`${base}/api/admin/settings`, { headers })).json()) as any;
  t.match(settings.file, { path: config, editable: false, reason: `The config file ${config} is read-only: this server may not write it. Change it by hand, or give the server write access to it.` });
  const change = await fetch(`${base}/api/admin/settings`, { method: 'PATCH', headers, body: JSON.stringify({ section: 'plugins.vod', values: { scanInterval: '1h' } }) });
  t.equal(change.status, 409);
  t.match(await change.json(), { error: /read-only: this server may not write it/ });
  const library = await fetch(`${base}/api/admin/libraries`, { method: 'POST', headers, body: JSON.stringify({ name: 'M', type: 'movies', paths: [dir] }) });
  t.equal(library.status, 409);
  t.equal(await readFile(config, 'utf8'), yaml, 'the file is untouched');

  child.kill('SIGTERM');
  t.equal(await exit, 0);
});
