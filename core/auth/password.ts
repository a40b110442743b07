import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { errors } from '../../sdk/errors.js';

/**
 * Hashes running at once. scrypt runs in libuv's thread pool, which SQLite
 * queries and file reads share: a burst of 200 sign-ins queued 200 hashes
 * ahead of every query, and any request that read the database (every
 * authenticated one) waited 11 s for it, while four hashes at a time held
 * 4 × 32 MB. Half the pool at most (pool size: UV_THREADPOOL_SIZE, default 4);
 * the rest wait here, in order.
 */
const MAX_HASHING = Math.max(1, Math.floor((Number(process.env.UV_THREADPOOL_SIZE) || 4) / 2));
/**
 * Hashes waiting at most: a few seconds of them (one takes 50-100 ms). A flood of sign-ins from
 * many addresses, each under the failed-login limits, is refused beyond this (429) rather than
 * queued without end, so a user who signs in meanwhile hears back at once, not minutes later.
 */
export const MAX_WAITING_HASHES = 64;
/** What a refused sign-in is told to wait: about what the hashes waiting take. */
const BUSY_RETRY_SECONDS = 3;
let hashing = 0;
const waiting: (() => void)[] = [];

async function scrypt(password: string, salt: Buffer, keylen: number, opts: ScryptOptions): Promise<Buffer> {
  if (hashing >= MAX_HASHING) {
    if (waiting.length >= MAX_WAITING_HASHES) throw errors.tooManyRequests(BUSY_RETRY_SECONDS, 'Too many sign-ins at once; try again in a few seconds');
    await new Promise<void>((resolve) => waiting.push(resolve));
  } else {
    hashing++;
  }
  try {
    return await new Promise<Buffer>((resolve, reject) => scryptCb(password, salt, keylen, opts, (err, key) => (err ? reject(err) : resolve(key))));
  } finally {
    // The slot passes straight to the next in line (so `hashing` never dips and lets another jump the queue).
    const next = waiting.shift();
    if (next) next();
    else hashing--;
  }
}

/** Hashes running and waiting, for tests. */
export const hashingLoad = (): { running: number; waiting: number } => ({ running: hashing, waiting: waiting.length });

// N=2^15, r=8, p=1: ~50-100 ms per hash here, OWASP's scrypt minimum. Stored with the
// parameters so they can be raised later without invalidating old hashes.
const N = 1 << 15, R = 8, P = 1, KEYLEN = 32;
const MAXMEM = 64 * 1024 * 1024;

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, KEYLEN, { N, r: R, p: P, maxmem: MAXMEM });
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64')}$${key.toString('base64')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, saltB64, keyB64] = stored.split('$');
  if (scheme !== 'scrypt' || !keyB64) return false;
  const expected = Buffer.from(keyB64, 'base64');
  const key = await scrypt(password, Buffer.from(saltB64, 'base64'), expected.length, { N: Number(n), r: Number(r), p: Number(p), maxmem: MAXMEM });
  return timingSafeEqual(key, expected);
}

/** Hashed when the username is unknown, so both failures take the same time. */
let dummy: Promise<string> | undefined;
export function dummyHash(): Promise<string> {
  // Not kept when it failed (a full queue): every later unknown-user sign-in would fail with it.
  return (dummy ??= hashPassword(randomBytes(16).toString('hex')).catch((err: unknown) => { dummy = undefined; throw err; }));
}

/** A readable generated password for the first admin. */
export function generatePassword(): string {
  return randomBytes(12).toString('base64url');
}
