/**
 * Benchmark: parseM3u vs m3u8-parser on a generated 100,000-entry IPTV
 * playlist (~25 MB, shaped like the real lists in shared/realdata: tvg-*
 * attributes, quoted commas, multi-groups, #EXTVLCOPT, Kodi header suffixes).
 *
 * m3u8-parser is the yardstick because it is the obvious off-the-shelf
 * choice; it parses less (it drops the IPTV attributes, and keeps its
 * strings as slices of the text, where ours decodes each value it keeps).
 * The figure that must hold is the end-to-end import's (livetv.bench);
 * this one says where the parsing time goes. Also timed: the path
 * m3u-tuner takes (M3uParser fed the file's bytes in 256 KB chunks).
 *
 * Timing and memory are measured in child processes (node --expose-gc):
 * one alternates the parsers for the medians, and one per parser parses
 * once, cold, so that each peak RSS (a process high-water mark) is its own.
 *
 * Run directly: node <outDir>/test/bench/m3u-parse.bench.js  (prints JSON)
 */
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { M3uParser, parseM3u } from '../../plugins/m3u-tuner/m3u-parser.js';
import { mulberry32 as rng } from './random.js';
import { median } from './stats.js';

interface HlsParser {
  push(chunk: string): void;
  end(): void;
  manifest: { segments?: unknown[] };
}
// m3u8-parser ships no type declarations.
const { Parser: HlsParserCtor } = require('m3u8-parser') as { Parser: new () => HlsParser };

export const ENTRIES = 100_000;
const RUNS = 5;

/** Small deterministic PRNG (mulberry32) so every run benchmarks the same bytes. */

const COUNTRIES = ['US', 'UK', 'DE', 'FR', 'ES', 'IT', 'BR', 'AR', 'JP', 'IN', 'TR', 'RU'];
const GROUPS = ['News', 'Sports', 'Movies', 'Kids', 'Music', 'Entertainment', 'Documentary', 'General', 'Religious', 'Undefined'];
const WORDS = ['Channel', 'TV', 'News', 'Sport', 'Cinema', 'Kids', 'Música', 'Noticias', 'Канал', 'Weather', 'Plus', 'HD', 'Live', 'One', 'Retro'];
const UAS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 12_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148',
  'VLC/3.0.20 LibVLC/3.0.20',
];

/**
 * Yields the playlist in chunks of ~1000 entries, ~250 bytes per entry like
 * Free-TV/playlist.m3u8, so it can be written to disk without holding a
 * second 25 MB copy (which would distort the RSS figure).
 */
