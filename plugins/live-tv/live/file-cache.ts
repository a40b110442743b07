import { readFile } from 'node:fs/promises';

/**
 * The files of running sessions that every viewer fetches (segments, media
 * playlists), read from disk once and then served from memory: 50 viewers of a
 * channel cost one read of each segment instead of 50 streamed reads (a 64 KB
 * read stream costs ~2.5× the CPU of sending a Buffer). Segments never change
 * once ffmpeg has renamed them into place; playlists are replaced every
 * segment, so callers keep them only for a moment (maxAgeMs).
 * Least recently used entries go beyond maxBytes, and any unused for idleMs.
 */
export class FileCache {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;
  private sweeper: NodeJS.Timeout | undefined;

  constructor(private readonly maxBytes = 64 * 2 ** 20, private readonly idleMs = 30_000) {}

  /** The file's content, or undefined when it does not exist (yet: never remembered). */
  get(file: string, maxAgeMs = Number.POSITIVE_INFINITY): Promise<Buffer | undefined> {
    const now = Date.now();
    const hit = this.entries.get(file);
    if (hit && now - hit.readAt <= maxAgeMs) {
      hit.usedAt = now;
      this.entries.delete(file);
      this.entries.set(file, hit); // Map order: least recently used first
      return hit.data;
    }
    if (hit) this.remove(file);
    const entry: Entry = { readAt: now, usedAt: now, size: 0, data: Promise.resolve(undefined) };
    entry.data = readFile(file).then(
      (data) => {
        if (this.entries.get(file) === entry) {
          entry.size = data.length;
          this.bytes += data.length;
          this.trim();
        }
        return data;
      },
      () => {
        if (this.entries.get(file) === entry) this.entries.delete(file);
        return undefined;
      },
    );
    this.entries.set(file, entry);
    this.sweeper ??= setInterval(() => this.trim(), this.idleMs).unref();
    return entry.data;
  }

  private remove(file: string): void {
    const entry = this.entries.get(file);
    if (!entry) return;
    this.entries.delete(file);
    this.bytes -= entry.size;
  }

  private trim(): void {
    const idleSince = Date.now() - this.idleMs;
    for (const [file, entry] of this.entries) {
      if (this.bytes <= this.maxBytes && entry.usedAt > idleSince) break;
      this.remove(file);
    }
    if (!this.entries.size && this.sweeper) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }
}

interface Entry { readAt: number; usedAt: number; size: number; data: Promise<Buffer | undefined> }
