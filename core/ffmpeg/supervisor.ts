/**
 * The one way Antenna spawns ffmpeg and ffprobe.
 *
 * - Every process leads its own process group (`detached: true`), so stop()
 *   can signal the whole group: SIGTERM first (ffmpeg finalises its output),
 *   SIGKILL after a grace period.
 * - Every live process is tracked: stopAll() stops them at shutdown, and one
 *   process-wide `exit` handler SIGKILLs any group still alive if the server
 *   exits abruptly (process.exit, uncaught exception).
 * - A server that is SIGKILLed runs no handler: each process is started through
 *   util-linux's `setpriv --pdeathsig KILL` (when it is installed), so the
 *   kernel kills it when the server dies. Without setpriv, the list of running
 *   children in `runDir` lets the next start kill what was left (leftovers.ts).
 * - Args and stderr are redacted before they are logged or kept: the caller's
 *   `secrets`, query values of api_key/key/token/password…, and `user:pass@`
 *   in URLs all become `***`.
 */
import { spawn as spawnChild, type ChildProcess } from 'node:child_process';
import { StringDecoder } from 'node:string_decoder';
import type { Readable, Writable } from 'node:stream';
import type {
  ExitInfo,
  FfmpegProcess,
  FfmpegService,
  Logger,
  ProbeResult,
  SpawnOptions,
} from '../../sdk/services.js';
import { spawnSync } from 'node:child_process';
import { describeSource, findOnPath, isExecutableFile, type BinarySource } from './resolve.js';
import { ChildList } from './leftovers.js';
import { makeRedactor, secretsInArgs } from '../redact.js';

const TAIL_MAX_LINES = 50;
const TAIL_MAX_BYTES = 8 * 1024;
/** A stderr "line" longer than this (no newline yet) is cut. */
const PARTIAL_MAX = 8 * 1024;
/** ffprobe JSON larger than this is refused. */
const PROBE_MAX_STDOUT = 32 * 1024 * 1024;
/** After the process exited, how long we wait for its stdio to close (a grandchild may hold it). */
const CLOSE_WAIT_MS = 500;

/* ------------------------------------------------------------------ stderr tail */

/** The last lines of a stream, bounded by line count and bytes; `\r`-terminated progress lines replace each other. */
export class StderrTail {
  private lines: { text: string; transient: boolean }[] = [];
  private bytes = 0;

  push(line: string, transient: boolean): void {
    if (line.length === 0 && transient) return;
    const last = this.lines[this.lines.length - 1];
    if (last && last.transient && transient) {
      this.lines.pop();
      this.bytes -= Buffer.byteLength(last.text) + 1;
    }
    this.lines.push({ text: line, transient });
    this.bytes += Buffer.byteLength(line) + 1;
    while (this.lines.length > TAIL_MAX_LINES || (this.bytes > TAIL_MAX_BYTES && this.lines.length > 1)) {
      const dropped = this.lines.shift()!;
      this.bytes -= Buffer.byteLength(dropped.text) + 1;
    }
  }

  toString(): string {
    const text = this.lines.map((l) => l.text).join('\n');
    // A single huge line: keep its end.
    return Buffer.byteLength(text) > TAIL_MAX_BYTES ? text.slice(-TAIL_MAX_BYTES) : text;
  }
}

/* ------------------------------------------------------------------ process-wide tracking */

interface Tracked {
  pid: number;
  alive: boolean;
}

interface GlobalState {
  live: Set<Tracked>;
  exitHandlerInstalled: boolean;
}

const GLOBAL_KEY = Symbol.for('antenna.ffmpeg.supervisor');

function globalState(): GlobalState {
  const g = globalThis as unknown as Record<symbol, GlobalState | undefined>;
  let state = g[GLOBAL_KEY];
  if (!state) {
    state = { live: new Set(), exitHandlerInstalled: false };
    g[GLOBAL_KEY] = state;
  }
  if (!state.exitHandlerInstalled) {
    state.exitHandlerInstalled = true;
    const live = state.live;
    process.on('exit', () => {
      for (const t of live) {
        if (t.alive) killGroup(t.pid, 'SIGKILL');
      }
    });
  }
  return state;
}

