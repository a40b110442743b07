import { isDeepStrictEqual } from 'node:util';
import { Type, type TSchema } from '@sinclair/typebox';
import type { Logger } from 'pino';
import { errors } from '../../sdk/errors.js';
import type { ConfigChangeResult, PluginSettings } from '../../sdk/services.js';
import type { ConfigFile } from '../config/file.js';
import { ConfigSchema, type AntennaConfig } from '../config/schema.js';
import { validateConfig } from '../config/validate.js';
import { configKey, type LoadedPlugin } from '../plugins/loader.js';

type Block = Record<string, unknown>;
type ChangeHandler = { keys: string[]; apply: (next: any, previous: any) => Promise<void> | void };

/** One block of the config whose changes are tracked: a root section (`logging`) or a plugin's. */
interface Section {
  id: string;
  title: string;
  description?: string;
  schema: TSchema;
  /** Where the block is in the file. */
  path: string[];
  /** How validation errors name it: `plugins.dvr`, `logging`. */
  label: string;
  /** The config in effect. */
  running: Block;
  handlers: ChangeHandler[];
  /** Keys whose value in the file is not the one in effect. */
  pending: Set<string>;
  readOnly: Set<string>;
  plugin?: string;
}

export type FieldKind = 'string' | 'integer' | 'number' | 'boolean' | 'choice' | 'duration';

/** A top-level key of a section as the settings screen shows it. Lists and mappings have screens of their own and are not listed. */
export interface FieldView {
  key: string;
  kind: FieldKind;
  choices?: string[];
  minimum?: number;
  maximum?: number;
  default?: unknown;
  description?: string;
  /** Set in the config file (undefined: the default applies). A writeOnly key's value is never shown. */
  value?: unknown;
  /** In effect now. */
  effective?: unknown;
  secret: boolean;
  /** Applied without a restart when changed. */
  live: boolean;
  restartNeeded: boolean;
  readOnly: boolean;
}

export interface SectionView {
  id: string;
  title: string;
  plugin?: string;
  description?: string;
  fields: FieldView[];
}

/** Root sections that can be edited here; `database` (its connection may hold a password) is left to the file. */
const ROOT_SECTIONS: { id: keyof AntennaConfig; title: string; readOnly?: string[] }[] = [
  { id: 'server', title: 'Server', readOnly: ['dataDir'] },
  { id: 'auth', title: 'Sign-in' },
  { id: 'logging', title: 'Logging' },
  { id: 'ffmpeg', title: 'ffmpeg' },
];

const DURATION = '^\\s*\\d+(\\.\\d+)?\\s*(ms|s|m|h|d)\\s*$';
const isRecord = (v: unknown): v is Block => v !== null && typeof v === 'object' && !Array.isArray(v);

function fieldKind(schema: any): Pick<FieldView, 'kind' | 'choices'> | undefined {
  if (Array.isArray(schema.anyOf) && schema.anyOf.every((v: any) => 'const' in v && typeof v.const === 'string')) {
    return { kind: 'choice', choices: schema.anyOf.map((v: any) => v.const) };
  }
  if (schema.type === 'string') return { kind: schema.pattern === DURATION ? 'duration' : 'string' };
  if (schema.type === 'integer' || schema.type === 'number' || schema.type === 'boolean') return { kind: schema.type };
  return undefined;
}

/** A validation failure as one 400 message: `plugins.dvr.prePadding: got "soon", expected …`. */
function validated<T>(schema: TSchema, value: unknown, label: string): T {
  try {
    return validateConfig<T>(schema, value, label);
  } catch (err) {
    throw errors.badRequest((err as Error).message.replace(/^invalid config:\s*/, '').split('\n').map((l) => l.trim()).join('; '));
  }
}

/**
 * Settings changed at runtime: each section of the config file (the root
 * ones and every plugin's) with the config in effect, the keys its plugin
 * applies live, and those waiting for a restart. Changes are written to the
 * file first, then applied.
 */
export class SettingsManager {
  private readonly sections = new Map<string, Section>();

  constructor(private readonly file: ConfigFile, config: AntennaConfig, private readonly log: Logger) {
    for (const root of ROOT_SECTIONS) {
      const schema = (ConfigSchema.properties as Record<string, TSchema>)[root.id]!;
      this.sections.set(root.id, {
        id: root.id, title: root.title, schema, path: [root.id], label: root.id, running: { ...(config[root.id] as Block) },
        handlers: [], pending: new Set(), readOnly: new Set(root.readOnly ?? []),
      });
    }
  }

  /** Tracks a plugin's section; its PluginSettings for coreServices.settings. */
  addPlugin(loaded: LoadedPlugin): PluginSettings<any> {
    const { def, spec } = loaded;
    const id = `plugins.${def.id}`;
    const section: Section = {
      id, title: def.id, description: def.description, schema: def.configSchema ?? Type.Record(Type.String(), Type.Unknown()),
      path: ['plugins', spec], label: configKey(spec), running: { ...loaded.config }, handlers: [], pending: new Set(), readOnly: new Set(),
      plugin: def.id,
    };
    this.sections.set(id, section);
    return {
      current: () => section.running,
      editable: () => this.file.status(),
      update: (edit) => this.update(section, edit),
      onChange: (keys, apply) => { section.handlers.push({ keys: [...keys], apply }); },
    };
  }

