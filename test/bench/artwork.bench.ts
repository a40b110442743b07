/**
 * Benchmark: GET /api/items/{id}/images/poster?width= (issue #26: a poster at
 * ?width=300 served from cache in ≤ 20 ms).
 *
 * A real test host over HTTP on 127.0.0.1 with vod over one movie (a 1 s
 * clip) and a 2000×3000 JPEG poster beside it. First responses: WIDTHS
 * distinct widths, each scaled by ffmpeg on its request. Cached responses:
 * ?width=300 asked CACHED times once made, with the browser's ETag
 * (If-None-Match → 304) and without (200 with the bytes). A control request
 * (GET /api/version) runs between them.
 *
 *   node dist/test/bench/run.js artwork
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { clip, runFfmpeg, vodHost } from '../plugins/vod/fixtures.js';
import { load1 } from './stats.js';

const WIDTHS = 12;
const CACHED = 300;
const TARGET_CACHED_MS = 20;

const round = (n: number, d = 1): number => Math.round(n * 10 ** d) / 10 ** d;
const pct = (sorted: number[], p: number): number => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]! : 0);
const summary = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { requests: s.length, p50ms: round(pct(s, 50), 2), p95ms: round(pct(s, 95), 2), maxms: round(s[s.length - 1] ?? 0, 2) };
};

function get(agent: http.Agent, url: string, token: string, etag?: string): Promise<{ status: number; ms: number; etag?: string; bytes: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    http.get(url, { agent, headers: { authorization: `Bearer ${token}`, ...(etag ? { 'if-none-match': etag } : {}) } }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => { bytes += c.length; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started, etag: res.headers.etag, bytes }));
    }).on('error', reject);
  });
}

export async function run(): Promise<Record<string, unknown>> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-bench-artwork-'));
  const folder = path.join(dir, 'movies', 'Big Poster (2020)');
  await mkdir(folder, { recursive: true });
  await clip(path.join(folder, 'Big Poster (2020).mp4'), { seconds: 1, width: 320, height: 180 });
  await runFfmpeg(['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc2=s=2000x3000', '-frames:v', '1', '-q:v', '3', path.join(folder, 'poster.jpg')]);
  const host = await vodHost([{ name: 'Movies', type: 'movies', paths: [path.join(dir, 'movies')] }], { listen: true });
  try {
    const auth = host.authHeaders;
    const library = (await host.inject({ method: 'GET', url: '/libraries', headers: auth })).json().libraries[0];
    const item = (await host.inject({ method: 'GET', url: `/library/${library.id}`, headers: auth })).json().items[0];
    const poster = `${host.url}${item.poster_url as string}`;
    const token = auth.authorization.replace(/^Bearer /, '');
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const loadStart = load1();

    const first: number[] = [];
    let bytes300 = 0;
    for (let i = 0; i < WIDTHS; i++) {
      const width = 300 + 20 * (i + 1); // a width not made yet
      const res = await get(agent, `${poster}&width=${width}`, token);
      if (res.status !== 200) throw new Error(`first ${width}: ${res.status}`);
      first.push(res.ms);
    }
    const made = await get(agent, `${poster}&width=300`, token);
    first.push(made.ms);
    bytes300 = made.bytes;

    const cached: number[] = [];
    const notModified: number[] = [];
    const control: number[] = [];
    for (let i = 0; i < CACHED; i++) {
      const full = await get(agent, `${poster}&width=300`, token);
      if (full.status !== 200) throw new Error(`cached: ${full.status}`);
      cached.push(full.ms);
      const conditional = await get(agent, `${poster}&width=300`, token, made.etag);
      if (conditional.status !== 304) throw new Error(`conditional: ${conditional.status}`);
      notModified.push(conditional.ms);
      control.push((await get(agent, `${host.url}/api/version`, token)).ms);
    }
    agent.destroy();
    const cachedSummary = summary(cached);
    return {
      source: '2000x3000 JPEG',
      firstResponse: { ...summary(first), what: 'scaled by ffmpeg on the request' },
      cachedWidth300: { ...cachedSummary, bytes: bytes300 },
      notModifiedWidth300: summary(notModified),
      controlVersion: summary(control),
      targetCachedMs: TARGET_CACHED_MS,
      meetsTarget: cachedSummary.p95ms <= TARGET_CACHED_MS,
      load1: { start: loadStart, end: load1() },
    };
  } finally {
    await host.close();
    await rm(dir, { recursive: true, force: true });
  }
}

if (require.main === module) run().then((r) => console.log(JSON.stringify(r, null, 2)), (err) => { console.error(err); process.exit(1); });
