import { Value } from '@sinclair/typebox/value';
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

/**
 * Applies the schema's defaults and checks the result. Returns the value, or
 * throws one Error whose lines each name the key, the value and what was expected.
 */
export function validateConfig<T>(schema: TSchema, input: unknown, prefix: string): T {
  const value = Value.Default(schema, structuredClone(input ?? {}));
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const e of Value.Errors(schema, value)) {
    const key = dotted(prefix, e.path);
    if (seen.has(key)) continue; // a union reports once per branch; the first says enough
    seen.add(key);
    const expected = e.message.replace(/^Expected /, '').replace(/^Unexpected property$/, 'no such key');
    problems.push(`${key}: got ${show(e.value)}, expected ${expected}`);
    if (problems.length >= 10) break;
  }
  if (problems.length) throw new Error(`invalid config:\n  ${problems.join('\n  ')}`);
  return value as T;
}
