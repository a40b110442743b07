/**
 * Issue #31 figures, on the PostgreSQL of ANTENNA_TEST_PG (a fresh database):
 *  - invalidation latency across nodes: three nodes; a session signed in on A and
 *    used on B (its state cached there), signed out on A; the time until B refuses
 *    it, polling B every few ms (p50, p95, max of 40);
 *  - cluster mode's cost per request: authenticated GET /me on one node with
 *    `cluster` against the same node without it, same database, alternating rounds
 *    (autocannon, 32 connections), one node running at a time.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { CLUSTER_ADMIN_PASSWORD, freshDatabase, login, startNode, stopNode, type NodeProcess } from '../helpers/cluster.js';
import { load1, median } from './stats.js';

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)]!;

async function throughput(base: string, token: string, seconds: number): Promise<number> {
  const result = await autocannon({ url: `${base}/me`, connections: 32, duration: seconds, headers: { authorization: `Bearer ${token}` } });
  if (result.non2xx || result.errors) throw new Error(`GET /me: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return Math.round(result.requests.average);
}

export async function run(opts: { rounds?: number; seconds?: number; samples?: number } = {}): Promise<Record<string, unknown>> {
  const pg = process.env.ANTENNA_TEST_PG;
  if (!pg) return { skipped: 'set ANTENNA_TEST_PG (a role that may create databases)' };
  const db = await freshDatabase(pg);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-bench-cluster-'));
  const nodes: NodeProcess[] = [];
  try {
    // Invalidation latency.
    const loadBefore = load1();
    nodes.push(await startNode({ dir, id: 'a', databaseUrl: db.url, leaseSeconds: 15, logLevel: 'warn' }));
    nodes.push(...(await Promise.all(['b', 'c'].map((id) => startNode({ dir, id, databaseUrl: db.url, leaseSeconds: 15, logLevel: 'warn' })))));
    const [a, b] = nodes as [NodeProcess, NodeProcess];
    const fromResponse: number[] = [];
    const fromRequest: number[] = [];
    for (let i = 0; i < (opts.samples ?? 40); i++) {
      const token = await login(a.base, 'admin', CLUSTER_ADMIN_PASSWORD, `bench-${i}`);
      const me = () => fetch(`${b.base}/me`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status);
      if ((await me()) !== 200) throw new Error('B refused a fresh token');
      const sent = performance.now();
      const out = await fetch(`${a.base}/logout`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
      const answered = performance.now();
      if (out.status !== 200) throw new Error(`logout: ${out.status}`);
      for (;;) {
        if ((await me()) === 401) break;
        if (performance.now() - sent > 10_000) throw new Error('B still accepts the token after 10 s');
        await new Promise((r) => setTimeout(r, 2));
      }
      const refused = performance.now();
      fromRequest.push(refused - sent);
      fromResponse.push(refused - answered);
    }
    const ms = (x: number) => Math.round(x * 10) / 10;
    const invalidation = {
      samples: fromResponse.length,
      afterLogoutAnsweredMs: { p50: ms(median(fromResponse)), p95: ms(percentile(fromResponse, 95)), max: ms(Math.max(...fromResponse)) },
      afterLogoutSentMs: { p50: ms(median(fromRequest)), p95: ms(percentile(fromRequest, 95)), max: ms(Math.max(...fromRequest)) },
      load1: [loadBefore, load1()],
    };
    await Promise.all(nodes.splice(0).map(stopNode));

    // Cost per request: the same node with and without `cluster`, one at a time, alternating.
    const seconds = opts.seconds ?? 5;
    const rounds = opts.rounds ?? 3;
    const result: Record<'cluster' | 'single', number[]> = { cluster: [], single: [] };
    const loads: number[] = [];
    for (let r = 0; r < rounds; r++) {
      for (const mode of ['single', 'cluster'] as const) {
        const node = await startNode({ dir, id: `${mode}`, databaseUrl: db.url, leaseSeconds: mode === 'cluster' ? 15 : undefined, logLevel: 'warn' });
        nodes.push(node);
        try {
          const token = await login(node.base, 'admin', CLUSTER_ADMIN_PASSWORD, `bench-${mode}`);
          await throughput(node.base, token, 2); // warm-up
          loads.push(load1());
          result[mode].push(await throughput(node.base, token, seconds));
        } finally {
          await stopNode(node);
          nodes.splice(nodes.indexOf(node), 1);
        }
      }
    }
    const single = median(result.single);
    const cluster = median(result.cluster);
    return {
      invalidation,
      authenticatedJson: {
        route: 'GET /me, 32 connections', seconds, rounds,
        singleReqPerSec: result.single, clusterReqPerSec: result.cluster,
        medianSingle: single, medianCluster: cluster, clusterShare: Math.round((cluster / single) * 1000) / 10 + ' %',
        load1: loads,
      },
    };
  } finally {
    await Promise.all(nodes.map(stopNode));
    await db.drop().catch(() => {});
    await rm(dir, { recursive: true, force: true });
  }
}
