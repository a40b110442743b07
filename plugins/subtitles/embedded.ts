/**
 * The `embedded` provider: text subtitle streams inside media files.
 *
 * Getting one stream out means ffmpeg reading the whole file (subtitle packets
 * are spread through it), so the first request for any track of a file
 * extracts every text track in that one pass, one ffmpeg with an output per
 * track, into a cache directory keyed by the file's path, size and mtime:
 * the next track is a file read, and a changed file gets a new key (the old
 * directory is removed when the new one is complete). Concurrent first
 * requests share one extraction, a core job (`subtitles:<hash>`, visible in
 * GET /api/jobs with its progress).
 *
 * ffmpeg copies SubRip and ASS/SSA packets out unchanged (mov_text is decoded
 * to SubRip) and vtt.ts converts them, the same converter as sidecar files.
 * Tracks are converted one by one, the requested ones first, so the first
 * request waits for ffmpeg and its own track only.
 *
 * The track id is the stream's position among the file's subtitle streams
 * (0 = the first subtitle stream, as ffmpeg's `-map 0:s:N`), like the vod
 * plugin's `audioTrack`; image-based streams keep their position but are not
 * listed, and asking for one is a 404.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  errors, type CatalogFile, type CatalogSubtitleStream, type FfmpegService, type JobManager, type Logger,
  type SubtitleFormat, type SubtitleProvider,
} from 'antenna/sdk';
import { toWebVtt } from './vtt.js';

interface ExtractAs {
  /** ffmpeg's codec for the output: `copy` keeps the packets as they are. */
  codec: string;
  muxer: string;
  format: SubtitleFormat;
}

/** Text codecs (ffprobe names) and how each is taken out. Image-based ones (PGS, VobSub, DVB) are absent. */
const TEXT_CODECS: Readonly<Record<string, ExtractAs>> = {
  subrip: { codec: 'copy', muxer: 'srt', format: 'srt' },
  srt: { codec: 'copy', muxer: 'srt', format: 'srt' },
  ass: { codec: 'copy', muxer: 'ass', format: 'ass' },
  ssa: { codec: 'copy', muxer: 'ass', format: 'ass' },
  webvtt: { codec: 'copy', muxer: 'webvtt', format: 'vtt' },
  mov_text: { codec: 'srt', muxer: 'srt', format: 'srt' },
};

export const isTextCodec = (codec: string): boolean => Object.hasOwn(TEXT_CODECS, codec);

/** A failed extraction is not retried for this long (a broken file would otherwise run ffmpeg on every request). */
const FAILURE_MEMORY_MS = 60_000;
const EXTRACTED_MEMORY = 10_000;

interface Subtitled { n: number; stream: CatalogSubtitleStream }

/** The file's subtitle streams with their position among subtitle streams, text ones only. */
export function textStreams(subtitles: CatalogSubtitleStream[]): Subtitled[] {
  return subtitles.map((stream, n) => ({ n, stream })).filter(({ stream }) => isTextCodec(stream.codec));
}

/**
 * One extraction, shared by the requests waiting on it (the job's data).
 * After ffmpeg has run, tracks are converted and published one by one, the
 * ones requested first: a request waits for its own track, not for all.
 */
class Extraction {
  private readonly wanted: number[] = [];
  private readonly published = new Set<number>();
  private readonly waiters = new Map<number, (() => void)[]>();
  private ended = false;

  /** Resolves once track `n` is published, or the extraction ended without it. */
  until(n: number): Promise<void> {
    if (this.ended || this.published.has(n)) return Promise.resolve();
    if (!this.wanted.includes(n)) this.wanted.push(n);
    return new Promise((resolve) => this.waiters.set(n, [...(this.waiters.get(n) ?? []), resolve]));
  }

  /** Which of the tracks left to convert goes next: a requested one, else the first. */
  next(left: number[]): number {
    return this.wanted.find((n) => left.includes(n)) ?? left[0]!;
  }

  publish(n: number): void {
    this.published.add(n);
    for (const resolve of this.waiters.get(n) ?? []) resolve();
    this.waiters.delete(n);
  }

