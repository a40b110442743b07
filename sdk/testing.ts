/**
 * createTestHost(): a real Antenna core (SQLite file in a temp dir, or a
 * PostgreSQL database with ANTENNA_TEST_PG; real HTTP, real ffmpeg) with the
 * plugins you choose, for plugin authors' tests.
 *
 *   const host = await createTestHost({ plugins: { './my-plugin': { … } } });
 *   const res = await host.inject({ method: 'GET', url: '/channels', headers: host.authHeaders });
 *   await host.close();
 */
import 'reflect-metadata';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from 'pino';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { Host } from '../core/host.js';
import { loadConfig } from '../core/config/load.js';
import { createLogger } from '../core/logging/logger.js';
import type { PluginDefinition } from './plugin.js';
import type { Clock } from './services.js';

export interface TestHostOptions {
  /** The `plugins:` block, exactly as in the config file. */
  plugins?: Record<string, unknown>;
  /**
   * Plugins given as definitions rather than loaded by name or path: a small fake of
   * a plugin yours builds on, or one that uses what yours offers. Configured by their
   * id in `plugins` (default `{}`).
   */
  definitions?: PluginDefinition<any>[];
  /** Other top-level config sections (server, auth, clients…), merged over the test defaults. */
  config?: Record<string, any>;
  /**
   * A YAML config file to run from instead (settings changed at runtime are written to it): its
   * plugins and sections, with the test's server address, data dir and logging put over them
   * and `plugins`/`config` merged in. Relative paths in it resolve against its folder.
   */
  configFile?: string;
  /** Reuse a data dir (to test restarts); a fresh temp dir otherwise, removed on close. */
  dataDir?: string;
  /** Resolve relative plugin paths against this directory (default: cwd). */
  baseDir?: string;
  /** Listen on 127.0.0.1 with a random port (for players, ffmpeg or a browser); inject() works either way. */
  listen?: boolean;
  clock?: Clock;
  logger?: Logger;
}

export interface TestHost {
  host: Host;
  app: FastifyInstance;
  dataDir: string;
  /** http://127.0.0.1:<port> when listen was set. */
  url: string;
  adminPassword: string;
  adminToken: string;
  authHeaders: { authorization: string };
  inject(options: InjectOptions): Promise<LightMyRequestResponse>;
  /** POST /login; returns the token (throws unless 200). */
  login(username: string, password: string, headers?: Record<string, string>): Promise<string>;
  /** A user created straight in the database (as `antenna user add` does). */
  createUser(username: string, password: string, options?: { admin?: boolean; active?: boolean; libraries?: string[] }): Promise<number>;
  close(): Promise<void>;
}

export const TEST_ADMIN_PASSWORD = 'admin-password-for-tests';

/**
 * With ANTENNA_TEST_PG set to a postgres:// URL (of a role that may create
 * databases), test hosts run on PostgreSQL instead of SQLite: one database per
 * data dir, made when first used (a restart on the same dir finds its data) and
 * dropped when the host's own temp dir is removed, or (a dir the test made)
 * by a later run once that dir is gone.
 */
let sweptPostgres = false;
async function postgresFor(dataDir: string): Promise<{ database: Record<string, unknown>; drop: () => Promise<void> } | undefined> {
  const url = process.env.ANTENNA_TEST_PG;
  if (!url) return undefined;
  // (pg is what knex's pg client loads; it ships no types.)
  const { Client } = require('pg') as { Client: new (o: { connectionString: string }) => { connect(): Promise<void>; query(sql: string, values?: unknown[]): Promise<{ rowCount: number | null; rows: any[] }>; end(): Promise<void> } };
  const name = `antenna_test_${createHash('sha1').update(dataDir).digest('hex').slice(0, 16)}`;
  const admin = async (sql: string, values?: unknown[]) => {
    const client = new Client({ connectionString: url });
    await client.connect();
    try { return await client.query(sql, values); } finally { await client.end(); }
  };
  if (!sweptPostgres) {
    sweptPostgres = true;
    const { rows } = await admin("SELECT datname, shobj_description(oid, 'pg_database') AS dir FROM pg_database WHERE datname LIKE 'antenna\\_test\\_%'");
    for (const r of rows) if (r.dir && !existsSync(r.dir)) await admin(`DROP DATABASE IF EXISTS ${r.datname}`).catch(() => {}); // in use: next time
  }
  if (!(await admin('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount) {
    await admin(`CREATE DATABASE ${name}`);
    await admin(`COMMENT ON DATABASE ${name} IS '${dataDir.replace(/'/g, "''")}'`);
  }
  const connection = new URL(url);
  connection.pathname = `/${name}`;
  return { database: { client: 'pg', connection: connection.href }, drop: async () => { await admin(`DROP DATABASE IF EXISTS ${name}`); } };
}

export async function createTestHost(options: TestHostOptions = {}): Promise<TestHost> {
  const ownDir = !options.dataDir;
  const dataDir = options.dataDir ?? (await mkdtemp(path.join(os.tmpdir(), 'antenna-test-')));
  const extra = options.config ?? {};
  const postgres = extra.database ? undefined : await postgresFor(dataDir);
  const testDefaults = (raw: Record<string, any>) => {
    Object.assign(raw, extra, postgres ? { database: postgres.database } : {});
    raw.server = { ...raw.server, host: '127.0.0.1', port: 0, ...(extra.server ?? {}), dataDir };
    raw.logging = { level: 'silent', ...(extra.logging ?? {}) };
    raw.plugins = { ...raw.plugins, ...options.plugins };
  };
  const config = options.configFile
    ? loadConfig({ env: {}, file: options.configFile, override: testDefaults })
    : loadConfig({ env: {}, baseDir: options.baseDir ?? process.cwd(), object: {}, override: testDefaults });
  // Nothing on stdout; the recent lines still reach the admin's log screen (GET /api/admin/logs).
  const { logger, buffer } = options.logger ? { logger: options.logger, buffer: undefined } : createLogger({ level: 'silent', output: 'none' });
  const host = await Host.create({
    config, mode: 'server', clock: options.clock, adminPassword: TEST_ADMIN_PASSWORD, definitions: options.definitions,
    logger, logs: buffer,
  });
  let url = '';
  if (options.listen) {
    await host.listen();
    url = host.publicUrl.replace('localhost', '127.0.0.1');
  }
  const login = async (username: string, password: string, headers: Record<string, string> = {}) => {
    const res = await host.app.inject({ method: 'POST', url: '/login', payload: { username, password }, headers });
    if (res.statusCode !== 200) throw new Error(`login as ${username} failed: ${res.statusCode} ${res.body}`);
    return res.json().auth.token as string;
  };
  const adminToken = await login('admin', TEST_ADMIN_PASSWORD, { 'device-id': 'test-host-admin' });
  return {
    host, app: host.app, dataDir, url, adminPassword: TEST_ADMIN_PASSWORD, adminToken,
    authHeaders: { authorization: `Bearer ${adminToken}` },
    inject: (o) => host.app.inject(o),
    login,
    createUser: async (username, password, o = {}) => (await host.accounts.createUser({ username, password, ...o })).id,
    close: async () => {
      await host.close();
      if (ownDir) {
        await rm(dataDir, { recursive: true, force: true });
        await postgres?.drop();
      }
    },
  };
}
