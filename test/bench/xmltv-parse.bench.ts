/**
 * XMLTV parse benchmark: a generated guide (default 2,000 channels × 14 days ≈
 * 650,000 programmes, ~300 MB) read three ways, each in a fresh child process
 * so that every peak RSS is its own:
 *   saxes  – saxes alone, no handlers, same stream/decoder/chunking (the floor)
 *   ours   – parseXmltv with a sink that discards batches
 *   xmltv  – the `xmltv` npm package (sax + moment), on the first `xmltvSliceMB`
 *            MB only when the file is bigger, extrapolated linearly.
 *
 *   node .build/xmltv/test/bench/xmltv-parse.bench.js [channels] [days] [repeat]
 *
 * Times are the best of `repeat` (default 3) alternating runs: on a shared
 * machine the minimum is the least noisy figure.
 */
import { spawnSync } from 'node:child_process';
import { createReadStream, statSync, unlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TextDecoder } from 'node:util';
import { SaxesParser } from 'saxes';
import { parseXmltv } from '../../plugins/xmltv-guide/xmltv-parser.js';
import type { GuideSink } from '../../sdk/livetv.js';
import { generateGuide } from './guide-generator.js';

const MB = 1024 * 1024;

// ---------------------------------------------------------------------------
// Generator


/** The benchmark guide, from a fixed start (2025-01-01) so every run parses the same bytes. */
export function generateFixedGuide(file: string, channels: number, days: number): Promise<{ programmes: number; bytes: number }> {
  return generateGuide(file, channels, days, Date.UTC(2025, 0, 1));
}

// ---------------------------------------------------------------------------
// Measurements (each in its own process)

interface Measure {
  seconds: number;
  cpuSeconds: number;
  bytes: number;
  programmes?: number;
  peakRssMB: number;
  note?: string;
}

function cpuSince(c0: NodeJS.CpuUsage): number {
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1e6;
}

async function measureSaxes(file: string): Promise<Measure> {
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const parser = new SaxesParser();
  const decoder = new TextDecoder('utf-8');
  let bytes = 0;
  for await (const chunk of createReadStream(file)) {
    bytes += (chunk as Buffer).length;
    parser.write(decoder.decode(chunk as Buffer, { stream: true }));
  }
  parser.write(decoder.decode());
  parser.close();
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  return { seconds, cpuSeconds: cpuSince(c0), bytes, peakRssMB: process.resourceUsage().maxRSS / 1024 };
}

async function measureOurs(file: string): Promise<Measure> {
  let programmes = 0;
  const sink: GuideSink = {
    channel() {},
    async programmes(batch) {
      programmes += batch.length;
    },
    warning() {},
    progress() {},
  };
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const result = await parseXmltv(createReadStream(file), sink, { maxAgeMs: Infinity });
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  if (result.programmes !== programmes) throw new Error('programme count mismatch');
  return { seconds, cpuSeconds: cpuSince(c0), bytes: statSync(file).size, programmes, peakRssMB: process.resourceUsage().maxRSS / 1024 };
}

async function measureXmltvPackage(file: string, sliceBytes: number): Promise<Measure> {
  // No types for the xmltv package.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { Parser } = require('xmltv') as { Parser: new () => NodeJS.WritableStream & NodeJS.EventEmitter };
  const size = statSync(file).size;
  const bytes = Math.min(size, sliceBytes);
  let programmes = 0;
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  await new Promise<void>((resolve) => {
    const parser = new Parser();
    parser.on('programme', () => {
      programmes++;
    });
    // A sliced file ends mid-element: sax reports it at the end; the count is what matters.
    parser.on('error', () => resolve());
    parser.on('end', () => resolve());
    parser.on('finish', () => setImmediate(resolve));
    createReadStream(file, { end: bytes - 1 }).pipe(parser);
  });
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  return {
    seconds,
    cpuSeconds: cpuSince(c0),
    bytes,
    programmes,
    peakRssMB: process.resourceUsage().maxRSS / 1024,
    note: bytes < size ? `first ${(bytes / MB).toFixed(0)} MB only` : undefined,
  };
}

/** Best (lowest) time of `repeat` runs in fresh processes, highest peak RSS. */
function best(runs: Measure[]): Measure {
  const fastest = runs.reduce((a, b) => (b.seconds < a.seconds ? b : a));
  return {
    ...fastest,
    cpuSeconds: Math.min(...runs.map((r) => r.cpuSeconds)),
    peakRssMB: Math.max(...runs.map((r) => r.peakRssMB)),
  };
}

