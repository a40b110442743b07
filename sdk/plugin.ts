import type { Static, TSchema } from '@sinclair/typebox';
import type { Knex } from 'knex';
import type { ConfigServiceRef, ExtensionPointRef, PluginConfig, ServiceRef, SettingsServiceRef } from './refs.js';
import type { CommandIo, PluginSettings } from './services.js';

type Ref<T> = ServiceRef<T> | ExtensionPointRef<T>;

/** What an init or a command names: `{ db: coreServices.database, live: liveTvService }`. */
export type Deps = Record<string, Ref<unknown>>;

/** The values `deps` name; `coreServices.config` and `coreServices.settings` are typed by the plugin's configSchema. */
export type ResolvedDeps<D, C = PluginConfig> = {
  [K in keyof D]: D[K] extends ConfigServiceRef ? C : D[K] extends SettingsServiceRef ? PluginSettings<C> : D[K] extends Ref<infer T> ? T : never;
};

/** The services (and extension points) an init provides: `{ catalog: vodCatalogService, vod: vodExtensionPoint }`. */
export type ProvidedRefs = Record<string, Ref<unknown>>;

/** What an init providing `P` returns: `{ catalog: <the catalog>, vod: <the registry> }`. */
export type ProvidedServices<P> = { [K in keyof P]: P[K] extends Ref<infer T> ? T : never };

/** void for an init that provides nothing (no `provides`: P is then inferred as the bare constraint). */
type InitResult<P> = string extends keyof P ? void : keyof P extends never ? void : ProvidedServices<P>;

/** A migration owned by one plugin. Names sort in run order (`001_channels`, `002_favorites`). */
export interface Migration {
  name: string;
  up(knex: Knex): Promise<void>;
  down?(knex: Knex): Promise<void>;
}

export interface PluginInit<D extends Deps, P extends ProvidedRefs, C> {
  /** The services and extension points this init uses. Their owners' inits run first. */
  deps: D;
  /**
   * Services this plugin offers other plugins (and extension points whose registry needs what
   * this init builds): `init` returns their values, and they go to every plugin naming them.
   */
  provides?: P;
  init(deps: ResolvedDeps<D, C>): Promise<InitResult<P>> | InitResult<P>;
}

/**
 * A subcommand of the `antenna` CLI. It runs after every plugin's init, in a
 * host that does not listen on HTTP and runs no `onStart` hook and no
 * scheduled task (a server may be running beside it on the same data): the
 * services named in `deps` are ready; the background work a server starts
 * (imports at start, scans, recordings) is not running.
 */
export interface PluginCommand<D extends Deps, C> {
  /** Words after `antenna`, e.g. ['guide', 'refresh']. */
  path: string[];
  description: string;
  /** Shown by `antenna help`, e.g. 'library scan [ID]'. */
  usage?: string;
  deps?: D;
  run(args: string[], io: CommandIo, deps: ResolvedDeps<D, C>): Promise<void>;
}

export interface PluginEnv<C = PluginConfig> {
  /**
   * Offer an extension point: the object other plugins' inits register things
   * with (tuners, guide sources, subtitle providers). Read what was registered
   * once every plugin has initialised (`lifecycle.onStart`) or when it is used;
   * the host closes the registry (its `freeze()`, if it has one) after the last init.
   */
  registerExtensionPoint<T>(ref: ExtensionPointRef<T>, impl: T): void;
  /**
   * The plugin's start-up. It receives what `deps` names; the inits of the plugins
   * owning those services and extension points run before it, whatever order the
   * config lists plugins in. An init that `provides` services returns their values.
   */
  registerInit<D extends Deps, P extends ProvidedRefs = {}>(options: PluginInit<D, P, C>): void;
  /** Add a subcommand to the `antenna` CLI (see PluginCommand for what runs before it). */
  registerCommand<D extends Deps = {}>(command: PluginCommand<D, C>): void;
}

/** `Static<typeof configSchema>` when the plugin has a schema, else a plain record. */
export type ConfigOf<S extends TSchema> = TSchema extends S ? PluginConfig : Static<S>;

export interface PluginDefinition<S extends TSchema = TSchema> {
  /** Unique plugin id (first-party: the folder name, e.g. `live-tv`). */
  id: string;
  version: string;
  /** SDK versions this plugin was built for, as a semver range: `^1.1`. */
  host: string;
  description?: string;
  /** TypeBox / JSON schema of the plugin's config block; validated and defaults applied before init. */
  configSchema?: S;
  /**
   * Plugins enabled with this one, with their default config (`web` brings `vod`…).
   * Init order does not come from here but from the refs each init names.
   */
  dependsOn?: string[];
  migrations?: Migration[];
  register(env: PluginEnv<ConfigOf<S>>): void;
}

/** The SDK version this copy implements; a plugin's `host` range must accept it. */
export const SDK_VERSION = '1.2.0';

const ID = /^[a-z0-9][a-z0-9._-]*$/;

export function definePlugin<S extends TSchema = TSchema>(definition: PluginDefinition<S>): PluginDefinition<S> {
  if (!ID.test(definition.id)) throw new Error(`plugin id ${JSON.stringify(definition.id)} must be lower-case letters, digits, '.', '_' or '-'`);
  if (typeof definition.register !== 'function') throw new Error(`plugin ${definition.id}: register(env) is missing`);
  if (typeof definition.host !== 'string') throw new Error(`plugin ${definition.id}: host (the SDK range, e.g. '^1.1') is missing`);
  return Object.freeze({ ...definition, __antennaPlugin: true }) as PluginDefinition<S>;
}
