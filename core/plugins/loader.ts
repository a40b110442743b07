import { existsSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import semver from 'semver';
import type { PluginDefinition } from '../../sdk/plugin.js';
import { SDK_VERSION } from '../../sdk/plugin.js';
import type { AntennaConfig } from '../config/schema.js';
import { validateConfig } from '../config/validate.js';

export interface LoadedPlugin {
  def: PluginDefinition;
  /** How it was named: the config key, or the dependency name that brought it. */
  spec: string;
  source: 'first-party' | 'path' | 'package' | 'definition';
  /** The file it was loaded from. */
  location: string;
  config: Record<string, unknown>;
  /** 'config', or the id of the plugin that depends on it. */
  enabledBy: string;
}

/** How errors name a plugin's config block: `plugins.m3u-tuner`, or `plugins["./my/plugin"]` for a path. */
export function configKey(spec: string): string {
  return /^[\w@-]+$/.test(spec) ? `plugins.${spec}` : `plugins[${JSON.stringify(spec)}]`;
}

/** dist/plugins, where first-party plugins are compiled to. */
export const FIRST_PARTY_DIR = path.resolve(__dirname, '../../plugins');

export function firstPartyNames(): string[] {
  try {
    return require('node:fs').readdirSync(FIRST_PARTY_DIR).filter((n: string) => existsSync(path.join(FIRST_PARTY_DIR, n, 'index.js')));
  } catch {
    return [];
  }
}

function locate(spec: string, baseDir: string): { file: string; source: LoadedPlugin['source'] } {
  const firstParty = path.join(FIRST_PARTY_DIR, spec, 'index.js');
  if (/^[a-z0-9-]+$/.test(spec) && existsSync(firstParty)) return { file: firstParty, source: 'first-party' };
  const isPath = spec.startsWith('.') || path.isAbsolute(spec);
  try {
    if (isPath) return { file: require.resolve(path.resolve(baseDir, spec)), source: 'path' };
    return { file: require.resolve(spec, { paths: [baseDir, process.cwd()] }), source: 'package' };
  } catch {
    const known = firstPartyNames();
    throw new Error(isPath
      ? `nothing loadable at ${path.resolve(baseDir, spec)} (expected a package.json with "main", or an index.js)`
      : `not a first-party plugin (${known.join(', ') || 'none built'}) nor an installed npm package`);
  }
}

async function importModule(file: string): Promise<unknown> {
  try {
    return require(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ERR_REQUIRE_ESM') throw err;
    return import(pathToFileURL(file).href);
  }
}

function definitionOf(mod: any): PluginDefinition | undefined {
  for (const candidate of [mod?.default?.default, mod?.default, mod?.plugin, mod]) {
    if (candidate && typeof candidate === 'object' && typeof candidate.id === 'string' && typeof candidate.register === 'function') return candidate;
  }
  return undefined;
}

/**
 * Loads the plugins the config lists and, transitively, the plugins they
 * depend on (enabled with their default config). Returns them in dependency
 * order. Every failure names the plugin and the cause. `definitions` are
 * plugins given as objects (tests), configured by their id.
 */
export async function loadPlugins(config: AntennaConfig, definitions: readonly PluginDefinition[] = []): Promise<LoadedPlugin[]> {
  const byId = new Map<string, LoadedPlugin>();
  const specToId = new Map<string, string>();
  const given = new Map(definitions.map((d) => [d.id, d]));
  const queue: { spec: string; config: unknown; enabledBy: string; baseDir: string }[] = [
    ...definitions.map((d) => ({ spec: d.id, config: config.plugins[d.id] ?? {}, enabledBy: 'config', baseDir: config.baseDir })),
    ...Object.entries(config.plugins).filter(([spec]) => !given.has(spec)).map(([spec, cfg]) => ({ spec, config: cfg ?? {}, enabledBy: 'config', baseDir: config.baseDir })),
  ];

  while (queue.length) {
    const item = queue.shift()!;
    if (specToId.has(item.spec) || byId.has(item.spec)) continue;
    let located: { file: string; source: LoadedPlugin['source'] };
    let def: PluginDefinition | undefined = given.get(item.spec);
    try {
      located = def ? { file: '(given as a definition)', source: 'definition' } : locate(item.spec, item.baseDir);
      def ??= definitionOf(await importModule(located.file));
    } catch (err) {
      throw new Error(`plugin ${item.spec}: failed to load: ${(err as Error).message.split('\n')[0]}`);
    }
    if (!def) throw new Error(`plugin ${item.spec}: ${located.file} does not export a plugin (export default definePlugin({...}))`);
    if (typeof def.host !== 'string' || !semver.validRange(def.host)) {
      throw new Error(`plugin ${def.id}: host must be a semver range of the SDK it was built for (e.g. '^1'), got ${JSON.stringify(def.host)}`);
    }
    if (!semver.satisfies(SDK_VERSION, def.host)) {
      throw new Error(`plugin ${def.id} (${item.spec}) was built for Antenna SDK ${def.host}, but this server provides SDK ${SDK_VERSION}; install a version of the plugin made for SDK ${semver.major(SDK_VERSION)}.x`);
    }
    const existing = byId.get(def.id);
    if (existing) throw new Error(`plugin id ${def.id} is provided twice: by ${existing.spec} and by ${item.spec}`);
    const pluginConfig = def.configSchema
      ? validateConfig<Record<string, unknown>>(def.configSchema, item.config, configKey(item.spec))
      : (item.config as Record<string, unknown>);
    byId.set(def.id, { def, spec: item.spec, source: located.source, location: located.file, config: pluginConfig, enabledBy: item.enabledBy });
    specToId.set(item.spec, def.id);
    for (const dep of def.dependsOn ?? []) {
      queue.push({ spec: dep, config: config.plugins[dep] ?? {}, enabledBy: def.id, baseDir: located.source === 'definition' ? config.baseDir : path.dirname(located.file) });
    }
  }

  // Dependency order (depth-first), refusing cycles.
  const ordered: LoadedPlugin[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (id: string, chain: string[]) => {
    if (state.get(id) === 'done') return;
    if (state.get(id) === 'visiting') throw new Error(`plugins depend on each other in a cycle: ${[...chain, id].join(' -> ')}`);
    state.set(id, 'visiting');
    const p = byId.get(id)!;
    for (const dep of p.def.dependsOn ?? []) visit(specToId.get(dep) ?? dep, [...chain, id]);
    state.set(id, 'done');
    ordered.push(p);
  };
  for (const id of byId.keys()) visit(id, []);
  return ordered;
}
