import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Clock, JobManager, ScheduledTask, Scheduler } from '../../sdk/services.js';

type Handler = (task: ScheduledTask, signal: AbortSignal) => Promise<void>;
const MAX_TIMER = 2 ** 31 - 1;
/** Tasks per INSERT (5 columns each). */
const SCHEDULE_CHUNK = 500;

/**
 * Persisted timers. Each firing runs as a job of the job manager (key
 * `task:<id>`), so a task never runs twice at once and shows in job listings.
 */
export class SchedulerImpl implements Scheduler {
  private readonly handlers = new Map<string, Handler>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private started = false;

  constructor(private readonly knex: Knex, private readonly log: Logger, private readonly jobs: JobManager, private readonly clock: Clock) {}

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
    if (this.started) for (const task of tasks) this.arm(task);
  }

  async cancel(id: string): Promise<boolean> {
    this.disarm(id);
    return (await this.knex('scheduled_tasks').where({ id }).delete()) > 0;
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
  }

  stop(): void {
    this.started = false;
    for (const id of [...this.timers.keys()]) this.disarm(id);
  }

  private disarm(id: string): void {
    const t = this.timers.get(id);
    if (t) clearTimeout(t);
    this.timers.delete(id);
  }

  private arm(task: ScheduledTask): void {
    this.disarm(task.id);
    const delay = Math.max(0, task.at - this.clock.now());
    const timer = setTimeout(() => (delay > MAX_TIMER ? this.arm(task) : this.fire(task)), Math.min(delay, MAX_TIMER));
    timer.unref();
    this.timers.set(task.id, timer);
  }

  private fire(task: ScheduledTask): void {
    this.timers.delete(task.id);
    const handler = this.handlers.get(task.kind);
    if (!handler) {
      this.log.warn({ task: task.id, kind: task.kind }, 'scheduled task has no handler; kept for a later start');
      return;
    }
    const job = this.jobs.ensure(`task:${task.id}`, () => ({ kind: task.kind, data: task, run: (ctx) => handler(task, ctx.signal) }));
    void job.done.then(async (state) => {
      if (!this.started) return;
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
        }
        if (state === 'failed') this.log.warn({ task: task.id, kind: task.kind, error: job.error }, 'scheduled task failed');
      } catch (err) {
        this.log.error({ err, task: task.id }, 'could not re-arm scheduled task');
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
