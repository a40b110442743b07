/**
 * Issue "Core, SDK and accounts" figures:
 *  - authenticated GET /me throughput vs a bare Fastify route returning constant JSON,
 *    side by side, same load generator (autocannon, 32 connections), servers in child processes;
 *  - server start to first answer with an empty data dir (migrations included).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { signIn } from './server.js';

const REPO = path.resolve(__dirname, '../../..');
const CLI = path.join(REPO, 'dist/core/cli/main.js');

function waitForExit(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', () => resolve())));
}

async function waitUntilAnswering(url: string, deadlineMs = 20_000): Promise<number> {
  const start = Date.now();
  for (;;) {
    try {
      const res = await fetch(url);
      if (res.ok) return Date.now() - start;
    } catch { /* not yet */ }
    if (Date.now() - start > deadlineMs) throw new Error(`${url} did not answer within ${deadlineMs} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function load(url: string, headers: Record<string, string>, seconds: number) {
  const result = await autocannon({ url, connections: 32, duration: seconds, headers });
  return { reqPerSec: Math.round(result.requests.average), p99ms: result.latency.p99, errors: result.errors, non2xx: result.non2xx };
}

async function startAntenna(dataDir: string, port: number): Promise<{ child: ChildProcess; startMs: number }> {
  const t0 = Date.now();
  const child = spawn(process.execPath, [CLI, 'serve'], {
    cwd: dataDir, stdio: 'ignore',
    env: { ...process.env, ANTENNA_DATA_DIR: dataDir, ANTENNA_PORT: String(port), ANTENNA_HOST: '127.0.0.1', ANTENNA_ADMIN_PASSWORD: 'bench-password' },
  });
  await waitUntilAnswering(`http://127.0.0.1:${port}/api/version`);
  return { child, startMs: Date.now() - t0 };
}

export async function run(opts: { seconds?: number } = {}): Promise<Record<string, unknown>> {
  const seconds = opts.seconds ?? 10;
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-bench-core-'));
  try {
    // Start-up: fresh data dir each time, median of 5.
    const starts: number[] = [];
    for (let i = 0; i < 5; i++) {
      const dataDir = await mkdtemp(path.join(dir, 'start-'));
      const { child, startMs } = await startAntenna(dataDir, 18700 + i);
      starts.push(startMs);
      child.kill('SIGTERM');
      await waitForExit(child);
    }
    starts.sort((a, b) => a - b);

    // Bare Fastify in its own process, like the server.
    const bareFile = path.join(dir, 'bare.js');
    await writeFile(bareFile, `const app = require(${JSON.stringify(require.resolve('fastify'))})();
      app.get('/bare', async () => ({ hello: 'world', n: 1 }));
      app.listen({ port: 18790, host: '127.0.0.1' });`);
    const bare = spawn(process.execPath, [bareFile], { stdio: 'ignore' });
    await waitUntilAnswering('http://127.0.0.1:18790/bare');
    await load('http://127.0.0.1:18790/bare', {}, 2); // warm-up
    const bareResult = await load('http://127.0.0.1:18790/bare', {}, seconds);
    bare.kill('SIGTERM');
    await waitForExit(bare);

    const dataDir = await mkdtemp(path.join(dir, 'me-'));
    const { child } = await startAntenna(dataDir, 18791);
    const token = await signIn('http://127.0.0.1:18791', 'admin', 'bench-password');
    const headers = { authorization: `Bearer ${token}` };
    await load('http://127.0.0.1:18791/me', headers, 2);
    const meResult = await load('http://127.0.0.1:18791/me', headers, seconds);
    child.kill('SIGTERM');
    await waitForExit(child);

    return {
      startupMs: { median: starts[2], min: starts[0], max: starts[4], target: '<= 1500' },
      bareFastify: bareResult,
      authenticatedMe: meResult,
      meVsBare: Math.round((meResult.reqPerSec / bareResult.reqPerSec) * 100) + '%',
      target: '>= 50%',
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (require.main === module) run().then((r) => console.log(JSON.stringify(r, null, 2)));
