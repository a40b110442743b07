/**
 * Child process of livetv.bench.ts: each mode runs alone in its own process so
 * that its peak RSS (process.resourceUsage().maxRSS) is its own and a server's
 * event loop is not shared with the load generator. Prints JSON lines on stdout;
 * the last one is the result.
 *
 *   node dist/test/bench/livetv-import-child.js saxes <guide.xml>
 *   node dist/test/bench/livetv-import-child.js m3u8-parser <playlist.m3u>
 *   node dist/test/bench/livetv-import-child.js guide <dataDir> <playlist.m3u> <guide.xml>
 *   node dist/test/bench/livetv-import-child.js m3u <dataDir> <playlist.m3u> [<changed.m3u>]
 *   node dist/test/bench/livetv-import-child.js serve <dataDir> <playlist.m3u> [<guide.xml>] [--import]
 */
import { createReadStream } from 'node:fs';
import { readFile, rename } from 'node:fs/promises';
import { TextDecoder } from 'node:util';
import { SaxesParser } from 'saxes';
import { createTestHost, type TestHost } from '../../sdk/testing.js';
import { LiveTvService } from '../../plugins/live-tv/service.js';
import { GuideStore } from '../../plugins/live-tv/guide-store.js';
import { ChannelStore } from '../../plugins/live-tv/channel-store.js';
import type { GuideSource, Tuner } from '../../sdk/livetv.js';

/** openSource() reads files in chunks of this size. */
export const CHUNK = 256 * 1024;

const out = (o: Record<string, unknown>): void => {
  process.stdout.write(JSON.stringify(o) + '\n');
};
const peakRssMB = (): number => Math.round(process.resourceUsage().maxRSS / 1024);
const rssMB = (): number => Math.round(process.memoryUsage().rss / 2 ** 20);
const secondsSince = (t0: bigint): number => Math.round(Number(process.hrtime.bigint() - t0) / 1e6) / 1e3;
/** CPU seconds (user + system, every thread of the process: SQLite runs in the libuv pool) since `c0`. */
const cpuSince = (c0: NodeJS.CpuUsage): number => { const c = process.cpuUsage(c0); return Math.round((c.user + c.system) / 1e3) / 1e3; };

/** Wall seconds spent in a method, summed per key (reset by the caller). */
function timeMethod(proto: any, name: string, sink: (seconds: number) => void): void {
  const original = proto[name];
  proto[name] = async function (this: unknown, ...args: unknown[]) {
    const t0 = process.hrtime.bigint();
    try { return await original.apply(this, args); } finally { sink(secondsSince(t0)); }
  };
}

/**
 * m3u8-parser reading the same playlist (file read, decoded, parsed): the bench runs it just
 * before each first import, so each import's time can be read against what the machine did
 * with the same bytes at that moment (on this shared machine the same code's time varies by
 * 1.5x from one hour to the next).
 */
async function m3u8Reference(file: string): Promise<void> {
  const { Parser } = require('m3u8-parser') as { Parser: new () => { push(text: string): void; end(): void; manifest: { segments?: unknown[] } } };
  const t0 = process.hrtime.bigint();
  const parser = new Parser();
  parser.push(await readFile(file, 'utf8'));
  parser.end();
  out({ seconds: secondsSince(t0), entries: parser.manifest.segments?.length ?? 0 });
}

async function saxes(file: string): Promise<void> {
  const t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  const parser = new SaxesParser();
  const decoder = new TextDecoder('utf-8');
  let bytes = 0;
  for await (const chunk of createReadStream(file, { highWaterMark: CHUNK })) {
    bytes += (chunk as Buffer).length;
    parser.write(decoder.decode(chunk as Buffer, { stream: true }));
  }
  parser.write(decoder.decode());
  parser.close();
  out({ seconds: secondsSince(t0), cpuSeconds: cpuSince(c0), bytes, peakRssMB: peakRssMB() });
}

function plugins(playlist: string, guide?: string): Record<string, unknown> {
  return {
    'live-tv': { initialImport: 'skip' },
    'm3u-tuner': { sources: [{ name: 'bench', url: playlist, refresh: '1000d' }] },
    ...(guide ? { 'xmltv-guide': { sources: [{ name: 'bench', url: guide, refresh: '1000d' }] } } : {}),
  };
}

