import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Clock, Cluster, JobManager, Lease, ScheduledTask, Scheduler } from '../../sdk/services.js';

type Handler = (task: ScheduledTask, signal: AbortSignal) => Promise<void>;
const MAX_TIMER = 2 ** 31 - 1;
const TOPIC = 'scheduler';
/** The message of a batch: re-read every task (one query per node) rather than one message and one query per task. */
const ALL = '*';

/** Tasks per INSERT (5 columns each). */
const SCHEDULE_CHUNK = 500;

/**
 * Persisted timers. Each firing runs as a job of the job manager (key
 * `task:<id>`), so a task never runs twice at once and shows in job listings.
 *
 * In cluster mode every node arms every task (told of changes by the others,
 * and re-reading the table every lease time), and a firing runs on the node
 * that takes the task's lease and still finds the task due at the time it
 * fired for: the others look again after a lease time, so when that node
 * dies before the task was re-armed or removed, another one runs it.
 */
export class SchedulerImpl implements Scheduler {
  private readonly handlers = new Map<string, Handler>();
  /** Armed tasks, with the time each is armed for. */
  private readonly timers = new Map<string, { timer: NodeJS.Timeout; at: number }>();
  private resyncTimer: NodeJS.Timeout | undefined;
  private started = false;

  constructor(
    private readonly knex: Knex, private readonly log: Logger, private readonly jobs: JobManager, private readonly clock: Clock,
    /** On a single node every lease is granted and nothing is sent (core/cluster/cluster.ts). */
    private readonly cluster: Cluster,
  ) {
    if (cluster.enabled) {
      cluster.subscribe(TOPIC, (id) => void (id === ALL ? this.resync() : this.reload(id))
        .catch((err) => this.log.warn({ error: (err as Error).message }, 'scheduler: re-reading after a change failed')));
    }
  }

  handle(kind: string, handler: Handler): void {
    if (this.handlers.has(kind)) throw new Error(`scheduler: a handler for ${kind} is already registered`);
    this.handlers.set(kind, handler);
  }

  async schedule(task: ScheduledTask): Promise<void> {
    await this.scheduleMany([task]);
  }

  async scheduleMany(tasks: ScheduledTask[]): Promise<void> {
    const bad = tasks.find((task) => !Number.isFinite(task.at));
    if (bad) throw new Error(`scheduler: task ${bad.id} has no valid time`);
    const rows = tasks.map((task) => ({ id: task.id, kind: task.kind, at: Math.round(task.at), every_ms: task.everyMs ?? null, payload: task.payload === undefined ? null : JSON.stringify(task.payload) }));
    // One id twice in a statement is an error on PostgreSQL: the last one wins, as with schedule() in turn.
    const unique = [...new Map(rows.map((r) => [r.id, r])).values()];
    for (let i = 0; i < unique.length; i += SCHEDULE_CHUNK) await this.knex('scheduled_tasks').insert(unique.slice(i, i + SCHEDULE_CHUNK)).onConflict('id').merge();
    if (this.started) for (const task of tasks) this.arm({ ...task, at: Math.round(task.at) });
    // A series evaluation schedules hundreds at once: the other nodes get one message for the batch.
    if (unique.length === 1) this.cluster.publish(TOPIC, unique[0]!.id);
    else if (unique.length > 1) this.cluster.publish(TOPIC, ALL);
  }

  async cancel(id: string): Promise<boolean> {
    this.disarm(id);
    const removed = (await this.knex('scheduled_tasks').where({ id }).delete()) > 0;
    this.cluster.publish(TOPIC, id);
    return removed;
  }

  async list(kind?: string): Promise<ScheduledTask[]> {
    const q = this.knex('scheduled_tasks').orderBy('at');
    if (kind) q.where({ kind });
    return (await q).map(fromRow);
  }

  /** Re-arms every stored task; one whose time passed while the server was down runs now. */
  async start(): Promise<void> {
    this.started = true;
    for (const task of await this.list()) this.arm(task);
    if (this.cluster.enabled) {
      this.resyncTimer = setInterval(() => void this.resync().catch((err) => this.log.warn({ error: (err as Error).message }, 'scheduler: re-reading the tasks failed')), this.cluster.leaseMs);
      this.resyncTimer.unref();
    }
  }

  stop(): void {
    this.started = false;
    clearInterval(this.resyncTimer);
    for (const id of [...this.timers.keys()]) this.disarm(id);
  }

  private running(id: string): boolean {
    return this.jobs.get(`task:${id}`) !== undefined;
  }