  end(): void {
    this.ended = true;
    for (const list of this.waiters.values()) for (const resolve of list) resolve();
    this.waiters.clear();
  }
}

const COMPLETE = '.complete';

export class EmbeddedExtractor {
  private readonly failures = new Map<string, { at: number; error: string }>();
  /** Extractions finished in this process (file + version keys), oldest first. */
  private readonly extracted = new Set<string>();

  constructor(
    private readonly ffmpeg: FfmpegService,
    private readonly jobs: JobManager,
    private readonly log: Logger,
    /**
     * `<pluginDir>/embedded`: `<file hash>/<size>-<mtime>/s<N>.vtt`, each published by a rename,
     * and `.complete` once every track is; ffmpeg writes into `<file hash>/.tmp-*` first.
     */
    private readonly root: string,
    private readonly now: () => number = Date.now,
  ) {}

  /** Removes what an interrupted extraction left behind (at start). */
  async cleanPartial(): Promise<void> {
    for (const d of await readdir(this.root).catch(() => [] as string[])) {
      for (const name of await readdir(path.join(this.root, d)).catch(() => [] as string[])) {
        const dir = path.join(this.root, d, name);
        if (name.startsWith('.tmp-') || !(await exists(path.join(dir, COMPLETE)))) await rm(dir, { recursive: true, force: true });
      }
    }
  }

  /** Track `n` (position among subtitle streams) of the file as WebVTT; undefined when there is no such text track. */
  async track(file: CatalogFile, n: number, signal: AbortSignal): Promise<string | undefined> {
    const stream = file.subtitles[n];
    if (!stream || !isTextCodec(stream.codec)) return undefined;
    const st = await stat(file.path).catch(() => undefined);
    if (!st?.isFile()) return undefined;
    const fileKey = createHash('sha256').update(file.path).digest('hex').slice(0, 24);
    const version = `${st.size}-${Math.trunc(st.mtimeMs)}`;
    const dir = path.join(this.root, fileKey, version);
    const target = path.join(dir, `s${n}.vtt`);
    const key = `${fileKey}-${version}`;
    // Whether the scan's stream list still describes the file (else extraction probes it again).
    const current = st.size === file.size && Math.trunc(st.mtimeMs) === Math.trunc(file.mtimeMs);
    for (let look = 0; ; look++) {
      const cached = await readFile(target, 'utf8').catch(() => undefined);
      if (cached !== undefined) return cached;
      if (await exists(path.join(dir, COMPLETE))) return undefined; // extracted, and this stream gave nothing
      const failed = this.failures.get(key);
      if (failed && this.now() - failed.at < FAILURE_MEMORY_MS) {
        throw errors.unavailable('The subtitles of this file could not be extracted', Math.ceil((failed.at + FAILURE_MEMORY_MS - this.now()) / 1000));
      }
      // Nothing awaits between this check and ensure(): an extraction that ended while this request
      // looked at the disk is seen here (look again: it is there now, unless the cache was removed),
      // and one still running is joined, never started twice.
      if (look === 0 && this.extracted.delete(key)) continue;
      const job = this.jobs.ensure(`subtitles:${key}`, () => ({
        kind: 'subtitles',
        data: new Extraction(),
        run: async (ctx) => {
          try {
            await this.extract(file.path, current ? file.subtitles : undefined, path.join(this.root, fileKey), version, file.duration, ctx);
          } finally {
            ctx.data.end();
          }
          this.extracted.add(key);
          if (this.extracted.size > EXTRACTED_MEMORY) this.extracted.delete(this.extracted.values().next().value!);
        },
      }));
      await Promise.race([job.data.until(n), aborted(signal)]);
      const text = await readFile(target, 'utf8').catch(() => undefined);
      if (text !== undefined) return text;
      const state = await Promise.race([job.done, aborted(signal)]);
      if (state === 'completed') return undefined;
      if (state === 'failed') {
        for (const [k, f] of this.failures) if (this.now() - f.at >= FAILURE_MEMORY_MS) this.failures.delete(k);
        this.failures.set(key, { at: this.now(), error: job.error ?? 'failed' });
      }
      throw errors.unavailable('The subtitles of this file could not be extracted', state === 'failed' ? FAILURE_MEMORY_MS / 1000 : 2);
    }
  }

