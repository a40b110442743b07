/**
 * The library scanner: walks a library's folders, names what it finds
 * (naming.ts), ffprobes new and changed files with bounded concurrency and
 * keeps vod_items / vod_files in step with the disk.
 *
 * - One scan per library at a time: a scan is the job `vod:scan:<id>`, so
 *   callers (start-up, the schedule, the CLI) share a running scan and
 *   GET /api/jobs shows its progress.
 * - Incremental: a file whose size and mtime are unchanged is not probed again
 *   (an unreadable one neither, unless it changes; a probe that timed out is
 *   retried next scan).
 * - A missing or unreadable folder (an unmounted disk) leaves the rows under it
 *   untouched: a scan never empties a library because it could not see it.
 * - Writes happen in batches, each in one transaction (files with their items),
 *   and removals at the end in one more; a crash mid-scan leaves a consistent
 *   library, and the next scan skips what was already probed.
 * - Then the items whose files, names or metadata files changed get their
 *   metadata read (metadata/refresh.ts), from the NFO and image files the walk
 *   noted beside the media.
 */
import { createHash } from 'node:crypto';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Database, FfmpegService, JobContext, JobManager, Logger } from 'antenna/sdk';
import { mediaInfoFromProbe, type Library, type MediaFile } from './model.js';
import { isSidecar, type SidecarIndex } from './metadata/local-provider.js';
import type { MetadataRefresher } from './metadata/refresh.js';
import { isExtraFile, isExtrasFolder, isMediaFile, parseEpisode, parseMovie, foldTitle, sortTitle } from './naming.js';
import type { FileRow, ItemRow, VodStore } from './store.js';
import { pool } from './pool.js';

export interface ScanSummary {
  libraryId: number;
  library: string;
  /** Media files in the library after the scan. */
  files: number;
  added: number;
  changed: number;
  removed: number;
  /** Files ffprobe could not read (kept, not playable). */
  unreadable: number;
  /** Items (movies, or series + seasons + episodes) after the scan. */
  items: number;
  /** ffprobe runs during this scan. */
  probed: number;
  /** Items whose metadata was read (new or changed). */
  metadata: number;
  ms: number;
}

type Progress = (fraction: number, message?: string) => void;

/** What callers of one scan job share: its result, and everyone who wants its progress. */
interface ScanJobData {
  summary?: ScanSummary;
  listeners: Set<Progress>;
}

/** A media file on disk. */
interface Found { path: string; rel: string; size: number; mtimeMs: number }

/** The item a file belongs to, with its ancestors (series, season), outermost first. */
type Chain = Omit<ItemRow, 'added_at' | 'library_id'>[];

const SCAN_JOB_KIND = 'vod.scan';
const PROBE_TIMEOUT_MS = 60_000;
/** File rows per write transaction while probing. */
const BATCH = 200;
/** Errors that say nothing about the file: retried at the next scan even if it did not change. */
const TRANSIENT = 'transient: ';
const ERROR_MAX = 500;

/** Opaque, stable ids: sha1 of library + natural key, 16 base64url characters (96 bits). */
export function stableId(libraryId: number, key: string): string {
  return createHash('sha1').update(`${libraryId}\0${key}`).digest('base64url').slice(0, 16);
}

/**
 * The items a file belongs to, from its path relative to the library folder;
 * null when a shows library's file names no episode.
 */
