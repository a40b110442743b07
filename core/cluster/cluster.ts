/**
 * Cluster mode: several nodes on one PostgreSQL database (README "Running
 * several nodes"). On when the config has `cluster` and database.client is pg;
 * otherwise a single node, which grants every lease and publishes nothing, so
 * SQLite installations run exactly as before.
 */
import os from 'node:os';
import type { Knex } from 'knex';
import type { Cluster, JobSummary, Lease, Logger } from '../../sdk/services.js';
import type { AntennaConfig } from '../config/schema.js';
import { runMigrations } from '../db/migrations.js';
import { PgLeases } from './leases.js';
import { PgMessages } from './messages.js';
import { clusterMigrations } from './migrations.js';
import { NodeRegistry, ownStatus, type NodeView } from './nodes.js';

export interface ClusterNode extends Cluster {
  readonly advertiseUrl: string | undefined;
  /** Registers the node and starts its heartbeat (servers only, not CLI commands). */
  join(jobs: () => JobSummary[]): Promise<void>;
  nodes(jobs: () => JobSummary[]): Promise<NodeView[]>;
  /** The node holding a live lease taken for `subject` (see Cluster.take). */
  subjectHolder(subject: string): Promise<{ node: string; url: string | null } | undefined>;
  /**
   * The alive node other than this one with the most spare transcode capacity (its
   * cluster.maxNodeTranscodes, from its heartbeat, less the `transcodes` leases it holds), least
   * loaded first among equals; undefined when none has any.
   */
  spareNode(): Promise<{ node: string; url: string } | undefined>;
  /** Called when messages may have been lost (the listening connection came back). */
  onResync(fn: () => void): void;
  /** Leases released, heartbeat and listening stopped. */
  close(): Promise<void>;
}

/** `capacity`: how many transcodes this node runs at most, told to the others in its heartbeat. */
export async function openCluster(config: AntennaConfig, knex: Knex, log: Logger, capacity = 0): Promise<ClusterNode> {
  const c = config.cluster;
  if (!c) return new SingleNode(config, capacity);
  if (config.database.client !== 'pg') throw new Error(`cluster: several nodes share one PostgreSQL database; database.client is ${config.database.client}, expected pg`);
  await runMigrations(knex, 'cluster', clusterMigrations);
  const node = new PgCluster(knex, c.nodeId ?? os.hostname(), c.advertiseUrl, c.leaseSeconds * 1000, config.database.connection, log, capacity);
  await node.open();
  return node;
}

class PgCluster implements ClusterNode {
  readonly enabled = true;
  private readonly leases: PgLeases;
  private readonly messages: PgMessages;
  private registry?: NodeRegistry;

  constructor(
    private readonly knex: Knex, readonly nodeId: string, readonly advertiseUrl: string | undefined, readonly leaseMs: number,
    connection: unknown, private readonly log: Logger, private readonly capacity: number,
  ) {
    this.leases = new PgLeases(knex, nodeId, leaseMs, log);
    this.messages = new PgMessages(knex, connection, nodeId, log);
  }

  async open(): Promise<void> {
    await this.messages.start();
  }

  take(name: string, options?: { group: string; limit: number; subject?: string }): Promise<Lease | undefined> {
    return this.leases.take(name, options);
  }

  subjectHolder(subject: string): Promise<{ node: string; url: string | null } | undefined> {
    return this.leases.subjectHolder(subject);
  }

  async spareNode(): Promise<{ node: string; url: string } | undefined> {
    const { rows } = await this.knex.raw(
      `SELECT n.id, n.advertise_url,
         (n.status::json->'transcodes'->>'capacity')::int - (SELECT count(*) FROM cluster_leases l WHERE l.grp = 'transcodes' AND l.node = n.id AND l.expires_at > now())::int AS spare
       FROM cluster_nodes n
       WHERE n.id <> ? AND n.advertise_url IS NOT NULL AND n.heartbeat_at > now() - ? * interval '1 millisecond'
         AND n.status::json->'transcodes'->>'capacity' IS NOT NULL
       ORDER BY spare DESC, (n.status::json->'load'->>'avg1')::float / greatest(1, (n.status::json->'load'->>'cpus')::int) ASC, n.id
       LIMIT 1`,
      [this.nodeId, this.leaseMs],
    );
    const best = rows[0];
    return best && best.spare > 0 ? { node: best.id, url: best.advertise_url } : undefined;
  }

  holder(name: string): Promise<{ node: string; url: string | null } | undefined> {
    return this.leases.holder(name);
  }

  publish(topic: string, message: string): void {
    this.messages.publish(topic, message);
  }

  subscribe(topic: string, handler: (message: string) => void): () => void {
    return this.messages.subscribe(topic, handler);
  }

  onResync(fn: () => void): void {
    this.messages.onResync(fn);
  }

  async secret(name: string, own: () => Promise<string>): Promise<string> {
    const stored = async () => (await this.knex('cluster_secrets').where({ name }).first())?.value as string | undefined;
    const existing = await stored();
    if (existing) return existing;
    await this.knex('cluster_secrets').insert({ name, value: await own() }).onConflict('name').ignore();
    return (await stored())!;
  }

