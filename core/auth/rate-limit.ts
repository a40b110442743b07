import type { Knex } from 'knex';
import { errors } from '../../sdk/errors.js';

/**
 * Counts failed password checks in a sliding window. Only failures count, so a
 * user who types the password right is never slowed down by others' traffic.
 *
 * - Sign-in failures count per username and address, and per address: a
 *   stranger guessing a user's password locks out their own address, never
 *   the user signing in from theirs. (Usernames are counted in their
 *   normalised form: `" bob"` is `bob`.)
 * - Wrong current passwords on a password change count per user: a stolen
 *   token cannot be used to guess the password at hashing speed.
 *
 * A single node counts in memory (a restart forgets, which is fine for slowing
 * down guessing); the nodes of a cluster count in the database they share, or an
 * attacker would get the attempts once per node.
 */
export class LoginLimiter {
  constructor(
    private readonly opts: { maxPerUser: number; maxPerAddress: number; windowMs: number },
    private readonly now: () => number = Date.now,
    private readonly log: FailureLog = new MemoryFailures(),
  ) {}

  /** Throws 429 with Retry-After when the username from this address, or the address, is over its limit. */
  async checkLogin(usernameKey: string, address: string): Promise<void> {
    await this.check(`u:${usernameKey}\n${address}`, this.opts.maxPerUser);
    await this.check(`a:${address}`, this.opts.maxPerAddress);
  }

  failLogin(usernameKey: string, address: string): Promise<void> {
    return this.log.add([`u:${usernameKey}\n${address}`, `a:${address}`], this.now(), this.cutoff());
  }

  succeedLogin(usernameKey: string, address: string): Promise<void> {
    return this.log.forget(`u:${usernameKey}\n${address}`);
  }

  checkPasswordChange(userId: number): Promise<void> {
    return this.check(`p:${userId}`, this.opts.maxPerUser, 'Too many wrong passwords; try again later');
  }

  failPasswordChange(userId: number): Promise<void> {
    return this.log.add([`p:${userId}`], this.now(), this.cutoff());
  }

  succeedPasswordChange(userId: number): Promise<void> {
    return this.log.forget(`p:${userId}`);
  }

  private async check(key: string, max: number, message = 'Too many failed login attempts; try again later'): Promise<void> {
    const list = (await this.log.since(key, this.cutoff())).get(key) ?? [];
    if (list.length >= max) {
      const retryAfter = (list[list.length - max]! + this.opts.windowMs - this.now()) / 1000;
      throw errors.tooManyRequests(retryAfter, message);
    }
  }

  /** Seconds until the username may try again from the address where it failed most recently, or undefined when no address is locked out. */
  async lockedFor(usernameKey: string): Promise<number | undefined> {
    let longest: number | undefined;
    for (const list of (await this.log.since(`u:${usernameKey}\n`, this.cutoff(), true)).values()) {
      if (list.length < this.opts.maxPerUser) continue;
      const left = Math.max(1, Math.ceil((list[list.length - this.opts.maxPerUser]! + this.opts.windowMs - this.now()) / 1000));
      longest = Math.max(longest ?? 0, left);
    }
    return longest;
  }

  /** An administrator lifts a username's lockouts, from every address (its failures are forgotten). */
  clear(usernameKey: string): Promise<void> {
    return this.log.forget(`u:${usernameKey}\n`, true);
  }

  private cutoff(): number {
    return this.now() - this.opts.windowMs;
  }
}

/** Failure times (ms) per key. */
export interface FailureLog {
  /** The times after `cutoff` of `key`, or with `prefix` of every key starting with it, oldest first. */
  since(key: string, cutoff: number, prefix?: boolean): Promise<Map<string, number[]>>;
  /** A failure at `at` for each key (and the times before `cutoff` may go). */
  add(keys: string[], at: number, cutoff: number): Promise<void>;
  forget(key: string, prefix?: boolean): Promise<void>;
}

/** One node's failures, in memory. */
export class MemoryFailures implements FailureLog {
  private readonly failures = new Map<string, number[]>();

  async since(key: string, cutoff: number, prefix = false): Promise<Map<string, number[]>> {
    const keys = prefix ? [...this.failures.keys()].filter((k) => k.startsWith(key)) : [key];
    const found = new Map<string, number[]>();
    for (const k of keys) {
      const list = this.recent(k, cutoff);
      if (list.length) found.set(k, list);
    }
    return found;
  }

  async add(keys: string[], at: number, cutoff: number): Promise<void> {
    for (const key of keys) this.failures.set(key, [...this.recent(key, cutoff), at]);
    if (this.failures.size > 10_000) for (const key of [...this.failures.keys()]) this.recent(key, cutoff);
  }

  async forget(key: string, prefix = false): Promise<void> {
    if (!prefix) this.failures.delete(key);
    else for (const k of [...this.failures.keys()]) if (k.startsWith(key)) this.failures.delete(k);
  }

  private recent(key: string, cutoff: number): number[] {
    const list = (this.failures.get(key) ?? []).filter((t) => t > cutoff);
    if (list.length) this.failures.set(key, list);
    else this.failures.delete(key);
    return list;
  }
}

/**
 * The failures of every node of a cluster, in the `cluster_login_failures` table (times from the
 * nodes' clocks, which a window of minutes forgives). Old rows go at most once a minute per node.
 */
export class SharedFailures implements FailureLog {
  private sweptAt = 0;

  constructor(private readonly knex: Knex) {}

  async since(key: string, cutoff: number, prefix = false): Promise<Map<string, number[]>> {
    const rows: { key: string; at: string | number }[] = await this.knex('cluster_login_failures')
      .where(prefix ? this.knex.raw('left(key, ?) = ?', [key.length, key]) : { key })
      .andWhere('at', '>', cutoff).orderBy('at').select('key', 'at');
    const found = new Map<string, number[]>();
    for (const r of rows) found.set(r.key, [...(found.get(r.key) ?? []), Number(r.at)]);
    return found;
  }

  async add(keys: string[], at: number, cutoff: number): Promise<void> {
    await this.knex('cluster_login_failures').insert(keys.map((key) => ({ key, at })));
    if (at - this.sweptAt > 60_000) {
      this.sweptAt = at;
      await this.knex('cluster_login_failures').where('at', '<=', cutoff).delete();
    }
  }

  async forget(key: string, prefix = false): Promise<void> {
    await this.knex('cluster_login_failures').where(prefix ? this.knex.raw('left(key, ?) = ?', [key.length, key]) : { key }).delete();
  }
}
