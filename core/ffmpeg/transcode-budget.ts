/**
 * The CPU budget for ffmpeg runs that encode video (sdk TranscodeBudget):
 * counting slots, nothing else. Callers take a slot before they spawn and
 * give it back once the process has exited, so the number of encoding ffmpeg
 * processes never exceeds what was granted. In cluster mode the slots are this
 * node's capacity, and `share` counts each transcode in the limits of the whole
 * installation too (leases), which also tell the nodes where a transcode runs
 * (`runner`) and which node has room for one (`placement`).
 */
import { createHash } from 'node:crypto';
import os from 'node:os';
import type { Logger, TranscodeBudget, TranscodeRefusal, TranscodeRequest, TranscodeShare, TranscodeSlot } from '../../sdk/services.js';
import type { ClusterNode } from '../cluster/cluster.js';

/** Seconds a refused client waits before asking again: about how long a player's abandoned job takes to be noticed. */
const RETRY_AFTER_SECONDS = 10;

/** The default global limit: one encode per core (x264 keeps about one core busy at real time and beyond). */
export function defaultMaxTranscodes(): number {
  return Math.max(1, os.availableParallelism?.() ?? os.cpus().length);
}

/**
 * How many transcodes a node of a cluster runs at most (cluster.maxNodeTranscodes): one per core by
 * default, and never more than the cluster-wide ffmpeg.maxTranscodes when that is set.
 */
export function nodeCapacity(configured: number, clusterMax: number): number {
  const capacity = configured || defaultMaxTranscodes();
  return clusterMax ? Math.min(capacity, clusterMax) : capacity;
}

const NO_SHARE: TranscodeShare = { release: async () => {} };

export class TranscodeBudgetImpl implements TranscodeBudget {
  private readonly held = new Set<{ owner: string; label: string }>();
  /** Cluster mode: the names of the leases this node holds or is taking (`<group>:<node>:<n>`). */
  private readonly leaseNames = new Set<string>();

  /**
   * `limits`: this node's (max: its capacity in cluster mode). `cluster`: the nodes sharing the
   * database, with `clusterMax`, ffmpeg.maxTranscodes across them (0: only the nodes' capacities).
   */
  constructor(
    readonly limits: { max: number; perUser: number },
    private readonly log: Logger,
    private readonly cluster?: { node: Pick<ClusterNode, 'enabled' | 'nodeId' | 'take' | 'subjectHolder' | 'spareNode'>; clusterMax: number },
  ) {}

  reserve(request: TranscodeRequest): ReturnType<TranscodeBudget['reserve']> {
    const { owner, label } = request;
    const ownerKey = owner === 'system' ? 'system' : String(owner.id);
    const limited = owner !== 'system' && !owner.admin;
    if (limited) {
      const mine = [...this.held].filter((h) => h.owner === ownerKey).length;
      if (mine >= this.limits.perUser) {
        return this.refuse('user', `You are already running ${mine} transcode${mine === 1 ? '' : 's'} (the limit per user is ${this.limits.perUser}); stop another stream or try again shortly`, ownerKey, label);
      }
      if (this.held.size >= this.limits.max) {
        return this.refuse('server', `The server is running its limit of ${this.limits.max} transcodes; try again shortly`, ownerKey, label);
      }
    }
    const entry = { owner: ownerKey, label };
    this.held.add(entry);
    let released = false;
    const slot: TranscodeSlot = {
      label,
      release: () => {
        if (released) return;
        released = true;
        this.held.delete(entry);
      },
    };
    return { slot };
  }

  usage(): { total: number; byUser: Record<string, number> } {
    const byUser: Record<string, number> = {};
    for (const h of this.held) byUser[h.owner] = (byUser[h.owner] ?? 0) + 1;
    return { total: this.held.size, byUser };
  }

