import { errors } from '../../sdk/errors.js';

/**
 * Counts failed password checks in a sliding window, in memory (a restart
 * forgets, which is fine for slowing down guessing). Only failures count, so a
 * user who types the password right is never slowed down by others' traffic.
 *
 * - Sign-in failures count per username and address, and per address: a
 *   stranger guessing a user's password locks out their own address, never
 *   the user signing in from theirs. (Usernames are counted in their
 *   normalised form: `" bob"` is `bob`.)
 * - Wrong current passwords on a password change count per user: a stolen
 *   token cannot be used to guess the password at hashing speed.
 */
export class LoginLimiter {
  private readonly failures = new Map<string, number[]>();

  constructor(
    private readonly opts: { maxPerUser: number; maxPerAddress: number; windowMs: number },
    private readonly now: () => number = Date.now,
  ) {}

  /** Throws 429 with Retry-After when the username from this address, or the address, is over its limit. */
  checkLogin(usernameKey: string, address: string): void {
    this.check(`u:${usernameKey}\n${address}`, this.opts.maxPerUser);
    this.check(`a:${address}`, this.opts.maxPerAddress);
  }

  failLogin(usernameKey: string, address: string): void {
    this.fail(`u:${usernameKey}\n${address}`, `a:${address}`);
  }

  succeedLogin(usernameKey: string, address: string): void {
    this.failures.delete(`u:${usernameKey}\n${address}`);
  }

  checkPasswordChange(userId: number): void {
    this.check(`p:${userId}`, this.opts.maxPerUser, 'Too many wrong passwords; try again later');
  }

  failPasswordChange(userId: number): void {
    this.fail(`p:${userId}`);
  }

  succeedPasswordChange(userId: number): void {
    this.failures.delete(`p:${userId}`);
  }

  private check(key: string, max: number, message = 'Too many failed login attempts; try again later'): void {
    const list = this.recent(key);
    if (list.length >= max) {
      const retryAfter = (list[list.length - max]! + this.opts.windowMs - this.now()) / 1000;
      throw errors.tooManyRequests(retryAfter, message);
    }
  }

  private fail(...keys: string[]): void {
    for (const key of keys) {
      const list = this.recent(key);
      list.push(this.now());
      this.failures.set(key, list);
    }
    if (this.failures.size > 10_000) this.sweep();
  }

  /** Seconds until the username may try again from the address where it failed most recently, or undefined when no address is locked out. */
  lockedFor(usernameKey: string): number | undefined {
    let longest: number | undefined;
    for (const key of [...this.failures.keys()]) {
      if (!key.startsWith(`u:${usernameKey}
`)) continue;
      const list = this.recent(key);
      if (list.length < this.opts.maxPerUser) continue;
      const left = Math.max(1, Math.ceil((list[list.length - this.opts.maxPerUser]! + this.opts.windowMs - this.now()) / 1000));
      longest = Math.max(longest ?? 0, left);
    }
    return longest;
  }

  /** An administrator lifts a username's lockouts, from every address (its failures are forgotten). */
  clear(usernameKey: string): void {
    for (const key of [...this.failures.keys()]) if (key.startsWith(`u:${usernameKey}
`)) this.failures.delete(key);
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
