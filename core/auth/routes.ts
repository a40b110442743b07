import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errors } from '../../sdk/errors.js';
import { checkPassword, usernameKey, type AccountStore } from './accounts.js';
import { AuthServiceImpl } from './auth-service.js';
import { dummyHash, verifyPassword } from './password.js';
import type { LoginLimiter } from './rate-limit.js';
import { imageType } from './avatar.js';

const Error = { type: 'object', properties: { error: { type: 'string' } }, required: ['error'] } as const;
const Ok = { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] } as const;
const UserSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' }, username: { type: 'string' }, active: { type: 'boolean' }, admin: { type: 'boolean' },
    all_libraries_access: { type: 'boolean' }, favorites: { type: 'array', items: { type: 'integer' } },
  },
  required: ['id', 'username', 'active', 'admin', 'all_libraries_access', 'favorites'],
  additionalProperties: true,
} as const;

const SessionSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' }, device_id: { type: 'string' }, device_os: { type: 'string', nullable: true },
    user_agent: { type: 'string', nullable: true }, created_at: { type: 'string', format: 'date-time' },
    last_used_at: { type: 'string', format: 'date-time' }, current: { type: 'boolean' },
  },
  required: ['id', 'device_id', 'device_os', 'user_agent', 'created_at', 'last_used_at', 'current'],
} as const;

const INVALID_LOGIN = 'Invalid username or password';

