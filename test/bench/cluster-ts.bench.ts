/**
 * Issue #31, HDHomeRun streams across nodes (ANTENNA_TEST_PG): two nodes, channel 1
 * tuned by an HLS viewer on A. Alternating rounds of A's /hdhr/<key>/auto/v1 (direct)
 * and B's (B passes A's stream on): time to the first byte and bytes in a window of
 * one client; then `clients` at once through B, with the CPU seconds B's server
 * process spent passing them on against A's (A remuxes each client's stream).
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { CLUSTER_ADMIN_PASSWORD, freshDatabase, login, startNode, stopNode, type NodeProcess } from '../helpers/cluster.js';
import { startUpstream } from '../helpers/upstream.js';
import { m3u } from '../plugins/live-tv/fixtures.js';
import { load1, median } from './stats.js';

/** Reads `url` for `ms`: ms to the first byte, and the bytes received. */
function read(url: string, ms: number): Promise<{ firstByteMs: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const sent = performance.now();
    let firstByteMs = -1;
    let bytes = 0;
    const req = http.get(url, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`${url.replace(/hdhr\/[^/]+/, 'hdhr/***')}: ${res.statusCode}`));
      res.on('data', (chunk: Buffer) => {
        if (firstByteMs < 0) {
          firstByteMs = performance.now() - sent;
          setTimeout(() => { req.destroy(); resolve({ firstByteMs, bytes }); }, ms);
        }
        bytes += chunk.length;
      });
      res.on('error', () => {});
    });
    req.on('error', (err) => (firstByteMs < 0 ? reject(err) : undefined));
  });
}

/** CPU seconds (user + system) a process has used. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (100 Hz)
}

export async function run(opts: { rounds?: number; windowMs?: number; clients?: number } = {}): Promise<Record<string, unknown>> {
  const pg = process.env.ANTENNA_TEST_PG;
  if (!pg) return { skipped: 'set ANTENNA_TEST_PG (a role that may create databases)' };
  const rounds = opts.rounds ?? 3;
  const windowMs = opts.windowMs ?? 5000;
  const clients = opts.clients ?? 8;
  const db = await freshDatabase(pg);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-bench-cluster-ts-'));
  const upstream = await startUpstream();
  const nodes: NodeProcess[] = [];
  try {
    await writeFile(path.join(dir, 'tv.m3u'), m3u([{ name: 'One', tvgId: 'one', chno: '1', url: `${upstream.base}/live/one.ts` }]));
    const plugins = [
      '  live-tv: { initialImport: await, idleTimeout: 60s, readyTimeout: 30s }',
      '  m3u-tuner: { sources: [ { name: Main, url: ./tv.m3u, maxStreams: 1 } ] }',
      '  hdhomerun: {}',
    ];
    nodes.push(await startNode({ dir, id: 'a', databaseUrl: db.url, leaseSeconds: 15, plugins, logLevel: 'warn' }));
    nodes.push(await startNode({ dir, id: 'b', databaseUrl: db.url, leaseSeconds: 15, plugins, logLevel: 'warn' }));
    const [a, b] = nodes as [NodeProcess, NodeProcess];
    const headers = { authorization: `Bearer ${await login(a.base, 'admin', CLUSTER_ADMIN_PASSWORD)}` };
    const key = ((await (await fetch(`${a.base}/api/admin/access-keys`, {
      method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'bench' }),
    })).json()) as any).access_key.key as string;
    const watch = await fetch(`${a.base}/watch/live/1`, { headers });
    if (watch.status !== 200) throw new Error(`HLS on A: ${watch.status}`);
    await watch.text();
    await new Promise((r) => setTimeout(r, 1500)); // B reads the new key within a second

    const one: Record<'direct' | 'proxied', { firstByteMs: number[]; kbytes: number[] }> = { direct: { firstByteMs: [], kbytes: [] }, proxied: { firstByteMs: [], kbytes: [] } };
    const loads = [load1()];
    for (let r = 0; r < rounds; r++) {
      for (const [mode, node] of [['direct', a], ['proxied', b]] as const) {
        const got = await read(`${node.base}/hdhr/${key}/auto/v1`, windowMs);
        one[mode].firstByteMs.push(Math.round(got.firstByteMs));
        one[mode].kbytes.push(Math.round(got.bytes / 1024));
      }
    }
    loads.push(load1());

    const pids = { a: a.proc.pid!, b: b.proc.pid! };
    const before = { a: cpuSeconds(pids.a), b: cpuSeconds(pids.b) };
    const many = await Promise.all(Array.from({ length: clients }, () => read(`${b.base}/hdhr/${key}/auto/v1`, windowMs * 2)));
    const cpu = { a: cpuSeconds(pids.a) - before.a, b: cpuSeconds(pids.b) - before.b };
    loads.push(load1());
    const upstreamConnections = upstream.connections('/live/one.ts');
    const round = (x: number) => Math.round(x * 100) / 100;
    return {
      oneClient: {
        windowMs, rounds,
        direct: { ...one.direct, medianFirstByteMs: median(one.direct.firstByteMs), medianKBytes: median(one.direct.kbytes) },
        proxied: { ...one.proxied, medianFirstByteMs: median(one.proxied.firstByteMs), medianKBytes: median(one.proxied.kbytes) },
      },
      manyThroughB: {
        clients, windowMs: windowMs * 2,
        kbytesEach: many.map((m) => Math.round(m.bytes / 1024)),
        medianFirstByteMs: Math.round(median(many.map((m) => m.firstByteMs))),
        cpuSecondsOfServerProcess: { a: round(cpu.a), b: round(cpu.b) },
      },
      upstreamConnections,
      load1: loads,
    };
  } finally {
    await Promise.all(nodes.map(stopNode));
    await upstream.close();
    await db.drop().catch(() => {});
    await rm(dir, { recursive: true, force: true });
  }
}
