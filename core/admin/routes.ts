/**
 * The core's administration routes (every /api/admin route is admin only: the
 * HTTP layer answers 403 to anyone else before a handler runs): users, the
 * settings of the config file, jobs with the scheduled tasks, and the recent
 * log lines. Plugins add their own (vod's libraries, live TV's sources).
 */
import type { FastifyInstance } from 'fastify';
import { errors, isAppError } from '../../sdk/errors.js';
import { ConfigChangeSchema } from '../../sdk/settings.js';
import type { EventBus, JobManager, Scheduler } from '../../sdk/services.js';
import { usernameKey, type AccountStore, type UserRow } from '../auth/accounts.js';
import type { AuthServiceImpl } from '../auth/auth-service.js';
import type { LoginLimiter } from '../auth/rate-limit.js';
import type { LogBuffer } from '../logging/log-buffer.js';
import { JobSummarySchema } from '../jobs/routes.js';
import type { SettingsManager } from './settings.js';

const ErrorBody = { type: 'object', properties: { error: { type: 'string' } }, required: ['error'] } as const;
const Errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody };
const tags = ['admin'];

const AdminUser = {
  type: 'object',
  properties: {
    id: { type: 'integer' }, username: { type: 'string' }, active: { type: 'boolean' }, admin: { type: 'boolean' },
    all_libraries_access: { type: 'boolean' },
    libraries: { type: 'array', items: { type: 'string' }, description: 'Library ids the user may see when all_libraries_access is false' },
    locked_for: { type: ['integer', 'null'], description: 'Seconds until sign-in is allowed again after too many failures; null when not locked out' },
  },
  required: ['id', 'username', 'active', 'admin', 'all_libraries_access', 'libraries', 'locked_for'],
} as const;
const UserBody = { type: 'object', properties: { user: AdminUser }, required: ['user'] } as const;
const IdParams = { type: 'object', properties: { id: { type: 'integer', minimum: 1 } }, required: ['id'] } as const;
const Libraries = { type: 'array', items: { type: 'string', minLength: 1, maxLength: 64 }, maxItems: 1000, uniqueItems: true } as const;


const FileStatus = {
  type: 'object',
  properties: { path: { type: ['string', 'null'] }, editable: { type: 'boolean' }, reason: { type: 'string' } },
  required: ['path', 'editable'],
} as const;

const Section = {
  type: 'object',
  properties: {
    id: { type: 'string' }, title: { type: 'string' }, plugin: { type: 'string' }, description: { type: 'string' },
    fields: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          key: { type: 'string' }, kind: { type: 'string', enum: ['string', 'integer', 'number', 'boolean', 'choice', 'duration'] },
          choices: { type: 'array', items: { type: 'string' } }, minimum: { type: 'number' }, maximum: { type: 'number' },
          default: {}, description: { type: 'string' }, value: {}, effective: {},
          secret: { type: 'boolean' }, live: { type: 'boolean' }, restartNeeded: { type: 'boolean' }, readOnly: { type: 'boolean' },
        },
        required: ['key', 'kind', 'secret', 'live', 'restartNeeded', 'readOnly'],
      },
    },
  },
  required: ['id', 'title', 'fields'],
} as const;

export interface AdminDeps {
  accounts: AccountStore;
  auth: AuthServiceImpl;
  limiter: LoginLimiter;
  jobs: JobManager;
  scheduler: Scheduler;
  settings: SettingsManager;
  logs: LogBuffer;
  events: EventBus;
}