export function* playlistChunks(entries = ENTRIES, seed = 42): Generator<string> {
  const r = rng(seed);
  const pick = <T>(a: readonly T[]): T => a[Math.floor(r() * a.length)];
  const id36 = (n: number): string => Math.floor(r() * 36 ** n).toString(36).padStart(n, '0');
  let parts: string[] = ['#EXTM3U x-tvg-url="https://epg.example.org/guide1.xml.gz, https://epg.example.org/guide2.xml.gz"\n'];
  for (let i = 0; i < entries; i++) {
    const country = pick(COUNTRIES);
    const w1 = pick(WORDS);
    const w2 = pick(WORDS);
    const id = `${w1}${w2}${i}.${country.toLowerCase()}`;
    // Names with commas (quoted in tvg-name, bare after the comma) on ~1 in 8 entries.
    const name = r() < 0.125 ? `${w1} ${i}, ${w2} & More` : `${w1} ${w2} ${i}${r() < 0.3 ? ' (1080p)' : ''}`;
    const group = r() < 0.1 ? `${pick(GROUPS)};${pick(GROUPS)}` : pick(GROUPS);
    let attrs = '';
    const tvgIdRoll = r();
    attrs += tvgIdRoll < 0.8 ? ` tvg-id="${id}"` : tvgIdRoll < 0.85 ? ' tvg-id=""' : '';
    attrs += ` tvg-name="${name}"`;
    if (r() < 0.7) attrs += ` tvg-chno="${r() < 0.05 ? `${i % 100}.${1 + (i % 9)}` : String(i + 1)}"`;
    attrs += ` tvg-logo="https://i.imgur.com/${id36(7)}.png"`;
    attrs += ` tvg-country="${country}"`;
    if (r() < 0.05) attrs += ` http-user-agent="${pick(UAS)}"`;
    if (r() < 0.05) attrs += ` catchup="shift" catchup-days="${1 + (i % 7)}"`;
    if (r() < 0.03) attrs += ' radio="true"';
    attrs += ` group-title="${group}"`;
    parts.push(`#EXTINF:-1${attrs},${name}\n`);
    if (r() < 0.1) parts.push(`#EXTVLCOPT:http-user-agent=${pick(UAS)}\n#EXTVLCOPT:http-referrer=https://www.example.com/\n`);
    if (r() < 0.02) parts.push('#KODIPROP:inputstream=inputstream.adaptive\n#KODIPROP:inputstream.adaptive.manifest_type=mpd\n');
    const host = `cdn${i % 50}.example.tv`;
    const u = r();
    let url =
      u < 0.02 ? `rtmp://${host}/live/${id}` :
      u < 0.04 ? `udp://@239.1.${(i >> 8) & 255}.${i & 255}:1234` :
      u < 0.08 ? `https://${host}/dash/${id36(8)}/manifest.mpd` :
      `https://${host}/live/${id36(8)}/index.m3u8`;
    if (r() < 0.03) url += `|User-Agent=${encodeURIComponent(pick(UAS))}&Referer=https://www.example.com/`;
    parts.push(url + '\n');
    if (r() < 0.02) parts.push('\n');
    if (parts.length >= 2000) {
      yield parts.join('');
      parts = [];
    }
  }
  yield parts.join('');
}

/** The whole generated playlist as one string. */
export function generatePlaylist(entries = ENTRIES, seed = 42): string {
  return [...playlistChunks(entries, seed)].join('');
}

function writePlaylist(file: string): void {
  const fd = openSync(file, 'w');
  try {
    for (const chunk of playlistChunks()) writeSync(fd, chunk);
  } finally {
    closeSync(fd);
  }
}


const round = (n: number, d = 1): number => Math.round(n * 10 ** d) / 10 ** d;
const maxRssMb = (): number => round(process.resourceUsage().maxRSS / 1024); // maxRSS is in KiB

type Which = 'ours' | 'm3u8' | 'stream';
/** openSource() reads files in chunks of this size. */
const CHUNK = 256 * 1024;
function parseWith(which: Which, text: string, bytes: Buffer): { count: number; result: unknown } {
  if (which === 'ours') {
    const result = parseM3u(text);
    return { count: result.entries.length, result };
  }
  if (which === 'stream') {
    // What m3u-tuner does: the file's bytes as they are read, decoded a line at a time.
    const parser = new M3uParser();
    for (let i = 0; i < bytes.length; i += CHUNK) parser.write(bytes.subarray(i, i + CHUNK));
    const result = parser.end();
    return { count: result.entries.length, result };
  }
  const p = new HlsParserCtor();
  p.push(text);
  p.end();
  return { count: p.manifest.segments?.length ?? 0, result: p.manifest };
}

/**
 * Child process, timing: both parsers, one warm-up each, then RUNS timed runs
 * alternating between them (load on a shared machine hits both alike), a full
 * GC before each so that no run pays for the previous run's garbage.
 */
function childTime(file: string): Record<string, unknown> {
  const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
  const bytes = readFileSync(file);
  const text = bytes.toString('utf8');
  parseWith('ours', text, bytes);
  parseWith('m3u8', text, bytes);
  parseWith('stream', text, bytes);
  const ms: Record<Which, number[]> = { ours: [], m3u8: [], stream: [] };
  const count: Record<Which, number> = { ours: 0, m3u8: 0, stream: 0 };
  for (let i = 0; i < RUNS; i++) {
    for (const which of ['ours', 'm3u8', 'stream'] as const) {
      gc();
      const t0 = performance.now();
      count[which] = parseWith(which, text, bytes).count;
      ms[which].push(performance.now() - t0);
    }
  }
  return { ms, count };
}

