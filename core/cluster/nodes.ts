import os from 'node:os';
import type { Knex } from 'knex';
import type { JobSummary, Logger } from '../../sdk/services.js';

/** A node as GET /api/admin/nodes shows it. */
export interface NodeView {
  id: string;
  advertise_url: string | null;
  started_at: string;
  heartbeat_at: string;
  /** Heard of within a lease time. */
  alive: boolean;
  /** One-minute load average, and the cores it is out of. */
  load: { avg1: number; cpus: number };
  memory_mb: number;
  /** How many transcodes it runs at most (cluster.maxNodeTranscodes); null from a node too old to say. */
  transcode_capacity: number | null;
  /** Its running jobs (recordings, live sessions, transcodes, imports, scans). */
  jobs: { key: string; kind: string }[];
  /** Leases it holds now (work that runs once in the cluster). */
  leases: string[];
}

/** What a node says of itself in each heartbeat. */
export function ownStatus(jobs: JobSummary[], transcodeCapacity: number): Pick<NodeView, 'load' | 'memory_mb' | 'jobs'> & { transcodes: { capacity: number } } {
  return {
    transcodes: { capacity: transcodeCapacity },
    load: { avg1: Math.round(os.loadavg()[0]! * 100) / 100, cpus: os.cpus().length },
    memory_mb: Math.round(process.memoryUsage().rss / 2 ** 20),
    jobs: jobs.filter((j) => j.state === 'running').map((j) => ({ key: j.key, kind: j.kind })),
  };
}

/**
 * The node's row in `cluster_nodes`, written at start and then every
 * heartbeat; a node not heard of for a lease time is shown as dead (its row
 * stays, for the admin to see what it ran last).
 */
export class NodeRegistry {
  private timer?: NodeJS.Timeout;
  private readonly startedAt = new Date();

  constructor(
    private readonly knex: Knex,
    private readonly nodeId: string,
    private readonly advertiseUrl: string | undefined,
    private readonly leaseMs: number,
    private readonly status: () => Pick<NodeView, 'load' | 'memory_mb' | 'jobs'> & { transcodes: { capacity: number } },
    private readonly log: Logger,
  ) {}

  async start(): Promise<void> {
    await this.beat();
    this.timer = setInterval(() => void this.beat().catch((err) => this.log.warn({ error: (err as Error).message }, 'cluster: heartbeat failed')), Math.max(200, Math.min(5000, Math.floor(this.leaseMs / 3))));
    this.timer.unref();
  }

  private async beat(): Promise<void> {
    await this.knex('cluster_nodes').insert({
      id: this.nodeId, advertise_url: this.advertiseUrl ?? null, started_at: this.startedAt,
      heartbeat_at: this.knex.fn.now(), status: JSON.stringify(this.status()),
    }).onConflict('id').merge();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  async list(): Promise<NodeView[]> {
    const rows = await this.knex('cluster_nodes')
      .select('*', this.knex.raw(`heartbeat_at > now() - ? * interval '1 millisecond' AS alive`, [this.leaseMs]))
      .orderBy('id');
    const leases: { name: string; node: string }[] = await this.knex('cluster_leases').where('expires_at', '>', this.knex.fn.now()).select('name', 'node').orderBy('name');
    return rows.map((r: any) => {
      const status = JSON.parse(r.status);
      return {
        id: r.id, advertise_url: r.advertise_url, started_at: new Date(r.started_at).toISOString(), heartbeat_at: new Date(r.heartbeat_at).toISOString(),
        alive: r.alive, load: status.load, memory_mb: status.memory_mb, transcode_capacity: status.transcodes?.capacity ?? null, jobs: status.jobs, leases: leases.filter((l) => l.node === r.id).map((l) => l.name),
      };
    });
  }
}
