/**
 * Log lines for a person at a terminal: `12:03:04.512 INFO  vod  library scanned  files=3 ms=812`,
 * the level coloured, an error's stack under its line. Off a terminal the lines stay JSON.
 */
const COLOURS: Record<number, string> = { 10: '\x1b[90m', 20: '\x1b[36m', 30: '\x1b[32m', 40: '\x1b[33m', 50: '\x1b[31m', 60: '\x1b[35m' };
const LABELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO ', 40: 'WARN ', 50: 'ERROR', 60: 'FATAL' };
const DIM = '\x1b[2m';
const RESET = '\x1b[0m';
const SKIP = new Set(['level', 'time', 'msg', 'name', 'plugin', 'component', 'pid', 'hostname', 'err']);

function value(v: unknown): string {
  if (typeof v === 'string') return /^[^\s"=]+$/.test(v) ? v : JSON.stringify(v);
  return JSON.stringify(v) ?? String(v);
}

/** One JSON line from pino as one (or, with a stack, several) readable lines. */
export function prettyLine(line: string, colour: boolean): string {
  let o: Record<string, any>;
  try {
    o = JSON.parse(line);
  } catch {
    return line.endsWith('\n') ? line : line + '\n';
  }
  const level = Number(o.level);
  const paint = (code: string | undefined, text: string) => (colour && code ? code + text + RESET : text);
  const at = new Date(Number(o.time) || Date.now());
  const time = `${at.toTimeString().slice(0, 8)}.${String(at.getMilliseconds()).padStart(3, '0')}`;
  const source = o.plugin ?? o.component;
  const fields = Object.entries(o).filter(([k]) => !SKIP.has(k)).map(([k, v]) => `${k}=${value(v)}`).join(' ');
  const err = o.err && typeof o.err === 'object' ? o.err : undefined;
  let out = `${paint(DIM, time)} ${paint(COLOURS[level], LABELS[level] ?? String(level))} ${source ? paint(DIM, source) + ' ' : ''}${o.msg ?? ''}`;
  if (err?.message) out += `  ${paint(COLOURS[50], err.message)}`;
  if (fields) out += `  ${paint(DIM, fields)}`;
  if (err?.stack && level >= 50) out += '\n' + paint(DIM, String(err.stack).split('\n').slice(1).join('\n'));
  return out + '\n';
}

/** A pino destination writing readable lines to a terminal stream. */
export function prettyStream(stream: NodeJS.WriteStream): { write(line: string): void } {
  const colour = stream.hasColors?.() ?? false;
  return { write: (line) => { stream.write(prettyLine(line, colour)); } };
}
