import { Type, type TString } from '@sinclair/typebox';

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const PATTERN = '^\\s*\\d+(\\.\\d+)?\\s*(ms|s|m|h|d)\\s*$';

/** Config value like `90s`, `12h`, `1.5h`, `250ms`. */
export function Duration(options: { default?: string; description?: string } = {}): TString {
  return Type.String({ pattern: PATTERN, description: options.description ?? 'duration such as 30s, 15m, 12h, 1d', ...options });
}

/** `12h` → 43 200 000. Throws on anything that is not a duration. */
export function parseDuration(value: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/.exec(value);
  if (!m) throw new Error(`not a duration: ${JSON.stringify(value)} (expected e.g. 30s, 15m, 12h)`);
  return Math.round(Number(m[1]) * UNITS[m[2]]);
}
