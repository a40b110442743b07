import 'reflect-metadata';
import { chmod, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { container as globalContainer, type DependencyContainer } from 'tsyringe';
import type { Logger } from 'pino';
import type { FastifyInstance } from 'fastify';
import type { Knex } from 'knex';
import type { Deps, PluginCommand, PluginDefinition } from '../sdk/plugin.js';
import { coreServices, type HostInfo } from '../sdk/refs.js';
import type { Clock, CommandIo, Lifecycle, PluginPaths, PluginSettings } from '../sdk/services.js';
import type { AntennaConfig } from './config/schema.js';
import { openDatabase } from './db/database.js';
import { runMigrations } from './db/migrations.js';
import { coreMigrations } from './db/core-migrations.js';
import { loadOrCreateSecret } from './auth/secret.js';
import { AccountStore } from './auth/accounts.js';
import { AuthServiceImpl } from './auth/auth-service.js';
import { AccessKeys, openNetworks } from './auth/access-keys.js';
import { LoginLimiter, SharedFailures } from './auth/rate-limit.js';
import { accountRoutes } from './auth/routes.js';
import { generatePassword } from './auth/password.js';
import { createHttp } from './http/app.js';
import { loadPlugins, type LoadedPlugin } from './plugins/loader.js';
import { FfmpegSupervisor } from './ffmpeg/supervisor.js';
import { defaultMaxTranscodes, nodeCapacity, TranscodeBudgetImpl } from './ffmpeg/transcode-budget.js';
import { resolveBinaries } from './ffmpeg/resolve.js';
import { reapLeftovers } from './ffmpeg/leftovers.js';
import { JobManagerImpl } from './jobs/job-manager.js';
import { SchedulerImpl } from './jobs/scheduler.js';
import { jobRoutes } from './jobs/routes.js';
import { EventBusImpl } from './events.js';
import { SourceReaderImpl } from './sources.js';
import { checkOwners, initOrder, type RefUse } from './plugins/init-order.js';
import { VERSION } from './version.js';
import { ConfigFile } from './config/file.js';
import { SettingsManager } from './admin/settings.js';
import { adminRoutes } from './admin/routes.js';
import { accessKeyRoutes } from './admin/access-key-routes.js';
import { createLogger, type LogLevel } from './logging/logger.js';
import { migrationLock, openCluster, type ClusterNode } from './cluster/cluster.js';
import { clusterRoutes } from './cluster/routes.js';
import { LogBuffer } from './logging/log-buffer.js';

export interface HostOptions {
  config: AntennaConfig;
  /** The server's logger; by default JSON on stdout (readable on a terminal) and into `logs`. */
  logger?: Logger;
  /** The recent lines the admin's log screen shows: fed by the default logger, or by the caller's along with `logger`. */
  logs?: LogBuffer;
  clock?: Clock;
  /** 'server' runs start hooks and the scheduler; 'cli' only initialises plugins for a command. */
  mode?: 'server' | 'cli';
  /** The first admin's password (else ANTENNA_ADMIN_PASSWORD, else generated and announced). */
  adminPassword?: string;
  /** Where a generated first admin password is announced; by default it is kept in `firstAdminPassword` for the start-up banner. */
  announce?: (text: string) => void;
  /** Plugins given as objects rather than named in the config (tests); their config is `plugins.<id>`. */
  definitions?: PluginDefinition<any>[];
}

type AnyRef = { id: string; kind: 'service' | 'extension-point'; owner?: string };

interface PluginRuntime {
  loaded: LoadedPlugin;
  inits: { deps: Record<string, AnyRef>; provides?: Record<string, AnyRef>; init(deps: any): unknown }[];
  /** The plugin's child container, once its init has begun (core services under their ref ids). */
  container?: DependencyContainer;
  settings: PluginSettings<any>;
}

const CORE_SERVICE_IDS = new Set<string>(Object.values(coreServices).map((ref) => ref.id));

/** A CLI command a plugin added, with what it needs to run. */
export interface HostCommand {
  command: PluginCommand<Deps, unknown>;
  plugin: string;
}

/**
 * The running core: database, accounts, HTTP, jobs, ffmpeg and every plugin,
 * booted in this order so that a failure stops start-up before anything listens.
 */
export class Host {
  readonly commands: HostCommand[] = [];
  /** Services and extension points plugins provide, by ref id: the owner, and the value once it is there. */
  private readonly provided = new Map<string, { owner: string; kind: AnyRef['kind']; value?: unknown; ready: boolean }>();
  private readonly runtimes = new Map<string, PluginRuntime>();
  plugins: LoadedPlugin[] = [];
  app!: FastifyInstance;
  knex!: Knex;
  auth!: AuthServiceImpl;
  accounts!: AccountStore;
  accessKeys!: AccessKeys;
  jobs!: JobManagerImpl;
  scheduler!: SchedulerImpl;
  ffmpeg!: FfmpegSupervisor;
  transcodes!: TranscodeBudgetImpl;
  limiter!: LoginLimiter;
  settings!: SettingsManager;
  cluster!: ClusterNode;
  readonly logger: Logger;
  readonly logs: LogBuffer;
  /** The first admin's password when this start generated it (for the start-up banner), else undefined. */
  firstAdminPassword?: string;
  readonly clock: Clock;
  private readonly startHooks: (() => unknown)[] = [];
  private readonly shutdownHooks: (() => unknown)[] = [];
  private closed = false;

  private constructor(readonly config: AntennaConfig, private readonly options: HostOptions) {
    if (options.logger) {
      this.logger = options.logger;
      this.logs = options.logs ?? new LogBuffer();
    } else {
      ({ logger: this.logger, buffer: this.logs } = createLogger({ level: config.logging.level as LogLevel }));
    }
    this.clock = options.clock ?? { now: () => Date.now() };
  }

  static async create(options: HostOptions): Promise<Host> {
    const host = new Host(options.config, options);
    try {
      await host.boot();
    } catch (err) {
      await host.close().catch(() => {});
      throw err;
    }
    return host;
  }

  get publicUrl(): string {
    const s = this.config.server;
    if (s.publicUrl) return s.publicUrl;
    const address = this.app?.server?.address();
    const port = address && typeof address === 'object' ? address.port : s.port;
    const shownHost = s.host === '0.0.0.0' || s.host === '::' ? 'localhost' : s.host;
    return `http://${shownHost}:${port}`;
  }

  /** The URL of the listening server as seen from this machine; undefined before listen(). */
  get localUrl(): string | undefined {
    const address = this.app?.server?.listening ? this.app.server.address() : undefined;
    if (!address || typeof address !== 'object') return undefined;
    const ip = address.address === '0.0.0.0' ? '127.0.0.1' : address.address === '::' ? '::1' : address.address;
    return `http://${ip.includes(':') ? `[${ip}]` : ip}:${address.port}`;
  }

  private async boot(): Promise<void> {
    const { config } = this;
    const dataDir = config.server.dataDir;
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    await chmod(dataDir, 0o700); // secret, database and avatars live here: owner only

    this.knex = await openDatabase(config, this.logger.child({ component: 'database' }));
    const migrated = await migrationLock(config, this.knex);
    try {
      this.cluster = await openCluster(config, this.knex, this.logger.child({ component: 'cluster' }), nodeCapacity(config.cluster?.maxNodeTranscodes ?? 0, config.ffmpeg.maxTranscodes));
      await this.migrate();
    } finally {
      await migrated();
    }
    // Every node signs with the same secret, so a token from one works on all; the first node's
    // own (its data dir's) goes to the database, so the tokens it issued keep working.
    const secret = await this.cluster.secret('jwt', () => loadOrCreateSecret(dataDir));
    this.accounts = new AccountStore(this.knex, () => this.clock.now());
    this.accessKeys = new AccessKeys(this.knex, secret, openNetworks(config.accessKeys.open), () => this.clock.now());
    this.auth = new AuthServiceImpl(this.accounts, secret, {
      mediaKeyTtlSeconds: config.auth.mediaKeyTtlSeconds, sessionIdleMs: config.auth.sessionIdleDays * 86_400_000,
    }, () => this.clock.now(), this.accessKeys);
    if (this.cluster.enabled) {
      const auth = this.auth;
      auth.onInvalidate = (message) => this.cluster.publish('auth', message);
      this.cluster.subscribe('auth', (message) => auth.applyRemote(message));
      this.cluster.onResync(() => auth.applyRemote('*'));
    }
    const limiter = this.limiter = new LoginLimiter({
      maxPerUser: config.auth.maxFailuresPerUser, maxPerAddress: config.auth.maxFailuresPerAddress,
      windowMs: config.auth.failureWindowSeconds * 1000,
    }, () => this.clock.now(), this.cluster.enabled ? new SharedFailures(this.knex) : undefined);

    const binaries = resolveBinaries(config.ffmpeg);
    const ffmpegLog = this.logger.child({ component: 'ffmpeg' });
    const runDir = path.join(dataDir, 'run');
    await reapLeftovers(runDir, ffmpegLog);
    this.ffmpeg = new FfmpegSupervisor(ffmpegLog, binaries, { runDir });
    // In cluster mode ffmpeg.maxTranscodes holds across the nodes (leases) and each node's own budget is its capacity.
    const clustered = this.cluster.enabled && config.cluster;
    this.transcodes = new TranscodeBudgetImpl({
      max: clustered ? nodeCapacity(clustered.maxNodeTranscodes, config.ffmpeg.maxTranscodes) : config.ffmpeg.maxTranscodes || defaultMaxTranscodes(),
      perUser: config.ffmpeg.maxTranscodesPerUser,
    }, this.logger.child({ component: 'transcodes' }), clustered ? { node: this.cluster, clusterMax: config.ffmpeg.maxTranscodes } : undefined);
    this.jobs = new JobManagerImpl(this.logger.child({ component: 'jobs' }), this.clock);
    this.scheduler = new SchedulerImpl(this.knex, this.logger.child({ component: 'scheduler' }), this.jobs, this.clock, this.cluster);
    const events = new EventBusImpl(this.logger);

    this.settings = new SettingsManager(new ConfigFile(config.file), config, this.logger.child({ component: 'settings' }));

    this.app = await createHttp({ config, logger: this.logger, auth: this.auth, secret, version: VERSION });
    await accountRoutes(this.app, { store: this.accounts, auth: this.auth, limiter, dataDir });
    await jobRoutes(this.app, { jobs: this.jobs, auth: this.auth });
    await adminRoutes(this.app, {
      accounts: this.accounts, auth: this.auth, limiter, jobs: this.jobs, scheduler: this.scheduler, settings: this.settings,
      logs: this.logs, events,
    });
    await accessKeyRoutes(this.app, { keys: this.accessKeys, auth: this.auth });
    await clusterRoutes(this.app, { cluster: this.cluster, jobs: this.jobs, auth: this.auth });

    for (const loaded of this.plugins) this.runtimes.set(loaded.def.id, this.registerPlugin(loaded));
    const root = globalContainer.createChildContainer();
    const host = this;
    const hostInfo: HostInfo = {
      version: VERSION, dataDir, configDir: config.baseDir, dashOnly: config.clients.dashOnly,
      get publicUrl() { return host.publicUrl; },
      get localUrl() { return host.localUrl; },
    };
    const shared: Record<string, unknown> = {
      [coreServices.host.id]: hostInfo, [coreServices.database.id]: this.knex, [coreServices.auth.id]: this.auth,
      [coreServices.jobs.id]: this.jobs, [coreServices.scheduler.id]: this.scheduler, [coreServices.ffmpeg.id]: this.ffmpeg,
      [coreServices.transcodes.id]: this.transcodes, [coreServices.cluster.id]: this.cluster,
      [coreServices.events.id]: events, [coreServices.clock.id]: this.clock, [coreServices.sources.id]: new SourceReaderImpl(config.baseDir),
    };
    for (const [id, value] of Object.entries(shared)) root.registerInstance(id, value);

    for (const id of this.initOrder()) await this.initPlugin(this.runtimes.get(id)!, root);
    for (const p of this.provided.values()) if (p.kind === 'extension-point') (p.value as { freeze?: () => void }).freeze?.();

    // The first admin's password hash (scrypt, in libuv's pool) overlaps compiling the routes.
    const admin = this.options.mode !== 'cli' ? this.ensureAdmin() : Promise.resolve();
    await Promise.all([this.app.ready(), admin]);
    if (this.options.mode !== 'cli') {
      await this.cluster.join(() => this.jobs.list());
      for (const hook of this.startHooks) await hook();
      await this.scheduler.start();
    }
  }

  /** The core's tables, then the plugins' (loaded here), each owner's migrations in order. */
  private async migrate(): Promise<void> {
    await runMigrations(this.knex, 'core', coreMigrations);
    this.plugins = await loadPlugins(this.config, this.options.definitions);
    for (const p of this.plugins) {
      try {
        await runMigrations(this.knex, p.def.id, p.def.migrations ?? []);
      } catch (err) {
        throw new Error(`plugin ${p.def.id}: migration failed: ${(err as Error).message}`);
      }
    }
  }

  private registerPlugin(loaded: LoadedPlugin): PluginRuntime {
    const runtime: PluginRuntime = { loaded, inits: [], settings: this.settings.addPlugin(loaded) };
    const id = loaded.def.id;
    const provide = (ref: AnyRef, value?: unknown) => {
      const other = this.provided.get(ref.id)?.owner;
      if (other) throw new Error(`${ref.kind === 'service' ? 'service' : 'extension point'} ${ref.id} is already provided by ${other}`);
      this.provided.set(ref.id, { owner: id, kind: ref.kind, value, ready: value !== undefined });
    };
    try {
      loaded.def.register({
        registerExtensionPoint: (ref, impl) => provide(ref, impl),
        registerInit: (options) => {
          for (const ref of Object.values(options.provides ?? {})) provide(ref);
          runtime.inits.push(options as PluginRuntime['inits'][number]);
        },
        registerCommand: (command) => {
          const name = command.path.join(' ');
          if (this.commands.some((c) => c.command.path.join(' ') === name)) throw new Error(`CLI command "${name}" is already provided`);
          this.commands.push({ command: command as HostCommand['command'], plugin: id });
        },
      });
    } catch (err) {
      throw new Error(`plugin ${id}: register failed: ${(err as Error).message}`);
    }
    return runtime;
  }

  /** Inits in the order their refs demand; every ref a plugin or command names must have an enabled owner. */
  private initOrder(): string[] {
    const owners = new Map([...this.provided].map(([id, p]) => [id, p.owner]));
    const pluginRefs = (deps: Record<string, AnyRef>): RefUse[] =>
      Object.values(deps).filter((ref) => !CORE_SERVICE_IDS.has(ref.id)).map(({ id, kind, owner }) => ({ id, kind, owner }));
    const plugins = [...this.runtimes.values()].map((r) => ({ id: r.loaded.def.id, uses: r.inits.flatMap((i) => pluginRefs(i.deps)) }));
    // Commands run after every init: they need owners, not an order.
    const commands = this.commands.map((c) => ({ id: c.plugin, uses: pluginRefs((c.command.deps ?? {}) as Record<string, AnyRef>) }));
    checkOwners(commands, owners, new Set(this.runtimes.keys()));
    return initOrder(plugins, owners);
  }

  /** The values `deps` names, for a plugin whose container exists. */
  private resolve(pluginId: string, container: DependencyContainer, deps: Record<string, AnyRef>): Record<string, unknown> {
    const resolved: Record<string, unknown> = {};
    for (const [name, ref] of Object.entries(deps)) {
      const provided = this.provided.get(ref.id);
      if (provided) {
        if (!provided.ready) throw new Error(`plugin ${pluginId}: ${ref.id} of plugin ${provided.owner} is not ready yet (an init of its own plugin uses it before the init providing it)`);
        resolved[name] = provided.value;
      } else if (container.isRegistered(ref.id, true)) {
        resolved[name] = container.resolve(ref.id);
      } else {
        throw new Error(`plugin ${pluginId}: unknown service ${ref.id}`);
      }
    }
    return resolved;
  }

  private async initPlugin(runtime: PluginRuntime, root: DependencyContainer): Promise<void> {
    const def: PluginDefinition = runtime.loaded.def;
    const log = this.logger.child({ plugin: def.id });
    const pluginDir = path.join(this.config.server.dataDir, 'plugins', def.id);
    const paths: PluginPaths = {
      dataDir: this.config.server.dataDir,
      pluginDir: async () => { await mkdir(pluginDir, { recursive: true, mode: 0o700 }); return pluginDir; },
    };
    const lifecycle: Lifecycle = {
      onStart: (fn) => { this.startHooks.push(fn); },
      onShutdown: (fn) => { this.shutdownHooks.push(fn); },
    };
    await this.app.register(async (scope) => {
      const container = (runtime.container = root.createChildContainer());
      container.registerInstance(coreServices.logger.id, log);
      container.registerInstance(coreServices.config.id, runtime.loaded.config);
      container.registerInstance(coreServices.settings.id, runtime.settings);
      container.registerInstance(coreServices.http.id, scope);
      container.registerInstance(coreServices.paths.id, paths);
      container.registerInstance(coreServices.lifecycle.id, lifecycle);
      container.registerInstance(coreServices.container.id, container);
      for (const { deps, provides, init } of runtime.inits) {
        const resolved = this.resolve(def.id, container, deps);
        let result: unknown;
        try {
          result = await init(resolved);
        } catch (err) {
          throw new Error(`plugin ${def.id}: init failed: ${(err as Error).message}`);
        }
        for (const [name, ref] of Object.entries(provides ?? {})) {
          const value = (result as Record<string, unknown> | undefined)?.[name];
          if (value === undefined || value === null) throw new Error(`plugin ${def.id}: init did not return ${name}, the ${ref.id} it provides`);
          this.provided.set(ref.id, { owner: def.id, kind: ref.kind, value, ready: true });
        }
      }
    });
    log.debug({ version: def.version, from: runtime.loaded.location }, 'plugin initialised');
  }

  /** The plugin command that argv starts with (the longest match), and the words after it. */
  findCommand(argv: string[]): { entry: HostCommand; args: string[] } | undefined {
    const entry = this.commands
      .filter((c) => c.command.path.every((word, i) => argv[i] === word))
      .sort((a, b) => b.command.path.length - a.command.path.length)[0];
    return entry && { entry, args: argv.slice(entry.command.path.length) };
  }

  /** Runs a plugin's command with what it names in `deps`. */
  async runCommand(entry: HostCommand, args: string[], io: CommandIo): Promise<void> {
    const container = this.runtimes.get(entry.plugin)?.container;
    if (!container) throw new Error(`plugin ${entry.plugin} has not started`);
    const deps = this.resolve(entry.plugin, container, (entry.command.deps ?? {}) as Record<string, AnyRef>);
    await entry.command.run(args, io, deps as never);
  }

  /** First start with an empty database: an admin, with ANTENNA_ADMIN_PASSWORD or a generated password printed once. */
  private async ensureAdmin(): Promise<void> {
    if ((await this.accounts.countUsers()) > 0) return;
    const given = this.options.adminPassword ?? process.env.ANTENNA_ADMIN_PASSWORD;
    const password = given || generatePassword();
    try {
      await this.accounts.createUser({ username: 'admin', password, admin: true });
    } catch (err) {
      if ((await this.accounts.countUsers()) > 0) return; // another node, starting at the same time, made it
      throw err;
    }
    this.logger.info({ event: 'admin_created', user: 'admin' }, 'first start: admin user created');
    if (given) return;
    this.firstAdminPassword = password;
    this.options.announce?.(`\n  Antenna is ready. Sign in at ${this.publicUrl}/ as admin with password: ${password}\n  (shown once; change it with 'antenna user passwd admin')\n`);
  }

  async listen(): Promise<string> {
    const address = await this.app.listen({ host: this.config.server.host, port: this.config.server.port });
    this.logger.info({ event: 'listening', address, version: VERSION, plugins: this.plugins.map((p) => p.def.id) }, 'listening');
    return address;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.scheduler?.stop();
    await this.app?.close().catch((err) => this.logger.error({ err }, 'http close failed'));
    for (const hook of [...this.shutdownHooks].reverse()) {
      try {
        await hook();
      } catch (err) {
        this.logger.error({ err }, 'shutdown hook failed');
      }
    }
    this.accessKeys?.stop();
    await this.jobs?.stopAll('shutdown');
    await this.ffmpeg?.stopAll();
    await this.cluster?.close(); // after the work stopped: its leases go to the other nodes at once
    await this.knex?.destroy();
  }
}
