import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { errors } from '../../sdk/errors.js';
import type { AccountStore } from './accounts.js';
import { AuthServiceImpl } from './auth-service.js';
import { dummyHash, verifyPassword } from './password.js';
import type { LoginLimiter } from './rate-limit.js';
import { sniffImage } from './avatar.js';

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

const INVALID_LOGIN = 'Invalid username or password';

/** POST /login, /logout, GET /me, password and avatar (spec §4 Account, PRODUCT.md §2). */
export async function accountRoutes(app: FastifyInstance, deps: {
  store: AccountStore; auth: AuthServiceImpl; limiter: LoginLimiter; dataDir: string;
}): Promise<void> {
  const { store, auth, limiter } = deps;
  const avatarDir = path.join(deps.dataDir, 'avatars');

  app.post('/login', {
    config: { auth: 'public' },
    schema: {
      summary: 'Sign in', tags: ['account'],
      description: 'Device headers (Device-Id, Device-OS) are optional; without Device-Id the device id is derived from the User-Agent. A new login from the same device replaces that device\'s previous session. Failed logins are rate limited per username and per address (429 with Retry-After); while 64 sign-ins already wait for their password check, another is refused at once (429, Retry-After: 3). An inactive account answers 403 `User Account Inactive`.',
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
    limiter.check(username, request.ip);
    const user = await store.findByUsername(username);
    const ok = await verifyPassword(password, user?.password_hash ?? (await dummyHash()));
    if (!user || !ok) {
      limiter.fail(username, request.ip);
      request.log.info({ event: 'login_failed', address: request.ip }, 'login failed');
      throw errors.unauthorized(INVALID_LOGIN);
    }
    limiter.succeed(username);
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

  app.put('/api/user/me/password', {
    schema: {
      summary: 'Change the password', tags: ['account'],
      description: 'Revokes every other session of the user; the calling session stays valid. Wrong current password → 403; new password under 8 characters → 400.',
      body: {
        type: 'object', required: ['current_password', 'new_password'],
        properties: { current_password: { type: 'string', maxLength: 1024 }, new_password: { type: 'string', maxLength: 1024 } },
      },
      response: { 200: Ok, 400: Error, 401: Error, 403: Error, 429: Error },
    },
  }, async (request) => {
    const caller = auth.requireUser(request);
    const body = request.body as { current_password: string; new_password: string };
    const user = await store.getUser(caller.id);
    if (!user || !(await verifyPassword(body.current_password, user.password_hash))) throw errors.forbidden('Current password is incorrect');
    await store.setPassword(user.id, body.new_password);
    const revoked = await store.revokeSessions(user.id, caller.sessionId);
    auth.invalidateUser(user.id);
    request.log.info({ event: 'password_changed', user: user.id, revokedSessions: revoked.length }, 'password changed');
    return { ok: true };
  });

  app.post('/api/user/me/avatar', {
    schema: {
      summary: 'Upload the avatar', tags: ['account'], consumes: ['multipart/form-data'],
      description: 'multipart/form-data with one file field named `avatar`: PNG, JPEG, WebP or GIF, recognised by content; at most server.avatarMaxBytes (5 MiB by default) → else 415 / 413.',
      response: { 200: { type: 'object', properties: { avatar_url: { type: 'string' } }, required: ['avatar_url'] }, 400: Error, 401: Error, 413: Error, 415: Error },
    },
  }, async (request) => {
    const user = auth.requireUser(request);
    if (!request.isMultipart()) throw errors.unsupportedMediaType('Expected multipart/form-data with a file field named avatar');
    const file = await request.file();
    if (!file) throw errors.badRequest('avatar file field is required');
    if (file.fieldname !== 'avatar') {
      file.file.resume();
      throw errors.badRequest(`expected the file field to be named avatar, got ${file.fieldname}`);
    }
    const data = await file.toBuffer(); // throws 413 past the configured limit
    const type = sniffImage(data);
    if (!type) throw errors.unsupportedMediaType('avatar must be a PNG, JPEG, WebP or GIF image');
    await mkdir(avatarDir, { recursive: true, mode: 0o700 });
    const target = path.join(avatarDir, String(user.id));
    await writeFile(target + '.tmp', data, { mode: 0o600 });
    await rename(target + '.tmp', target);
    await store.update(user.id, { avatar_type: type });
    return { avatar_url: '/api/user/me/avatar' };
  });

  app.get('/api/user/me/avatar', {
    schema: { summary: 'The avatar image', tags: ['account'], response: { 404: Error, 401: Error } },
  }, async (request, reply) => {
    const user = auth.requireUser(request);
    const row = await store.getUser(user.id);
    if (!row?.avatar_type) throw errors.notFound('No avatar');
    const data = await readFile(path.join(avatarDir, String(user.id))).catch(() => undefined);
    if (!data) throw errors.notFound('No avatar');
    reply.header('cache-control', 'private, max-age=60').type(row.avatar_type);
    return data;
  });
}
