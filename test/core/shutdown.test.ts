import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile, mkdir, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CLI } from '../helpers/repo.js';

const SDK = path.resolve(__dirname, '../../sdk/index.js');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitFor(check: () => boolean | Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A real server process (the CLI) whose plugin starts a long ffmpeg through the
 * job manager; the server is then stopped with a signal and no ffmpeg may survive.
 */
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  t.test(`stopping the server with ${signal} leaves no ffmpeg behind`, async (t) => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-shutdown-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    const pidFile = path.join(dir, 'ffmpeg.pid');
    await mkdir(path.join(dir, 'spawner'));
    await writeFile(path.join(dir, 'spawner', 'index.js'), `
      const sdk = require(${JSON.stringify(SDK)});
      const fs = require('node:fs');
      module.exports = sdk.definePlugin({ id: 'spawner', version: '1.0.0', host: '^1',
        register(env) {
          env.registerInit({ deps: { jobs: sdk.coreServices.jobs, ffmpeg: sdk.coreServices.ffmpeg, lifecycle: sdk.coreServices.lifecycle },
            async init({ jobs, ffmpeg, lifecycle }) {
              lifecycle.onStart(() => {
                jobs.ensure('spawner:long', () => ({ kind: 'test', data: {}, async run(ctx) {
                  const p = ffmpeg.spawn(['-re', '-f', 'lavfi', '-i', 'testsrc2=size=160x120:rate=10', '-t', '600', '-f', 'null', '-'], { signal: ctx.signal, label: 'long' });
                  fs.writeFileSync(${JSON.stringify(pidFile)}, String(p.pid));
                  await p.exited;
                } }));
              });
            } });
        } });`);
    await writeFile(path.join(dir, 'antenna.yaml'), `server: { host: 127.0.0.1, port: 0, dataDir: ./data }\nlogging: { level: warn }\nplugins:\n  ./spawner: {}\n`);
    const server = spawn(process.execPath, [CLI, 'serve', '--config', path.join(dir, 'antenna.yaml')], {
      cwd: dir, stdio: 'ignore', env: { ...process.env, ANTENNA_ADMIN_PASSWORD: 'shutdown-test' },
    });
    const exited = new Promise<number | null>((resolve) => server.once('exit', (code) => resolve(code)));
    t.teardown(() => { if (server.exitCode === null) server.kill('SIGKILL'); });

    await waitFor(async () => !!(await readFile(pidFile, 'utf8').catch(() => '')), 'the plugin to start ffmpeg');
    const pid = Number(await readFile(pidFile, 'utf8'));
    t.ok(pid > 1 && alive(pid), `ffmpeg ${pid} runs under the server`);

    server.kill(signal);
    t.equal(await exited, 0, 'the server exits cleanly');
    await waitFor(() => !alive(pid), 'ffmpeg to be gone', 10_000).catch(() => {});
    t.notOk(alive(pid), 'no ffmpeg survives the server');
  });
}