export function itemChain(library: Library, rel: string): { chain: Chain; label: string | null } | null {
  if (library.type === 'movies') {
    const m = parseMovie(rel);
    const key = `movie\0${foldTitle(m.title)}\0${m.year ?? ''}`;
    return {
      chain: [{ id: stableId(library.id, key), type: 'movie', parent_id: null, title: m.title, sort_title: sortTitle(m.title), year: m.year, season: null, episode: null }],
      label: m.label,
    };
  }
  const e = parseEpisode(rel);
  if (!e) return null;
  const seriesKey = `series\0${foldTitle(e.show)}\0${e.showYear ?? ''}`;
  const seasonKey = `${seriesKey}\0season\0${e.season}`;
  const episodeKey = `${seasonKey}\0episode\0${e.episode}`;
  const seriesId = stableId(library.id, seriesKey);
  const seasonId = stableId(library.id, seasonKey);
  const seasonTitle = e.season === 0 ? 'Specials' : `Season ${e.season}`;
  const episodeTitle = e.title ?? `Episode ${e.episode}`;
  return {
    chain: [
      { id: seriesId, type: 'series', parent_id: null, title: e.show, sort_title: sortTitle(e.show), year: e.showYear, season: null, episode: null },
      { id: seasonId, type: 'season', parent_id: seriesId, title: seasonTitle, sort_title: sortTitle(seasonTitle), year: null, season: e.season, episode: null },
      { id: stableId(library.id, episodeKey), type: 'episode', parent_id: seasonId, title: episodeTitle, sort_title: sortTitle(episodeTitle), year: null, season: e.season, episode: e.episode },
    ],
    label: e.label,
  };
}

/** How a library's last scan in this process ended. */
export type LastScan = { at: number } & ({ ok: true; summary: ScanSummary } | { ok: false; error: string });

export class LibraryScanner {
  private stopping = false;
  private readonly active = new Set<string>();
  /** By library id. */
  readonly lastScans = new Map<number, LastScan>();

  constructor(
    private readonly knex: Database,
    private readonly store: VodStore,
    private readonly ffmpeg: FfmpegService,
    private readonly jobs: JobManager,
    private readonly logger: Logger,
    private readonly now: () => number,
    /** Read at the start of each scan: a change applies from the next one. */
    readonly options: { concurrency: number },
    /** Reads the items' metadata after each scan (none: titles and years come from the names alone). */
    private readonly metadata?: MetadataRefresher,
  ) {}

  /** One scan per library at a time: run it as a job `vod:scan:<libraryId>` (jobs.ensure) so concurrent callers share it and GET /api/jobs shows progress. */
  async scan(library: Library, onProgress?: Progress): Promise<ScanSummary> {
    if (this.stopping) throw new Error('scanner stopped');
    const key = `vod:scan:${library.id}`;
    const job = this.jobs.ensure<ScanJobData>(key, () => ({
      kind: SCAN_JOB_KIND,
      data: { listeners: new Set() },
      run: (ctx) => this.run(library, ctx),
    }));
    this.active.add(key);
    if (onProgress) job.data.listeners.add(onProgress);
    try {
      const state = await job.done;
      if (state === 'completed' && job.data.summary) {
        this.lastScans.set(library.id, { at: this.now(), ok: true, summary: job.data.summary });
        return job.data.summary;
      }
      const error = state === 'failed' ? `scan of library ${library.id} failed: ${job.error}` : `scan of library ${library.id} ${state}`;
      if (state === 'failed') this.lastScans.set(library.id, { at: this.now(), ok: false, error });
      throw new Error(error);
    } finally {
      if (onProgress) job.data.listeners.delete(onProgress);
      if (!this.jobs.get(key)) this.active.delete(key);
    }
  }

  /** Every library, one after the other (each scan already runs `concurrency` probes). A failed library is logged and left out. */
  async scanAll(onProgress?: (label: string, fraction: number, message?: string) => void): Promise<ScanSummary[]> {
    const out: ScanSummary[] = [];
    // Libraries other plugins provide (recordings) have no folders to scan.
    for (const library of this.store.libraries().filter((l) => l.type !== 'recordings')) {
      if (this.stopping) break;
      try {
        out.push(await this.scan(library, onProgress && ((f, m) => onProgress(library.name, f, m))));
      } catch (err) {
        if (!this.stopping) this.logger.error({ err, libraryId: library.id }, 'library scan failed');
      }
    }
    return out;
  }

