import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { errors } from '../../sdk/errors.js';
import { hashPassword } from './password.js';

export interface UserRow {
  id: number;
  username: string;
  password_hash: string;
  active: boolean;
  admin: boolean;
  all_libraries_access: boolean;
  avatar_type: string | null;
}

export interface SessionRow {
  id: string;
  user_id: number;
  device_id: string;
  revoked_at: number | null;
  last_seen_at: number;
}

export interface SessionInfo {
  id: string;
  device_id: string;
  device_os: string | null;
  user_agent: string | null;
  created_at: number;
  last_seen_at: number;
}

export const MIN_PASSWORD_LENGTH = 8;
/** Whitespace, control, format (zero-width, bidi, BOM), unassigned, private-use and other invisible characters, and slashes. */
const NOT_IN_USERNAME = /[\s\p{C}\p{Default_Ignorable_Code_Point}/\\]/u;

/**
 * The one form usernames are compared in, by sign-in, its rate limit and `user add`: NFKC (so
 * full-width and compatibility forms are the letters they look like), trimmed (NBSP and BOM
 * too), case-folded (upper- then lower-cased: `ß` and `SS` fold alike).
 */
export function usernameKey(name: string): string {
  return name.normalize('NFKC').trim().toUpperCase().toLowerCase().normalize('NFKC');
}

/** The username as stored (NFKC, trimmed), or a 400 saying what is wrong with it. */
function checkedUsername(input: string): string {
  const username = input.normalize('NFKC').trim();
  const length = [...username].length;
  if (length < 1 || length > 64 || [...usernameKey(username)].length > 64) throw errors.badRequest('username must be 1-64 characters');
  if (NOT_IN_USERNAME.test(username)) throw errors.badRequest('username must not contain spaces, slashes, or control, invisible or direction characters');
  if (username === '.' || username === '..') throw errors.badRequest('username must not be . or ..');
  return username;
}

/** The password rule of the API and the CLI: at least 8 characters besides leading and trailing spaces. */
export function checkPassword(password: string, field = 'password'): void {
  if ([...password.trim()].length < MIN_PASSWORD_LENGTH) {
    throw errors.badRequest(`${field} must be at least ${MIN_PASSWORD_LENGTH} characters, not counting leading and trailing spaces`);
  }
}

const bool = (v: unknown) => v === true || v === 1 || v === '1';
const toUser = (row: any): UserRow => ({
  ...row, active: bool(row.active), admin: bool(row.admin), all_libraries_access: bool(row.all_libraries_access),
});

/** Users, their device sessions and library grants, in the core's tables. */
export class AccountStore {
  constructor(private readonly knex: Knex, private readonly now: () => number = Date.now) {}

  async countUsers(): Promise<number> {
    const row = await this.knex('users').count<{ n: number }[]>({ n: '*' }).first();
    return Number(row?.n ?? 0);
  }

  async createUser(input: { username: string; password: string; admin?: boolean; active?: boolean; libraries?: string[] }): Promise<UserRow> {
    const username = checkedUsername(input.username);
    checkPassword(input.password);
    if (await this.findByUsername(username)) throw errors.conflict(`user ${username} already exists`);
    const now = this.now();
    const libraries = input.libraries ?? [];
    const [row] = await this.knex('users').insert({
      username,
      username_key: usernameKey(username),
      password_hash: await hashPassword(input.password),
      active: input.active ?? true,
      admin: input.admin ?? false,
      // Granting specific libraries is what restricts a user; an admin always sees everything.
      all_libraries_access: input.admin ? true : libraries.length === 0,
      created_at: now,
      updated_at: now,
    }).returning('id');
    const id = typeof row === 'object' ? row.id : row;
    if (libraries.length) await this.knex('user_libraries').insert(libraries.map((library_id) => ({ user_id: id, library_id })));
    return (await this.getUser(id))!;
  }

  async findByUsername(username: string): Promise<UserRow | undefined> {
    const row = await this.knex('users').where({ username_key: usernameKey(username) }).first();
    return row ? toUser(row) : undefined;
  }

  async getUser(id: number): Promise<UserRow | undefined> {
    const row = await this.knex('users').where({ id }).first();
    return row ? toUser(row) : undefined;
  }

  async listUsers(): Promise<(UserRow & { libraries: string[] })[]> {
    const rows = (await this.knex('users').orderBy('id')).map(toUser);
    const grants = await this.knex('user_libraries').select('user_id', 'library_id');
    return rows.map((u) => ({ ...u, libraries: grants.filter((g) => g.user_id === u.id).map((g) => String(g.library_id)) }));
  }

