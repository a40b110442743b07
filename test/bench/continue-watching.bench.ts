/**
 * Continue-watching progress reports (issue #8): 200 players, each POSTing
 * `/api/continue-watching/{id}/progress` every 2 s for 60 s over loopback
 * (node http, one keep-alive connection per player). Target: p95 ≤ 20 ms and
 * no error.
 *
 * The server runs in a child process (this file, forked with CW_BENCH_CHILD=1):
 * createTestHost with vod over generated clips (10 movies, 6 episodes) and
 * continue-watching, listening on 127.0.0.1. Players are spread over
 * CW_BENCH_USERS users (default 50, so 4 devices each, each device its own
 * login), each on its own item; they start staggered over the first interval.
 * Beside them one reader lists `GET /api/continue-watching` 4 times a second
 * (a burst of reports must not hold up reads), and a control polls
 * `GET /api/version` as often (what the machine alone adds to a request). The child counts the SQL
 * statements touching the table during the window (how many writes the reports
 * cost) and its own CPU time.
 *
 *   node dist/test/bench/run.js continue-watching
 *   CW_BENCH_SECONDS=20 CW_BENCH_PLAYERS=200 CW_BENCH_USERS=50 CW_BENCH_INTERVAL_MS=2000 node dist/test/bench/run.js continue-watching
 */
import { fork, type ChildProcess } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay, performance, type IntervalHistogram } from 'node:perf_hooks';
import { load1, sleep } from './stats.js';

const round = (n: number, d = 1): number => Math.round(n * 10 ** d) / 10 ** d;
/** Event-loop delay beyond the 5 ms sampling interval: stalls of the process itself, or the OS not running it. */
const loopDelay = (h: IntervalHistogram): LoopDelay => ({ p50ms: round(h.percentile(50) / 1e6, 2), p99ms: round(h.percentile(99) / 1e6, 2), maxms: round(h.max / 1e6, 2) });
const pct = (sorted: number[], p: number): number => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]! : 0);

interface Setup { url: string; tokens: string[]; items: string[] }
interface LoopDelay { p50ms: number; p99ms: number; maxms: number }
interface ChildStats { statements: { insert: number; delete: number; select: number }; byTable: Record<string, number>; transactions: number; cpuMs: number; windowMs: number; eventLoopDelay: LoopDelay }
type ChildMessage = { setup: Setup } | { stats: ChildStats } | { error: string };

// ---------------------------------------------------------------------------
// The server (child process)

