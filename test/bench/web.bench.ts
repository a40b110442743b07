/**
 * The web app in Chromium (Debian's, headless, as the e2e tests run it):
 *
 *  a. First load of the sign-in page, cold cache (a fresh browser context per run):
 *     the JavaScript it loads — bytes as served gzip (`Accept-Encoding: gzip`,
 *     target ≤ 300 KB), brotli, uncompressed, and as Chromium itself fetched it —
 *     and the time to interactive on loopback: navigation start → the app marked
 *     itself ready (body[data-ready]) with the Username field rendered and focused
 *     (target ≤ 1 s). Median and max of several runs.
 *  b. The guide grid with 500 channels × 24 h (m3u-tuner over a generated playlist,
 *     xmltv-guide over a generated guide of 30–60 min programmes): signed in, #/guide
 *     rendered, then scrolled down, right, up, left and diagonally, by scrollBy() in
 *     requestAnimationFrame, for several seconds under a Chromium performance trace.
 *     Frames per second from the trace's frame events (DrawFrame; DroppedFrame
 *     counted): average, the worst 1-second window and the longest frame (target:
 *     never below 30 fps), with the page's own requestAnimationFrame rate beside it.
 *  c. A movie library of 10,000 items: its grid scrolled down for 8 s while pages load
 *     (target ≥ 50 fps), measured the same way, with the cards in the DOM at the end.
 *
 * Every figure carries the 1-minute load average around it (2-core machine, shared).
 *
 *   node dist/test/bench/run.js web
 *   WEB_BENCH_LOADS=3 WEB_BENCH_CHANNELS=500 WEB_BENCH_ITEMS=10000 node dist/test/bench/run.js web
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { chromium } from 'playwright-core';
import { createTestHost, type TestHost } from '../../sdk/testing.js';
import { CHROMIUM, CHROMIUM_ARGS } from '../helpers/browser.js';
import { channelName, generateGuidePlaylist, guideId, writer, xmltvTime } from './guide-generator.js';
import { mulberry32 } from './random.js';
import { load1, median } from './stats.js';

// The functions given to page.evaluate()/addInitScript() run in the page; the project compiles without the DOM lib.
declare const document: any;
declare const window: any;
declare const performance: any;
declare const requestAnimationFrame: any;

const LOADS = Number(process.env.WEB_BENCH_LOADS ?? 7);
const CHANNELS = Number(process.env.WEB_BENCH_CHANNELS ?? 500);
const LIBRARY_ITEMS = Number(process.env.WEB_BENCH_ITEMS ?? 10_000);
const round = (n: number, d = 1): number => Math.round(n * 10 ** d) / 10 ** d;
const KB = 1024;
/** Channel logos in the playlist are remote URLs: nothing may leave the machine, so every name but loopback fails to resolve (the app's fallback logos show). */
const ARGS = [...CHROMIUM_ARGS, '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1'];


/** A guide of programmes of 30, 45 or 60 minutes per channel from `begin` to `end`. */
export async function generateDayGuide(file: string, channels: number, begin: number, end: number): Promise<number> {
  const rnd = mulberry32(7);
  const words = ['news', 'live', 'night', 'city', 'river', 'story', 'planet', 'kitchen', 'garden', 'sport', 'match', 'doctor', 'family', 'secret', 'island', 'road'];
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)]!;
  const title = () => { const s = `${pick(words)} ${pick(words)}${rnd() < 0.5 ? ` ${pick(words)}` : ''}`; return s[0]!.toUpperCase() + s.slice(1); };
  const w = await writer(file);
  let chunk = '<?xml version="1.0" encoding="UTF-8"?>\n<tv generator-info-name="antenna-web-bench">\n';
  for (let c = 0; c < channels; c++) chunk += `  <channel id="${guideId(c)}"><display-name>${channelName(c)}</display-name></channel>\n`;
  await w.write(chunk);
  let programmes = 0;
  for (let c = 0; c < channels; c++) {
    chunk = '';
    // Channels start at different offsets, so programme edges do not line up across rows.
    let t = begin - Math.floor(rnd() * 4) * 15 * 60_000;
    while (t < end) {
      const stop = t + pick([30, 45, 60]) * 60_000;
      chunk += `  <programme start="${xmltvTime(t)}" stop="${xmltvTime(stop)}" channel="${guideId(c)}"><title>${title()}</title>` +
        `<sub-title>${title()}</sub-title><desc>${title()} and ${title().toLowerCase()}: ${title().toLowerCase()}.</desc><category>${pick(['News', 'Drama', 'Sport', 'Film'])}</category></programme>\n`;
      programmes++;
      t = stop;
    }
    await w.write(chunk);
  }
  await w.write('</tv>\n');
  await w.end();
  return programmes;
}