/**
 * The live-tv service lives in the plugin's closure: catch it the first time
 * `guide refresh` (the CLI command) calls refreshTuner on it.
 */
function catchService(): Promise<LiveTvService> {
  const proto = LiveTvService.prototype as any;
  const original = proto.refreshTuner;
  return new Promise((resolve) => {
    proto.refreshTuner = function (this: LiveTvService, ...args: unknown[]) {
      resolve(this);
      return original.apply(this, args);
    };
  });
}

interface Phases { loadSeconds: number; sinkSeconds: number; sinkCpu: number; batches: number; deleteSeconds: number; remapSeconds: number }

/** Times spent in the phases of a guide import: parse (load minus sink), store (sink), delete, remap. */
function instrumentGuide(): { phases: () => Phases; reset: () => void } {
  const zero = (): Phases => ({ loadSeconds: 0, sinkSeconds: 0, sinkCpu: 0, batches: 0, deleteSeconds: 0, remapSeconds: 0 });
  let p = zero();
  const proto = GuideStore.prototype as any;
  const timed = (name: string, key: keyof Phases) => {
    const original = proto[name];
    proto[name] = async function (this: unknown, ...args: unknown[]) {
      const t0 = process.hrtime.bigint();
      try { return await original.apply(this, args); } finally { p[key] += secondsSince(t0); }
    };
  };
  timed('deleteGenerations', 'deleteSeconds');
  timed('remap', 'remapSeconds');
  const importOriginal = proto.import;
  proto.import = function (this: unknown, source: GuideSource, ...rest: unknown[]) {
    const wrapped: GuideSource = {
      ...source,
      load: async (opts) => {
        const t0 = process.hrtime.bigint();
        try {
          return await source.load({
            ...opts,
            sink: {
              ...opts.sink,
              programmes: async (batch) => {
                const t1 = process.hrtime.bigint();
                const c1 = process.cpuUsage();
                try { await opts.sink.programmes(batch); } finally { p.sinkSeconds += secondsSince(t1); p.sinkCpu += cpuSince(c1); p.batches++; }
              },
            },
          });
        } finally { p.loadSeconds += secondsSince(t0); }
      },
    };
    return importOriginal.call(this, wrapped, ...rest);
  };
  return { phases: () => p, reset: () => { p = zero(); } };
}

async function start(dataDir: string, playlist: string, guide: string | undefined, listen: boolean): Promise<TestHost> {
  return createTestHost({ dataDir, plugins: plugins(playlist, guide), listen });
}

async function countRows(host: TestHost, table: string): Promise<number> {
  const r = await host.host.knex(table).count({ n: '*' }).first();
  return Number(r?.n ?? 0);
}

/** Channels stored (listed or hidden). */
async function countChannels(host: TestHost): Promise<number> {
  return countRows(host, 'livetv_tuner_channels');
}

