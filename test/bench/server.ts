/** For benchmarks that run Antenna as its own process: wait for it to answer, then sign in. */
import type { ChildProcess } from 'node:child_process';
import { sleep } from './stats.js';

/** Resolves once GET /api/version answers 200; throws if the process exits or 30 s pass (with its stderr). */
export async function untilAnswering(base: string, child: ChildProcess, stderr: () => string): Promise<void> {
  for (const deadline = Date.now() + 30_000; ;) {
    if (child.exitCode !== null) throw new Error(`server exited (${child.exitCode}): ${stderr()}`);
    const ok = await fetch(`${base}/api/version`, { signal: AbortSignal.timeout(2000) }).then((r) => r.status === 200, () => false);
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`server did not answer within 30 s: ${stderr()}`);
    await sleep(50);
  }
}

/** A session token for `username`. */
export async function signIn(base: string, username: string, password: string): Promise<string> {
  const res = await fetch(`${base}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username, password }) });
  const body = await res.text();
  if (res.status !== 200) throw new Error(`login: ${res.status} ${body}`);
  return (JSON.parse(body) as { auth: { token: string } }).auth.token;
}
