/**
 * Benchmark: guide matching (guide-match.ts) of 10,000 playlist channels against a
 * 20,000-channel guide, as remap does it after an import: building the matcher, then matching
 * every channel. Generated names shaped like real lists: words from a shared vocabulary (so
 * trigrams are common and the fuzzy index works for its living), numbers, HD/SD twins, +1
 * channels, country prefixes and tags, typos; a third of the playlist has no guide channel
 * (the fuzzy step runs for those). The yardstick is the target, 2 s. Also the
 * precision and recall on the hand-labelled real data (test/plugins/live-tv/guide-match-labels.ts).
 *
 * Run directly: node <outDir>/test/bench/guide-match.bench.js (prints JSON)
 */
import { performance } from 'node:perf_hooks';
import { GuideMatcher, type GuideEntry } from '../../plugins/live-tv/guide-match.js';
import { matchRealData } from '../plugins/live-tv/guide-match-labels.js';
import { mulberry32 } from './random.js';
import { load1, median } from './stats.js';

const GUIDE_CHANNELS = 20_000;
const PLAYLIST_CHANNELS = 10_000;
const RUNS = 5;

const WORDS = ('news sport sports movies cinema kids music one world live prime star sky nova tele channel tv radio ' +
  'discovery history nature science travel food comedy drama action family classic gold plus max fox cartoon junior ' +
  'national global city metro regional info business weather today direct premium extra arena golf racing fight ' +
  'anime docs crime mystery retro vintage euro asia africa latino uno dos rai zdf ard bbc itv cnn bfm').split(' ');
const COUNTRIES = ['UK', 'US', 'DE', 'FR', 'IT', 'ES', 'NL', 'PL', 'GR', 'PT'];

export function generate() {
  const rnd = mulberry32(28);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
  const guide: GuideEntry[] = [];
  const seen = new Set<string>();
  while (guide.length < GUIDE_CHANNELS) {
    const words = Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => pick(WORDS));
    if (rnd() < 0.4) words.push(String(1 + Math.floor(rnd() * 20)));
    const country = pick(COUNTRIES);
    const base = `${words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join(' ')} ${country}`;
    const name = rnd() < 0.05 ? `${base} +1` : base;
    if (seen.has(name)) continue;
    seen.add(name);
    guide.push({ sourceId: 'guide', guideId: `${name.replace(/\W+/g, '')}.${country.toLowerCase()}`, names: rnd() < 0.3 ? [name, `${name} HD`] : [name] });
  }
  const playlist = Array.from({ length: PLAYLIST_CHANNELS }, () => {
    const g = pick(guide);
    const r = rnd();
    const [name] = g.names;
    const country = name!.split(' ').filter((w) => COUNTRIES.includes(w)).pop()!;
    const bare = name!.replace(` ${country}`, '');
    if (r < 0.25) return { name: bare, tvgId: g.guideId, tvgName: null };                          // exact tvg-id
    if (r < 0.35) return { name: bare, tvgId: g.guideId.toUpperCase(), tvgName: null };             // tvg-id in another case
    if (r < 0.5) return { name: `${country}: ${name} FHD`, tvgId: null, tvgName: null };           // prefix and tag
    if (r < 0.6) return { name: `${name} [${country}]`.replace(/e/, 'é'), tvgId: null, tvgName: null }; // accent and tag
    if (r < 0.67) return { name: name!.replace(/(\w)(\w)(\w*)$/, '$2$1$3'), tvgId: null, tvgName: null }; // a typo
    return { name: `${pick(WORDS)} ${pick(WORDS)} Zeta ${pick(WORDS)}`, tvgId: `none${Math.floor(rnd() * 1e9)}`, tvgName: null }; // in no guide
  });
  return { guide, playlist };
}

export async function run() {
  const { guide, playlist } = generate();
  const build: number[] = [], matching: number[] = [], total: number[] = [], cpu: number[] = [];
  let methods: Record<string, number> = {};
  for (let i = 0; i < RUNS; i++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const m = new GuideMatcher(guide);
    const t1 = performance.now();
    methods = { none: 0 };
    for (const c of playlist) {
      const found = m.match(c);
      const k = found?.method ?? 'none';
      methods[k] = (methods[k] ?? 0) + 1;
    }
    const t2 = performance.now();
    const c = process.cpuUsage(c0);
    build.push(t1 - t0); matching.push(t2 - t1); total.push(t2 - t0); cpu.push((c.user + c.system) / 1000);
  }
  const ms = (x: number) => Math.round(x);
  return {
    guideChannels: GUIDE_CHANNELS, playlistChannels: PLAYLIST_CHANNELS, runs: RUNS, load1: load1(),
    // Wall time, and the CPU time this process had (what the machine's other work does not inflate as much).
    medianMs: { buildIndex: ms(median(build)), matchAll: ms(median(matching)), total: ms(median(total)), totalCpu: ms(median(cpu)) },
    targetMs: 2000, methods,
    realData: await (async () => { const { wrong, ...figures } = await matchRealData(); return { ...figures, wrong: wrong.length }; })(),
  };
}

if (require.main === module) run().then((r) => console.log(JSON.stringify(r, null, 2)));
