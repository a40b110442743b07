/**
 * Where log lines go: JSON lines off a terminal, readable ones on it (colour
 * when it has colour), and the ring of recent lines the admin's log screen
 * reads: bounded, newest first, filtered by level and source, redacted.
 */
import t from 'tap';
import { Writable } from 'node:stream';
import { createLogger } from '../../core/logging/logger.js';
import { LogBuffer } from '../../core/logging/log-buffer.js';
import { prettyLine } from '../../core/logging/pretty.js';

/** A stream that says whether it is a terminal, collecting what is written. */
function stream(tty: boolean) {
  const lines: string[] = [];
  const s = new Writable({ write(chunk, _e, cb) { lines.push(String(chunk)); cb(); } }) as unknown as NodeJS.WriteStream;
  Object.assign(s, { isTTY: tty, hasColors: () => tty });
  return { s, text: () => lines.join('') };
}

t.test('JSON off a terminal, readable lines on one', async (t) => {
  const file = stream(false);
  const json = createLogger({ level: 'info', stdout: file.s });
  json.logger.child({ plugin: 'vod' }).info({ files: 3 }, 'library scanned');
  const line = JSON.parse(file.text().trim());
  t.match(line, { level: 30, plugin: 'vod', files: 3, msg: 'library scanned', name: 'antenna' });

  const tty = stream(true);
  const pretty = createLogger({ level: 'info', stdout: tty.s });
  pretty.logger.child({ plugin: 'vod' }).warn({ files: 3, path: '/media/a b' }, 'slow scan');
  pretty.logger.error({ err: new Error('disk gone') }, 'scan failed');
  const text = tty.text().replace(/\x1b\[[0-9;]*m/g, '');
  t.match(text, /^\d\d:\d\d:\d\d\.\d{3} WARN  vod slow scan {2}files=3 path="\/media\/a b"\n/);
  t.match(text, /\d\d:\d\d:\d\d\.\d{3} ERROR scan failed {2}disk gone\n\s+at /, 'an error with its stack');
  t.ok(tty.text().includes('\x1b[33m'), 'in colour');
  t.equal(prettyLine('not json', false), 'not json\n', 'anything else passes through');

  const quiet = stream(false);
  const warnOnly = createLogger({ level: 'warn', stdout: quiet.s });
  warnOnly.logger.info('routine');
  warnOnly.logger.warn('odd');
  t.equal(quiet.text().split('\n').filter(Boolean).length, 1, 'stdout keeps the configured level');
  t.same(warnOnly.buffer.query().entries.map((e) => e.msg), ['odd', 'routine'], 'the buffer keeps info and up');
  const silent = createLogger({ level: 'silent', output: 'json', stdout: quiet.s });
  silent.logger.info('kept');
  t.same(silent.buffer.query().entries.map((e) => e.msg), ['kept'], 'silent: nothing on stdout, the buffer still fills');
});

t.test('the buffer: bounded, newest first, filtered, redacted', async (t) => {
  const buffer = new LogBuffer(5);
  const line = (level: number, msg: string, extra: Record<string, unknown> = {}) => buffer.write(JSON.stringify({ level, time: Date.now(), msg, ...extra }) + '\n');
  for (let i = 1; i <= 7; i++) line(i % 2 ? 30 : 40, `line ${i}`, { plugin: i % 3 ? 'vod' : undefined, component: 'jobs' });
  t.same(buffer.query().entries.map((e) => e.msg), ['line 7', 'line 6', 'line 5', 'line 4', 'line 3'], 'the last five, newest first');
  t.same(buffer.query({ level: 'warn' }).entries.map((e) => e.msg), ['line 6', 'line 4']);
  t.same(buffer.query({ source: 'jobs' }).entries.map((e) => e.msg), ['line 6', 'line 3']);
  t.same(buffer.query({ limit: 2 }).entries.map((e) => e.msg), ['line 7', 'line 6']);
  t.same(buffer.query().sources, ['jobs', 'vod']);
  line(50, 'fetch failed', { plugin: 'm3u-tuner', url: 'http://me:hunter2@example.com/tv.m3u?token=abc' });
  const [entry] = buffer.query().entries;
  t.match(entry, { level: 'error', source: 'm3u-tuner', msg: 'fetch failed', fields: { url: 'http://***@example.com/tv.m3u?token=***' } });
  buffer.write('not json\n');
  t.equal(buffer.query().entries.length, 5, 'what is not a log line is left out');
});
