import pino, { type Logger } from 'pino';
import { LEVELS, LogBuffer } from './log-buffer.js';
import { prettyStream } from './pretty.js';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface LoggerOptions {
  /** What goes to stdout (`logging.level`). */
  level: LogLevel;
  /** `pretty` on a terminal, `json` otherwise (the default decides by stdout), `none` for no output (tests). */
  output?: 'pretty' | 'json' | 'none';
  stdout?: NodeJS.WriteStream;
}

/**
 * The server's logger: JSON lines on stdout (readable ones on a terminal) at
 * the configured level, and every line from `info` up (more when the level
 * asks for more) into the buffer the admin's log screen reads.
 */
export function createLogger(options: LoggerOptions): { logger: Logger; buffer: LogBuffer } {
  const stdout = options.stdout ?? process.stdout;
  const output = options.output ?? (stdout.isTTY ? 'pretty' : 'json');
  const buffer = new LogBuffer();
  const configured = options.level === 'silent' ? Infinity : LEVELS[options.level]!;
  const level = (configured < LEVELS.info! ? options.level : 'info') as pino.Level;
  const streams: pino.StreamEntry[] = [{ level, stream: buffer }];
  if (output !== 'none' && options.level !== 'silent') {
    streams.push({ level: options.level as pino.Level, stream: output === 'pretty' ? prettyStream(stdout) : stdout });
  }
  return { logger: pino({ level, base: { name: 'antenna' } }, pino.multistream(streams)), buffer };
}
