import type { Knex } from 'knex';
import type { Logger } from '../../sdk/services.js';

/** The part of node-postgres' Client used here (pg ships no types). */
interface PgClient {
  connect(): Promise<void>;
  query(sql: string): Promise<unknown>;
  end(): Promise<void>;
  on(event: 'notification', fn: (n: { channel: string; payload?: string }) => void): void;
  on(event: 'error' | 'end', fn: (err?: Error) => void): void;
}

const CHANNEL = 'antenna_cluster';
const RECONNECT_MS = 1000;

/** A message to the nodes from a process that is not one (the CLI): `from` names it. */
export async function notifyNodes(knex: Knex, topic: string, message: string, from = 'cli'): Promise<void> {
  await knex.raw('SELECT pg_notify(?, ?)', [CHANNEL, `${topic} ${from} ${message}`]);
}

/**
 * Messages between nodes over PostgreSQL's LISTEN/NOTIFY: one channel, each
 * payload `<topic> <from node> <message>`. One connection outside knex's pool
 * listens; it reconnects after a failure and then calls the `resync` handlers,
 * since what was sent meanwhile is lost.
 */
export class PgMessages {
  private client?: PgClient;
  private closed = false;
  private readonly handlers = new Map<string, Set<(message: string) => void>>();
  private readonly resyncs = new Set<() => void>();
  private retry?: NodeJS.Timeout;

  constructor(private readonly knex: Knex, private readonly connection: unknown, private readonly nodeId: string, private readonly log: Logger) {}

  async start(): Promise<void> {
    const { Client } = require('pg') as { Client: new (config: unknown) => PgClient };
    const client = new Client(typeof this.connection === 'string' ? { connectionString: this.connection } : this.connection);
    let failed = false;
    const fail = (err?: Error) => {
      if (failed || this.closed) return;
      failed = true;
      this.client = undefined;
      this.log.warn({ error: err?.message ?? 'connection ended' }, 'cluster: listening connection lost; reconnecting');
      client.end().catch(() => {});
      this.retry = setTimeout(() => void this.reconnect(), RECONNECT_MS);
    };
    client.on('error', fail);
    client.on('end', fail);
    client.on('notification', (n) => this.deliver(n.payload ?? ''));
    await client.connect();
    await client.query(`LISTEN ${CHANNEL}`);
    this.client = client;
  }

  private async reconnect(): Promise<void> {
    if (this.closed) return;
    try {
      await this.start();
      for (const fn of this.resyncs) fn();
    } catch (err) {
      this.log.warn({ error: (err as Error).message }, 'cluster: cannot listen yet; retrying');
      this.retry = setTimeout(() => void this.reconnect(), RECONNECT_MS);
    }
  }

  private deliver(payload: string): void {
    const [topic, from] = payload.split(' ', 2);
    if (!topic || from === undefined || from === this.nodeId) return;
    const message = payload.slice(topic.length + from.length + 2);
    for (const fn of this.handlers.get(topic) ?? []) {
      try {
        fn(message);
      } catch (err) {
        this.log.error({ err, topic }, 'cluster: message handler failed');
      }
    }
  }

  publish(topic: string, message: string): void {
    notifyNodes(this.knex, topic, message, this.nodeId)
      .catch((err: Error) => this.log.warn({ error: err.message, topic }, 'cluster: could not publish'));
  }

  subscribe(topic: string, handler: (message: string) => void): () => void {
    let set = this.handlers.get(topic);
    if (!set) this.handlers.set(topic, (set = new Set()));
    set.add(handler);
    return () => set!.delete(handler);
  }

  /** Called after a reconnection: messages may have been missed. */
  onResync(fn: () => void): void {
    this.resyncs.add(fn);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    await this.client?.end().catch(() => {});
  }
}