  /** Removes the user with their sessions and grants (and, by cascade, what plugins keep per user). */
  async deleteUser(id: number): Promise<boolean> {
    await this.knex('user_avatars').where({ user_id: id }).delete();
    return (await this.knex('users').where({ id }).delete()) > 0;
  }

  /** The user's avatar: its bytes, and its type (a picture type recognised at upload). */
  async setAvatar(userId: number, type: string, data: Buffer): Promise<void> {
    await this.knex.transaction(async (trx) => {
      await trx('user_avatars').insert({ user_id: userId, data }).onConflict('user_id').merge();
      await trx('users').where({ id: userId }).update({ avatar_type: type, updated_at: this.now() });
    });
  }

  async avatar(userId: number): Promise<Buffer | undefined> {
    const row = await this.knex('user_avatars').where({ user_id: userId }).first('data');
    return row ? Buffer.from(row.data) : undefined;
  }

  async libraries(userId: number): Promise<string[]> {
    return (await this.knex('user_libraries').where({ user_id: userId }).select('library_id')).map((r) => String(r.library_id));
  }

  async setPassword(userId: number, password: string, field = 'password'): Promise<void> {
    checkPassword(password, field);
    await this.knex('users').where({ id: userId }).update({ password_hash: await hashPassword(password), updated_at: this.now() });
  }

  async update(userId: number, fields: Partial<Pick<UserRow, 'active' | 'admin' | 'all_libraries_access' | 'avatar_type'>>): Promise<void> {
    await this.knex('users').where({ id: userId }).update({ ...fields, updated_at: this.now() });
  }

  async setLibraries(userId: number, libraries: string[]): Promise<void> {
    await this.knex.transaction(async (trx) => {
      await trx('user_libraries').where({ user_id: userId }).delete();
      if (libraries.length) await trx('user_libraries').insert(libraries.map((library_id) => ({ user_id: userId, library_id })));
      await trx('users').where({ id: userId }).update({ all_libraries_access: libraries.length === 0, updated_at: this.now() });
    });
  }

  /** A new device session. A new login from the same device replaces that device's old session. */
  async createSession(userId: number, device: { id: string; os?: string; userAgent?: string }): Promise<string> {
    const id = randomBytes(18).toString('base64url');
    const now = this.now();
    await this.knex.transaction(async (trx) => {
      await trx('sessions').where({ user_id: userId, device_id: device.id }).whereNull('revoked_at').update({ revoked_at: now });
      await trx('sessions').insert({
        id, user_id: userId, device_id: device.id, device_os: device.os?.slice(0, 128) ?? null,
        user_agent: device.userAgent?.slice(0, 512) ?? null, created_at: now, last_seen_at: now,
      });
    });
    return id;
  }

  async getSession(id: string): Promise<SessionRow | undefined> {
    const row = await this.knex('sessions').where({ id }).first('id', 'user_id', 'device_id', 'revoked_at', 'last_seen_at');
    return row && { ...row, revoked_at: row.revoked_at === null ? null : Number(row.revoked_at), last_seen_at: Number(row.last_seen_at) };
  }

  /** The user's sessions not revoked nor unused for longer than idleMs (0: any time), most recently used first. */
  async listSessions(userId: number, idleMs: number): Promise<SessionInfo[]> {
    const usedSince = idleMs ? this.now() - idleMs : 0;
    const rows = await this.knex('sessions').where({ user_id: userId }).whereNull('revoked_at').where('last_seen_at', '>=', usedSince)
      .orderBy([{ column: 'last_seen_at', order: 'desc' }, { column: 'created_at', order: 'desc' }])
      .select('id', 'device_id', 'device_os', 'user_agent', 'created_at', 'last_seen_at');
    return rows.map((r) => ({ ...r, created_at: Number(r.created_at), last_seen_at: Number(r.last_seen_at) }));
  }

  /** Revokes a session (of this user only, when given); false when there was none to revoke. */
  async revokeSession(id: string, userId?: number): Promise<boolean> {
    const q = this.knex('sessions').where({ id }).whereNull('revoked_at');
    if (userId !== undefined) q.where({ user_id: userId });
    return (await q.update({ revoked_at: this.now() })) > 0;
  }

  /** Revokes every session of the user except `keep` (all of them when keep is undefined). */
  async revokeSessions(userId: number, keep?: string): Promise<string[]> {
    const q = this.knex('sessions').where({ user_id: userId }).whereNull('revoked_at');
    if (keep) q.whereNot({ id: keep });
    const ids = (await q.clone().select('id')).map((r) => r.id as string);
    if (ids.length) await this.knex('sessions').whereIn('id', ids).update({ revoked_at: this.now() });
    return ids;
  }

  async touchSession(id: string): Promise<void> {
    await this.knex('sessions').where({ id }).update({ last_seen_at: this.now() });
  }
}