/** POST /login, /logout, GET /me, password, avatar and device sessions (spec §4 Account, PRODUCT.md §2, §3). */
export async function accountRoutes(app: FastifyInstance, deps: {
  store: AccountStore; auth: AuthServiceImpl; limiter: LoginLimiter; dataDir: string;
}): Promise<void> {
  const { store, auth, limiter } = deps;
  const avatarDir = path.join(deps.dataDir, 'avatars');

  /** An avatar an older version kept in the data dir: moved into the database, where every node reads it. */
  async function legacyAvatar(userId: number, type: string): Promise<Buffer | undefined> {
    const file = path.join(avatarDir, String(userId));
    const data = await readFile(file).catch(() => undefined);
    if (!data) return undefined;
    await store.setAvatar(userId, type, data);
    await rm(file, { force: true });
    return data;
  }

  app.post('/login', {
    config: { auth: 'public' },
    schema: {
      summary: 'Sign in', tags: ['account'],
      description: 'Device headers (Device-Id, Device-OS) are optional; without Device-Id the device id is derived from the User-Agent. A new login from the same device replaces that device\'s previous session. Usernames are compared trimmed, NFKC-normalised and case-insensitively. Failed logins are rate limited per username from one address and per address (429 with Retry-After): failures from elsewhere never lock a user out. In cluster mode the failures of all nodes count together. While 64 sign-ins already wait for their password check, another is refused at once (429, Retry-After: 3). An inactive account answers 403 `User Account Inactive`.',
      body: {
        type: 'object', required: ['username', 'password'],
        properties: { username: { type: 'string', minLength: 1, maxLength: 256 }, password: { type: 'string', minLength: 1, maxLength: 1024 } },
      },
      response: {
        200: { type: 'object', properties: { auth: { type: 'object', properties: { token: { type: 'string' }, device_id: { type: 'string' } }, required: ['token', 'device_id'] } }, required: ['auth'] },
        400: Error, 401: Error, 403: Error, 429: Error,
      },
    },
  }, async (request) => {
    const { username, password } = request.body as { username: string; password: string };
    const key = usernameKey(username);
    await limiter.checkLogin(key, request.ip);
    const user = await store.findByUsername(username);
    const ok = await verifyPassword(password, user?.password_hash ?? (await dummyHash()));
    if (!user || !ok) {
      await limiter.failLogin(key, request.ip);
      request.log.info({ event: 'login_failed', address: request.ip }, 'login failed');
      throw errors.unauthorized(INVALID_LOGIN);
    }
    await limiter.succeedLogin(key, request.ip);
    if (!user.active) throw errors.inactive();
    const deviceId = AuthServiceImpl.deviceId(request);
    const os = request.headers['device-os'];
    const sessionId = await store.createSession(user.id, {
      id: deviceId, os: typeof os === 'string' ? os : undefined, userAgent: request.headers['user-agent'],
    });
    auth.invalidateUser(user.id); // the device's previous session was just revoked
    request.log.info({ event: 'login', user: user.id, device: deviceId }, 'login');
    return { auth: { token: auth.issueToken(sessionId, user.id), device_id: deviceId } };
  });

  app.post('/logout', {
    schema: { summary: 'Revoke the calling session', tags: ['account'], response: { 200: Ok, 401: Error } },
  }, async (request) => {
    const user = auth.requireUser(request);
    await store.revokeSession(user.sessionId);
    auth.invalidateSession(user.sessionId);
    return { ok: true };
  });

  app.get('/me', {
    schema: { summary: 'The calling user', tags: ['account'], response: { 200: { type: 'object', properties: { user: UserSchema }, required: ['user'] }, 401: Error, 403: Error } },
  }, async (request) => ({ user: await auth.profile(auth.requireUser(request)) }));

  app.get('/api/user/me/sessions', {
    schema: {
      summary: 'The calling user\'s device sessions', tags: ['account'],
      description: 'Every session of the user that is signed in: its device, when it was created and last used (to within a minute), and whether it is the calling one; most recently used first. A session unused for auth.sessionIdleDays (90 by default) has expired and is not listed.',
      response: { 200: { type: 'object', properties: { sessions: { type: 'array', items: SessionSchema } }, required: ['sessions'] }, 401: Error, 403: Error },
    },
  }, async (request) => {
    const user = auth.requireUser(request);
    const rows = await store.listSessions(user.id, auth.sessionIdleMs);
    const iso = (ms: number) => new Date(ms).toISOString();
    return {
      sessions: rows.map((r) => ({
        id: r.id, device_id: r.device_id, device_os: r.device_os, user_agent: r.user_agent,
        created_at: iso(r.created_at), last_used_at: iso(r.last_seen_at), current: r.id === user.sessionId,
      })),
    };
  });

  app.delete('/api/user/me/sessions/:id', {
    schema: {
      summary: 'Sign a device out', tags: ['account'],
      description: 'Revokes one of the calling user\'s sessions (the calling one too: that is a logout). Its tokens and media keys stop working at once. Not a session of the user, or already revoked → 404.',
      params: { type: 'object', properties: { id: { type: 'string', minLength: 1, maxLength: 64 } }, required: ['id'] },
      response: { 200: Ok, 401: Error, 403: Error, 404: Error },
    },
  }, async (request) => {
    const user = auth.requireUser(request);
    const { id } = request.params as { id: string };
    if (!(await store.revokeSession(id, user.id))) throw errors.notFound('No such session');
    auth.invalidateSession(id);
    request.log.info({ event: 'session_revoked', user: user.id }, 'session revoked');
    return { ok: true };
  });

  app.put('/api/user/me/password', {
    schema: {
      summary: 'Change the password', tags: ['account'],
      description: 'Revokes every other session of the user; the calling session stays valid. Wrong current password → 403, and after auth.maxFailuresPerUser of them within auth.failureWindowSeconds → 429 with Retry-After; new password under 8 characters (not counting leading and trailing spaces) → 400.',
      body: {
        type: 'object', required: ['current_password', 'new_password'],
        properties: { current_password: { type: 'string', maxLength: 1024 }, new_password: { type: 'string', maxLength: 1024 } },
      },
      response: { 200: Ok, 400: Error, 401: Error, 403: Error, 429: Error },
    },
  }, async (request) => {
    const caller = auth.requireUser(request);
    const body = request.body as { current_password: string; new_password: string };
    checkPassword(body.new_password, 'new_password');
    await limiter.checkPasswordChange(caller.id);
    const user = await store.getUser(caller.id);
    if (!user || !(await verifyPassword(body.current_password, user.password_hash))) {
      await limiter.failPasswordChange(caller.id);
      request.log.info({ event: 'password_change_failed', user: caller.id }, 'password change failed');
      throw errors.forbidden('Current password is incorrect');
    }
    await limiter.succeedPasswordChange(caller.id);
    await store.setPassword(user.id, body.new_password, 'new_password');
    const revoked = await store.revokeSessions(user.id, caller.sessionId);
    auth.invalidateUser(user.id);
    request.log.info({ event: 'password_changed', user: user.id, revokedSessions: revoked.length }, 'password changed');
    return { ok: true };
  });

  app.post('/api/user/me/avatar', {
    schema: {
      summary: 'Upload the avatar', tags: ['account'], consumes: ['multipart/form-data'],
      description: 'multipart/form-data with one file field named `avatar`: a well-formed PNG, JPEG, WebP or GIF image, recognised by content and checked through its structure (else 415); at most server.avatarMaxBytes (5 MiB by default, else 413). A malformed multipart body → 400.',
      response: { 200: { type: 'object', properties: { avatar_url: { type: 'string' } }, required: ['avatar_url'] }, 400: Error, 401: Error, 413: Error, 415: Error },
    },
  }, async (request) => {
    const user = auth.requireUser(request);
    if (!request.isMultipart()) throw errors.unsupportedMediaType('Expected multipart/form-data with a file field named avatar');
    const data = await multipartFile(request, 'avatar');
    const type = imageType(data);
    if (!type) throw errors.unsupportedMediaType('avatar must be a PNG, JPEG, WebP or GIF image');
    await store.setAvatar(user.id, type, data);
    // One kept in the data dir by an older version is replaced.
    await rm(path.join(avatarDir, String(user.id)), { force: true });
    return { avatar_url: '/api/user/me/avatar' };
  });

  app.get('/api/user/me/avatar', {
    schema: { summary: 'The avatar image', tags: ['account'], response: { 404: Error, 401: Error } },
  }, async (request, reply) => {
    const user = auth.requireUser(request);
    const row = await store.getUser(user.id);
    if (!row?.avatar_type) throw errors.notFound('No avatar');
    const data = (await store.avatar(user.id)) ?? (await legacyAvatar(user.id, row.avatar_type));
    if (!data) throw errors.notFound('No avatar');
    // nosniff: a browser shows it as the image type it is, never as anything it might resemble.
    reply.header('cache-control', 'private, max-age=60').header('x-content-type-options', 'nosniff').type(row.avatar_type);
    return data;
  });
}

/**
 * The bytes of the one file field `name` of a multipart request. The multipart parser throws
 * plain errors for a body it cannot read (no boundary, a part cut short, a boundary over 70
 * characters, random bytes): they are the client's, 400 like any bad input.
 */
async function multipartFile(request: FastifyRequest, name: string): Promise<Buffer> {
  try {
    const file = await request.file();
    if (!file) throw errors.badRequest(`${name} file field is required`);
    if (file.fieldname !== name) {
      file.file.resume();
      throw errors.badRequest(`expected the file field to be named ${name}, got ${file.fieldname}`);
    }
    return await file.toBuffer(); // throws 413 past the configured limit
  } catch (err) {
    const status = (err as { statusCode?: number }).statusCode;
    if (status && status < 500) throw err;
    throw errors.badRequest(`Malformed multipart body: ${(err as Error).message}`);
  }
}