export async function adminRoutes(app: FastifyInstance, deps: AdminDeps): Promise<void> {
  const { accounts, auth, limiter } = deps;

  const view = async (u: UserRow & { libraries?: string[] }, libraries: string[]) => ({
    id: u.id, username: u.username, active: u.active, admin: u.admin, all_libraries_access: u.all_libraries_access,
    libraries: u.all_libraries_access ? [] : libraries, locked_for: (await limiter.lockedFor(usernameKey(u.username))) ?? null,
  });
  const userOr404 = async (id: number) => {
    const user = await accounts.getUser(id);
    if (!user) throw errors.notFound(`No user ${id}`);
    return user;
  };
  const userView = async (id: number) => {
    const user = await userOr404(id);
    return await view(user, await accounts.libraries(id));
  };

  app.get('/api/admin/users', {
    schema: { summary: 'Every user (admin)', tags, response: { 200: { type: 'object', properties: { users: { type: 'array', items: AdminUser } }, required: ['users'] }, ...Errors } },
  }, async () => ({ users: await Promise.all((await accounts.listUsers()).map((u) => view(u, u.libraries))) }));

  app.post('/api/admin/users', {
    schema: {
      summary: 'Create a user (admin)', tags,
      description: 'Without `libraries` (or with an empty list) the user sees every library; with ids, only those. An administrator always sees everything. A taken username → 409.',
      body: {
        type: 'object', required: ['username', 'password'], additionalProperties: false,
        properties: {
          username: { type: 'string', minLength: 1, maxLength: 64 }, password: { type: 'string', minLength: 1, maxLength: 1024 },
          admin: { type: 'boolean', default: false }, active: { type: 'boolean', default: true }, libraries: Libraries,
        },
      },
      response: { 201: UserBody, ...Errors },
    },
  }, async (request, reply) => {
    const body = request.body as { username: string; password: string; admin: boolean; active: boolean; libraries?: string[] };
    const user = await accounts.createUser(body);
    request.log.info({ event: 'user_created', user: user.id, by: auth.requireUser(request).id }, 'user created');
    reply.code(201);
    return { user: await userView(user.id) };
  });

  app.patch('/api/admin/users/:id', {
    schema: {
      summary: 'Change a user (admin)', tags,
      description: '`libraries`: a list of library ids restricts the user to them, null gives every library. `password` sets a new one and signs the user out everywhere; deactivating signs them out too. An administrator cannot deactivate or demote themselves (409): one administrator always remains.',
      params: IdParams,
      body: {
        type: 'object', additionalProperties: false, minProperties: 1,
        properties: {
          active: { type: 'boolean' }, admin: { type: 'boolean' },
          libraries: { anyOf: [Libraries, { type: 'null' }] },
          password: { type: 'string', minLength: 1, maxLength: 1024 },
        },
      },
      response: { 200: UserBody, ...Errors },
    },
  }, async (request) => {
    const me = auth.requireUser(request);
    const { id } = request.params as { id: number };
    const body = request.body as { active?: boolean; admin?: boolean; libraries?: string[] | null; password?: string };
    await userOr404(id);
    if (id === me.id && (body.active === false || body.admin === false)) throw errors.conflict('You cannot deactivate or demote yourself; another administrator can');
    if (body.password !== undefined) {
      // The store's message names the field of the user's own password change; here it is `password`.
      await accounts.setPassword(id, body.password).catch((err: unknown) => {
        throw isAppError(err) && err.statusCode === 400 ? errors.badRequest(err.message.replace(/^new_password\b/, 'password')) : err;
      });
    }
    const flags: Partial<Pick<UserRow, 'active' | 'admin'>> = {};
    if (body.active !== undefined) flags.active = body.active;
    if (body.admin !== undefined) flags.admin = body.admin;
    if (Object.keys(flags).length) await accounts.update(id, flags);
    if (body.libraries !== undefined) await accounts.setLibraries(id, body.libraries ?? []);
    if (body.password !== undefined || body.active === false) await accounts.revokeSessions(id);
    auth.invalidateUser(id);
    request.log.info({ event: 'user_changed', user: id, by: me.id, fields: Object.keys(body) }, 'user changed');
    return { user: await userView(id) };
  });

  app.delete('/api/admin/users/:id', {
    schema: {
      summary: 'Remove a user (admin)', tags,
      description: 'Removes the user with their sessions, grants, favorites and progress. Removing yourself → 409.',
      params: IdParams,
      response: { 200: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] }, ...Errors },
    },
  }, async (request) => {
    const me = auth.requireUser(request);
    const { id } = request.params as { id: number };
    const user = await userOr404(id);
    if (id === me.id) throw errors.conflict('You cannot remove yourself; another administrator can');
    await accounts.deleteUser(id);
    auth.invalidateUser(id);
    await limiter.clear(usernameKey(user.username));
    deps.events.emit('user.deleted', { id });
    request.log.info({ event: 'user_removed', user: id, by: me.id }, 'user removed');
    return { ok: true };
  });

  app.delete('/api/admin/users/:id/lockout', {
    schema: {
      summary: 'Let a locked-out user sign in again (admin)', tags,
      description: 'Forgets the failed sign-ins counted against the username (too many lock it out for auth.failureWindowSeconds).',
      params: IdParams,
      response: { 200: UserBody, ...Errors },
    },
  }, async (request) => {
    const { id } = request.params as { id: number };
    const user = await userOr404(id);
    await limiter.clear(usernameKey(user.username));
    request.log.info({ event: 'lockout_cleared', user: id, by: auth.requireUser(request).id }, 'login lockout cleared');
    return { user: await userView(id) };
  });

  const settingsBody = async () => {
    const status = await deps.settings.editable();
    return { file: { path: deps.settings.filePath ?? null, ...status }, sections: await deps.settings.list() };
  };

  app.get('/api/admin/settings', {
    schema: {
      summary: 'Settings of the config file (admin)', tags,
      description: 'Every section (the server\'s and each plugin\'s) with its keys: the value written in the file, the one in effect, whether a change applies at once (`live`) and whether a written change waits for a restart. Lists (libraries, playlists) have routes of their own. `file.editable` is false without a config file (the demo) or when the server may not write it, with the reason.',
      response: { 200: { type: 'object', properties: { file: FileStatus, sections: { type: 'array', items: Section } }, required: ['file', 'sections'] }, ...Errors },
    },
  }, settingsBody);

  app.patch('/api/admin/settings', {
    schema: {
      summary: 'Change settings (admin)', tags,
      description: 'Sets keys of one section (`null`: back to the default). Validated like the file at start (400 naming the key), written to the config file keeping its comments and order, then applied where the plugin can; the answer says which keys need a restart. 409 when the file cannot be written, with the reason.',
      body: {
        type: 'object', required: ['section', 'values'], additionalProperties: false,
        properties: { section: { type: 'string', minLength: 1, maxLength: 300 }, values: { type: 'object', minProperties: 1, maxProperties: 100 } },
      },
      response: { 200: { type: 'object', properties: { result: ConfigChangeSchema, file: FileStatus, sections: { type: 'array', items: Section } }, required: ['result', 'file', 'sections'] }, ...Errors },
    },
  }, async (request) => {
    const { section, values } = request.body as { section: string; values: Record<string, unknown> };
    const result = await deps.settings.set(section, values);
    return { result, ...(await settingsBody()) };
  });

  app.get('/api/admin/jobs', {
    schema: {
      summary: 'Running and recent jobs, and scheduled tasks (admin)', tags,
      response: {
        200: {
          type: 'object',
          properties: {
            jobs: { type: 'array', items: JobSummarySchema },
            tasks: {
              type: 'array',
              items: {
                type: 'object',
                properties: { id: { type: 'string' }, kind: { type: 'string' }, next_run: { type: 'string' }, every_ms: { type: ['integer', 'null'] } },
                required: ['id', 'kind', 'next_run', 'every_ms'],
              },
            },
          },
          required: ['jobs', 'tasks'],
        },
        ...Errors,
      },
    },
  }, async () => ({
    jobs: deps.jobs.list(),
    tasks: (await deps.scheduler.list()).map((t) => ({ id: t.id, kind: t.kind, next_run: new Date(t.at).toISOString(), every_ms: t.everyMs ?? null })),
  }));

  app.get('/api/admin/logs', {
    schema: {
      summary: 'Recent log lines (admin)', tags,
      description: 'Newest first, from a buffer of the last 2,000 lines (info and above, more when logging.level asks for more), with secrets redacted as in the log output. `level` keeps that level and above; `source` one plugin or core component (the values seen are in `sources`).',
      querystring: {
        type: 'object', additionalProperties: false,
        properties: {
          level: { type: 'string', enum: ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] },
          source: { type: 'string', minLength: 1, maxLength: 200 },
          limit: { type: 'integer', minimum: 1, maximum: 2000, default: 200 },
        },
      },
      response: {
        200: {
          type: 'object',
          properties: {
            entries: {
              type: 'array',
              items: {
                type: 'object',
                properties: { time: { type: 'string' }, level: { type: 'string' }, source: { type: ['string', 'null'] }, msg: { type: 'string' }, fields: { type: 'object', additionalProperties: true } },
                required: ['time', 'level', 'source', 'msg', 'fields'],
              },
            },
            sources: { type: 'array', items: { type: 'string' } },
          },
          required: ['entries', 'sources'],
        },
        ...Errors,
      },
    },
  }, async (request) => deps.logs.query(request.query as { level?: string; source?: string; limit: number }));
}
