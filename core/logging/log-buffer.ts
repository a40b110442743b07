import { redact } from '../redact.js';

export const LEVELS: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 };
const NAMES = Object.fromEntries(Object.entries(LEVELS).map(([name, n]) => [n, name]));

export interface LogEntry {
  /** ISO time. */
  time: string;
  level: string;
  /** The plugin, else the core component (http, jobs, ffmpeg…), that wrote it. */
  source: string | null;
  msg: string;
  /** The line's other fields. */
  fields: Record<string, unknown>;
}

interface Stored { level: number; source: string | null; line: string }

/**
 * The most recent log lines, for the admin's log screen: a ring the logger
 * writes every line to, each redacted as it is stored (the same rules as for
 * the lines on stdout, applied again in case a message carried a URL).
 */
export class LogBuffer {
  private readonly lines: Stored[] = [];
  private next = 0;

  constructor(private readonly capacity = 2000) {}

  /** pino's destination interface: one JSON line per call. */
  write(line: string): void {
    let parsed: { level?: number; plugin?: string; component?: string };
    try {
      parsed = JSON.parse(line);
    } catch {
      return;
    }
    const stored: Stored = { level: Number(parsed.level) || 30, source: parsed.plugin ?? parsed.component ?? null, line: redact(line.trimEnd()) };
    if (this.lines.length < this.capacity) this.lines.push(stored);
    else this.lines[this.next] = stored;
    this.next = (this.next + 1) % this.capacity;
  }

  /** Newest first: lines at `level` or above, from `source` when given. */
  query(options: { level?: string; source?: string; limit?: number } = {}): { entries: LogEntry[]; sources: string[] } {
    const min = LEVELS[options.level ?? 'trace'] ?? 10;
    const limit = options.limit ?? 200;
    const ordered = this.lines.length < this.capacity ? this.lines : [...this.lines.slice(this.next), ...this.lines.slice(0, this.next)];
    const sources = new Set<string>();
    const entries: LogEntry[] = [];
    for (let i = ordered.length - 1; i >= 0; i--) {
      const s = ordered[i]!;
      if (s.source) sources.add(s.source);
      if (entries.length >= limit || s.level < min || (options.source && s.source !== options.source)) continue;
      const { level, time, msg, plugin, component, name, ...fields } = JSON.parse(s.line) as Record<string, unknown>;
      void plugin; void component; void name;
      entries.push({ time: new Date(Number(time)).toISOString(), level: NAMES[Number(level)] ?? String(level), source: s.source, msg: String(msg ?? ''), fields });
    }
    return { entries, sources: [...sources].sort() };
  }
}
