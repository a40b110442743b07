/**
 * loadConfig from YAML files on disk: defaults, environment overrides, errors
 * that name the key, the value and what was expected; and the real CLI refusing
 * to start on a bad config without leaving anything behind.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { loadConfig } from '../../core/config/load.js';
import { demoConfig } from '../../core/config/demo.js';
import { CLI, tmpDir } from '../helpers/http.js';
import { cleanEnv, unusedPort } from '../helpers/env.js';

const MiB = 1024 * 1024;

t.test('loadConfig', async (t) => {
  const dir = await tmpDir(t, 'antenna-config-');
  const write = async (name: string, text: string) => {
    const file = path.join(dir, name);
    await writeFile(file, text);
    return file;
  };

  t.test('defaults are applied to what the file leaves out', async (t) => {
    const file = await write('small.yaml', 'server:\n  port: 9123\n  dataDir: ./mydata\n');
    const c = loadConfig({ file, env: {} });
    t.equal(c.server.port, 9123);
    t.equal(c.server.host, '0.0.0.0');
    t.equal(c.server.dataDir, path.join(dir, 'mydata'), 'a relative dataDir is resolved against the file\'s directory');
    t.equal(c.server.avatarMaxBytes, 5 * MiB);
    t.equal(c.server.trustProxy, false);
    t.strictSame(c.database, { client: 'sqlite3' });
    t.strictSame(c.ffmpeg, { ffmpegPath: 'auto', ffprobePath: 'auto', maxTranscodes: 0, maxTranscodesPerUser: 2 });
    t.strictSame(c.clients, { dashOnly: { exact: ['STB'], prefix: ['Android'] } });
    t.strictSame(c.auth, { maxFailuresPerUser: 5, maxFailuresPerAddress: 20, failureWindowSeconds: 900, mediaKeyTtlSeconds: 6 * 3600, sessionIdleDays: 90 });
    t.strictSame(c.logging, { level: 'info' });
    t.strictSame(c.plugins, {});
    t.equal(c.file, file);
    t.equal(c.baseDir, dir);

    const empty = loadConfig({ file: await write('empty.yaml', ''), env: {} });
    t.equal(empty.server.port, 8096, 'an empty file is all defaults');
    t.equal(empty.server.dataDir, path.join(dir, 'data'));
  });

  t.test('the PRODUCT.md example parses', async (t) => {
    const file = await write('full.yaml', [
      'server: { host: 127.0.0.1, port: 8096, dataDir: ./data }',
      'database: { client: sqlite3 }',
      'ffmpeg: { ffmpegPath: auto, ffprobePath: auto }',
      'clients:',
      '  dashOnly: { exact: [STB], prefix: [Android] }',
      'plugins:',
      '  live-tv:     {}',
      '  subtitles:   {}',
      '  ./examples/tuner-test-pattern: { channels: 3 }',
      '  web:',
    ].join('\n'));
    const c = loadConfig({ file, env: {} });
    t.strictSame(c.plugins, { 'live-tv': {}, subtitles: {}, './examples/tuner-test-pattern': { channels: 3 }, web: {} }, 'an empty plugin block is {}');
    t.equal(c.server.host, '127.0.0.1');
  });

  t.test('ANTENNA_PORT, ANTENNA_HOST and ANTENNA_DATA_DIR win over the file', async (t) => {
    const file = await write('env.yaml', 'server:\n  host: 127.0.0.1\n  port: 9123\n  dataDir: ./from-file\n');
    const other = path.join(dir, 'from-env');
    const c = loadConfig({ file, env: { ANTENNA_PORT: '9555', ANTENNA_HOST: '::1', ANTENNA_DATA_DIR: other } });
    t.equal(c.server.port, 9555);
    t.equal(c.server.host, '::1');
    t.equal(c.server.dataDir, other);
    const relative = loadConfig({ file, env: { ANTENNA_DATA_DIR: 'rel-data' } });
    t.equal(relative.server.dataDir, path.resolve('rel-data'), 'a relative ANTENNA_DATA_DIR is taken from the working directory');
    t.equal(relative.server.port, 9123, 'unset variables leave the file alone');
    // ANTENNA_CONFIG names the file when --config is not given.
    t.equal(loadConfig({ env: { ANTENNA_CONFIG: file } }).server.port, 9123);
    // Even without a file.
    t.equal(loadConfig({ env: { ANTENNA_PORT: '7000' }, baseDir: dir }).server.port, 7000);
    t.throws(() => loadConfig({ file, env: { ANTENNA_PORT: 'abc' } }), /server\.port: got "abc", expected integer/, 'a bad ANTENNA_PORT is named like a bad file value');
  });

  t.test('invalid values name the key, the value and what was expected', async (t) => {
    const cases: [string, string, RegExp][] = [
      ['port: "abc"', 'server:\n  port: abc\n', /server\.port: got "abc", expected integer/],
      ['port: 70000', 'server:\n  port: 70000\n', /server\.port: got 70000, expected integer .*65535/],
      ['port: -1', 'server:\n  port: -1\n', /server\.port: got -1, expected integer .*0/],
      ['unknown key server.prot', 'server:\n  prot: 8080\n', /server\.prot: got 8080, expected no such key/],
      ['unknown top-level key', 'sever:\n  port: 8080\n', /sever: got \{"port":8080\}, expected no such key/],
      ['database.client: mysql', 'database:\n  client: mysql\n', /database\.client: got "mysql", expected .*"sqlite3".*"pg"/],
      ['logging.level: loud', 'logging:\n  level: loud\n', /logging\.level: got "loud", expected .*"info"/],
      ['plugins a list', 'plugins:\n  - live-tv\n  - vod\n', /plugins: got \["live-tv","vod"\], expected object/],
      ['plugins a string', 'plugins: live-tv\n', /plugins: got "live-tv", expected object/],
      ['a plugin block a list', 'plugins:\n  live-tv: [a]\n', /plugins\.live-tv: got \["a"\], expected object/],
      ['server a list', 'server:\n  - port: 1\n', /server: got \[\{"port":1\}\], expected object/],
      ['auth.maxFailuresPerUser: 0', 'auth:\n  maxFailuresPerUser: 0\n', /auth\.maxFailuresPerUser: got 0, expected integer .*1/],
      ['clients.dashOnly.exact a string', 'clients:\n  dashOnly:\n    exact: STB\n', /clients\.dashOnly\.exact: got "STB", expected array/],
      ['avatarMaxBytes a string', 'server:\n  avatarMaxBytes: 5MB\n', /server\.avatarMaxBytes: got "5MB", expected integer/],
    ];
    for (const [what, text, message] of cases) {
      const file = await write(`bad-${what.replace(/\W+/g, '-')}.yaml`, text);
      t.throws(() => loadConfig({ file, env: {} }), message, what);
    }
    // Several problems are reported together.
    const file = await write('many.yaml', 'server:\n  port: abc\n  prot: 1\ndatabase:\n  client: mysql\n');
    let message = '';
    try {
      loadConfig({ file, env: {} });
    } catch (err) {
      message = (err as Error).message;
    }
    t.match(message, /server\.port/);
    t.match(message, /server\.prot/);
    t.match(message, /database\.client/);
  });

  t.test('invalid YAML and unreadable files name the file', async (t) => {
    const messageOf = (file: string) => {
      try {
        loadConfig({ file, env: {} });
      } catch (err) {
        return (err as Error).message;
      }
      return 'no error';
    };
    const file = await write('broken.yaml', 'server:\n  port: [8096\n  host: x\n');
    t.ok(messageOf(file).includes(file), 'invalid YAML: the file is named');
    t.match(messageOf(file), /YAML/);
    const top = await write('list.yaml', '- a\n- b\n');
    t.ok(messageOf(top).includes(top), 'a list at the top: the file is named');
    t.match(messageOf(top), /mapping/);
    const missing = path.join(dir, 'nope.yaml');
    t.ok(messageOf(missing).includes(missing), 'a missing file is named');
  });

  t.test('no file: the demo config, data in ./data', async (t) => {
    const c = loadConfig({ env: {}, baseDir: dir });
    t.equal(c.file, undefined);
    t.match(c.server.dataDir, /[/\\]data$/);
    t.equal(c.server.dataDir, path.join(dir, 'data'));
    t.equal(c.server.port, 8096);
    t.equal(c.database.client, 'sqlite3');
    t.strictSame(Object.keys(c.plugins).sort(), Object.keys(demoConfig().plugins as object).sort(), 'the demo\'s plugins');
    const fromCwd = loadConfig({ env: {} });
    t.equal(fromCwd.server.dataDir, path.resolve('data'), 'relative to the working directory by default');
  });
});

t.test('the CLI refuses a bad config: exit 1, the key on stderr, nothing started', async (t) => {
  const dir = await tmpDir(t, 'antenna-config-cli-');
  const port = await unusedPort();
  const bad = path.join(dir, 'bad.yaml');
  await writeFile(bad, `server:\n  host: 127.0.0.1\n  port: ${port}\n  dataDir: ./state\n  prot: 8080\n`);
  const run = spawnSync(process.execPath, [CLI, 'serve', '--config', bad], { cwd: dir, env: cleanEnv(), encoding: 'utf8', timeout: 60_000 });
  t.equal(run.signal, null, 'it exited by itself');
  t.equal(run.status, 1, 'exit code 1');
  t.match(run.stderr, /server\.prot/, 'stderr names the key');
  t.match(run.stderr, /8080/, 'and the value');
  t.notMatch(run.stderr, /\n\s+at /, 'no stack trace');
  t.notOk(existsSync(path.join(dir, 'state')), 'the data dir was not created');
  t.notOk(existsSync(path.join(dir, 'data')), 'nor the demo\'s');

  const env = spawnSync(process.execPath, [CLI, 'serve'], { cwd: dir, env: cleanEnv({ ANTENNA_PORT: 'eighty', ANTENNA_DATA_DIR: path.join(dir, 'envdata') }), encoding: 'utf8', timeout: 60_000 });
  t.equal(env.status, 1, 'a bad ANTENNA_PORT: exit code 1');
  t.match(env.stderr, /server\.port: got "eighty"/);
  t.notOk(existsSync(path.join(dir, 'envdata')), 'the data dir was not created');

  const yaml = path.join(dir, 'broken.yaml');
  await writeFile(yaml, 'server: [\n');
  const broken = spawnSync(process.execPath, [CLI, 'serve', '--config', yaml], { cwd: dir, env: cleanEnv(), encoding: 'utf8', timeout: 60_000 });
  t.equal(broken.status, 1, 'invalid YAML: exit code 1');
  t.ok(broken.stderr.includes(yaml), 'stderr names the file');

  // Valid config, but a plugin that does not exist: start-up stops before listening.
  const plugin = path.join(dir, 'plugin.yaml');
  await writeFile(plugin, `server:\n  host: 127.0.0.1\n  port: ${port}\n  dataDir: ./pdata\nplugins:\n  no-such-plugin-anywhere: {}\n`);
  const missing = spawnSync(process.execPath, [CLI, 'serve', '--config', plugin], { cwd: dir, env: cleanEnv(), encoding: 'utf8', timeout: 60_000 });
  t.equal(missing.signal, null, 'it exited by itself');
  t.equal(missing.status, 1, 'unknown plugin: exit code 1');
  t.match(missing.stderr, /no-such-plugin-anywhere/, 'stderr names the plugin');
  t.notMatch(missing.stdout, /"event":"listening"/, 'it never logged listening');
});