async function child(): Promise<void> {
  const { clip, vodHost } = await import('../plugins/vod/fixtures.js');
  const players = Number(process.env.CW_BENCH_PLAYERS);
  const users = Number(process.env.CW_BENCH_USERS);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-bench-cw-'));
  const send = (m: ChildMessage) => process.send!(m);
  try {
    const base = path.join(dir, 'base.mp4');
    await clip(base, { seconds: 2, width: 320, height: 180 });
    const files = [
      ...Array.from({ length: 10 }, (_, i) => `movies/Movie ${i + 1} (20${String(i).padStart(2, '0')})/Movie ${i + 1} (20${String(i).padStart(2, '0')}).mp4`),
      ...Array.from({ length: 6 }, (_, i) => `shows/Bench Show/Season 01/Bench Show - S01E${String(i + 1).padStart(2, '0')}.mp4`),
    ];
    for (const rel of files) {
      await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
      await copyFile(base, path.join(dir, rel));
    }
    const host = await vodHost([
      { name: 'Movies', type: 'movies', paths: [path.join(dir, 'movies')] },
      { name: 'Shows', type: 'shows', paths: [path.join(dir, 'shows')] },
    ], { listen: true, plugins: { 'continue-watching': {} } });

    // Every playable item, by browsing like a client.
    const get = async (url: string) => (await host.inject({ method: 'GET', url, headers: host.authHeaders })).json();
    const items: string[] = [];
    const walk = async (id: string): Promise<void> => {
      const item = await get(`/item/${id}`);
      if (item.type === 'movie' || item.type === 'episode') items.push(item.id);
      for (const c of item.children ?? []) await walk(c.id);
    };
    for (const lib of (await get('/libraries')).libraries) for (const i of (await get(`/library/${lib.id}?limit=1000`)).items) await walk(i.id);

    for (let u = 0; u < users; u++) await host.createUser(`viewer${u}`, `viewer${u}-password`);
    // A few logins at a time: each is a scrypt in libuv's thread pool, where SQLite's queries
    // run too, and 200 at once starve the database past knex's acquire timeout.
    const tokens: string[] = [];
    for (let p = 0; p < players; p += 4) {
      const batch = Array.from({ length: Math.min(4, players - p) }, (_, i) => p + i);
      tokens.push(...await Promise.all(batch.map((q) => host.login(`viewer${q % users}`, `viewer${q % users}-password`, { 'device-id': `bench-device-${q}` }))));
    }

    const statements = { insert: 0, delete: 0, select: 0 };
    let transactions = 0;
    let counting = false;
    let cpu0 = process.cpuUsage();
    let t0 = 0;
    const delay = monitorEventLoopDelay({ resolution: 5 });
    // Every statement in the window by table: what progress costs, and what else waits for the one connection.
    const byTable: Record<string, number> = {};
    host.host.knex.on('query', (q: { sql: string }) => {
      if (!counting) return;
      if (/^BEGIN/i.test(q.sql)) transactions++;
      const table = /\b(?:from|into|update)\s+[`"]?(\w+)/i.exec(q.sql)?.[1] ?? q.sql.slice(0, 20);
      byTable[table] = (byTable[table] ?? 0) + 1;
      if (table === 'continue_watching') {
        const verb = q.sql.trimStart().slice(0, 6).toLowerCase();
        if (verb === 'insert' || verb === 'delete' || verb === 'select') statements[verb]++;
      }
    });
    process.on('message', async (m: { cmd: string }) => {
      if (m.cmd === 'start') {
        counting = true;
        delay.enable();
        cpu0 = process.cpuUsage();
        t0 = performance.now();
      } else if (m.cmd === 'stop') {
        counting = false;
        delay.disable();
        const cpu = process.cpuUsage(cpu0);
        send({ stats: { statements, transactions, cpuMs: round((cpu.user + cpu.system) / 1000, 0), windowMs: round(performance.now() - t0, 0), eventLoopDelay: loopDelay(delay), byTable } });
        await host.close();
        await rm(dir, { recursive: true, force: true });
        process.exit(0);
      }
    });
    send({ setup: { url: host.url, tokens, items } });
  } catch (err) {
    send({ error: String((err as Error).stack ?? err) });
    await rm(dir, { recursive: true, force: true });
    process.exit(1);
  }
}

// ---------------------------------------------------------------------------
// The players (this process)

function request(agent: http.Agent, url: string, method: string, token: string, body?: unknown): Promise<{ status: number; ms: number }> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const started = performance.now();
  return new Promise((resolve) => {
    const req = http.request(url, {
      method, agent,
      headers: { authorization: `Bearer ${token}`, ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}) },
    }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }));
      res.on('error', () => resolve({ status: 0, ms: performance.now() - started }));
    });
    req.on('error', () => resolve({ status: 0, ms: performance.now() - started }));
    req.end(payload);
  });
}

function summary(latencies: number[], errors: number) {
  const s = [...latencies].sort((a, b) => a - b);
  return {
    requests: s.length, errors,
    p50ms: round(pct(s, 50), 2), p95ms: round(pct(s, 95), 2), p99ms: round(pct(s, 99), 2), maxms: round(s[s.length - 1] ?? 0, 2),
  };
}

export async function run(): Promise<Record<string, unknown>> {
  const seconds = Number(process.env.CW_BENCH_SECONDS ?? 60);
  const players = Number(process.env.CW_BENCH_PLAYERS ?? 200);
  const users = Math.min(players, Number(process.env.CW_BENCH_USERS ?? 50));
  const intervalMs = Number(process.env.CW_BENCH_INTERVAL_MS ?? 2000);

  const server: ChildProcess = fork(__filename, [], {
    env: { ...process.env, CW_BENCH_CHILD: '1', CW_BENCH_PLAYERS: String(players), CW_BENCH_USERS: String(users) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const messages: ChildMessage[] = [];
  let wake: (() => void) | undefined;
  server.on('message', (m: ChildMessage) => { messages.push(m); wake?.(); });
  server.on('exit', () => wake?.());
  const next = async <K extends string>(key: K): Promise<any> => {
    for (;;) {
      const i = messages.findIndex((m) => key in m || 'error' in m);
      if (i >= 0) {
        const m = messages.splice(i, 1)[0]! as Record<string, unknown>;
        if ('error' in m) throw new Error(`bench server: ${m.error}`);
        return m[key];
      }
      if (server.exitCode !== null) throw new Error(`bench server exited (${server.exitCode})`);
      await new Promise<void>((r) => { wake = r; });
    }
  };

  try {
    const setupStarted = performance.now();
    const { url, tokens, items } = (await next('setup')) as Setup;
    const setupSeconds = round((performance.now() - setupStarted) / 1000);

    const agents = tokens.map(() => new http.Agent({ keepAlive: true, maxSockets: 1 }));
    // Each player opens its video first (play-info, not measured), as a real one does.
    await Promise.all(tokens.map((token, p) => request(agents[p]!, `${url}/watch/vod/${items[p % items.length]}/play-info`, 'GET', token)));

    const progress: number[] = [];
    const reads: number[] = [];
    let progressErrors = 0;
    let readErrors = 0;
    const loadStart = load1();
    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    server.send({ cmd: 'start' });
    const t0 = performance.now();
    const end = t0 + seconds * 1000;

    const player = async (p: number) => {
      const id = items[p % items.length]!;
      let position = (p * 37) % 3000;
      let due = t0 + (p / players) * intervalMs;
      while (due < end) {
        await sleep(Math.max(0, due - performance.now()));
        const r = await request(agents[p]!, `${url}/api/continue-watching/${id}/progress`, 'POST', tokens[p]!, { position, duration: 3600 });
        progress.push(r.ms);
        if (r.status !== 200) progressErrors++;
        position += intervalMs / 1000;
        due += intervalMs;
      }
    };
    const poll = async (path: string, into: number[], failed: () => void) => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      while (performance.now() < end) {
        const r = await request(agent, `${url}${path}`, 'GET', tokens[0]!);
        into.push(r.ms);
        if (r.status !== 200) failed();
        await sleep(250);
      }
      agent.destroy();
    };
    // The control: a route that does nothing (GET /api/version), polled the same way. Its tail
    // is the machine's (scheduling on a shared, loaded host), not continue-watching's.
    const control: number[] = [];
    let controlErrors = 0;
    await Promise.all([
      ...tokens.map((_, p) => player(p)),
      poll('/api/continue-watching?type=vod', reads, () => readErrors++),
      poll('/api/version', control, () => controlErrors++),
    ]);
    const windowSeconds = (performance.now() - t0) / 1000;
    const loadEnd = load1();
    delay.disable();
    server.send({ cmd: 'stop' });
    const stats = (await next('stats')) as ChildStats;
    for (const a of agents) a.destroy();

    const progressFigures = summary(progress, progressErrors);
    return {
      setup: { players, users, items: items.length, intervalMs, seconds, setupSeconds },
      progress: { ...progressFigures, perSecond: round(progress.length / windowSeconds), target: 'p95 <= 20 ms, 0 errors', met: progressFigures.p95ms <= 20 && progressErrors === 0 },
      listDuringLoad: summary(reads, readErrors),
      controlVersionDuringLoad: summary(control, controlErrors),
      server: {
        cpuPercentOfOneCore: round((stats.cpuMs / stats.windowMs) * 100),
        eventLoopDelay: stats.eventLoopDelay,
        continueWatchingSql: { ...stats.statements, transactions: stats.transactions },
        sqlByTable: stats.byTable,
        reportsPerWriteStatement: stats.statements.insert ? round(progress.length / stats.statements.insert) : null,
      },
      playersEventLoopDelay: loopDelay(delay),
      loadavg1: { start: loadStart, end: loadEnd },
      cpus: os.cpus().length,
    };
  } finally {
    if (server.exitCode === null) {
      server.kill('SIGTERM');
      await new Promise((r) => server.once('exit', r));
    }
  }
}

if (require.main === module) {
  if (process.env.CW_BENCH_CHILD) void child();
  else run().then((r) => console.log(JSON.stringify(r, null, 2)));
}