  /** Stop running scans (shutdown). */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all([...this.active].map((key) => this.jobs.get(key)?.stop('shutdown')));
  }

  private async run(library: Library, ctx: JobContext<ScanJobData>): Promise<void> {
    const started = performance.now();
    const progress: Progress = (fraction, message) => {
      ctx.progress(fraction, message);
      for (const listener of ctx.data.listeners) listener(fraction, message);
    };
    progress(0, 'reading folders');
    const { found, unavailable, sidecars } = await this.walkLibrary(library, ctx.signal);
    if (ctx.signal.aborted) return;
    const existing = await this.store.filesOfLibrary(library.id);
    const existingItems = await this.store.itemRowsOfLibrary(library.id);
    const now = this.now();

    // Plan: what each found file is, and whether it needs ffprobe.
    const toProbe: { f: Found; id: string; chain: Chain; label: string | null; old?: MediaFile }[] = [];
    const toRelabel: FileRow[] = [];
    /** Item chains of the readable files, by file path. */
    const readable = new Map<string, Chain>();
    const seen = new Set<string>();
    let added = 0;
    let changed = 0;
    let unreadable = 0;
    for (const f of found) {
      const named = itemChain(library, f.rel);
      if (!named) {
        this.logger.debug({ libraryId: library.id, path: f.path }, 'no season/episode in the name; file skipped');
        continue;
      }
      seen.add(f.path);
      const id = stableId(library.id, f.path);
      const leaf = named.chain[named.chain.length - 1];
      const old = existing.get(f.path);
      if (!old) {
        added++;
        toProbe.push({ f, id, ...named });
      } else if (old.size !== f.size || old.mtimeMs !== f.mtimeMs || old.error?.startsWith(TRANSIENT)) {
        changed++;
        toProbe.push({ f, id, ...named, old });
      } else {
        if (old.error) unreadable++;
        else readable.set(f.path, named.chain);
        // Same file, new name rules or a moved folder: keep what ffprobe said, re-home it.
        if (old.itemId !== leaf.id || old.label !== named.label) {
          toRelabel.push(fileRow(library.id, old.id, leaf.id, f, named.label, old.info ? JSON.stringify(old.info) : null, old.error, now));
        }
      }
    }

    // Probe, writing results in batches (each batch: its files and their items, in one transaction).
    let pending: FileRow[] = [];
    let pendingChains: Chain[] = [];
    const flush = async () => {
      if (!pending.length) return;
      const rows = pending;
      const items = itemRows(library.id, pendingChains, existingItems, now);
      pending = [];
      pendingChains = [];
      await this.store.transaction(async (trx) => {
        await this.store.saveFiles(trx, rows as Required<FileRow>[]);
        await this.store.saveItems(trx, items);
      });
      for (const item of items) if (!existingItems.has(item.id)) existingItems.set(item.id, item);
    };
    let probed = 0;
    let done = 0;
    const total = toProbe.length;
    progress(0.05, total ? `probing 0/${total}` : 'saving');
    await pool(toProbe, this.options.concurrency, ctx.signal, async (p) => {
      const result = await this.probe(p.f.path, ctx.signal);
      if (ctx.signal.aborted) return;
      probed++;
      if (result.error) {
        unreadable++;
        if (p.old?.error !== result.error) this.logger.warn({ libraryId: library.id, path: p.f.path, error: result.error }, 'unreadable media file');
      } else {
        readable.set(p.f.path, p.chain);
        pendingChains.push(p.chain);
      }
      pending.push(fileRow(library.id, p.id, p.chain[p.chain.length - 1].id, p.f, p.label, result.info, result.error, now));
      done++;
      progress(0.05 + (0.8 * done) / total, `probing ${done}/${total}`);
      if (pending.length >= BATCH) await flush();
    });
    if (ctx.signal.aborted) {
      // Stopped (shutdown): keep what was probed, so the next scan does not probe it again. No removals from a partial scan.
      await flush().catch((err) => this.logger.warn({ err, libraryId: library.id }, 'could not save a stopped scan\'s results'));
      return;
    }
    progress(0.85, 'saving');

    // Removals: files gone from folders we could read. Rows under an unavailable folder stay, and so do their items.
    const under = (p: string) => unavailable.some((dir) => p === dir || p.startsWith(dir + path.sep));
    const removedFiles: string[] = [];
    const kept = new Set<string>();
    for (const [p, file] of existing) {
      if (seen.has(p)) continue;
      if (under(p)) kept.add(file.itemId);
      else removedFiles.push(file.id);
    }
    // Items: those of readable files (with their series and season), and those kept with an unavailable folder.
    const wanted = new Map<string, ItemRow>();
    // In path order, so the title an item gets (when its files name it differently) does not depend on probe timing.
    const chains = found.map((f) => readable.get(f.path)).filter((c): c is Chain => c !== undefined);
    for (const row of itemRows(library.id, chains, existingItems, now)) wanted.set(row.id, row);
    for (let id: string | null | undefined = undefined, queue = [...kept]; (id = queue.pop()) !== undefined;) {
      const row = existingItems.get(id);
      if (row && !wanted.has(id)) {
        wanted.set(id, row);
        if (row.parent_id) queue.push(row.parent_id);
      }
    }
    const removedItems = [...existingItems.keys()].filter((id) => !wanted.has(id));
    const changedItems = [...wanted.values()].filter((row) => !sameItem(row, existingItems.get(row.id)));
    await this.store.transaction(async (trx) => {
      if (pending.length) {
        await this.store.saveFiles(trx, pending as Required<FileRow>[]);
        pending = [];
      }
      await this.store.saveFiles(trx, toRelabel as Required<FileRow>[]);
      await this.store.deleteFiles(trx, removedFiles);
      await this.store.saveItems(trx, changedItems);
      await this.store.deleteItems(trx, removedItems);
    });

    let metadata = 0;
    if (this.metadata) {
      progress(0.9, 'reading metadata');
      const files = [...(await this.store.filesOfLibrary(library.id)).values()].filter((f) => f.info);
      ({ read: metadata } = await this.metadata.refresh({ library, items: wanted, files, sidecars, unavailable }, ctx.signal,
        (f) => progress(0.9 + 0.09 * f, 'reading metadata')));
      if (ctx.signal.aborted) return;
    }

    const summary: ScanSummary = {
      libraryId: library.id, library: library.name,
      files: seen.size + [...existing.keys()].filter((p) => !seen.has(p) && under(p)).length,
      added, changed, removed: removedFiles.length, unreadable, items: wanted.size, probed, metadata,
      ms: Math.round(performance.now() - started),
    };
    ctx.data.summary = summary;
    progress(1, 'done');
    this.logger.info({ event: 'library_scanned', ...summary, ...(unavailable.length ? { unavailable } : {}) }, 'library scanned');
  }

  /** ffprobe one file: its MediaInfo JSON, or why it could not be read. */
  private async probe(file: string, signal: AbortSignal): Promise<{ info: string | null; error: string | null }> {
    try {
      const probe = await this.ffmpeg.probe(file, { signal, timeoutMs: PROBE_TIMEOUT_MS });
      const info = mediaInfoFromProbe(probe, file);
      if (!info.video && !info.audio.length) return { info: null, error: 'no audio or video stream' };
      return { info: JSON.stringify(info), error: null };
    } catch (err) {
      const message = String((err as Error).message ?? err);
      // A timeout says more about the machine's load than about the file: try again next scan.
      const prefix = /timed out/.test(message) ? TRANSIENT : '';
      return { info: null, error: (prefix + probeError(message, file)).slice(0, ERROR_MAX) };
    }
  }

  /** Media files under every folder of the library, in path order, and the metadata files beside them; folders that could not be read are listed. */
  private async walkLibrary(library: Library, signal: AbortSignal): Promise<{ found: Found[]; unavailable: string[]; sidecars: SidecarIndex }> {
    const byPath = new Map<string, Found>();
    const unavailable: string[] = [];
    const sidecars: SidecarIndex = new Map();
    const onSidecar = (f: Found) => {
      const dir = path.dirname(f.path);
      let files = sidecars.get(dir);
      if (!files) sidecars.set(dir, (files = new Map()));
      files.set(path.basename(f.path).toLowerCase(), { path: f.path, size: f.size, mtimeMs: f.mtimeMs });
    };
    for (const root of library.paths) {
      await walk(root, signal, (f) => { if (!byPath.has(f.path)) byPath.set(f.path, f); }, onSidecar, (dir, err) => {
        unavailable.push(dir);
        this.logger.warn({ libraryId: library.id, dir, error: (err as Error).message }, dir === root
          ? 'library folder missing or unreadable; its files are kept as they are'
          : 'folder unreadable; its files are kept as they are');
      });
    }
    const found = [...byPath.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    return { found, unavailable, sidecars };
  }
}

