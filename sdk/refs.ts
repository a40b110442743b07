import type {
  AuthService, Clock, Cluster, Database, DependencyContainer, EventBus, FfmpegService, HttpScope, JobManager,
  Lifecycle, Logger, PluginPaths, PluginSettings, Scheduler, SourceReader, TranscodeBudget,
} from './services.js';

/**
 * A typed handle on a service: a core service (`coreServices.*`) or one a
 * plugin offers to others (`liveTvService`, `vodCatalogService`). Identity is
 * the `id` string, so two copies of the SDK in one process still agree. `id` is
 * also the tsyringe token under which a core service is registered in every
 * plugin's child container:
 *   constructor(@inject(coreServices.database.id) db: Database) {}
 */
export interface ServiceRef<T> {
  readonly id: string;
  readonly kind: 'service';
  /** The plugin that provides it (undefined for core services): start-up names it when it is not enabled. */
  readonly owner?: string;
  /** Type carrier only; never set. */
  readonly T?: T;
}

/**
 * An extension point: where one plugin collects what others register
 * (live-tv's `tuners`: m3u-tuner adds a tuner to it). Its owner reads the
 * registrations once every plugin has initialised; it offers no runtime API
 * (that is a service's job).
 */
export interface ExtensionPointRef<T> {
  readonly id: string;
  readonly kind: 'extension-point';
  readonly owner?: string;
  readonly T?: T;
}

type RefOptions = { id: string; owner?: string };

/** `createServiceRef<MyApi>({ id: 'my-plugin.api', owner: 'my-plugin' })`; the 1.0 form takes the id alone. */
export function createServiceRef<T>(options: string | RefOptions): ServiceRef<T> {
  const { id, owner } = typeof options === 'string' ? { id: options, owner: undefined } : options;
  return Object.freeze({ id, kind: 'service' as const, ...(owner ? { owner } : {}) });
}

/** `createExtensionPoint<MyRegistry>({ id: 'my-plugin.things', owner: 'my-plugin' })`; the 1.0 form takes the id alone. */
export function createExtensionPoint<T>(options: string | RefOptions): ExtensionPointRef<T> {
  const { id, owner } = typeof options === 'string' ? { id: options, owner: undefined } : options;
  return Object.freeze({ id, kind: 'extension-point' as const, ...(owner ? { owner } : {}) });
}

/** The plugin's own validated configuration; `init` receives it typed by the plugin's configSchema. */
export type PluginConfig = Record<string, unknown>;

/** The ref of a plugin's config: its own type, so `init` can receive the config typed by the schema. */
export interface ConfigServiceRef extends ServiceRef<PluginConfig> {
  readonly id: 'core.config';
}

/** The ref of a plugin's settings: typed by the plugin's configSchema, like its config. */
export interface SettingsServiceRef extends ServiceRef<PluginSettings> {
  readonly id: 'core.settings';
}

/** Host-wide settings a plugin may read. */
export interface HostInfo {
  version: string;
  dataDir: string;
  /** The config file's directory: plugins resolve relative paths in their config against it. */
  configDir: string;
  /** Device-OS values that only play DASH (PRODUCT.md §1 `clients.dashOnly`). */
  dashOnly: { exact: string[]; prefix: string[] };
  /** The base URL the server announces (for logs and CLI output). */
  publicUrl: string;
  /**
   * The base URL this server answers on from this machine, for local processes such as
   * ffmpeg reading a route of a plugin: `http://127.0.0.1:<port>` when it listens on every
   * address. Undefined while it does not listen (CLI commands).
   */
  localUrl: string | undefined;
}

export const coreServices = {
  logger: createServiceRef<Logger>('core.logger'),
  config: createServiceRef<PluginConfig>('core.config') as ConfigServiceRef,
  host: createServiceRef<HostInfo>('core.host'),
  database: createServiceRef<Database>('core.database'),
  http: createServiceRef<HttpScope>('core.http'),
  auth: createServiceRef<AuthService>('core.auth'),
  jobs: createServiceRef<JobManager>('core.jobs'),
  scheduler: createServiceRef<Scheduler>('core.scheduler'),
  ffmpeg: createServiceRef<FfmpegService>('core.ffmpeg'),
  events: createServiceRef<EventBus>('core.events'),
  clock: createServiceRef<Clock>('core.clock'),
  lifecycle: createServiceRef<Lifecycle>('core.lifecycle'),
  paths: createServiceRef<PluginPaths>('core.paths'),
  /** The CPU budget for ffmpeg runs that encode video: VOD transcodes and transcoding live sessions share it. */
  transcodes: createServiceRef<TranscodeBudget>('core.transcodes'),
  /** Playlists and guides by path or URL: gzip, credentials, timeouts and size limits handled. */
  sources: createServiceRef<SourceReader>('core.sources'),
  /** The plugin's block of the config file: change it at runtime, apply changes without a restart. */
  settings: createServiceRef<PluginSettings>('core.settings') as SettingsServiceRef,
  /** The plugin's child tsyringe container; every core service is registered in it by its ref id. */
  container: createServiceRef<DependencyContainer>('core.container'),
  /** The nodes on one PostgreSQL database: leases (work run once) and messages between nodes. */
  cluster: createServiceRef<Cluster>('core.cluster'),
} as const;
