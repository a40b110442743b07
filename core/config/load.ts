import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ConfigSchema, type AntennaConfig } from './schema.js';
import { validateConfig } from './validate.js';
import { demoConfig } from './demo.js';

export interface LoadOptions {
  /** --config FILE; falls back to ANTENNA_CONFIG; the demo config when neither is set. */
  file?: string;
  env?: NodeJS.ProcessEnv;
  /** Used instead of a file (tests, createTestHost). */
  object?: Record<string, unknown>;
  baseDir?: string;
  /** Changes the raw config before it is validated, as the environment does (tests: a port, a data dir). */
  override?: (raw: Record<string, any>) => void;
}

function envOverrides(raw: Record<string, any>, env: NodeJS.ProcessEnv): void {
  const server = (raw.server ??= {});
  if (env.ANTENNA_HOST) server.host = env.ANTENNA_HOST;
  if (env.ANTENNA_PORT !== undefined && env.ANTENNA_PORT !== '') {
    // Keep the raw string when it is not a number so validation names it.
    server.port = /^\d+$/.test(env.ANTENNA_PORT) ? Number(env.ANTENNA_PORT) : env.ANTENNA_PORT;
  }
  if (env.ANTENNA_DATA_DIR) server.dataDir = path.resolve(env.ANTENNA_DATA_DIR);
}

/** Reads, overrides from the environment, applies defaults, validates. Throws with a readable message. */
export function loadConfig(options: LoadOptions = {}): AntennaConfig {
  const env = options.env ?? process.env;
  const file = options.file ?? (env.ANTENNA_CONFIG || undefined);
  let raw: Record<string, any>;
  let baseDir = options.baseDir ?? process.cwd();
  if (options.object) {
    raw = structuredClone(options.object);
  } else if (file) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new Error(`cannot read config file ${file}: ${(err as Error).message}`);
    }
    try {
      raw = parseYaml(text) ?? {};
    } catch (err) {
      throw new Error(`config file ${file} is not valid YAML: ${(err as Error).message}`);
    }
    if (typeof raw !== 'object' || Array.isArray(raw)) throw new Error(`config file ${file}: expected a mapping at the top level`);
    baseDir = path.dirname(path.resolve(file));
  } else {
    raw = demoConfig();
  }
  if (raw.plugins === null) raw.plugins = {}; // `plugins:` with nothing under it
  envOverrides(raw, env);
  options.override?.(raw);
  const config = validateConfig<AntennaConfig>(ConfigSchema, raw, '');
  config.server.dataDir = path.resolve(baseDir, config.server.dataDir);
  for (const [name, value] of Object.entries(config.plugins)) if (value === null) config.plugins[name] = {};
  return { ...config, baseDir, file: file ? path.resolve(file) : undefined };
}