function child(mode: string, file: string, sliceBytes: number): Measure {
  const r = spawnSync(process.execPath, ['--expose-gc', __filename, '--child', mode, file, String(sliceBytes)], {
    encoding: 'utf8',
    maxBuffer: 16 * MB,
  });
  if (r.status !== 0) throw new Error(`${mode} child failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as Measure;
}

const round = (n: number, d = 2): number => Math.round(n * 10 ** d) / 10 ** d;

export async function run(
  opts: { channels?: number; days?: number; repeat?: number; xmltvSliceMB?: number; keepFile?: boolean } = {},
): Promise<Record<string, unknown>> {
  const channels = opts.channels ?? 2000;
  const days = opts.days ?? 14;
  const repeat = Math.max(1, opts.repeat ?? 3);
  const sliceBytes = (opts.xmltvSliceMB ?? 30) * MB;
  const file = path.join(os.tmpdir(), `antenna-xmltv-bench-${process.pid}-${channels}x${days}.xml`);
  try {
    const g0 = Date.now();
    const { programmes, bytes } = await generateFixedGuide(file, channels, days);
    const generateSeconds = (Date.now() - g0) / 1000;
    // Alternate the runs so that a busy machine penalises both alike; keep the best of each.
    const saxesRuns: Measure[] = [];
    const ourRuns: Measure[] = [];
    for (let i = 0; i < repeat; i++) {
      saxesRuns.push(child('saxes', file, 0));
      ourRuns.push(child('ours', file, 0));
    }
    const saxes = best(saxesRuns);
    const ours = best(ourRuns);
    const xmltv = child('xmltv', file, sliceBytes);
    if (ours.programmes !== programmes) throw new Error(`parseXmltv read ${ours.programmes} programmes, generated ${programmes}`);
    const mbps = (m: Measure): number => round(m.bytes / MB / m.seconds, 1);
    const xmltvFullSeconds = xmltv.seconds * (bytes / xmltv.bytes);
    return {
      file: { channels, days, programmes, sizeMB: round(bytes / MB, 1), generateSeconds: round(generateSeconds, 1) },
      runs: `best of ${repeat} per parser, each in a fresh process`,
      saxesNoHandlers: { seconds: round(saxes.seconds), cpuSeconds: round(saxes.cpuSeconds), MBps: mbps(saxes), peakRssMB: round(saxes.peakRssMB, 0) },
      parseXmltv: {
        seconds: round(ours.seconds),
        cpuSeconds: round(ours.cpuSeconds),
        MBps: mbps(ours),
        programmesPerSecond: Math.round(programmes / ours.seconds),
        throughputVsSaxes: round(saxes.seconds / ours.seconds),
        cpuVsSaxes: round(saxes.cpuSeconds / ours.cpuSeconds),
        peakRssMB: round(ours.peakRssMB, 0),
      },
      xmltvPackage: {
        measuredMB: round(xmltv.bytes / MB, 1),
        measuredSeconds: round(xmltv.seconds),
        cpuSeconds: round(xmltv.cpuSeconds),
        programmesRead: xmltv.programmes,
        MBps: mbps(xmltv),
        programmesPerSecond: Math.round(xmltv.programmes! / xmltv.seconds),
        fullFileSeconds: round(xmltvFullSeconds),
        extrapolated: xmltv.bytes < bytes,
        throughputVsSaxes: round(saxes.seconds / xmltvFullSeconds),
        peakRssMB: round(xmltv.peakRssMB, 0),
        note: xmltv.note,
      },
    };
  } finally {
    if (!opts.keepFile) {
      try {
        unlinkSync(file);
      } catch {
        /* already gone */
      }
    }
  }
}

if (require.main === module) {
  const args = process.argv.slice(2);
  if (args[0] === '--child') {
    const [, mode, file, slice] = args as [string, string, string, string];
    const m = mode === 'saxes' ? measureSaxes(file) : mode === 'ours' ? measureOurs(file) : measureXmltvPackage(file, Number(slice));
    m.then(
      (r) => console.log(JSON.stringify(r)),
      (err: unknown) => {
        console.error(err);
        process.exit(1);
      },
    );
  } else {
    const channels = args[0] ? Number(args[0]) : undefined;
    const days = args[1] ? Number(args[1]) : undefined;
    const repeat = args[2] ? Number(args[2]) : undefined;
    run({ channels, days, repeat }).then(
      (r) => console.log(JSON.stringify(r, null, 2)),
      (err: unknown) => {
        console.error(err);
        process.exit(1);
      },
    );
  }
}
