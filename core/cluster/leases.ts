import type { Knex } from 'knex';
import type { Lease, Logger } from '../../sdk/services.js';

/**
 * Leases in one PostgreSQL table. A take is one statement: the row is this
 * node's if it had expired (by the database's clock) or was this node's
 * already, and its token grows by one. While held, the lease is renewed every
 * third of its time; a renewal that finds the row taken, or that has not
 * succeeded for a whole lease time, loses it (`lost` aborts).
 */
export class PgLeases {
  private readonly held = new Set<PgLease>();

  constructor(private readonly knex: Knex, private readonly nodeId: string, readonly leaseMs: number, private readonly log: Logger) {}

  async take(name: string, options?: { group: string; limit: number; subject?: string }): Promise<Lease | undefined> {
    const rows = options ? await this.takeInGroup(name, options.group, options.limit, options.subject ?? null) : await this.takeRow(this.knex, name, null, null);
    if (!rows.length) return undefined;
    const lease = new PgLease(this, name, Number(rows[0].token));
    this.held.add(lease);
    return lease;
  }

  private async takeRow(db: Knex, name: string, group: string | null, subject: string | null): Promise<{ token: string }[]> {
    const { rows } = await db.raw(
      `INSERT INTO cluster_leases (name, node, token, expires_at, grp, subject) VALUES (?, ?, 1, now() + ? * interval '1 millisecond', ?, ?)
       ON CONFLICT (name) DO UPDATE SET node = excluded.node, token = cluster_leases.token + 1, expires_at = excluded.expires_at, grp = excluded.grp, subject = excluded.subject
       WHERE cluster_leases.expires_at < now() OR cluster_leases.node = excluded.node
       RETURNING token`,
      [name, this.nodeId, this.leaseMs, group, subject],
    );
    return rows;
  }

  /** A take that also counts the group's other live leases, under a transaction lock on the group so two nodes cannot both take its last place. */
  private takeInGroup(name: string, group: string, limit: number, subject: string | null): Promise<{ token: string }[]> {
    return this.knex.transaction(async (trx) => {
      await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?))', [`antenna lease group ${group}`]);
      const { rows } = await trx.raw('SELECT count(*)::int AS n FROM cluster_leases WHERE grp = ? AND name <> ? AND expires_at > now()', [group, name]);
      if (rows[0].n >= limit) return [];
      return this.takeRow(trx, name, group, subject);
    });
  }

  holder(name: string): Promise<{ node: string; url: string | null } | undefined> {
    return this.holderWhere('l.name', name);
  }

  /** The node holding a live lease taken for `subject` (see take), and how to reach it. */
  subjectHolder(subject: string): Promise<{ node: string; url: string | null } | undefined> {
    return this.holderWhere('l.subject', subject);
  }

  private async holderWhere(column: 'l.name' | 'l.subject', value: string): Promise<{ node: string; url: string | null } | undefined> {
    const row = await this.knex('cluster_leases as l').leftJoin('cluster_nodes as n', 'n.id', 'l.node')
      .where(column, value).andWhere('l.expires_at', '>', this.knex.fn.now()).first('l.node', 'n.advertise_url');
    return row && { node: row.node, url: row.advertise_url ?? null };
  }

  /** Whether the row still says this node and this token; its expiry moved a lease time on. */
  async renew(lease: PgLease): Promise<boolean> {
    const n = await this.knex('cluster_leases').where({ name: lease.name, node: this.nodeId, token: lease.token })
      .update({ expires_at: this.knex.raw(`now() + ? * interval '1 millisecond'`, [this.leaseMs]) });
    return n > 0;
  }

  async release(lease: PgLease): Promise<void> {
    this.held.delete(lease);
    await this.knex('cluster_leases').where({ name: lease.name, node: this.nodeId, token: lease.token })
      .update({ expires_at: this.knex.raw(`now() - interval '1 millisecond'`) });
  }

  forget(lease: PgLease): void {
    this.held.delete(lease);
  }

  warn(fields: Record<string, unknown>, message: string): void {
    this.log.warn(fields, message);
  }

  /** The names this node holds now. */
  names(): string[] {
    return [...this.held].map((l) => l.name);
  }

  /** At shutdown: every lease given up, so that another node takes the work at once. */
  async releaseAll(): Promise<void> {
    await Promise.all([...this.held].map((l) => l.release().catch(() => {})));
  }
}

class PgLease implements Lease {
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;
  private renewedAt = Date.now();
  private renewing = false;
  private released = false;

  constructor(private readonly leases: PgLeases, readonly name: string, readonly token: number) {
    this.timer = setInterval(() => void this.renew(), Math.max(100, Math.floor(leases.leaseMs / 3)));
    this.timer.unref();
  }

  get lost(): AbortSignal {
    return this.controller.signal;
  }

  private async renew(): Promise<void> {
    if (this.renewing || this.released) return;
    this.renewing = true;
    try {
      if (await this.leases.renew(this)) {
        this.renewedAt = Date.now();
        return;
      }
      this.lose('taken by another node');
    } catch (err) {
      // The database is unreachable: keep trying until the lease has surely run out.
      if (Date.now() - this.renewedAt >= this.leases.leaseMs) this.lose(`not renewed: ${(err as Error).message}`);
    } finally {
      this.renewing = false;
    }
  }

  private lose(why: string): void {
    if (this.released) return;
    this.released = true;
    clearInterval(this.timer);
    this.leases.forget(this);
    this.leases.warn({ lease: this.name, token: this.token, why }, 'lease lost');
    this.controller.abort(new Error(`lease ${this.name} lost: ${why}`));
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    clearInterval(this.timer);
    await this.leases.release(this);
  }
}