async function guideImport(dataDir: string, playlist: string, guide: string): Promise<void> {
  const caught = catchService();
  const probe = instrumentGuide();
  const host = await start(dataDir, playlist, guide, true);
  out({ ready: host.url, token: host.adminToken });
  await new Promise((r) => setTimeout(r, 500)); // the parent's poller starts

  const runs: Record<string, unknown>[] = [];
  const proto = LiveTvService.prototype as any;
  const refreshGuide = proto.refreshGuide;
  proto.refreshGuide = async function (this: LiveTvService, source: GuideSource, ...rest: unknown[]) {
    probe.reset();
    const startedAt = Date.now();
    out({ phase: `import${runs.length + 1}`, at: startedAt });
    const t0 = process.hrtime.bigint();
    const c0 = process.cpuUsage();
    const result = await refreshGuide.call(this, source, ...rest);
    const seconds = secondsSince(t0);
    const cpuSeconds = cpuSince(c0);
    const ph = probe.phases();
    runs.push({
      seconds, cpuSeconds, startedAt, endedAt: Date.now(), result, rssAfterMB: rssMB(), peakRssSoFarMB: peakRssMB(),
      phases: {
        parse: Math.round((ph.loadSeconds - ph.sinkSeconds) * 1000) / 1000,
        parseCpu: Math.round((cpuSeconds - ph.sinkCpu) * 1000) / 1000, // minus delete/remap (small)
        storeBatches: Math.round(ph.sinkSeconds * 1000) / 1000, storeBatchesCpu: Math.round(ph.sinkCpu * 1000) / 1000, batches: ph.batches,
        deleteGenerations: Math.round(ph.deleteSeconds * 1000) / 1000,
        remap: Math.round(ph.remapSeconds * 1000) / 1000,
        other: Math.round((seconds - ph.loadSeconds - ph.deleteSeconds - ph.remapSeconds) * 1000) / 1000,
      },
    });
    out({ phase: 'idle', at: Date.now() });
    return result;
  };

  // `antenna guide refresh`: the tuner, then the guide (import 1).
  const command = host.host.findCommand(['guide', 'refresh'])?.entry;
  if (!command) throw new Error('no guide refresh command');
  const t0 = process.hrtime.bigint();
  out({ phase: 'tuner', at: Date.now() });
  const lines: string[] = [];
  await host.host.runCommand(command, [], { progress: { update() {}, done() {} }, out: (l) => lines.push(l) });
  const refreshAllSeconds = secondsSince(t0);
  const service = await caught;
  const source = (service as any).registry.guides.get('xmltv:bench') as GuideSource;
  // Import 2: replaces generation 1.
  await service.refreshGuide(source);
  const rows = await countRows(host, 'livetv_programs');
  const mapped = await countRows(host, 'livetv_channel_guide');
  out({ phase: 'closing', at: Date.now() });
  await host.close();
  out({ runs, refreshAllSeconds, commandOutput: lines, programsStored: rows, channelsMapped: mapped, peakRssMB: peakRssMB() });
}

/** BENCH_SQL_TIMING=1: wall time per kind of statement (first 60 characters), printed with the result. */
function sqlTiming(host: TestHost): () => Record<string, { n: number; ms: number }> {
  const started = new Map<string, bigint>();
  const totals: Record<string, { n: number; ms: number }> = {};
  if (!process.env.BENCH_SQL_TIMING) return () => totals;
  host.host.knex.on('query', (q: { __knexQueryUid: string }) => started.set(q.__knexQueryUid, process.hrtime.bigint()));
  host.host.knex.on('query-response', (_r: unknown, q: { __knexQueryUid: string; sql: string }) => {
    const t0 = started.get(q.__knexQueryUid);
    if (t0 === undefined) return;
    started.delete(q.__knexQueryUid);
    const k = q.sql.slice(0, 60);
    const e = (totals[k] ??= { n: 0, ms: 0 });
    e.n++;
    e.ms = Math.round((e.ms + Number(process.hrtime.bigint() - t0) / 1e6) * 10) / 10;
  });
  return () => Object.fromEntries(Object.entries(totals).filter(([, v]) => v.ms > 20).sort((a, b) => b[1].ms - a[1].ms));
}