  /**
   * Cluster mode: two leases held while the transcode lives, one in group `transcodes`
   * (ffmpeg.maxTranscodes, recording `job` as its subject) and one in `transcodes:user:<id>`
   * (maxTranscodesPerUser). Admins and system work are counted, never refused, as by `reserve`.
   */
  async share(request: TranscodeRequest & { job?: string }): Promise<{ share: TranscodeShare } | TranscodeRefusal> {
    const node = this.cluster?.node;
    if (!node?.enabled) return { share: NO_SHARE };
    const { owner, label, job } = request;
    const limited = owner !== 'system' && !owner.admin;
    const { perUser } = this.limits;
    const ownerKey = owner === 'system' ? 'system' : String(owner.id);
    const mine = limited ? await this.leaseIn(`transcodes:user:${ownerKey}`, perUser) : NO_SHARE;
    if (!mine) {
      return this.refuse('user', `You are already running ${perUser} transcode${perUser === 1 ? '' : 's'} (the limit per user is ${perUser}); stop another stream or try again shortly`, ownerKey, label, true);
    }
    const max = this.cluster!.clusterMax;
    const lease = await this.leaseIn('transcodes', limited && max ? max : Number.MAX_SAFE_INTEGER, job && subjectOf(job)).catch(async (err: Error) => {
      await mine.release();
      throw err;
    });
    if (!lease) {
      await mine.release();
      return this.refuse('server', `The installation is running its limit of ${max} transcodes; try again shortly`, ownerKey, label, true);
    }
    let released = false;
    return {
      share: {
        release: async () => {
          if (released) return;
          released = true;
          await Promise.all([lease.release(), mine.release()]);
        },
      },
    };
  }

  /** Cluster mode: how many `transcodes` leases this node holds. */
  private sharesHeld(): number {
    return [...this.leaseNames].filter((n) => !n.startsWith('transcodes:user:')).length;
  }

  async placement(): Promise<{ node: string; url: string } | undefined> {
    const node = this.cluster?.node;
    if (!node?.enabled) return undefined;
    if (Math.max(this.held.size, this.sharesHeld()) < this.limits.max) return undefined;
    return node.spareNode();
  }

  async runner(job: string): Promise<{ node: string; url: string } | undefined> {
    const node = this.cluster?.node;
    if (!node?.enabled) return undefined;
    const holder = await node.subjectHolder(subjectOf(job));
    return holder && holder.node !== node.nodeId && holder.url ? { node: holder.node, url: holder.url } : undefined;
  }

  /**
   * A lease in `group`, or undefined when the group is full. Named `<group>:<node>:<n>` with the
   * lowest n this node is not using, so the leases table keeps a few rows per node, not one per job.
   */
  private async leaseIn(group: string, limit: number, subject?: string): Promise<TranscodeShare | undefined> {
    const node = this.cluster!.node;
    let n = 0;
    while (this.leaseNames.has(`${group}:${node.nodeId}:${n}`)) n++;
    const name = `${group}:${node.nodeId}:${n}`;
    this.leaseNames.add(name);
    const lease = await node.take(name, { group, limit, subject }).catch((err: Error) => {
      this.leaseNames.delete(name);
      throw err;
    });
    if (!lease) {
      this.leaseNames.delete(name);
      return undefined;
    }
    return {
      release: async () => {
        try {
          await lease.release();
        } finally {
          this.leaseNames.delete(name);
        }
      },
    };
  }

  private refuse(refused: 'server' | 'user', message: string, owner: string, label: string, cluster = false) {
    this.log.info({ event: 'transcode_refused', reason: refused, user: owner, label, running: this.held.size, max: this.limits.max, ...(cluster && { cluster }) }, cluster ? 'transcode refused: over the cluster-wide limit' : 'transcode refused: over the limit');
    return { refused, message, retryAfter: RETRY_AFTER_SECONDS };
  }
}

/** A job's name as a lease subject (the column holds 191 characters). */
function subjectOf(job: string): string {
  return job.length <= 191 ? job : `sha256:${createHash('sha256').update(job).digest('hex')}`;
}
