/**
 * Several `antenna serve` processes on one PostgreSQL database (ANTENNA_TEST_PG):
 * a fresh database per call, one config file and data dir per node, and a
 * shared folder beside them (recordings). For the cluster tests and benches;
 * testCluster is what a tap test sets up with them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { CLI } from './repo.js';
import { cleanEnv, unusedPort } from './env.js';

export const CLUSTER_ADMIN_PASSWORD = 'cluster-test-admin-password';

interface PgClient { connect(): Promise<void>; query(sql: string, values?: unknown[]): Promise<{ rows: any[] }>; end(): Promise<void> }
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { Client } = require('pg') as { Client: new (o: { connectionString: string }) => PgClient };

/** Runs one statement on the database of `url`. */
export async function pgQuery(url: string, sql: string, values?: unknown[]): Promise<any[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try { return (await client.query(sql, values)).rows; } finally { await client.end(); }
}

/** A new empty database on the ANTENNA_TEST_PG server: its URL, and a drop for the teardown. */
export async function freshDatabase(adminUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `antenna_test_cluster_${randomBytes(6).toString('hex')}`;
  await pgQuery(adminUrl, `CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.href,
    drop: async () => {
      await pgQuery(adminUrl, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, [name]).catch(() => {});
      await pgQuery(adminUrl, `DROP DATABASE IF EXISTS ${name}`);
    },
  };
}

export interface NodeProcess {
  id: string;
  base: string;
  dataDir: string;
  logFile: string;
  proc: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  alive(): boolean;
}

export interface NodeOptions {
  dir: string;
  id: string;
  databaseUrl: string;
  /** Lease seconds; undefined: no `cluster` block (a single node on PostgreSQL). */
  leaseSeconds?: number;
  /** YAML lines under `plugins:` (indented by two spaces). */
  plugins?: string[];
  logLevel?: string;
  /** More top-level YAML lines (e.g. `ffmpeg: { maxTranscodes: 4 }`). */
  config?: string[];
  /** More keys of the `cluster` block (e.g. `maxNodeTranscodes: 1`). */
  cluster?: string[];
}

/** Writes the node's config and starts it; resolves once it answers. */
export async function startNode(o: NodeOptions): Promise<NodeProcess> {
  const port = await unusedPort();
  const base = `http://127.0.0.1:${port}`;
  const config = path.join(o.dir, `node-${o.id}.yaml`);
  await writeFile(config, [
    `server: { host: 127.0.0.1, port: ${port}, dataDir: ./data-${o.id} }`,
    `database: { client: pg, connection: "${o.databaseUrl}" }`,
    ...(o.leaseSeconds === undefined ? [] : [`cluster: { ${[`nodeId: ${o.id}`, `advertiseUrl: "${base}"`, `leaseSeconds: ${o.leaseSeconds}`, ...(o.cluster ?? [])].join(', ')} }`]),
    `logging: { level: ${o.logLevel ?? 'info'} }`,
    ...(o.config ?? []),
    'plugins:',
    ...(o.plugins?.length ? o.plugins : ['  {}']),
  ].join('\n') + '\n');
  const logFile = path.join(o.dir, `node-${o.id}.log`);
  const fd = openSync(logFile, 'a');
  const proc = spawn(process.execPath, [CLI, 'serve', '--config', config], {
    cwd: o.dir, stdio: ['ignore', fd, fd], env: cleanEnv({ ANTENNA_ADMIN_PASSWORD: CLUSTER_ADMIN_PASSWORD }),
  });
  closeSync(fd);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  const node: NodeProcess = {
    id: o.id, base, dataDir: path.join(o.dir, `data-${o.id}`), logFile, proc, exited,
    alive: () => proc.exitCode === null && proc.signalCode === null,
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (!node.alive()) throw new Error(`node ${o.id} exited:\n${logTail(logFile)}`);
    try {
      if ((await fetch(`${base}/api/version`)).ok) return node;
    } catch { /* not yet */ }
    if (Date.now() > deadline) throw new Error(`node ${o.id} did not listen within 60 s:\n${logTail(logFile)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** SIGTERM, then SIGKILL after 15 s. */
export async function stopNode(node: NodeProcess): Promise<void> {
  if (!node.alive()) return;
  node.proc.kill('SIGTERM');
  const timer = setTimeout(() => node.proc.kill('SIGKILL'), 15_000);
  await node.exited;
  clearTimeout(timer);
}

/** POST /login on a node; the token. */
export async function login(base: string, username: string, password: string, deviceId = 'cluster-test'): Promise<string> {
  const res = await fetch(`${base}/login`, { method: 'POST', headers: { 'content-type': 'application/json', 'device-id': deviceId }, body: JSON.stringify({ username, password }) });
  if (!res.ok) throw new Error(`login as ${username} on ${base}: ${res.status} ${await res.text()}`);
  return ((await res.json()) as any).auth.token;
}

/** The last lines of a node's log, tokens hidden. */
export function logTail(file: string, lines = 30): string {
  let text = '';
  try { text = readFileSync(file, 'utf8'); } catch { return ''; }
  return text.split('\n').slice(-lines).join('\n').replace(/(api_key|key)=[^&"\s]*/g, '$1=***').replace(/Bearer [\w.-]+/g, 'Bearer ***');
}

/** A cluster test's setting: a fresh database and a temp dir, removed with the test, and the nodes it starts there, stopped with it. */
export interface TestCluster {
  dir: string;
  databaseUrl: string;
  /** The nodes started, in order (a restarted one keeps its place). */
  nodes: NodeProcess[];
  /** Starts nodes with the test's plugins and lease time: the first alone (it makes the tables), the others together (they wait for its migrations). */
  start(ids: string[], options?: Partial<NodeOptions>): Promise<NodeProcess[]>;
  /** Stops a node and starts it again with the same id and config. */
  restart(node: NodeProcess): Promise<NodeProcess>;
  /** POST /login as the admin on the first node; the token. */
  adminToken(): Promise<string>;
  /** `what`, with the end of every node's log when `ok` is false: an assertion's message. */
  why(ok: boolean, what: string, lines?: number): string;
}

interface Teardowns { teardown(fn: () => unknown): void }

export async function testCluster(t: Teardowns, o: { pg: string; prefix: string; leaseSeconds: number; plugins?: string[] }): Promise<TestCluster> {
  const db = await freshDatabase(o.pg);
  t.teardown(() => db.drop());
  const dir = await mkdtemp(path.join(os.tmpdir(), o.prefix));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const nodes: NodeProcess[] = [];
  // Registered last, so it runs first: the nodes stop before their database and folder go.
  t.teardown(async () => { await Promise.all(nodes.map(stopNode)); });
  const options = new Map<string, NodeOptions>();
  const one = async (id: string, extra: Partial<NodeOptions>) => {
    const opts: NodeOptions = { dir, id, databaseUrl: db.url, leaseSeconds: o.leaseSeconds, plugins: o.plugins, ...extra };
    options.set(id, opts);
    return startNode(opts);
  };
  return {
    dir, databaseUrl: db.url, nodes,
    async start(ids, extra = {}) {
      const [first, ...rest] = ids;
      const started = first === undefined ? [] : [await one(first, extra)];
      nodes.push(...started);
      const others = await Promise.all(rest.map((id) => one(id, extra)));
      nodes.push(...others);
      return [...started, ...others];
    },
    async restart(node) {
      await stopNode(node);
      const again = await startNode(options.get(node.id)!);
      nodes[nodes.indexOf(node)] = again;
      return again;
    },
    adminToken: () => login(nodes[0]!.base, 'admin', CLUSTER_ADMIN_PASSWORD),
    why: (ok, what, lines = 12) => (ok ? what : `${what}\n${nodes.map((n) => `node ${n.id}:\n${logTail(n.logFile, lines)}`).join('\n')}`),
  };
}
