import { coreServices, inject, injectable, type Database } from 'antenna/sdk';
import type { VisitCounts } from './api.js';

/**
 * A class resolved from the plugin's tsyringe container. Constructor
 * parameters are injected by explicit token (the core service's ref id), which
 * keeps working however the plugin is compiled.
 */
@injectable()
export class Visits implements VisitCounts {
  constructor(@inject(coreServices.database.id) private readonly db: Database) {}

  /** Counts one more visit and returns the new total. */
  async visit(userId: number): Promise<number> {
    await this.db('hello_visits').insert({ user_id: userId, count: 1 })
      .onConflict('user_id').merge({ count: this.db.raw('hello_visits.count + 1') });
    return this.of(userId);
  }

  async of(userId: number): Promise<number> {
    const row = await this.db('hello_visits').where({ user_id: userId }).first('count');
    return Number(row?.count ?? 0);
  }

  async all(): Promise<{ username: string; count: number }[]> {
    return this.db('hello_visits').join('users', 'users.id', 'hello_visits.user_id').select('users.username', 'hello_visits.count');
  }
}
