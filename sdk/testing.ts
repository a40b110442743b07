/**
 * createTestHost(): a real Antenna core (SQLite file in a temp dir, real HTTP,
 * real ffmpeg) with the plugins you choose, for plugin authors' tests.
 *
 *   const host = await createTestHost({ plugins: { './my-plugin': { … } } });
 *   const res = await host.inject({ method: 'GET', url: '/channels', headers: host.authHeaders });
 *   await host.close();
 */
import 'reflect-metadata';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino, { type Logger } from 'pino';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { Host } from '../core/host.js';
import { loadConfig } from '../core/config/load.js';
import type { Clock } from './services.js';

export interface TestHostOptions {
  /** The `plugins:` block, exactly as in the config file. */
  plugins?: Record<string, unknown>;
  /** Other top-level config sections (server, auth, clients…), merged over the test defaults. */
  config?: Record<string, any>;
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

export async function createTestHost(options: TestHostOptions = {}): Promise<TestHost> {
  const ownDir = !options.dataDir;
  const dataDir = options.dataDir ?? (await mkdtemp(path.join(os.tmpdir(), 'antenna-test-')));
  const extra = options.config ?? {};
  const config = loadConfig({
    env: {},
    baseDir: options.baseDir ?? process.cwd(),
    object: {
      ...extra,
      server: { host: '127.0.0.1', port: 0, ...(extra.server ?? {}), dataDir },
      logging: { level: 'silent', ...(extra.logging ?? {}) },
      plugins: options.plugins ?? {},
    },
  });
  const host = await Host.create({
    config, mode: 'server', clock: options.clock, adminPassword: TEST_ADMIN_PASSWORD,
    logger: options.logger ?? pino({ level: 'silent' }),
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
      if (ownDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}