/** Signals a process group; false when it no longer exists. Never throws. */
function killGroup(pid: number, signal: NodeJS.Signals): boolean {
  if (!(pid > 1)) return false; // never kill(0) / kill(-1)
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}

function abortError(message: string, reason?: unknown): Error {
  const err = new Error(message, reason instanceof Error ? { cause: reason } : undefined);
  err.name = 'AbortError';
  return err;
}

/* ------------------------------------------------------------------ supervisor */

export interface SupervisorPaths {
  ffmpegPath: string;
  ffprobePath: string;
  /** Where they were found (from resolveBinaries()); reported by describe(). */
  source?: { ffmpeg: BinarySource; ffprobe: BinarySource };
}

export interface SupervisorOptions {
  /** Time between SIGTERM and SIGKILL in stop(). Default 3000 ms. */
  stopGraceMs?: number;
  /** Where the list of running children is kept for the next start to reap (leftovers.ts); none when undefined. */
  runDir?: string;
  /** Start children through `setpriv --pdeathsig KILL` when it is installed (default true). */
  parentDeathSignal?: boolean;
}

/**
 * util-linux's setpriv when it is installed and knows --pdeathsig (2.33 and later): the parent-death
 * signal it sets survives its exec of ffmpeg. Linux only; looked up once per process.
 */
let setprivPath: string | null | undefined;
export function findSetpriv(): string | undefined {
  if (setprivPath === undefined) {
    setprivPath = null;
    const found = process.platform === 'linux' ? findOnPath('setpriv', process.env.PATH ?? '/usr/bin:/bin') : undefined;
    if (found && spawnSync(found, ['--pdeathsig', 'KILL', '--', found, '--version'], { stdio: 'ignore', timeout: 5000 }).status === 0) setprivPath = found;
  }
  return setprivPath ?? undefined;
}

export interface InternalSpawnOptions extends SpawnOptions {
  /** Overrides the grace period of this process. */
  stopGraceMs?: number;
}

type Binary = 'ffmpeg' | 'ffprobe';

class SupervisedProcess implements FfmpegProcess {
  readonly pid: number;
  readonly stdout: Readable | null;
  readonly inputs: Writable[];
  readonly exited: Promise<ExitInfo>;
  private stopRequested = false;
  private killTimer: NodeJS.Timeout | undefined;
  private settled = false;
  private resolveExit!: (info: ExitInfo) => void;
  private readonly tracked: Tracked;

  constructor(
    private readonly child: ChildProcess,
    private readonly graceMs: number,
    private readonly tail: StderrTail,
    onSettled: (self: SupervisedProcess, info: ExitInfo) => void,
  ) {
    this.pid = child.pid ?? 0;
    this.stdout = child.stdout ?? null;
    // A pipe ffmpeg stops reading (it exited) fails writes with EPIPE: the exit is what matters.
    this.inputs = child.stdio.slice(3).filter((s): s is Writable => !!s && 'write' in s);
    for (const input of this.inputs) input.on('error', () => {});
    this.tracked = { pid: this.pid, alive: this.pid > 1 };
    this.exited = new Promise<ExitInfo>((resolve) => { this.resolveExit = resolve; });
    void this.exited.then((info) => {
      try { onSettled(this, info); } catch { /* logging must never break the exit path */ }
    });

    let exitCode: number | null = null;
    let exitSignal: NodeJS.Signals | null = null;
    let closeWait: NodeJS.Timeout | undefined;
    const finish = (extra?: string) => {
      if (this.settled) return;
      this.settled = true;
      if (closeWait) clearTimeout(closeWait);
      if (this.killTimer) clearTimeout(this.killTimer);
      this.tracked.alive = false;
      if (this.stopRequested) killGroup(this.pid, 'SIGKILL'); // sweep anything left in the group
      if (extra) this.tail.push(extra, false);
      this.resolveExit({ code: exitCode, signal: exitSignal, expected: this.stopRequested, stderrTail: this.tail.toString() });
    };
    child.once('exit', (code, signal) => {
      exitCode = code;
      exitSignal = signal;
      // stderr may still hold data: wait for 'close', but not forever (a grandchild may keep the pipe open).
      closeWait = setTimeout(() => finish(), CLOSE_WAIT_MS);
    });
    child.once('close', (code: number | null, signal: NodeJS.Signals | null) => {
      if (exitCode === null && exitSignal === null) { exitCode = code; exitSignal = signal; }
      finish();
    });
    child.once('error', (err) => {
      // Spawn failure (ENOENT, EACCES…): there is no process.
      if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) finish(`spawn error: ${err.message}`);
    });
  }

  get trackedEntry(): Tracked { return this.tracked; }
  get isAlive(): boolean { return !this.settled; }
  get wasStopRequested(): boolean { return this.stopRequested; }

  stop(): Promise<ExitInfo> {
    if (this.settled || this.stopRequested) return this.exited;
    this.stopRequested = true;
    if (!killGroup(this.pid, 'SIGTERM')) return this.exited;
    this.killTimer = setTimeout(() => killGroup(this.pid, 'SIGKILL'), this.graceMs);
    return this.exited;
  }
}