/** Bytes of a file as served with the given Accept-Encoding (the content-length of what goes on the wire). */
function servedBytes(url: string, encoding: string): Promise<{ bytes: number; encoding: string }> {
  return new Promise((resolve, reject) => {
    http.get(url, { headers: { 'accept-encoding': encoding } }, (res) => {
      let bytes = 0;
      res.on('data', (d: Buffer) => { bytes += d.length; });
      res.on('end', () => resolve({ bytes, encoding: String(res.headers['content-encoding'] ?? 'identity') }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

// ---------------------------------------------------------------------------
// a. The sign-in page

/** Installed before the page's scripts: the moment the sign-in form is usable, relative to navigation start. */
function markInteractive() {
  const check = () => {
    if (window.__interactive) return;
    const input = document.querySelector('input[name="username"]');
    if (document.body?.dataset.ready === 'true' && input && document.activeElement === input) window.__interactive = performance.now();
    else requestAnimationFrame(check);
  };
  document.addEventListener('focusin', check, true);
  requestAnimationFrame(check);
}

async function signInPage(browser: Browser, url: string) {
  const runs: { tti: number; domContentLoaded: number; load: number; scripts: string[]; chromiumBytes: number; chromiumEncodings: string[]; requests: number }[] = [];
  for (let i = 0; i < LOADS; i++) {
    const context = await browser.newContext({ viewport: { width: 1366, height: 850 } });
    const page = await context.newPage();
    await page.addInitScript(markInteractive);
    const scripts: string[] = [];
    const sizes: Promise<{ bytes: number; encoding: string }>[] = [];
    let requests = 0;
    page.on('response', (response) => {
      requests++;
      if (response.request().resourceType() !== 'script') return;
      scripts.push(response.url());
      sizes.push(response.request().sizes().then((s) => ({ bytes: s.responseBodySize, encoding: response.headers()['content-encoding'] ?? 'identity' })));
    });
    await page.goto(url);
    await page.waitForFunction(() => window.__interactive, undefined, { timeout: 30_000, polling: 50 });
    const timing = await page.evaluate(() => {
      const nav = performance.getEntriesByType('navigation')[0];
      return { tti: window.__interactive as number, domContentLoaded: nav.domContentLoadedEventEnd as number, load: nav.loadEventEnd as number };
    });
    await page.waitForLoadState('networkidle');
    const got = await Promise.all(sizes);
    runs.push({
      ...timing, scripts, requests,
      chromiumBytes: got.reduce((sum, s) => sum + s.bytes, 0),
      chromiumEncodings: [...new Set(got.map((s) => s.encoding))],
    });
    await context.close();
  }
  const scripts = [...new Set(runs.flatMap((r) => r.scripts))];
  const served = async (encoding: string) => {
    const all = await Promise.all(scripts.map((s) => servedBytes(s, encoding)));
    return { kb: round(all.reduce((sum, s) => sum + s.bytes, 0) / KB), encodings: [...new Set(all.map((s) => s.encoding))] };
  };
  const ttis = runs.map((r) => r.tti);
  return {
    scripts: scripts.map((s) => new URL(s).pathname),
    jsGzipKB: await served('gzip'),
    jsBrotliKB: await served('br'),
    jsUncompressedKB: await served('identity'),
    jsAsChromiumFetchedKB: { kb: round(median(runs.map((r) => r.chromiumBytes)) / KB), encodings: runs[0]!.chromiumEncodings },
    requestsPerLoad: median(runs.map((r) => r.requests)),
    runs: runs.length,
    timeToInteractiveMs: { median: round(median(ttis)), max: round(Math.max(...ttis)), all: ttis.map((x) => round(x)) },
    domContentLoadedMs: { median: round(median(runs.map((r) => r.domContentLoaded))), max: round(Math.max(...runs.map((r) => r.domContentLoaded))) },
    targets: { jsGzipKB: 300, timeToInteractiveMs: 1000 },
  };
}

// ---------------------------------------------------------------------------
// b. The guide grid

interface TraceEvent { name: string; ph: string; ts: number; dur?: number; tdur?: number; cat: string; args?: any; pid: number; tid: number }

/**
 * Where the time went, per thread of the page's renderer (main, compositor, raster
 * workers): wall and CPU time of the outermost complete events, and the main
 * thread's by kind of work. CPU time per frame says how near the page is to its
 * frame budget regardless of what else the machine runs.
 */
function threadTimes(events: TraceEvent[], from: number, to: number) {
  const names = new Map<string, string>();
  for (const e of events) if (e.ph === 'M' && e.name === 'thread_name') names.set(`${e.pid}:${e.tid}`, e.args?.name);
  const mainKey = [...names].find(([, n]) => n === 'CrRendererMain')?.[0];
  const rendererPid = mainKey?.split(':')[0];
  const perThread = new Map<string, { wall: number; cpu: number }>();
  const busyUntil = new Map<string, number>();
  const mainByName = new Map<string, { wall: number; cpu: number }>();
  const sorted = events.filter((e) => e.ph === 'X' && e.dur !== undefined && e.ts / 1000 >= from && e.ts / 1000 <= to && String(e.pid) === rendererPid).sort((a, b) => a.ts - b.ts);
  for (const e of sorted) {
    const key = `${e.pid}:${e.tid}`;
    const thread = names.get(key) ?? 'other';
    const label = thread.replace(/\d+$/, '');
    // Only the outermost events: the ones nested in an earlier event's span are part of its time.
    if (e.ts < (busyUntil.get(key) ?? -Infinity)) continue;
    busyUntil.set(key, e.ts + e.dur!);
    const t = perThread.get(label) ?? { wall: 0, cpu: 0 };
    t.wall += e.dur! / 1000;
    t.cpu += (e.tdur ?? e.dur!) / 1000;
    perThread.set(label, t);
    if (key === mainKey) {
      const m = mainByName.get(e.name) ?? { wall: 0, cpu: 0 };
      m.wall += e.dur! / 1000;
      m.cpu += (e.tdur ?? e.dur!) / 1000;
      mainByName.set(e.name, m);
    }
  }
  const ms = (x: { wall: number; cpu: number }) => ({ wallMs: round(x.wall), cpuMs: round(x.cpu) });
  return {
    threads: Object.fromEntries([...perThread].map(([k, v]) => [k, ms(v)])),
    mainThreadTop: Object.fromEntries([...mainByName].sort((a, b) => b[1].wall - a[1].wall).slice(0, 12).map(([k, v]) => [k, ms(v)])),
  };
}

/** Scrolls the guide by a step every animation frame through the phases; resolves with the frame timestamps. */
function scrollBy(selector: string | null, phases: { frames: number; dx: number; dy: number }[]): Promise<number[]> {
  const el = selector ? document.querySelector(selector) : document.scrollingElement;
  const stamps: number[] = [];
  let phase = 0;
  let frame = 0;
  return new Promise((resolve) => {
    const step = (t: number) => {
      stamps.push(t);
      const p = phases[phase];
      if (!p) { resolve(stamps); return; }
      el.scrollBy(p.dx, p.dy);
      if (++frame >= p.frames) { phase++; frame = 0; }
      requestAnimationFrame(step);
    };
    requestAnimationFrame(step);
  });
}

/** Frame rate figures from frame timestamps (ms) within [start, end]. */
function frameFigures(stamps: number[], start: number, end: number) {
  const ts = stamps.filter((t) => t >= start && t <= end).sort((a, b) => a - b);
  const seconds = (end - start) / 1000;
  let worst = Infinity;
  // Every 1-second window starting at a frame (or at the start), fully inside the run.
  for (let i = 0, j = 0; i < ts.length && ts[i]! + 1000 <= end; i++) {
    while (j < ts.length && ts[j]! < ts[i]! + 1000) j++;
    worst = Math.min(worst, j - i);
  }
  let longest = 0;
  for (let i = 1; i < ts.length; i++) longest = Math.max(longest, ts[i]! - ts[i - 1]!);
  return { frames: ts.length, averageFps: round(ts.length / seconds), worst1sFps: worst === Infinity ? null : worst, longestFrameMs: round(longest) };
}

/** A desktop-sized page of the web app, signed in as the admin, with the page's errors collected. */
async function signedIn(browser: Browser, host: TestHost) {
  const context = await browser.newContext({ viewport: { width: 1366, height: 850 } });
  const page: Page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${host.url}/`);
  await page.getByLabel('Username').fill('admin');
  await page.getByLabel('Password').fill(host.adminPassword);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForSelector('header.topbar');
  return { context, page, errors };
}

async function guideGrid(browser: Browser, host: TestHost) {
  const { context, page, errors } = await signedIn(browser, host);
  const opened = Date.now();
  await page.evaluate(() => { document.location.hash = '/guide'; });
  await page.waitForFunction(() => document.querySelectorAll('.guide-prog').length > 50, undefined, { timeout: 30_000 });
  const firstRenderMs = Date.now() - opened;
  await page.waitForLoadState('networkidle');
  const dom = await page.evaluate(() => ({ blocks: document.querySelectorAll('.guide-prog').length, channels: document.querySelectorAll('.guide-channel').length, elements: document.querySelectorAll('*').length }));

  // ~60 frames a second: down 3 s, right 2 s, up 2 s, left 2 s, diagonally 1.5 s.
  const phases = [
    { frames: 180, dx: 0, dy: 48 }, { frames: 120, dx: 36, dy: 0 }, { frames: 120, dx: 0, dy: -40 },
    { frames: 120, dx: -30, dy: 0 }, { frames: 90, dx: 24, dy: 30 },
  ];
  const scrolled = await tracedScroll(browser, page, '.guide-scroller', phases);
  const domAfter = await page.evaluate(() => ({ blocks: document.querySelectorAll('.guide-prog').length, channels: document.querySelectorAll('.guide-channel').length }));
  await context.close();

  return { channels: CHANNELS, firstRenderMs, domWhenRendered: dom, domAfterScrolling: domAfter, ...scrolled, pageErrors: errors, target: { minFps: 30 } };
}

/**
 * Scrolls `selector` (the document when it is null) by `phases` in requestAnimationFrame under a
 * Chromium performance trace, and gives the frame rate from the trace's DrawFrame events and
 * from the page's own requestAnimationFrame, with the renderer's CPU per frame.
 */
async function tracedScroll(browser: Browser, page: Page, selector: string | null, phases: { frames: number; dx: number; dy: number }[]) {
  const loadBefore = load1();
  await browser.startTracing(page, { categories: ['devtools.timeline', 'disabled-by-default-devtools.timeline', 'disabled-by-default-devtools.timeline.frame'] });
  // scrollBy runs in the page: passed as source text, as page.evaluate() sends only the function it is given.
  const span = await page.evaluate(`(async () => {
    const start = performance.now();
    const stamps = await (${scrollBy.toString()})(${JSON.stringify(selector)}, ${JSON.stringify(phases)});
    const el = ${JSON.stringify(selector)} ? document.querySelector(${JSON.stringify(selector)}) : document.scrollingElement;
    return { start, end: performance.now(), stamps, scrolled: { top: el.scrollTop, left: el.scrollLeft } };
  })()`).catch(async (err) => { await browser.stopTracing(); throw err; }) as { start: number; end: number; stamps: number[]; scrolled: { top: number; left: number } };
  const trace = JSON.parse((await browser.stopTracing()).toString()) as { traceEvents: TraceEvent[] };
  const loadAfter = load1();

  // The trace's clock (µs) is not the page's; the run is the stretch between the first and last frame the page drew while scrolling.
  const events = trace.traceEvents;
  const names = new Map<string, number>();
  for (const e of events) if (e.cat.includes('frame') || e.name.includes('Frame') || e.name === 'PipelineReporter') names.set(e.name, (names.get(e.name) ?? 0) + 1);
  const draws = events.filter((e) => e.name === 'DrawFrame').map((e) => e.ts / 1000);
  const dropped = events.filter((e) => e.name === 'DroppedFrame').length;
  const seconds = (span.end - span.start) / 1000;
  // The scrolling is the last `seconds` of drawing: from the first draw after tracing started to the last.
  const traceStart = draws.length ? Math.min(...draws) : 0;
  const traceEnd = draws.length ? Math.max(...draws) : 0;
  const fromTrace = draws.length ? frameFigures(draws, traceEnd - seconds * 1000, traceEnd) : null;
  const fromRaf = frameFigures(span.stamps, span.start, span.end);
  const times = threadTimes(events, traceEnd - seconds * 1000, traceEnd);
  const main = Object.entries(times.threads).find(([k]) => k === 'CrRendererMain')?.[1];
  if (process.env.WEB_BENCH_TRACE) await writeFile(process.env.WEB_BENCH_TRACE, JSON.stringify(trace));
  return {
    scrolledTo: span.scrolled,
    scrollSeconds: round(seconds, 2),
    trace: fromTrace ? { ...fromTrace, droppedFrames: dropped, drawSpanSeconds: round((traceEnd - traceStart) / 1000, 2) } : { error: 'no DrawFrame events in the trace' },
    requestAnimationFrame: fromRaf,
    mainThreadCpuMsPerFrame: main && fromTrace ? round(main.cpuMs / Math.max(1, fromTrace.frames), 2) : null,
    time: times,
    frameEventCounts: Object.fromEntries([...names].filter(([n]) => ['DrawFrame', 'DroppedFrame', 'BeginFrame', 'BeginMainThreadFrame', 'ActivateLayerTree'].includes(n))),
    loadavg1: { before: loadBefore, after: loadAfter },
  };
}

/**
 * A library of LIBRARY_ITEMS movies (rows written straight into vod's tables, as a scan would
 * leave them), its grid scrolled down for 8 s: pages load as the end comes near, so the grid
 * grows while it scrolls.
 */
async function libraryGrid(browser: Browser, host: TestHost) {
  const knex = host.host.knex;
  const library = (await knex('vod_libraries').where({ name: 'Movies' }).first('id')).id as number;
  const random = mulberry32(7);
  const words = ['Night', 'River', 'Stone', 'Silver', 'Garden', 'Winter', 'Harbour', 'Echo', 'Paper', 'Crown', 'Falcon', 'Glass'];
  const now = Date.now();
  const rows = Array.from({ length: LIBRARY_ITEMS }, (_, i) => {
    const title = `${words[Math.floor(random() * words.length)]} ${words[Math.floor(random() * words.length)]} ${i}`;
    return { id: `bench${i}`, library_id: library, type: 'movie', parent_id: null, title, sort_title: title.toLowerCase(), year: 1950 + (i % 75), season: null, episode: null, added_at: now };
  });
  for (let i = 0; i < rows.length; i += 500) await knex('vod_items').insert(rows.slice(i, i + 500));

  const { context, page, errors } = await signedIn(browser, host);
  const opened = Date.now();
  await page.evaluate((id) => { document.location.hash = `/library/${id}`; }, library);
  // The grid renders only the rows near the viewport: a screenful of cards, not the whole first page.
  await page.waitForFunction(() => document.querySelectorAll('.library-grid .card').length >= 20, undefined, { timeout: 30_000 });
  const firstRenderMs = Date.now() - opened;
  await page.waitForLoadState('networkidle');
  // The grid's scroller: the first ancestor that scrolls, else the document.
  const scroller = await page.evaluate(() => {
    for (let el = document.querySelector('.library-grid'); el; el = el.parentElement) {
      const style = window.getComputedStyle(el);
      if (/auto|scroll/.test(style.overflowY) && el.scrollHeight > el.clientHeight) {
        if (!el.id) el.id = 'bench-scroller';
        return `#${el.id}`;
      }
    }
    return null;
  });
  const scrolled = await tracedScroll(browser, page, scroller, [{ frames: 480, dx: 0, dy: 40 }]);
  const cards = await page.evaluate(() => document.querySelectorAll('.library-grid .card').length);
  await context.close();
  return { items: LIBRARY_ITEMS, firstRenderMs, cardsInDomAfterScrolling: cards, ...scrolled, pageErrors: errors, target: { minFps: 50 } };
}

export async function run(): Promise<Record<string, unknown>> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-web-bench-'));
  let host: TestHost | undefined;
  let browser: Browser | undefined;
  try {
    const now = Date.now();
    const playlist = path.join(dir, 'bench.m3u');
    const moviesDir = path.join(dir, 'movies');
    await mkdir(moviesDir);
    const guide = path.join(dir, 'guide.xml');
    await generateGuidePlaylist(playlist, CHANNELS);
    const programmes = await generateDayGuide(guide, CHANNELS, now - 2 * 3600_000, now + 26 * 3600_000);
    const started = Date.now();
    host = await createTestHost({
      listen: true,
      plugins: {
        web: {},
        'live-tv': { initialImport: 'await' },
        dvr: { path: path.join(dir, 'recordings') },
        'm3u-tuner': { sources: [{ name: 'Bench', url: playlist, refresh: '1000d' }] },
        'xmltv-guide': { sources: [{ name: 'Bench', url: guide, refresh: '1000d' }] },
        vod: { libraries: [{ name: 'Movies', type: 'movies', paths: [moviesDir] }], initialScan: 'await' },
      },
    });
    const setupSeconds = round((Date.now() - started) / 1000, 2);
    const check = (await host.inject({ method: 'GET', url: `/programs?limit=1&offset=${CHANNELS - 1}`, headers: host.authHeaders })).json();
    if (check.total_channels !== CHANNELS || !check.channels[0]?.programs.length) throw new Error(`the guide did not import: ${JSON.stringify(check).slice(0, 300)}`);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, timeout: 30_000 });

    const loadA = load1();
    const signIn = await signInPage(browser, `${host.url}/`);
    const signInLoad = { before: loadA, after: load1() };
    const grid = await guideGrid(browser, host);
    const library = await libraryGrid(browser, host);
    return {
      chromium: browser.version(),
      signInPage: { ...signIn, loadavg1: signInLoad },
      guide: { programmes, hostSetupSeconds: setupSeconds, ...grid },
      libraryGrid: library,
      loadavg: os.loadavg().map((l) => round(l, 2)),
    };
  } finally {
    await browser?.close().catch(() => {});
    await host?.close();
    await rm(dir, { recursive: true, force: true });
  }
}
