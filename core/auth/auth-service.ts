import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { JWT } from '@fastify/jwt';
import { errors } from '../../sdk/errors.js';
import type { AccessGrant, AuthService, AuthUser } from '../../sdk/services.js';
import type { RouteAuth } from '../../sdk/http.js';
import type { AccountStore, UserRow } from './accounts.js';
import { AccessKeys } from './access-keys.js';

/** `lastSeen`: the last use the database knows of; `seenAt`: when this process last wrote one. */
interface CachedSession { userId: number; deviceId: string; revoked: boolean; at: number; lastSeen: number; seenAt: number }
interface CachedUser { row: UserRow; libraries: string[]; at: number }

// How long a session's or user's state is trusted before the database is asked
// again. Revocations made by this process apply at once; those made by another
// process (the CLI) within this many ms.
const STATE_TTL_MS = 5_000;
const TOKEN_CACHE_MAX = 10_000;
const SEEN_WRITE_MS = 60_000;

/**
 * Verifies bearer tokens without a database query per request: a verified
 * token's claims are cached (signature checked once), and session/user state
 * is cached briefly and dropped the moment this process revokes or changes it.
 */
export class AuthServiceImpl implements AuthService {
  private jwt?: JWT;
  private readonly tokens = new Map<string, { sid: string; uid: number }>();
  private readonly sessions = new Map<string, CachedSession>();
  private readonly users = new Map<number, CachedUser>();
  private readonly profileFields: [string, (user: AuthUser) => unknown | Promise<unknown>][] = [];
  private readonly mediaKeySecret: Buffer;

  constructor(
    private readonly store: AccountStore,
    secret: string,
    /** sessionIdleMs: a session unused for longer expires (0: never). */
    private readonly opts: { mediaKeyTtlSeconds: number; sessionIdleMs: number },
    private readonly now: () => number = Date.now,
    readonly accessKeys?: AccessKeys,
  ) {
    this.mediaKeySecret = createHmac('sha256', secret).update('antenna media keys v1').digest();
  }

  attachJwt(jwt: JWT): void {
    this.jwt = jwt;
  }

  issueToken(sessionId: string, userId: number): string {
    return this.jwt!.sign({ sid: sessionId, sub: userId });
  }

  /** Device-Id header, else a stable id derived from the User-Agent. */
  static deviceId(request: FastifyRequest): string {
    const given = request.headers['device-id'];
    const value = Array.isArray(given) ? given[0] : given;
    if (value && value.trim()) return value.trim().slice(0, 128);
    const ua = request.headers['user-agent'] ?? 'unknown';
    return 'ua-' + createHash('sha256').update(ua).digest('hex').slice(0, 24);
  }

  /** Sessions count as unused after this long (0: never), for listings. */
  get sessionIdleMs(): number {
    return this.opts.sessionIdleMs;
  }

  /** The fastify onRequest check. Sets request.user, or throws 401/403. */
  async authenticate(request: FastifyRequest, mode: RouteAuth): Promise<void> {
    if (mode === 'public') return;
    if (mode === 'access-key') {
      if (!this.accessKeys) throw errors.unauthorized('Invalid access key');
      return this.accessKeys.authenticate(request);
    }
    const header = request.headers.authorization;
    let token: string | undefined;
    if (header !== undefined) {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
      if (!m) throw errors.unauthorized('Invalid authorization header');
      token = m[1];
    } else if (mode === 'media') {
      const query = request.query as Record<string, unknown> | undefined;
      const apiKey = query?.api_key;
      const key = query?.key;
      if (typeof apiKey === 'string' && apiKey) token = apiKey;
      else if (typeof key === 'string' && key) {
        request.user = await this.verifyMediaKey(request, key);
        return;
      }
    }
    if (!token) throw errors.unauthorized('Missing token');
    request.user = await this.userForToken(token);
  }

  async userForToken(token: string): Promise<AuthUser> {
    let claims = this.tokens.get(token);
    if (!claims) {
      let payload: { sid?: unknown; sub?: unknown };
      try {
        payload = this.jwt!.verify(token);
      } catch {
        throw errors.unauthorized('Invalid token');
      }
      if (typeof payload.sid !== 'string' || typeof payload.sub !== 'number') throw errors.unauthorized('Invalid token');
      claims = { sid: payload.sid, uid: payload.sub };
      if (this.tokens.size >= TOKEN_CACHE_MAX) this.tokens.delete(this.tokens.keys().next().value!);
      this.tokens.set(token, claims);
    }
    return this.userForSession(claims.sid, claims.uid);
  }

  private async userForSession(sid: string, uid: number): Promise<AuthUser> {
    const now = this.now();
    let session = this.sessions.get(sid);
    if (!session || now - session.at > STATE_TTL_MS) {
      const row = await this.store.getSession(sid);
      session = {
        userId: row?.user_id ?? -1, deviceId: row?.device_id ?? '', revoked: !row || row.revoked_at !== null,
        at: now, lastSeen: Math.max(row?.last_seen_at ?? 0, session?.seenAt ?? 0), seenAt: session?.seenAt ?? 0,
      };
      this.sessions.set(sid, session);
    }
    if (session.revoked || session.userId !== uid) throw errors.unauthorized('Token revoked');
    if (this.opts.sessionIdleMs && now - Math.max(session.lastSeen, session.seenAt) > this.opts.sessionIdleMs) {
      session.revoked = true;
      await this.store.revokeSession(sid);
      throw errors.unauthorized('Session expired; sign in again');
    }
    const user = await this.cachedUser(uid, now);
    if (!user) throw errors.unauthorized('Token revoked');
    if (!user.row.active) throw errors.inactive();
    if (now - session.seenAt > SEEN_WRITE_MS) {
      session.seenAt = now;
      this.store.touchSession(sid).catch(() => {}); // bookkeeping only; never fails a request
    }
    return {
      id: user.row.id, username: user.row.username, active: user.row.active, admin: user.row.admin,
      all_libraries_access: user.row.all_libraries_access, libraries: user.libraries, sessionId: sid, deviceId: session.deviceId,
    };
  }