export class FfmpegSupervisor implements FfmpegService {
  readonly ffmpegPath: string;
  readonly ffprobePath: string;
  /** Where each binary was found ('config' | 'path' | 'npm'), when known. */
  readonly sources: { ffmpeg: BinarySource; ffprobe: BinarySource } | undefined;
  private readonly graceMs: number;
  private readonly live = new Set<SupervisedProcess>();
  private readonly global = globalState();
  private versionPromise: Promise<string> | undefined;
  /** setpriv, when children are started through it. */
  private readonly launcher: string | undefined;
  private readonly children: ChildList | undefined;

  constructor(private readonly logger: Logger, paths: SupervisorPaths, options: SupervisorOptions = {}) {
    this.ffmpegPath = paths.ffmpegPath;
    this.ffprobePath = paths.ffprobePath;
    this.sources = paths.source;
    this.graceMs = options.stopGraceMs ?? 3000;
    this.launcher = options.parentDeathSignal === false ? undefined : findSetpriv();
    this.children = options.runDir ? new ChildList(options.runDir, logger) : undefined;
  }

  /** Whether children die with this process even when it is SIGKILLed. */
  get diesWithParent(): boolean { return this.launcher !== undefined; }

  /** Number of processes started by this supervisor that are still running. */
  get liveCount(): number { return this.live.size; }

  /** Pids of the processes still running (for diagnostics and tests). */
  livePids(): number[] { return [...this.live].map((p) => p.pid); }

  spawn(args: string[], options: SpawnOptions = {}): FfmpegProcess {
    const full = [...args];
    if (!full.includes('-nostdin')) full.unshift('-nostdin');
    if (!full.includes('-hide_banner')) full.unshift('-hide_banner');
    return this.spawnBinary('ffmpeg', full, options);
  }

  async run(args: string[], options: SpawnOptions = {}): Promise<void> {
    const label = options.label ?? 'ffmpeg';
    if (options.signal?.aborted) throw abortError(`${label}: aborted`, options.signal.reason);
    const proc = this.spawn(args, options);
    const info = await proc.exited;
    if (options.signal?.aborted) throw abortError(`${label}: aborted`, options.signal.reason);
    if (info.code === 0) return;
    throw new Error(`${label}: ffmpeg ${exitDescription(info)}${info.stderrTail ? `:\n${info.stderrTail}` : ''}`);
  }

