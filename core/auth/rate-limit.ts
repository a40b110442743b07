import { errors } from '../../sdk/errors.js';

/**
 * Counts failed logins per username and per client address in a sliding window.
 * Only failures count, so a user who types the password right is never slowed
 * down by others' traffic. In memory: a restart forgets, which is fine for
 * slowing down guessing.
 */
export class LoginLimiter {
  private readonly failures = new Map<string, number[]>();

  constructor(
    private readonly opts: { maxPerUser: number; maxPerAddress: number; windowMs: number },
    private readonly now: () => number = Date.now,
  ) {}

  /** Throws 429 with Retry-After when either key is over its limit. */
  check(username: string, address: string): void {
    this.checkKey(`u:${username.toLowerCase()}`, this.opts.maxPerUser);
    this.checkKey(`a:${address}`, this.opts.maxPerAddress);
  }

  fail(username: string, address: string): void {
    for (const key of [`u:${username.toLowerCase()}`, `a:${address}`]) {
      const list = this.recent(key);
      list.push(this.now());
      this.failures.set(key, list);
    }
    if (this.failures.size > 10_000) this.sweep();
  }

  succeed(username: string): void {
    this.failures.delete(`u:${username.toLowerCase()}`);
  }

  /** Seconds until the username may try again, or undefined when it is not locked out. */
  lockedFor(username: string): number | undefined {
    const list = this.recent(`u:${username.toLowerCase()}`);
    if (list.length < this.opts.maxPerUser) return undefined;
    return Math.max(1, Math.ceil((list[list.length - this.opts.maxPerUser] + this.opts.windowMs - this.now()) / 1000));
  }

  /** An administrator lifts a username's lockout (its failures are forgotten). */
  clear(username: string): void {
    this.succeed(username);
  }

  private checkKey(key: string, max: number): void {
    const list = this.recent(key);
    if (list.length >= max) {
      const retryAfter = (list[list.length - max] + this.opts.windowMs - this.now()) / 1000;
      throw errors.tooManyRequests(retryAfter, 'Too many failed login attempts; try again later');
    }
  }

  private recent(key: string): number[] {
    const cutoff = this.now() - this.opts.windowMs;
    const list = (this.failures.get(key) ?? []).filter((t) => t > cutoff);
    if (list.length) this.failures.set(key, list);
    else this.failures.delete(key);
    return list;
  }

  private sweep(): void {
    for (const key of [...this.failures.keys()]) this.recent(key);
  }
}
