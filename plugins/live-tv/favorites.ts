import type { Database } from 'antenna/sdk';

/**
 * Favorites, kept in memory as well as in the database: GET /me and every
 * channel listing read them, and neither may cost a query.
 */
export class Favorites {
  private readonly byUser = new Map<number, Set<number>>();

  constructor(private readonly knex: Database) {}

  async load(): Promise<void> {
    this.byUser.clear();
    for (const r of await this.knex('livetv_favorites').select('user_id', 'channel_id')) this.set(r.user_id).add(r.channel_id);
  }

  of(userId: number): ReadonlySet<number> {
    return this.byUser.get(userId) ?? new Set();
  }

  async add(userId: number, channelId: number): Promise<void> {
    await this.knex('livetv_favorites').insert({ user_id: userId, channel_id: channelId }).onConflict(['user_id', 'channel_id']).ignore();
    this.set(userId).add(channelId);
  }

  async remove(userId: number, channelId: number): Promise<void> {
    await this.knex('livetv_favorites').where({ user_id: userId, channel_id: channelId }).delete();
    this.byUser.get(userId)?.delete(channelId);
  }

  private set(userId: number): Set<number> {
    let s = this.byUser.get(userId);
    if (!s) this.byUser.set(userId, (s = new Set()));
    return s;
  }
}