/**
 * ffprobe's own last line says what is wrong (`Invalid data found when processing
 * input`); the path it starts with is the file's, already known.
 */
function probeError(message: string, file: string): string {
  const lines = message.split('\n').map((l) => l.trim()).filter(Boolean);
  const last = lines.length > 1 ? lines[lines.length - 1] : lines[0] ?? 'unreadable';
  return last.startsWith(`${file}: `) ? last.slice(file.length + 2) : last;
}

function fileRow(libraryId: number, id: string, itemId: string, f: Found, label: string | null, info: string | null, error: string | null, now: number): FileRow {
  return { id, item_id: itemId, library_id: libraryId, path: f.path, size: f.size, mtime_ms: f.mtimeMs, label, info, error, scanned_at: now };
}

/** Item rows for these chains (deduplicated; the first file named wins), keeping the added_at of rows that exist. */
function itemRows(libraryId: number, chains: Chain[], existing: Map<string, ItemRow>, now: number): ItemRow[] {
  const out = new Map<string, ItemRow>();
  for (const chain of chains) {
    for (const item of chain) {
      if (out.has(item.id)) continue;
      const old = existing.get(item.id);
      out.set(item.id, { ...item, library_id: libraryId, added_at: old ? Number(old.added_at) : now });
    }
  }
  return [...out.values()];
}

