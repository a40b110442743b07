/**
 * ffmpeg processes a server left behind when it could not stop them (it was
 * SIGKILLed, or the machine ran out of memory) and nothing killed them with it
 * (no `setpriv` for a parent-death signal).
 *
 * Each process that spawns ffmpeg lists its running children, with their start
 * times (so that a reused pid is never taken for one), in
 * `<dataDir>/run/ffmpeg-<pid>-<start>.pids`. At start-up, the lists of
 * processes that no longer run are read, whatever they name that still runs is
 * killed with its process group, and the lists are removed. Linux only (/proc).
 */
import { readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../../sdk/services.js';

/** A process's start time (clock ticks since boot, /proc/<pid>/stat field 22), or undefined when it does not run. */
export function startTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[0] === 'Z' ? undefined : fields[19];
  } catch {
    return undefined;
  }
}

const FILE = /^ffmpeg-(\d+)-(\d+)\.pids$/;

/** This process's list of running children; written after each change, removed when empty. */
export class ChildList {
  private readonly children = new Map<number, string>();
  private readonly file: string | undefined;
  private writing: Promise<void> | undefined;
  private dirty = false;

  constructor(private readonly dir: string, private readonly log: Logger) {
    const own = startTime(process.pid);
    this.file = own ? path.join(dir, `ffmpeg-${process.pid}-${own}.pids`) : undefined;
  }

  add(pid: number): void {
    const started = this.file && startTime(pid);
    if (!started) return;
    this.children.set(pid, started);
    this.save();
  }

  remove(pid: number): void {
    if (this.children.delete(pid)) this.save();
  }

  /** Writes are chained, so the file always ends up with the latest list. */
  private save(): void {
    this.dirty = true;
    if (this.writing) return;
    this.writing = (async () => {
      while (this.dirty) {
        this.dirty = false;
        const text = [...this.children].map(([pid, started]) => `${pid} ${started}\n`).join('');
        try {
          if (text) {
            await mkdir(this.dir, { recursive: true, mode: 0o700 });
            await writeFile(this.file!, text, { mode: 0o600 });
          } else {
            await rm(this.file!, { force: true });
          }
        } catch (err) {
          this.log.warn({ err: (err as Error).message, file: this.file }, 'could not record the ffmpeg processes running');
        }
      }
      this.writing = undefined;
    })();
  }
}

/** Kills what the lists of processes no longer running name and still runs; returns how many were killed. */
export async function reapLeftovers(dir: string, log: Logger): Promise<number> {
  const names = await readdir(dir).catch(() => [] as string[]);
  let killed = 0;
  for (const name of names) {
    const m = FILE.exec(name);
    if (!m || startTime(Number(m[1])) === m[2]) continue; // not a list, or its owner still runs
    const text = await readFile(path.join(dir, name), 'utf8').catch(() => '');
    for (const line of text.split('\n')) {
      const [pid, started] = line.split(' ').map((s) => s.trim());
      if (!pid || !/^\d+$/.test(pid) || Number(pid) <= 1 || startTime(Number(pid)) !== started) continue;
      try {
        process.kill(-Number(pid), 'SIGKILL'); // each ffmpeg leads its own process group
        killed++;
      } catch { /* gone meanwhile */ }
    }
    await rm(path.join(dir, name), { force: true });
  }
  if (killed) log.warn({ event: 'ffmpeg_leftovers', killed }, `killed ${killed} ffmpeg process${killed === 1 ? '' : 'es'} a previous server left running`);
  return killed;
}