  /** Another node changed a task (or this one gave way to another): arm what the table says now. */
  private async reload(id: string): Promise<void> {
    if (!this.started || this.running(id)) return;
    const row = await this.knex('scheduled_tasks').where({ id }).first();
    if (row) this.arm(fromRow(row));
    else this.disarm(id);
  }

  /** Cluster mode, every lease time: what a lost message would have said. */
  private async resync(): Promise<void> {
    if (!this.started) return;
    const tasks = await this.list();
    for (const task of tasks) if (this.timers.get(task.id)?.at !== task.at && !this.running(task.id)) this.arm(task);
    const ids = new Set(tasks.map((t) => t.id));
    for (const id of [...this.timers.keys()]) if (!ids.has(id)) this.disarm(id);
  }

  private disarm(id: string): void {
    const t = this.timers.get(id);
    if (t) clearTimeout(t.timer);
    this.timers.delete(id);
  }

  private arm(task: ScheduledTask): void {
    this.disarm(task.id);
    const delay = Math.max(0, task.at - this.clock.now());
    const timer = setTimeout(() => (delay > MAX_TIMER ? this.arm(task) : this.fire(task)), Math.min(delay, MAX_TIMER));
    timer.unref();
    this.timers.set(task.id, { timer, at: task.at });
  }

  private fire(task: ScheduledTask): void {
    this.timers.delete(task.id);
    const handler = this.handlers.get(task.kind);
    if (!handler) {
      this.log.warn({ task: task.id, kind: task.kind }, 'scheduled task has no handler; kept for a later start');
      return;
    }
    if (!this.cluster.enabled) return this.run(task, handler);
    if (this.running(task.id)) return;
    void this.claim(task, handler).catch((err) => {
      this.log.warn({ task: task.id, error: (err as Error).message }, 'scheduler: could not claim a task; trying again');
      this.retryLater(task);
    });
  }

  /** Cluster mode: runs the task here if this node takes its lease and it is still due for this firing. */
  private async claim(task: ScheduledTask, handler: Handler): Promise<void> {
    const lease = await this.cluster.take(`task:${task.id}`);
    if (!lease) return this.retryLater(task); // running on another node
    const row = await this.knex('scheduled_tasks').where({ id: task.id }).first();
    if (!row || Number(row.at) !== task.at) {
      await lease.release(); // it ran elsewhere already, or was cancelled or moved
      if (row && this.started) this.arm(fromRow(row));
      return;
    }
    this.run(fromRow(row), handler, lease);
  }

  /** Looks at the task again after a lease time: re-armed by its runner, removed, or (its runner died) due still. */
  private retryLater(task: ScheduledTask): void {
    if (!this.started) return;
    const timer = setTimeout(() => {
      this.timers.delete(task.id);
      void this.reload(task.id).catch((err) => this.log.warn({ task: task.id, error: (err as Error).message }, 'scheduler: re-reading a task failed'));
    }, this.cluster.leaseMs);
    timer.unref();
    this.timers.set(task.id, { timer, at: task.at });
  }

  private run(task: ScheduledTask, handler: Handler, lease?: Lease): void {
    const job = this.jobs.ensure(`task:${task.id}`, () => ({ kind: task.kind, data: task, run: (ctx) => handler(task, ctx.signal) }));
    lease?.lost.addEventListener('abort', () => void job.stop('lease lost'), { once: true });
    void job.done.then(async (state) => {
      // A lost lease: another node runs it now and re-arms it.
      if (!this.started || lease?.lost.aborted) return;
      try {
        const current = await this.knex('scheduled_tasks').where({ id: task.id }).first();
        if (!current) return; // cancelled meanwhile
        const stored = fromRow(current);
        if (stored.at !== task.at) return this.arm(stored); // rescheduled while running
        if (stored.everyMs) {
          const next = { ...stored, at: Math.max(this.clock.now(), stored.at) + stored.everyMs };
          await this.schedule(next);
        } else {
          await this.knex('scheduled_tasks').where({ id: task.id }).delete();
          this.cluster.publish(TOPIC, task.id);
        }
        if (state === 'failed') this.log.warn({ task: task.id, kind: task.kind, error: job.error }, 'scheduled task failed');
      } catch (err) {
        this.log.error({ err, task: task.id }, 'could not re-arm scheduled task');
      } finally {
        await lease?.release().catch(() => {});
      }
    });
  }
}

function fromRow(row: any): ScheduledTask {
  return {
    id: row.id, kind: row.kind, at: Number(row.at),
    everyMs: row.every_ms === null || row.every_ms === undefined ? undefined : Number(row.every_ms),
    payload: row.payload ? JSON.parse(row.payload) : undefined,
  };
}