async function m3uImport(dataDir: string, playlist: string, changed?: string): Promise<void> {
  const caught = catchService();
  const host = await start(dataDir, playlist, undefined, false);
  const sql = sqlTiming(host);
  const command = host.host.findCommand(['guide', 'refresh'])?.entry!;
  const proto = LiveTvService.prototype as any;
  const refreshTuner = proto.refreshTuner; // the catching wrapper
  const runs: Record<string, unknown>[] = [];
  let phases: Record<string, number> = {};
  const add = (key: string) => (s: number) => {
    phases[key] = Math.round(((phases[key] ?? 0) + s) * 1000) / 1000;
    phases[`${key}PeakRssMB`] = peakRssMB(); // peak so far, at the end of the phase
  };
  // store: all of replaceTunerChannels, which reads the tuner's channels as they are yielded (so it
  // includes readList when the tuner is an async iterable, as m3u-tuner is); snapshotLoad: a reload
  // from the database.
  timeMethod(ChannelStore.prototype, 'replaceTunerChannels', add('store'));
  timeMethod(ChannelStore.prototype, 'read', add('snapshotLoad'));
  timeMethod(GuideStore.prototype, 'remap', add('guideRemap'));
  proto.refreshTuner = async function (this: LiveTvService, tuner: Tuner, progress?: (label: string, f: number, m?: string) => void) {
    phases = {};
    // readList: from the start until the whole list has been read (live-tv then says "storing");
    // with an async iterable, as m3u-tuner's is, reading, parsing and reducing each channel to its
    // row interleave. No per-channel wrapper: it would cost as much as what it measured.
    const t0 = process.hrtime.bigint();
    const c0 = process.cpuUsage();
    const seen = (label: string, f: number, m?: string) => {
      if (m?.startsWith('storing') && phases.readList === undefined) add('readList')(secondsSince(t0));
      progress?.(label, f, m);
    };
    const result = await refreshTuner.call(this, tuner, seen);
    (globalThis as { gc?: () => void }).gc?.(); // with --expose-gc: what stays (snapshot, caches)
    const memory = process.memoryUsage();
    runs.push({
      seconds: secondsSince(t0), cpuSeconds: cpuSince(c0), phases, result, rssAfterMB: rssMB(), peakRssSoFarMB: peakRssMB(),
      heapUsedAfterMB: Math.round(memory.heapUsed / 2 ** 20), externalAfterMB: Math.round(memory.external / 2 ** 20),
    });
    return result;
  };
  await host.host.runCommand(command, [], { progress: { update() {}, done() {} }, out: () => {} });
  const service = await caught;
  const tuner = (service as any).registry.tuners.get('m3u:bench') as Tuner;
  await service.refreshTuner(tuner); // again: every channel known, nothing changed
  if (changed) {
    // A refresh where some channels changed: the changed playlist replaces the file.
    await rename(changed, playlist);
    await service.refreshTuner(tuner);
  }
  const stored = await countChannels(host);
  await host.close();
  out({ runs, channelsStored: stored, peakRssMB: peakRssMB(), ...(process.env.BENCH_SQL_TIMING ? { sql: sql() } : {}) });
}

async function serve(dataDir: string, playlist: string, guide: string | undefined, importFirst: boolean): Promise<void> {
  const caught = catchService();
  const host = await start(dataDir, playlist, guide, true);
  if (importFirst) {
    const command = host.host.findCommand(['guide', 'refresh'])?.entry!;
    await host.host.runCommand(command, [], { progress: { update() {}, done() {} }, out: () => {} });
    await caught;
  }
  const channels = await countChannels(host);
  const programs = await countRows(host, 'livetv_programs');
  // Server-side latency: request parsed → response handed to the kernel ('finish'), so a
  // load generator that is itself CPU-bound (1.8 MB bodies) can be told apart from the server.
  let latencies: number[] = [];
  host.app.server.on('request', (_req, res) => {
    const t0 = process.hrtime.bigint();
    res.once('finish', () => latencies.push(Number(process.hrtime.bigint() - t0) / 1e6));
  });
  process.on('SIGUSR2', () => { latencies = []; }); // after the warm-up
  out({ ready: host.url, token: host.adminToken, channels, programs });
  const stop = async () => {
    const sorted = latencies.sort((a, b) => a - b);
    const at = (p: number) => Math.round((sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN) * 100) / 100;
    const serverLatencyMs = { requests: sorted.length, p50: at(50), p95: at(95), p99: at(99), max: at(100) };
    await host.close();
    out({ peakRssMB: peakRssMB(), serverLatencyMs });
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());
}

if (require.main === module) {
  const [mode, ...args] = process.argv.slice(2);
  const flags = new Set(args.filter((a) => a.startsWith('--')));
  const pos = args.filter((a) => !a.startsWith('--'));
  const task =
    mode === 'saxes' ? saxes(pos[0]!) :
    mode === 'm3u8-parser' ? m3u8Reference(pos[0]!) :
    mode === 'guide' ? guideImport(pos[0]!, pos[1]!, pos[2]!) :
    mode === 'm3u' ? m3uImport(pos[0]!, pos[1]!, pos[2]) :
    mode === 'serve' ? serve(pos[0]!, pos[1]!, pos[2], flags.has('--import')) :
    Promise.reject(new Error(`unknown mode ${mode}`));
  task.catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