function sameItem(a: ItemRow, b: ItemRow | undefined): boolean {
  return !!b && a.type === b.type && a.parent_id === b.parent_id && a.title === b.title && a.sort_title === b.sort_title
    && a.year === b.year && a.season === b.season && a.episode === b.episode;
}

/**
 * Walks `root` depth-first: hidden entries, extras folders and files that are
 * neither media nor metadata (NFO, images) are skipped; symlinks are followed,
 * but a directory already visited (same device and inode) is not entered again,
 * so links cannot loop. Returns false when the root itself could not be read.
 */
async function walk(root: string, signal: AbortSignal, onFile: (f: Found) => void, onSidecar: (f: Found) => void, onUnreadable: (dir: string, err: unknown) => void): Promise<boolean> {
  const visited = new Set<string>();
  try {
    const s = await stat(root);
    if (!s.isDirectory()) throw new Error('not a directory');
    visited.add(`${s.dev}:${s.ino}`);
  } catch (err) {
    onUnreadable(root, err);
    return false;
  }
  const stack = [root];
  while (stack.length && !signal.aborted) {
    const dir = stack.pop()!;
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (err) {
      onUnreadable(dir, err);
      continue;
    }
    await Promise.all(entries.map(async (entry) => {
      if (entry.name.startsWith('.')) return;
      const full = path.join(dir, entry.name);
      const isDir = entry.isDirectory();
      const maybeMedia = entry.isFile() && isMediaFile(entry.name);
      const maybeSidecar = entry.isFile() && isSidecar(entry.name);
      if (!isDir && !maybeMedia && !maybeSidecar && !entry.isSymbolicLink()) return;
      let s;
      try {
        s = await stat(full);
      } catch (err) {
        // A dangling symlink, or a file removed while we walk: nothing to index.
        if (!entry.isSymbolicLink()) onUnreadable(full, err);
        return;
      }
      if (s.isDirectory()) {
        if (isExtrasFolder(entry.name)) return;
        const key = `${s.dev}:${s.ino}`;
        if (visited.has(key)) return;
        visited.add(key);
        stack.push(full);
      } else if (s.isFile() && isMediaFile(entry.name) && !isExtraFile(entry.name)) {
        onFile({ path: full, rel: path.relative(root, full), size: s.size, mtimeMs: Math.trunc(s.mtimeMs) });
      } else if (s.isFile() && isSidecar(entry.name)) {
        onSidecar({ path: full, rel: path.relative(root, full), size: s.size, mtimeMs: Math.trunc(s.mtimeMs) });
      }
    }));
  }
  return true;
}