/**
 * Child process, memory: one parser, one parse of the file, result kept alive.
 * Its own process so that maxRSS (a high-water mark) is this parse's alone.
 */
function childMemory(which: Which, file: string): Record<string, unknown> {
  const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
  const bytes = readFileSync(file);
  const text = bytes.toString('utf8');
  gc();
  const rssBefore = maxRssMb();
  const heap0 = process.memoryUsage().heapUsed;
  const t0 = performance.now();
  const { count, result } = parseWith(which, text, bytes);
  const coldMs = performance.now() - t0;
  gc();
  const retainedMb = round((process.memoryUsage().heapUsed - heap0) / 1e6);
  return { count, coldMs: round(coldMs), rssBeforeMb: rssBefore, maxRssMb: maxRssMb(), retainedHeapMb: retainedMb, kept: result !== null };
}

function child(args: string[]): Record<string, unknown> {
  const out = spawnSync(process.execPath, ['--expose-gc', __filename, '--child', ...args], {
    encoding: 'utf8',
    maxBuffer: 16 * 1024 * 1024,
  });
  if (out.status !== 0) throw new Error(`bench child ${args.join(' ')} failed: ${out.stderr}`);
  return JSON.parse(out.stdout) as Record<string, unknown>;
}

export async function run(): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'antenna-m3u-bench-'));
  const file = path.join(dir, 'playlist-100k.m3u');
  try {
    writePlaylist(file);
    const bytes = statSync(file).size;
    const timing = child(['time', file]) as { ms: Record<Which, number[]>; count: Record<Which, number> };
    const memOurs = child(['memory', 'ours', file]);
    const memTheirs = child(['memory', 'm3u8', file]);
    const a = median(timing.ms.ours);
    const b = median(timing.ms.m3u8);
    const c = median(timing.ms.stream);
    return {
      name: 'm3u-parse',
      entries: ENTRIES,
      bytes,
      runs: RUNS,
      parseM3u: {
        medianMs: round(a),
        runsMs: timing.ms.ours.map((x) => round(x)),
        entriesPerSec: Math.round((timing.count.ours / a) * 1000),
        entriesParsed: timing.count.ours,
        coldMs: memOurs.coldMs,
        maxRssMb: memOurs.maxRssMb,
        retainedHeapMb: memOurs.retainedHeapMb,
      },
      m3u8Parser: {
        medianMs: round(b),
        runsMs: timing.ms.m3u8.map((x) => round(x)),
        entriesPerSec: Math.round((timing.count.m3u8 / b) * 1000),
        segmentsParsed: timing.count.m3u8,
        coldMs: memTheirs.coldMs,
        maxRssMb: memTheirs.maxRssMb,
        retainedHeapMb: memTheirs.retainedHeapMb,
      },
      ratio: round(a / b, 2), // parseM3u median / m3u8-parser median
      // The path m3u-tuner takes (M3uParser fed the file's bytes in 256 KB chunks, decoded as it reads
      // them), against m3u8-parser given the whole text already decoded.
      streamFromBytes: { medianMs: round(c), runsMs: timing.ms.stream.map((x) => round(x)), entriesParsed: timing.count.stream, ratio: round(c / b, 2) },
      rssBeforeParseMb: memOurs.rssBeforeMb, // node + the 25 MB text, before either parser runs
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  const args = process.argv.slice(2);
  if (args[0] === '--child') {
    const result = args[1] === 'time' ? childTime(args[2]) : childMemory(args[2] as Which, args[3]);
    process.stdout.write(JSON.stringify(result));
  } else {
    run().then(
      (r) => console.log(JSON.stringify(r, null, 2)),
      (err: unknown) => {
        console.error(err);
        process.exitCode = 1;
      },
    );
  }
}