  editable(): Promise<{ editable: boolean; reason?: string }> {
    return this.file.status();
  }

  get filePath(): string | undefined {
    return this.file.file;
  }

  /** Every section with editable keys, as the file has them and as they are in effect. */
  async list(): Promise<SectionView[]> {
    const data = await this.file.read();
    const out: SectionView[] = [];
    // The plugins' sections (DVR, transcoding…) before the server's own.
    const sections = [...this.sections.values()];
    for (const s of [...sections.filter((x) => x.plugin), ...sections.filter((x) => !x.plugin)]) {
      const inFile = this.blockOf(data, s.path);
      const fields: FieldView[] = [];
      for (const [key, schema] of Object.entries(((s.schema as any).properties ?? {}) as Record<string, any>)) {
        const kind = fieldKind(schema);
        if (!kind) continue;
        const secret = schema.writeOnly === true;
        fields.push({
          key, ...kind, minimum: schema.minimum, maximum: schema.maximum, default: secret ? undefined : schema.default, description: schema.description,
          value: secret ? undefined : inFile?.[key], effective: secret ? undefined : s.running[key], secret,
          live: s.handlers.some((h) => h.keys.includes(key)), restartNeeded: s.pending.has(key), readOnly: s.readOnly.has(key),
        });
      }
      if (fields.length) out.push({ id: s.id, title: s.title, plugin: s.plugin, description: s.description, fields });
    }
    return out;
  }

  /** Sets keys of one section (null: back to the default), as the settings screen does. */
  async set(sectionId: string, values: Record<string, unknown>): Promise<ConfigChangeResult> {
    const section = this.sections.get(sectionId);
    if (!section) throw errors.notFound(`No settings section ${sectionId}`);
    const properties = ((section.schema as any).properties ?? {}) as Record<string, any>;
    for (const key of Object.keys(values)) {
      if (!properties[key] || !fieldKind(properties[key])) throw errors.badRequest(`${section.label}.${key}: no such setting here`);
      if (section.readOnly.has(key)) throw errors.badRequest(`${section.label}.${key} cannot be changed here: change it in the config file`);
    }
    return this.update(section, (block) => {
      for (const [key, value] of Object.entries(values)) {
        if (value === null) delete block[key];
        else block[key] = value;
      }
    });
  }

  private blockOf(data: Block, at: string[]): Block | undefined {
    let node: unknown = data;
    for (const key of at) node = isRecord(node) ? node[key] : undefined;
    return isRecord(node) ? node : undefined;
  }

  private async update(section: Section, edit: (block: Block) => void): Promise<ConfigChangeResult> {
    let next: Block = {};
    const { before, after } = await this.file.update((data) => {
      let parent: Block = data;
      for (const key of section.path.slice(0, -1)) parent = isRecord(parent[key]) ? (parent[key] as Block) : (parent[key] = {});
      const last = section.path[section.path.length - 1]!;
      const block = isRecord(parent[last]) ? (parent[last] as Block) : {};
      edit(block);
      parent[last] = block;
    }, (data) => {
      next = validated<Block>(section.schema, this.blockOf(data, section.path) ?? {}, section.label);
      validated(ConfigSchema, { ...data, plugins: data.plugins ?? {} }, '');
    });
    const was = this.blockOf(before, section.path) ?? {};
    const now = this.blockOf(after, section.path) ?? {};
    const changed = [...new Set([...Object.keys(was), ...Object.keys(now)])].filter((k) => !isDeepStrictEqual(was[k], now[k]));
    const result: ConfigChangeResult = { changed, applied: [], restartNeeded: [] };

    const previous = section.running;
    for (const handler of section.handlers) {
      const keys = handler.keys.filter((k) => !isDeepStrictEqual(next[k], previous[k]));
      if (!keys.length) continue;
      try {
        await handler.apply(next, previous);
        section.running = { ...section.running, ...Object.fromEntries(handler.keys.map((k) => [k, next[k]])) };
        result.applied.push(...keys);
      } catch (err) {
        result.error = (err as Error).message;
        this.log.error({ err, section: section.id, keys }, 'settings change could not be applied; it takes effect at the next start');
      }
    }
    for (const key of new Set([...changed, ...section.pending])) {
      if (isDeepStrictEqual(next[key], section.running[key])) section.pending.delete(key);
      else section.pending.add(key);
    }
    result.restartNeeded = [...section.pending];
    this.log.info({ event: 'settings_changed', section: section.id, changed, applied: result.applied, restartNeeded: result.restartNeeded }, 'settings changed');
    return result;
  }
}
