/**
 * Benchmark: GET /api/search on a 10,000-item library, as the web app's
 * search box sends it while someone types (issue #26: p95 ≤ 100 ms).
 *
 * A real test host (SQLite file on disk, listening on 127.0.0.1) with vod,
 * live-tv (the test-pattern tuner: 50 channels with a day of guide) and
 * search. The library's rows are written straight into vod's tables (a scan
 * of 10,000 files would take the bench's whole budget in ffprobe): 6,000
 * movies and 100 shows × 4 seasons × 10 episodes, titles drawn from a word
 * list, each with its metadata row as the local provider writes it. Then
 * TYPED titles are "typed": every prefix of 2 to 8 characters of a random
 * title (and of a word inside one) is one request, one at a time over a
 * keep-alive connection, as the debounced box sends them. A control request
 * (GET /api/version) runs between them, for what the machine alone adds.
 *
 *   node dist/test/bench/run.js search        (SEARCH_BENCH_TYPED=150)
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createTestHost } from '../../sdk/testing.js';
import { mulberry32 } from './random.js';
import { load1 } from './stats.js';
import { REPO_ROOT } from '../helpers/repo.js';

const MOVIES = 6_000;
const SHOWS = 100;
const SEASONS = 4;
const EPISODES = 10;
const TARGET_P95_MS = 100;
const WORDS = ('night river glass empire signal harbour winter orchid machine silent paper garden storm falcon echo hollow crimson northern ' +
  'broken station mirror desert ghost velvet iron summer lantern archive second frontier quiet parallel golden shadow ocean circuit ' +
  'wild kingdom last letter midnight engine fallen crown distant island secret atlas burning bridge').split(' ');

const round = (n: number, d = 1): number => Math.round(n * 10 ** d) / 10 ** d;
const pct = (sorted: number[], p: number): number => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]! : 0);
const summary = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { requests: s.length, p50ms: round(pct(s, 50), 2), p95ms: round(pct(s, 95), 2), p99ms: round(pct(s, 99), 2), maxms: round(s[s.length - 1] ?? 0, 2) };
};
const fold = (s: string) => s.toLowerCase().replace(/^(the|a|an) /, '');

function get(agent: http.Agent, url: string, token: string): Promise<{ status: number; ms: number; body: string }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    http.get(url, { agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { body += c; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started, body }));
    }).on('error', reject);
  });
}

export async function run(): Promise<Record<string, unknown>> {
  const typedTitles = Number(process.env.SEARCH_BENCH_TYPED ?? 150);
  const random = mulberry32(26);
  const pick = () => WORDS[Math.floor(random() * WORDS.length)]!;
  const titleOf = () => {
    const words = Array.from({ length: 1 + Math.floor(random() * 3) }, pick).join(' ');
    return (random() < 0.2 ? 'The ' : '') + words.charAt(0).toUpperCase() + words.slice(1);
  };

  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-bench-search-'));
  await mkdir(path.join(dir, 'movies'));
  await mkdir(path.join(dir, 'shows'));
  const host = await createTestHost({
    listen: true,
    plugins: {
      search: {},
      vod: { libraries: [{ name: 'Movies', type: 'movies', paths: [path.join(dir, 'movies')] }, { name: 'Shows', type: 'shows', paths: [path.join(dir, 'shows')] }], initialScan: 'await' },
      'live-tv': { initialImport: 'await' },
      [path.join(REPO_ROOT, 'dist/examples/tuner-test-pattern')]: { channels: 50 },
    },
  });
  try {
    const knex = host.host.knex;
    const libraries = await knex('vod_libraries').select('id', 'name');
    const movies = libraries.find((l: { name: string }) => l.name === 'Movies').id;
    const shows = libraries.find((l: { name: string }) => l.name === 'Shows').id;
    const items: Record<string, unknown>[] = [];
    const metadata: Record<string, unknown>[] = [];
    const titles: string[] = [];
    const now = Date.now();
    const add = (id: string, library: number, type: string, title: string, parent: string | null, year: number | null, season: number | null, episode: number | null) => {
      items.push({ id, library_id: library, type, parent_id: parent, title, sort_title: fold(title), year, season, episode, added_at: now });
      metadata.push({ item_id: id, library_id: library, fingerprint: 'bench', title, sort_title: fold(title), search_title: fold(title), year, rating: null, runtime: null, details: '{}', poster: null, backdrop: null, updated_at: now });
      if (type !== 'season') titles.push(title);
    };
    for (let i = 0; i < MOVIES; i++) add(`m${i}`, movies, 'movie', titleOf(), null, 1950 + Math.floor(random() * 75), null, null);
    for (let s = 0; s < SHOWS; s++) {
      add(`s${s}`, shows, 'series', titleOf(), null, 1990 + Math.floor(random() * 35), null, null);
      for (let n = 1; n <= SEASONS; n++) {
        add(`s${s}n${n}`, shows, 'season', `Season ${n}`, `s${s}`, null, n, null);
        for (let e = 1; e <= EPISODES; e++) add(`s${s}n${n}e${e}`, shows, 'episode', titleOf(), `s${s}n${n}`, null, n, e);
      }
    }
    for (let i = 0; i < items.length; i += 500) {
      await knex('vod_items').insert(items.slice(i, i + 500));
      await knex('vod_metadata').insert(metadata.slice(i, i + 500));
    }

    const token = host.authHeaders.authorization!.replace(/^Bearer /, '');
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const queries: string[] = [];
    for (let i = 0; i < typedTitles; i++) {
      const title = titles[Math.floor(random() * titles.length)]!;
      // Half the time the user types a word from inside the title.
      const text = random() < 0.5 ? title : title.split(' ').pop()!;
      for (let n = 2; n <= Math.min(8, text.length); n++) queries.push(text.slice(0, n));
    }
    // Warm-up: the first queries compile statements and fill caches.
    for (const q of queries.slice(0, 20)) await get(agent, `${host.url}/api/search?q=${encodeURIComponent(q)}`, token);

    const loadStart = load1();
    const searches: number[] = [];
    const control: number[] = [];
    let hits = 0;
    let errors = 0;
    for (const q of queries) {
      const res = await get(agent, `${host.url}/api/search?q=${encodeURIComponent(q)}&limit=8`, token);
      if (res.status !== 200) errors++;
      else {
        const body = JSON.parse(res.body) as Record<string, unknown[]>;
        hits += ['movies', 'shows', 'episodes', 'channels', 'programmes'].reduce((n, k) => n + (body[k]?.length ?? 0), 0);
      }
      searches.push(res.ms);
      control.push((await get(agent, `${host.url}/api/version`, token)).ms);
    }
    agent.destroy();
    const result = summary(searches);
    return {
      library: { items: items.length, movies: MOVIES, shows: SHOWS, episodes: SHOWS * SEASONS * EPISODES, channels: 50 },
      search: { ...result, errors, meanHitsPerAnswer: round(hits / Math.max(1, searches.length - errors), 1) },
      controlVersion: summary(control),
      targetP95ms: TARGET_P95_MS,
      meetsTarget: result.p95ms <= TARGET_P95_MS,
      load1: { start: loadStart, end: load1() },
    };
  } finally {
    await host.close();
    await rm(dir, { recursive: true, force: true });
  }
}

if (require.main === module) run().then((r) => console.log(JSON.stringify(r, null, 2)), (err) => { console.error(err); process.exit(1); });
