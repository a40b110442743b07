import type { TSchema } from '@sinclair/typebox';
import type { Knex } from 'knex';
import type { ExtensionPointRef, ServiceRef } from './refs.js';
import type { CliCommand } from './services.js';

type Ref<T> = ServiceRef<T> | ExtensionPointRef<T>;
type Resolved<D> = { [K in keyof D]: D[K] extends Ref<infer T> ? T : never };

/** A migration owned by one plugin. Names sort in run order (`001_channels`, `002_favorites`). */
export interface Migration {
  name: string;
  up(knex: Knex): Promise<void>;
  down?(knex: Knex): Promise<void>;
}

export interface PluginEnv {
  /** Offer an extension point to plugins that depend on this one. */
  registerExtensionPoint<T>(ref: ExtensionPointRef<T>, impl: T): void;
  /**
   * The plugin's start-up: receives the services and extension points named in
   * `deps`. Inits run in dependency order, so an extension point's owner has
   * run its init before any plugin that uses it.
   */
  registerInit<D extends Record<string, Ref<unknown>>>(options: { deps: D; init(deps: Resolved<D>): Promise<void> | void }): void;
  /** Add a subcommand to the `antenna` CLI. */
  registerCommand(command: CliCommand): void;
}

export interface PluginDefinition {
  /** Unique plugin id (first-party: the folder name, e.g. `live-tv`). */
  id: string;
  version: string;
  /** SDK versions this plugin was built for, as a semver range: `^1`. */
  host: string;
  description?: string;
  /** TypeBox / JSON schema of the plugin's config block; defaults are applied before init. */
  configSchema?: TSchema;
  /** Plugins that must be loaded first; listed ones are enabled automatically with their defaults. */
  dependsOn?: string[];
  migrations?: Migration[];
  register(env: PluginEnv): void;
}

/** The SDK version this copy implements; a plugin's `host` range must accept it. */
export const SDK_VERSION = '1.0.0';

const ID = /^[a-z0-9][a-z0-9._-]*$/;

export function definePlugin(definition: PluginDefinition): PluginDefinition {
  if (!ID.test(definition.id)) throw new Error(`plugin id ${JSON.stringify(definition.id)} must be lower-case letters, digits, '.', '_' or '-'`);
  if (typeof definition.register !== 'function') throw new Error(`plugin ${definition.id}: register(env) is missing`);
  if (typeof definition.host !== 'string') throw new Error(`plugin ${definition.id}: host (the SDK range, e.g. '^1') is missing`);
  return Object.freeze({ ...definition, __antennaPlugin: true }) as PluginDefinition;
}
