/**
 * Items' pictures: where each one is (an ArtworkRef, kept in vod_metadata),
 * and the files served for it, made with ffmpeg on first request and kept in
 * `<pluginDir>/images/<tag>/`:
 *
 * - a file beside the media (poster.jpg): served as it is, or scaled;
 * - a URL a metadata provider gave: downloaded once (`orig`), then as a file;
 * - a media file: its embedded cover art (an MP4 `covr`, a Matroska image
 *   attachment: both are attached pictures to ffmpeg), else a frame.
 *
 * Widths are rounded up to a multiple of 20 px and never upscaled, so a
 * picture has a handful of sizes at most. A source file is only read when it
 * lies inside one of the library's folders (symlinks resolved): a picture path
 * can never name another file of the machine. At most two ffmpeg runs make
 * pictures at once; a request that goes away while queued costs nothing.
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, realpath, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { errors, type FfmpegService, type Logger, type SourceReader } from 'antenna/sdk';

/** Where a picture is; `tag` names its content (it changes when the picture does). */
export type ArtworkRef = ({ path: string } | { url: string } | { video: string; at: number }) & { tag: string };

export type ArtworkKind = 'poster' | 'backdrop';

export interface ArtworkFile {
  /** The bytes to send. */
  file: string;
  type: string;
  etag: string;
}

const WIDTH_STEP = 20;
export const MAX_WIDTH = 3840;
const DOWNLOAD_MAX_BYTES = 20 * 2 ** 20;
const CONCURRENCY = 2;
const RUN_TIMEOUT_MS = 60_000;
const TYPES: Record<string, string> = { jpg: 'image/jpeg', jpeg: 'image/jpeg', tbn: 'image/jpeg', png: 'image/png', webp: 'image/webp' };

export const artworkTag = (...parts: (string | number)[]): string => createHash('sha1').update(parts.join('\0')).digest('hex').slice(0, 20);

/** The width a request is served at: rounded up to the step, within bounds. */
export function servedWidth(width: number): number {
  return Math.min(MAX_WIDTH, Math.max(WIDTH_STEP, Math.ceil(width / WIDTH_STEP) * WIDTH_STEP));
}

