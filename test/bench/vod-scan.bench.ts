/**
 * Benchmark: the VOD library scanner on a 5,000-file library.
 *
 * Target: a rescan of an unchanged 5,000-file library takes ≤ 5 s (no ffprobe
 * runs; walking, stat, the database read and the comparison are what cost).
 * The first full scan is reported too, with its ffprobe rate.
 *
 * Three real clips (1 s, 320x180) are generated once and hard-linked under
 * 5,000 realistic paths: 2,000 movie files (movie folders, loose and dotted
 * release names, some second versions) and 3,000 episodes (50 shows × 3
 * seasons × 20 episodes in `Show/Season NN/Show - SxxEyy - Title.mkv`). The
 * scanner runs over a real test host (SQLite file on disk, the core's
 * FfmpegService and JobManager), with the config's default probe concurrency.
 *
 * Run directly: node <outDir>/test/bench/vod-scan.bench.js  (prints JSON)
 */
import 'reflect-metadata';
import { copyFile, link, mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import type { FfmpegService } from '../../sdk/services.js';
import { createTestHost } from '../../sdk/testing.js';
import { LibraryScanner, type ScanSummary } from '../../plugins/vod/scanner.js';
import { VodStore } from '../../plugins/vod/store.js';
import { clip } from '../plugins/vod/fixtures.js';
import { mulberry32 } from './random.js';
import { load1 } from './stats.js';

const MOVIE_FILES = 2_000;
const SHOWS = 50;
const SEASONS = 3;
const EPISODES = 20;
const CONCURRENCY = 2; // the config default (scanConcurrency)
const RESCANS = 3;
const TARGET_RESCAN_MS = 5_000;

const round = (n: number, digits = 0): number => Math.round(n * 10 ** digits) / 10 ** digits;

const WORDS = ['Silent', 'River', 'Last', 'Night', 'Golden', 'City', 'Shadow', 'Winter', 'Lost', 'Empire', 'Blue', 'Storm', 'Iron', 'Garden',
  'Hidden', 'Star', 'Broken', 'Road', 'Summer', 'King', 'Paper', 'Moon', 'Wild', 'Heart', 'Secret', 'Fire', 'Glass', 'Ocean', 'Dark', 'Home'];

/** The 5,000 relative paths (movies, shows), deterministic. */
function layout(): { movies: string[]; shows: string[] } {
  const r = mulberry32(7);
  const pick = () => WORDS[Math.floor(r() * WORDS.length)];
  const movies: string[] = [];
  for (let i = 0; movies.length < MOVIE_FILES; i++) {
    const title = `${pick()} ${pick()} ${i}`;
    const year = 1950 + Math.floor(r() * 75);
    const style = i % 10;
    if (style < 6) {
      movies.push(`${title} (${year})/${title} (${year}).mkv`);
      if (style === 0 && movies.length < MOVIE_FILES) movies.push(`${title} (${year})/${title} (${year}) - 720p.mkv`);
    } else if (style < 8) {
      movies.push(`${title} (${year}).mp4`);
    } else {
      movies.push(`${title.replace(/ /g, '.')}.${year}.1080p.BluRay.x264-GRP.mkv`);
    }
  }
  const shows: string[] = [];
  for (let s = 0; s < SHOWS; s++) {
    const show = `${pick()} ${pick()} ${s}`;
    for (let season = 1; season <= SEASONS; season++) {
      for (let e = 1; e <= EPISODES; e++) {
        const code = `S${String(season).padStart(2, '0')}E${String(e).padStart(2, '0')}`;
        shows.push(`${show}/Season ${String(season).padStart(2, '0')}/${show} - ${code} - ${pick()} ${pick()}.mkv`);
      }
    }
  }
  return { movies, shows };
}

export async function run(): Promise<Record<string, unknown>> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-vod-scan-bench-'));
  const loadBefore = load1();
  try {
    const clips = [path.join(dir, 'a.mkv'), path.join(dir, 'b.mp4'), path.join(dir, 'c.mkv')];
    await clip(clips[0], { seconds: 1, width: 320, height: 180 });
    await clip(clips[1], { seconds: 1, width: 320, height: 180 });
    await clip(clips[2], { seconds: 2, width: 320, height: 180, secondAudio: true, subtitle: true }); // 2 s: a 1 s clip gets no subtitle line
    const { movies, shows } = layout();
    const moviesDir = path.join(dir, 'Movies');
    const showsDir = path.join(dir, 'Shows');
    let n = 0;
    for (const [root, rels] of [[moviesDir, movies], [showsDir, shows]] as const) {
      for (const rel of rels) {
        const file = path.join(root, rel);
        await mkdir(path.dirname(file), { recursive: true });
        const src = rel.endsWith('.mp4') ? clips[1] : clips[n++ % 2 === 0 ? 0 : 2];
        // Hard links: 5,000 names, three files' worth of disk (a copy where links are refused).
        await link(src, file).catch(() => copyFile(src, file));
      }
    }

    const host = await createTestHost({
      plugins: { vod: { initialScan: 'skip', scanInterval: '0s', libraries: [
        { name: 'Movies', type: 'movies', paths: [moviesDir] }, { name: 'Shows', type: 'shows', paths: [showsDir] },
      ] } },
    });
    try {
      const ff = host.host.ffmpeg;
      let probes = 0;
      const counted: FfmpegService = {
        ffmpegPath: ff.ffmpegPath, ffprobePath: ff.ffprobePath,
        version: () => ff.version(), spawn: (a, o) => ff.spawn(a, o), run: (a, o) => ff.run(a, o),
        probe: (input, o) => { probes++; return ff.probe(input, o); },
      };
      const store = new VodStore(host.host.knex);
      await store.loadLibraries();
      const scanner = new LibraryScanner(host.host.knex, store, counted, host.host.jobs, pino({ level: 'silent' }), () => Date.now(), { concurrency: CONCURRENCY });
      const scanAll = async () => {
        probes = 0;
        const started = performance.now();
        const summaries: ScanSummary[] = await scanner.scanAll();
        return { ms: performance.now() - started, summaries, probes };
      };

      const loadFirst = load1();
      const first = await scanAll();
      const files = first.summaries.reduce((a, s) => a + s.files, 0);
      const items = first.summaries.reduce((a, s) => a + s.items, 0);
      const rescans: { ms: number; probes: number; loadavg: number }[] = [];
      for (let i = 0; i < RESCANS; i++) {
        const loadavg = load1();
        const r = await scanAll();
        if (r.summaries.some((s) => s.added || s.changed || s.removed)) throw new Error(`rescan changed something: ${JSON.stringify(r.summaries)}`);
        rescans.push({ ms: round(r.ms), probes: r.probes, loadavg });
      }
      const sorted = rescans.map((r) => r.ms).sort((a, b) => a - b);
      return {
        files, items, concurrency: CONCURRENCY,
        firstScan: {
          ms: round(first.ms), probes: first.probes, probesPerSecond: round(first.probes / (first.ms / 1000), 1),
          unreadable: first.summaries.reduce((a, s) => a + s.unreadable, 0), loadavg: loadFirst,
        },
        unchangedRescan: { runs: rescans, medianMs: sorted[Math.floor(sorted.length / 2)], minMs: sorted[0], targetMs: TARGET_RESCAN_MS, met: sorted[Math.floor(sorted.length / 2)] <= TARGET_RESCAN_MS },
        loadavg: { before: loadBefore, after: load1() },
      };
    } finally {
      await host.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  run().then((r) => console.log(JSON.stringify(r, null, 2)), (err) => { console.error(err); process.exit(1); });
}