  async once(name: string, o: { fingerprint: string; withinMs: number; wait: boolean }, work: () => Promise<boolean>): Promise<boolean> {
    for (;;) {
      const lease = await this.take(name);
      if (!lease) {
        // Another node runs it now; what it does reaches this one through the database.
        if (!o.wait) return false;
        await new Promise((resolve) => setTimeout(resolve, ONCE_POLL_MS));
        continue;
      }
      try {
        // The database's clock, as for leases: the nodes' clocks need not agree.
        const { rows } = await this.knex.raw('SELECT fingerprint, extract(epoch FROM now() - ended_at) * 1000 AS ago FROM cluster_runs WHERE name = ?', [name]);
        const last = rows[0] as { fingerprint: string; ago: string | number } | undefined;
        if (last && last.fingerprint === o.fingerprint && Number(last.ago) < o.withinMs) {
          this.log.info({ event: 'once_skipped', work: name, agoMs: Math.round(Number(last.ago)) }, 'start-up work skipped: another node did it recently');
          return false;
        }
        if (await work()) {
          await this.knex.raw(
            'INSERT INTO cluster_runs (name, fingerprint, ended_at) VALUES (?, ?, now()) ON CONFLICT (name) DO UPDATE SET fingerprint = excluded.fingerprint, ended_at = excluded.ended_at',
            [name, o.fingerprint],
          );
        }
        return true;
      } finally {
        await lease.release().catch(() => {});
      }
    }
  }

  async join(jobs: () => JobSummary[]): Promise<void> {
    this.registry = new NodeRegistry(this.knex, this.nodeId, this.advertiseUrl, this.leaseMs, () => ownStatus(jobs(), this.capacity), this.log);
    await this.registry.start();
    this.log.info({ event: 'cluster_joined', node: this.nodeId, advertiseUrl: this.advertiseUrl }, 'joined the cluster');
  }

  async nodes(jobs: () => JobSummary[]): Promise<NodeView[]> {
    return (this.registry ?? new NodeRegistry(this.knex, this.nodeId, this.advertiseUrl, this.leaseMs, () => ownStatus(jobs(), this.capacity), this.log)).list();
  }

  async close(): Promise<void> {
    this.registry?.stop();
    await this.leases.releaseAll();
    await this.messages.close();
  }
}

/** One node alone: every lease is its own, and there is nobody to tell. */
class SingleNode implements ClusterNode {
  readonly enabled = false;
  readonly nodeId: string;
  readonly advertiseUrl: string | undefined;
  readonly leaseMs = 0;
  private readonly startedAt = new Date().toISOString();

  constructor(config: AntennaConfig, private readonly capacity = 0) {
    this.nodeId = os.hostname();
    this.advertiseUrl = config.server.publicUrl;
  }

  async take(name: string): Promise<Lease> {
    return { name, token: 1, lost: new AbortController().signal, release: async () => {} };
  }

  async holder(): Promise<undefined> { return undefined; }
  async subjectHolder(): Promise<undefined> { return undefined; }
  async spareNode(): Promise<undefined> { return undefined; }
  publish(): void {}
  subscribe(): () => void { return () => {}; }
  onResync(): void {}
  secret(_name: string, own: () => Promise<string>): Promise<string> {
    return own();
  }
  async once(_name: string, _options: unknown, work: () => Promise<boolean>): Promise<boolean> {
    await work();
    return true;
  }
  async join(): Promise<void> {}
  async close(): Promise<void> {}

  async nodes(jobs: () => JobSummary[]): Promise<NodeView[]> {
    const now = new Date().toISOString();
    return [{ id: this.nodeId, advertise_url: this.advertiseUrl ?? null, started_at: this.startedAt, heartbeat_at: now, alive: true, ...ownStatus(jobs(), this.capacity), transcode_capacity: this.capacity, leases: [] }];
  }
}

/** How often a node waiting on another's start-up work (Cluster.once with wait) looks again. */
const ONCE_POLL_MS = 250;

/** An arbitrary constant: the advisory lock nodes take around their migrations. */
const MIGRATION_LOCK = 0x616e746e;

/**
 * Nodes starting together would run the same migrations at once (knex's own lock
 * fails the second instead of waiting): with `cluster` on PostgreSQL, a session
 * advisory lock on a connection set aside makes them wait their turn. Returns its release.
 */
export async function migrationLock(config: AntennaConfig, knex: Knex): Promise<() => Promise<void>> {
  if (!config.cluster || config.database.client !== 'pg') return async () => {};
  const client = knex.client as { acquireConnection(): Promise<unknown>; releaseConnection(c: unknown): Promise<void> };
  const connection = await client.acquireConnection();
  await knex.raw('SELECT pg_advisory_lock(?)', [MIGRATION_LOCK]).connection(connection);
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    try {
      await knex.raw('SELECT pg_advisory_unlock(?)', [MIGRATION_LOCK]).connection(connection);
    } finally {
      await client.releaseConnection(connection);
    }
  };
}