  /** One ffmpeg pass writes every text stream; each is then converted and published as `<fileDir>/<version>/s<N>.vtt`. */
  private async extract(
    input: string, known: CatalogSubtitleStream[] | undefined, fileDir: string, version: string, duration: number,
    ctx: { signal: AbortSignal; data: Extraction; progress(f: number, m?: string): void },
  ): Promise<void> {
    const final = path.join(fileDir, version);
    if (await exists(path.join(final, COMPLETE))) return; // a request that raced the previous job's end
    const subtitles = known ?? (await this.ffmpeg.probe(input, { signal: ctx.signal })).streams
      .filter((s) => s.codec_type === 'subtitle').map((s) => ({ codec: String(s.codec_name ?? '') }) as CatalogSubtitleStream);
    const streams = textStreams(subtitles);
    const tmp = path.join(fileDir, `.tmp-${randomBytes(6).toString('hex')}`);
    await mkdir(tmp, { recursive: true, mode: 0o700 });
    await mkdir(final, { recursive: true, mode: 0o700 });
    const started = this.now();
    try {
      if (streams.length) {
        const args = ['-hide_banner', '-nostdin', '-loglevel', 'error', '-stats', '-y', '-i', input];
        for (const { n, stream } of streams) {
          const how = TEXT_CODECS[stream.codec]!;
          args.push('-map', `0:s:${n}`, '-c:s', how.codec, '-f', how.muxer, path.join(tmp, `s${n}.${how.format}`));
        }
        await this.ffmpeg.run(args, {
          signal: ctx.signal,
          label: 'subtitles',
          onStderrLine: (line) => {
            const m = /time=(\d+):(\d\d):(\d\d(?:\.\d+)?)/.exec(line);
            if (m && duration > 0) ctx.progress((Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3])) / duration);
          },
        });
      }
      const left = streams.map((s) => s.n);
      while (left.length) {
        const n = ctx.data.next(left);
        left.splice(left.indexOf(n), 1);
        const format = TEXT_CODECS[subtitles[n]!.codec]!.format;
        const data = await readFile(path.join(tmp, `s${n}.${format}`)).catch(() => undefined);
        if (data !== undefined) {
          const part = path.join(final, `s${n}.vtt.part`);
          await writeFile(part, toWebVtt(data, format));
          await rename(part, path.join(final, `s${n}.vtt`));
        }
        ctx.data.publish(n);
      }
      await writeFile(path.join(final, COMPLETE), '');
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
    this.log.info({ event: 'subtitles_extracted', file: path.basename(input), tracks: streams.length, ms: this.now() - started }, 'embedded subtitles extracted');
    // Earlier versions of the file are of no use any more.
    for (const other of await readdir(fileDir)) {
      if (other !== version && !other.startsWith('.tmp-')) await rm(path.join(fileDir, other), { recursive: true, force: true });
    }
  }
}

const exists = (p: string) => stat(p).then(() => true, () => false);

/** Never resolves unless the signal aborts; then resolves 'aborted' (the caller stops waiting; the job goes on). */
function aborted(signal: AbortSignal): Promise<'aborted'> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve('aborted');
    else signal.addEventListener('abort', () => resolve('aborted'), { once: true });
  });
}

export function embeddedProvider(extractor: EmbeddedExtractor): SubtitleProvider {
  return {
    id: 'embedded',
    name: 'Text subtitle streams inside the media file',
    async listTracks({ file }) {
      return textStreams(file.subtitles).map(({ n, stream }) => ({
        id: String(n), language: stream.language, title: stream.title, codec: stream.codec,
        forced: stream.forced, default: stream.default, external: false,
      }));
    },
    async fetchTrack({ file, signal }, trackId) {
      if (!/^(0|[1-9]\d{0,3})$/.test(trackId)) return undefined;
      return extractor.track(file, Number(trackId), signal);
    },
  };
}