/** What an image's first bytes say it is. */
function sniff(bytes: Buffer): string | undefined {
  if (bytes[0] === 0xff && bytes[1] === 0xd8) return 'image/jpeg';
  if (bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png';
  if (bytes.subarray(0, 4).toString('latin1') === 'RIFF' && bytes.subarray(8, 12).toString('latin1') === 'WEBP') return 'image/webp';
  return undefined;
}

export const isWebUrl = (url: string): boolean => /^https?:\/\/[^\s]+$/i.test(url);

/** Whether `file` (symlinks resolved) lies inside one of `roots`. */
export async function insideFolders(file: string, roots: readonly string[]): Promise<boolean> {
  let real: string;
  try {
    real = await realpath(file);
  } catch {
    return false;
  }
  for (const root of roots) {
    const r = await realpath(root).catch(() => undefined);
    if (r && (real === r || real.startsWith(r.endsWith(path.sep) ? r : r + path.sep))) return true;
  }
  return false;
}

export class Artwork {
  /** Pictures being made, by output file: concurrent requests share one run. */
  private readonly making = new Map<string, Promise<void>>();
  private running = 0;
  private readonly queue: (() => void)[] = [];

  constructor(
    private readonly ffmpeg: FfmpegService,
    private readonly sources: SourceReader,
    readonly cacheDir: string,
    private readonly logger: Logger,
  ) {}

  /**
   * The picture at this width (undefined: as it is), made if it is not in the cache yet.
   * `roots` are the item's library folders. 404 when the source is gone or outside them;
   * 502 when a URL cannot be downloaded or ffmpeg cannot read it.
   */
  async image(ref: ArtworkRef, roots: readonly string[], width: number | undefined, signal: AbortSignal): Promise<ArtworkFile> {
    const dir = path.join(this.cacheDir, ref.tag);
    const w = width === undefined ? undefined : servedWidth(width);
    const etag = `"${ref.tag}-${w ?? 'o'}"`;
    if ('path' in ref && w === undefined) {
      await this.checkSource(ref.path, roots);
      return { file: ref.path, type: TYPES[path.extname(ref.path).slice(1).toLowerCase()] ?? 'image/jpeg', etag };
    }
    const out = path.join(dir, w === undefined ? 'orig.jpg' : `w${w}.jpg`);
    if (!(await exists(out))) {
      const original = await this.original(ref, roots, dir, signal);
      if (w !== undefined) await this.make(out, signal, () => ['-i', original, '-vf', `scale='min(${w},iw)':-2`, '-q:v', '3']);
    }
    return { file: out, type: 'image/jpeg', etag };
  }

  /** Cached pictures whose tag is not in `keep` are removed (a picture that changed, an item that went). */
  async sweep(keep: ReadonlySet<string>): Promise<number> {
    const names = await readdir(this.cacheDir).catch(() => [] as string[]);
    const stale = names.filter((n) => !keep.has(n) && !n.startsWith('.'));
    for (const name of stale) await rm(path.join(this.cacheDir, name), { recursive: true, force: true });
    return stale.length;
  }

  /** The full-size picture as a file ffmpeg reads: the source itself, or a cached copy of a download or an extraction. */
  private async original(ref: ArtworkRef, roots: readonly string[], dir: string, signal: AbortSignal): Promise<string> {
    if ('path' in ref) {
      await this.checkSource(ref.path, roots);
      return ref.path;
    }
    const orig = path.join(dir, 'orig.jpg');
    if (await exists(orig)) return orig;
    if ('url' in ref) {
      await this.once(orig, signal, () => this.download(ref.url, orig, signal));
      return orig;
    }
    await this.checkSource(ref.video, roots);
    const picture = await this.attachedPicture(ref.video, signal);
    await this.make(orig, signal, () => (picture !== undefined
      ? ['-i', ref.video, '-map', `0:${picture}`, '-frames:v', '1', '-q:v', '2']
      : ['-ss', String(ref.at), '-i', ref.video, '-map', '0:V:0', '-frames:v', '1', '-q:v', '2']));
    return orig;
  }

  private async checkSource(file: string, roots: readonly string[]): Promise<void> {
    if (!(await insideFolders(file, roots))) throw errors.notFound('The picture is no longer in the library');
  }

  /** The stream index of the file's cover art (an attached picture), if it has one. */
  private async attachedPicture(file: string, signal: AbortSignal): Promise<number | undefined> {
    const probe = await this.ffmpeg.probe(file, { signal, timeoutMs: 30_000 }).catch(() => undefined);
    const pictures = (probe?.streams ?? []).filter((s) => s.codec_type === 'video' && s.disposition?.attached_pic);
    // A portrait picture (a cover) before a landscape one (Matroska's cover_land).
    const chosen = pictures.find((s) => (s.height ?? 0) >= (s.width ?? 0)) ?? pictures[0];
    return chosen?.index;
  }

  private async download(url: string, out: string, signal: AbortSignal): Promise<void> {
    // The SourceReader also reads paths and file:// URLs: a picture's URL may only be a web one.
    if (!isWebUrl(url)) throw errors.notFound('The picture is no longer in the library');
    let bytes: Buffer;
    try {
      const source = await this.sources.open(url, { signal, maxBytes: DOWNLOAD_MAX_BYTES, timeoutMs: 30_000 });
      const chunks: Buffer[] = [];
      for await (const chunk of source.chunks) chunks.push(chunk);
      bytes = Buffer.concat(chunks);
    } catch (err) {
      if (signal.aborted) throw Object.assign(new Error('The request went away'), { name: 'AbortError' });
      throw errors.badGateway(`The picture could not be downloaded: ${(err as Error).message}`);
    }
    if (!sniff(bytes)) throw errors.badGateway(`The picture at ${this.sources.redact(url)} is not a JPEG, PNG or WebP image`);
    await mkdir(path.dirname(out), { recursive: true });
    // Kept as downloaded (ffmpeg reads it by its content, whatever the name says).
    await writeFile(`${out}.part`, bytes);
    await rename(`${out}.part`, out);
  }

  /**
   * Runs ffmpeg to make `out` (written beside it, then renamed), at most CONCURRENCY at a time.
   * A request that goes away while its picture waits for a turn takes nothing; once started, a
   * run finishes (a picture takes tens of ms) for whoever asks next.
   */
  private make(out: string, signal: AbortSignal, args: () => string[]): Promise<void> {
    return this.once(out, signal, async () => {
      await this.slot(signal);
      const part = `${out}.part.jpg`;
      try {
        await mkdir(path.dirname(out), { recursive: true });
        await this.ffmpeg.run(['-hide_banner', '-loglevel', 'error', '-y', ...args(), '-f', 'image2', part], { signal: AbortSignal.timeout(RUN_TIMEOUT_MS), label: 'vod:artwork' });
        if (!(await stat(part).then((s) => s.size > 0, () => false))) throw new Error('ffmpeg wrote no picture');
        await rename(part, out);
      } catch (err) {
        await rm(part, { force: true });
        this.logger.warn({ err, out: path.relative(this.cacheDir, out) }, 'picture not made');
        throw errors.badGateway('The picture could not be made from its source');
      } finally {
        this.release();
      }
    });
  }

  /** One run of `work` per output at a time, shared by whoever asks meanwhile; one whose first asker went away is started again. */
  private async once(out: string, signal: AbortSignal, work: () => Promise<void>): Promise<void> {
    for (;;) {
      let pending = this.making.get(out);
      if (!pending) {
        const started = work().finally(() => { if (this.making.get(out) === started) this.making.delete(out); });
        this.making.set(out, (pending = started));
      }
      try {
        return await pending;
      } catch (err) {
        if (signal.aborted || (err as Error).name !== 'AbortError') throw err;
      }
    }
  }

  private slot(signal: AbortSignal): Promise<void> {
    if (this.running < CONCURRENCY) {
      this.running++;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const start = () => {
        signal.removeEventListener('abort', cancel);
        this.running++;
        resolve();
      };
      const cancel = () => {
        const at = this.queue.indexOf(start);
        if (at >= 0) this.queue.splice(at, 1);
        reject(Object.assign(new Error('The request went away'), { name: 'AbortError' }));
      };
      if (signal.aborted) return cancel();
      signal.addEventListener('abort', cancel, { once: true });
      this.queue.push(start);
    });
  }

  private release(): void {
    this.running--;
    this.queue.shift()?.();
  }
}

const exists = (file: string) => stat(file).then(() => true, () => false);
