import type { PackagerRegistry } from './media.js';
import type {
  AuthService, Clock, Database, DependencyContainer, EventBus, FfmpegService, HttpScope, JobManager,
  Lifecycle, Logger, PluginPaths, Scheduler,
} from './services.js';

/**
 * A typed handle on a service. Identity is the `id` string, so two copies of
 * the SDK in one process still agree. `id` is also the tsyringe token under
 * which the service is registered in every plugin's child container:
 *   constructor(@inject(coreServices.database.id) db: Database) {}
 */
export interface ServiceRef<T> {
  readonly id: string;
  readonly kind: 'service';
  /** Type carrier only; never set. */
  readonly T?: T;
}

export function createServiceRef<T>(id: string): ServiceRef<T> {
  return { id, kind: 'service' };
}

/**
 * An extension point: an API one plugin owns and offers to the plugins that
 * depend on it (live-tv owns `tuners`; m3u-tuner adds a tuner to it).
 */
export interface ExtensionPointRef<T> {
  readonly id: string;
  readonly kind: 'extension-point';
  readonly T?: T;
}

export function createExtensionPoint<T>(id: string): ExtensionPointRef<T> {
  return { id, kind: 'extension-point' };
}

/** The plugin's own validated configuration (its configSchema with defaults applied). */
export type PluginConfig = Record<string, unknown>;

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
}

export const coreServices = {
  logger: createServiceRef<Logger>('core.logger'),
  config: createServiceRef<PluginConfig>('core.config'),
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
  /** HLS/DASH packagers by format, added by the packager plugins (shared by live-tv, vod and dvr). */
  packagers: createServiceRef<PackagerRegistry>('core.packagers'),
  /** The plugin's child tsyringe container; every core service is registered in it by its ref id. */
  container: createServiceRef<DependencyContainer>('core.container'),
} as const;
