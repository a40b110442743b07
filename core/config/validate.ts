import { Value, ValueErrorType } from '@sinclair/typebox/value';
import type { TSchema } from '@sinclair/typebox';

/** A config path like `plugins.m3u-tuner.sources[0].maxStreams` from a JSON pointer. */
function dotted(prefix: string, pointer: string): string {
  let out = prefix;
  for (const part of pointer.split('/').slice(1)) {
    const key = part.replace(/~1/g, '/').replace(/~0/g, '~');
    out += /^\d+$/.test(key) ? `[${key}]` : (out ? '.' : '') + key;
  }
  return out || '(root)';
}

function show(value: unknown): string {
  if (value === undefined) return 'missing';
  const s = JSON.stringify(value);
  return s.length > 80 ? s.slice(0, 77) + '...' : s;
}

/** What a schema accepts, in words: `one of "sqlite3", "pg"`, `object or null`. */
function describe(schema: any): string {
  if (schema && 'const' in schema) return JSON.stringify(schema.const);
  if (Array.isArray(schema?.anyOf)) {
    const variants = schema.anyOf as any[];
    if (variants.every((v) => v && 'const' in v)) return `one of ${variants.map(describe).join(', ')}`;
    return variants.map(describe).join(' or ');
  }
  if (schema?.type) return [schema.type].flat().join(' or ');
  return 'a valid value';
}

/**
 * Value.Default quietly turns a list into an object, so a list where a mapping
 * belongs (`plugins: [a, b]`) is found before defaults are applied.
 */
function listsForMappings(schema: any, value: unknown, pointer: string, found: { pointer: string; value: unknown }[]): void {
  if (value === null || typeof value !== 'object') return;
  const variants: any[] = Array.isArray(schema?.anyOf) ? schema.anyOf : [schema];
  const mapping = variants.find((v) => v?.type === 'object');
  if (!mapping) return;
  if (Array.isArray(value)) {
    if (!variants.some((v) => v?.type === 'array')) found.push({ pointer, value });
    return;
  }
  const pattern = mapping.patternProperties ? Object.values(mapping.patternProperties)[0] : undefined;
  for (const [key, child] of Object.entries(value)) {
    const sub = mapping.properties?.[key] ?? pattern;
    if (sub) listsForMappings(sub, child, `${pointer}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`, found);
  }
}

/**
 * Applies the schema's defaults and checks the result. Returns the value, or
 * throws one Error whose lines each name the key, the value and what was expected.
 */
export function validateConfig<T>(schema: TSchema, input: unknown, prefix: string): T {
  const lists: { pointer: string; value: unknown }[] = [];
  listsForMappings(schema, input ?? {}, '', lists);
  if (lists.length) {
    throw new Error(`invalid config:\n  ${lists.slice(0, 10).map((l) => `${dotted(prefix, l.pointer)}: got ${show(l.value)}, expected object (a mapping, not a list)`).join('\n  ')}`);
  }
  const value = Value.Default(schema, structuredClone(input ?? {}));
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const e of Value.Errors(schema, value)) {
    const key = dotted(prefix, e.path);
    if (seen.has(key)) continue; // a union reports once per branch; the first says enough
    seen.add(key);
    const expected = e.type === ValueErrorType.Union
      ? describe(e.schema)
      : e.message.replace(/^Expected /, '').replace(/^Unexpected property$/, 'no such key');
    problems.push(`${key}: got ${show(e.value)}, expected ${expected}`);
    if (problems.length >= 10) break;
  }
  if (problems.length) throw new Error(`invalid config:\n  ${problems.join('\n  ')}`);
  return value as T;
}