  async probe(
    input: string,
    options: { signal?: AbortSignal; timeoutMs?: number; secrets?: string[]; label?: string } = {},
  ): Promise<ProbeResult> {
    const timeoutMs = options.timeoutMs ?? 30_000;
    const label = options.label ?? 'ffprobe';
    if (options.signal?.aborted) throw abortError(`${label}: aborted`, options.signal.reason);
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => { timedOut = true; controller.abort(); }, timeoutMs);
    const onAbort = () => controller.abort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const args = ['-hide_banner', '-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', input];
      const proc = this.spawnBinary('ffprobe', args, {
        signal: controller.signal,
        stdout: 'pipe',
        secrets: options.secrets,
        label,
      });
      const chunks: Buffer[] = [];
      let size = 0;
      let tooBig = false;
      proc.stdout?.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > PROBE_MAX_STDOUT) {
          if (!tooBig) { tooBig = true; void proc.stop(); }
          return;
        }
        chunks.push(chunk);
      });
      const info = await proc.exited;
      if (timedOut) throw new Error(`${label}: timed out after ${timeoutMs} ms${info.stderrTail ? `:\n${info.stderrTail}` : ''}`);
      if (options.signal?.aborted) throw abortError(`${label}: aborted`, options.signal.reason);
      if (tooBig) throw new Error(`${label}: output larger than ${PROBE_MAX_STDOUT} bytes`);
      if (info.code !== 0) throw new Error(`${label}: ffprobe ${exitDescription(info)}${info.stderrTail ? `:\n${info.stderrTail}` : ''}`);
      let parsed: Partial<ProbeResult>;
      try {
        parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Partial<ProbeResult>;
      } catch (err) {
        throw new Error(`${label}: ffprobe printed invalid JSON (${(err as Error).message})`);
      }
      return { format: parsed.format ?? {}, streams: Array.isArray(parsed.streams) ? parsed.streams : [] };
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  /** First line of `ffmpeg -version`, e.g. `ffmpeg version 4.1 Copyright…` (cached once it succeeded). */
  version(): Promise<string> {
    if (!this.versionPromise) {
      this.versionPromise = this.firstLineOf('ffmpeg', ['-version']).catch((err: unknown) => {
        this.versionPromise = undefined;
        throw err;
      });
    }
    return this.versionPromise;
  }

  /**
   * One line for the startup log / `antenna plugins`, e.g.
   * `ffmpeg N-47683-g0e8eb07980-static from npm package (/…/ffmpeg); ffprobe from npm package (/…/ffprobe)`.
   */
  async describe(): Promise<string> {
    let ver = 'unknown version';
    try {
      const line = await this.version();
      const m = /^ffmpeg version (\S+)/.exec(line);
      ver = m ? m[1]! : line;
    } catch (err) {
      ver = `(not runnable: ${(err as Error).message.split('\n')[0]})`;
    }
    const from = (b: Binary) => {
      const src = this.sources?.[b];
      const where = b === 'ffmpeg' ? this.ffmpegPath : this.ffprobePath;
      return src ? `from ${describeSource(src)} (${where})` : `at ${where}`;
    };
    return `ffmpeg ${ver} ${from('ffmpeg')}; ffprobe ${from('ffprobe')}`;
  }

  /** Stops every process this supervisor started (shutdown). */
  async stopAll(): Promise<void> {
    await Promise.all([...this.live].map((p) => p.stop()));
  }

  /* -------------------------------------------------------------- internals */

  private async firstLineOf(binary: Binary, args: string[]): Promise<string> {
    const proc = this.spawnBinary(binary, args, { stdout: 'pipe', label: `${binary}-version` });
    let out = '';
    proc.stdout?.setEncoding('utf8');
    proc.stdout?.on('data', (s: string) => { if (out.length < 64 * 1024) out += s; });
    const info = await proc.exited;
    if (info.code !== 0) throw new Error(`${binary} -version: ${exitDescription(info)}${info.stderrTail ? `:\n${info.stderrTail}` : ''}`);
    const first = out.split(/\r?\n/, 1)[0]?.trim();
    if (!first) throw new Error(`${binary} -version printed nothing`);
    return first;
  }

  private spawnBinary(binary: Binary, args: string[], options: InternalSpawnOptions): FfmpegProcess {
    const file = binary === 'ffmpeg' ? this.ffmpegPath : this.ffprobePath;
    const label = options.label ?? binary;
    const redact = makeRedactor([...(options.secrets ?? []), ...secretsInArgs(args)]);
    const redactedArgs = args.map(redact);
    // Internal helpers (probe, version) are frequent: they log at debug; ffmpeg spawns at info.
    const routine = binary === 'ffprobe' || label.endsWith('-version');
    const log = this.logger;
    const startedAt = Date.now();

    // A missing binary is spawned as is, so that it fails as ENOENT rather than as setpriv's exit code.
    const [command, argv] = this.launcher && isExecutableFile(file) ? [this.launcher, ['--pdeathsig', 'KILL', '--', file, ...args]] : [file, args];
    const child = spawnChild(command, argv, {
      cwd: options.cwd,
      detached: true,
      stdio: ['ignore', options.stdout === 'pipe' ? 'pipe' : 'ignore', 'pipe', ...Array.from({ length: options.inputPipes ?? 0 }, () => 'pipe' as const)],
      windowsHide: true,
    });

    const tail = new StderrTail();
    const onLine = options.onStderrLine;
    if (child.stderr) {
      const decoder = new StringDecoder('utf8');
      let partial = '';
      const emit = (raw: string, transient: boolean) => {
        const line = redact(raw);
        tail.push(line, transient);
        if (onLine && line.length > 0) {
          try { onLine(line); } catch (err) { log.warn({ label, err: (err as Error).message }, 'onStderrLine threw'); }
        }
      };
      const feed = (text: string) => {
        partial += text;
        let idx: number;
        while ((idx = partial.search(/[\r\n]/)) >= 0) {
          const ch = partial[idx];
          const line = partial.slice(0, idx);
          // "\r\n" is a plain newline; a lone "\r" ends a progress line that the next one overwrites.
          if (ch === '\r' && partial[idx + 1] === '\n') {
            partial = partial.slice(idx + 2);
            emit(line, false);
          } else if (ch === '\r' && idx === partial.length - 1) {
            // Can't tell "\r" from "\r\n" yet: wait for more data.
            break;
          } else {
            partial = partial.slice(idx + 1);
            emit(line, ch === '\r');
          }
        }
        if (partial.length > PARTIAL_MAX) {
          emit(partial.slice(0, PARTIAL_MAX), false);
          partial = '';
        }
      };
      child.stderr.on('data', (chunk: Buffer) => feed(decoder.write(chunk)));
      child.stderr.on('end', () => {
        feed(decoder.end());
        if (partial.endsWith('\r')) partial = partial.slice(0, -1);
        if (partial.length > 0) emit(partial, false);
        partial = '';
      });
      child.stderr.on('error', () => { /* the process exit is what matters */ });
    }

    const proc = new SupervisedProcess(child, options.stopGraceMs ?? this.graceMs, tail, (self, info) => {
      this.live.delete(self);
      this.global.live.delete(self.trackedEntry);
      this.children?.remove(self.pid);
      if (options.signal) options.signal.removeEventListener('abort', onAbort);
      const fields = {
        label,
        childPid: self.pid,
        code: info.code,
        signal: info.signal,
        expected: info.expected,
        durationMs: Date.now() - startedAt,
      };
      if (!info.expected && info.code !== 0) {
        log.warn({ ...fields, stderrTail: info.stderrTail }, `${binary} exited unexpectedly`);
      } else if (routine) {
        log.debug(fields, `${binary} exited`);
      } else {
        log.info(fields, `${binary} exited`);
      }
    });

    if (proc.isAlive && proc.pid > 1) {
      this.live.add(proc);
      this.global.live.add(proc.trackedEntry);
      this.children?.add(proc.pid);
    }
    const spawnFields = { label, childPid: proc.pid || undefined, binary, args: redactedArgs };
    if (routine) log.debug(spawnFields, `${binary} spawned`);
    else log.info(spawnFields, `${binary} spawned`);

    const onAbort = () => { void proc.stop(); };
    if (options.signal) {
      if (options.signal.aborted) void proc.stop();
      else options.signal.addEventListener('abort', onAbort, { once: true });
    }
    return proc;
  }
}

function exitDescription(info: ExitInfo): string {
  if (info.signal) return `was killed by ${info.signal}`;
  if (info.code === null) return 'could not be started';
  return `exited with code ${info.code}`;
}