  private async cachedUser(uid: number, now: number): Promise<CachedUser | undefined> {
    const hit = this.users.get(uid);
    if (hit && now - hit.at <= STATE_TTL_MS) return hit;
    const row = await this.store.getUser(uid);
    if (!row) {
      this.users.delete(uid);
      return undefined;
    }
    const entry = { row, libraries: row.all_libraries_access ? [] : await this.store.libraries(uid), at: now };
    this.users.set(uid, entry);
    return entry;
  }

  /** Forget cached state after this process changed it (password, revocation, flags); the other nodes are told. */
  invalidateSession(sid: string): void {
    this.sessions.delete(sid);
    this.onInvalidate?.(`s:${sid}`);
  }
  invalidateUser(uid: number): void {
    this.forgetUser(uid);
    this.onInvalidate?.(`u:${uid}`);
  }

  private forgetUser(uid: number): void {
    this.users.delete(uid);
    for (const [sid, s] of this.sessions) if (s.userId === uid) this.sessions.delete(sid);
  }

  /** Cluster mode: passes this node's invalidations on to the others (core/cluster). */
  onInvalidate?: (message: string) => void;

  /** An invalidation another node made (`s:<session>`, `u:<user>`), or `*` when some may have been missed. */
  applyRemote(message: string): void {
    if (message === '*') {
      this.sessions.clear();
      this.users.clear();
    } else if (message.startsWith('s:')) {
      this.sessions.delete(message.slice(2));
    } else if (message.startsWith('u:')) {
      this.forgetUser(Number(message.slice(2)));
    }
  }

  requireUser(request: FastifyRequest): AuthUser {
    const user = request.user as AuthUser | null | undefined;
    if (!user || typeof user.id !== 'number') throw errors.unauthorized('Missing token');
    return user;
  }

  requireAdmin(request: FastifyRequest): AuthUser {
    const user = this.requireUser(request);
    if (!user.admin) throw errors.forbidden('Administrator only');
    return user;
  }

  canAccessLibrary(user: AuthUser, libraryId: string | number): boolean {
    return user.admin || user.all_libraries_access || user.libraries.includes(String(libraryId));
  }

  signMediaKey(user: AuthUser, scope: string, ttlSeconds = this.opts.mediaKeyTtlSeconds): string {
    // A client an access key let in gets keys its access key mints: they live exactly as long as it.
    if (user.accessKey !== undefined) {
      if (!this.accessKeys) throw errors.unauthorized('Invalid access key');
      return this.accessKeys.mint(user.sessionId, scope);
    }
    // Expiry rounded up to a 5-minute step: the same URL for a while, so players and caches
    // see one segment URL instead of a new one every second.
    const step = 300;
    let exp = Math.ceil((Math.floor(this.now() / 1000) + ttlSeconds) / step) * step;
    // A request signed in by a media key gets keys that expire with it (for its own scope, the
    // very key it came with): a leaked URL can never be renewed into one that lives longer.
    if (user.mediaKeyExpiresAt !== undefined) exp = Math.min(exp, Math.floor(user.mediaKeyExpiresAt / 1000));
    const body = `${user.id}.${user.sessionId}.${exp}`;
    return `${Buffer.from(body).toString('base64url')}.${this.mac(scope, body)}`;
  }

  private mac(scope: string, body: string): string {
    return createHmac('sha256', this.mediaKeySecret).update(scope).update('\n').update(body).digest('base64url');
  }

  private async verifyMediaKey(request: FastifyRequest, key: string): Promise<AuthUser> {
    const scopeOf = request.routeOptions.config.mediaScope;
    if (!scopeOf) throw errors.unauthorized('Missing token');
    const [bodyB64, sig] = key.split('.');
    if (!bodyB64 || !sig) throw errors.unauthorized('Invalid media key');
    const body = Buffer.from(bodyB64, 'base64url').toString();
    if (AccessKeys.minted(body)) {
      if (!this.accessKeys) throw errors.unauthorized('Invalid media key');
      return this.accessKeys.mediaKeyUser(request, scopeOf(request), body, sig);
    }
    const expected = Buffer.from(this.mac(scopeOf(request), body));
    const given = Buffer.from(sig);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) throw errors.unauthorized('Invalid media key');
    const [uid, sid, exp] = body.split('.');
    if (!(Number(exp) * 1000 >= this.now())) throw errors.unauthorized('Media key expired');
    return { ...(await this.userForSession(sid!, Number(uid))), mediaKeyExpiresAt: Number(exp) * 1000 };
  }

  requireAccessKey(request: FastifyRequest): AccessGrant {
    if (!request.accessGrant) throw errors.unauthorized('Invalid access key');
    return request.accessGrant;
  }

  async accessKey(name: string): Promise<string | undefined> {
    return this.accessKeys?.keyOf(name);
  }

  addProfileField(name: string, compute: (user: AuthUser) => unknown | Promise<unknown>): void {
    if (this.profileFields.some(([n]) => n === name)) throw new Error(`profile field ${name} is already provided`);
    this.profileFields.push([name, compute]);
  }

  async profile(user: AuthUser): Promise<Record<string, unknown>> {
    const out: Record<string, unknown> = {
      id: user.id, username: user.username, active: user.active, admin: user.admin,
      all_libraries_access: user.all_libraries_access, favorites: [],
    };
    for (const [name, compute] of this.profileFields) out[name] = await compute(user);
    return out;
  }
}
