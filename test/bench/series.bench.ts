/**
 * Series rules figures.
 *
 * 1. Evaluation at scale: a generated 2,000-channel × 14-day guide imported into a real core
 *    (SQLite, in process), 500 rules stored (titles of the guide airing 2 to 40 times, some
 *    as keywords or regular expressions; all, new or new-or-unknown airings), then one evaluation of them all,
 *    timed through POST /api/dvr/rules (the 501st rule: the route evaluates every rule), and a
 *    second one (PATCH, nothing changed: idempotent). Target ≤ 2 s.
 * 2. A simulated week of a 50-rule household on one source with 2 streams: the planner
 *    (series.ts) run every hour of a clock that moves a week, against a guide that is
 *    re-imported daily (7 days ahead), each plan applied as the DVR applies it, recordings
 *    starting and completing as the clock passes them. Figures: duplicate recordings (an
 *    episode recorded twice: target 0) and missed airings that had a free slot (an episode a
 *    rule wanted, never recorded, although one of its airings had a stream free all along its
 *    window at the end: target 0).
 *
 *   node dist/test/bench/run.js series
 *   SERIES_BENCH_CHANNELS=200 node dist/test/bench/run.js series
 *
 * Each evaluation also reports the process's CPU seconds (main thread and SQLite's): on a shared
 * machine the wall time stretches with the load, the CPU time much less.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { MatchedAiring } from '../../sdk/livetv.js';
import { createTestHost } from '../../sdk/testing.js';
import { createLogger } from '../../core/logging/logger.js';
import type { Recording } from '../../plugins/dvr/model.js';
import { defaultSpec, type Rule } from '../../plugins/dvr/rules.js';
import { episodeIdentity, plan, replannable, wanted } from '../../plugins/dvr/series.js';
import { TunerSlots } from '../../plugins/dvr/slots.js';
import { generateGuide, generateGuidePlaylist } from './guide-generator.js';
import { mulberry32 } from './random.js';

const CHANNELS = Number(process.env.SERIES_BENCH_CHANNELS ?? 2000);
const DAYS = 14;
const RULES = 500;
const HOUR = 3600_000;
const DAY = 24 * HOUR;
const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;
const cpuSeconds = (since: NodeJS.CpuUsage) => { const u = process.cpuUsage(since); return round((u.user + u.system) / 1e6); };

export async function run(): Promise<Record<string, unknown>> {
  return { evaluation: await evaluation(), week: week() };
}

export async function evaluation(): Promise<Record<string, unknown>> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-series-bench-'));
  try {
    const begin = Math.floor(Date.now() / HOUR) * HOUR;
    const guideFile = path.join(dir, 'guide.xml');
    const playlist = path.join(dir, 'guide.m3u');
    const generated = await generateGuide(guideFile, CHANNELS, DAYS, begin);
    await generateGuidePlaylist(playlist, CHANNELS);
    const i0 = Date.now();
    const ic = process.cpuUsage();
    const host = await createTestHost({
      logger: createLogger({ level: 'error', output: 'json' }).logger, // a failure says why
      dataDir: path.join(dir, 'data'),
      clock: { now: () => begin + HOUR },
      plugins: {
        'live-tv': { initialImport: 'await' },
        'm3u-tuner': { sources: [{ name: 'Bench', url: playlist, maxStreams: 4 }] },
        'xmltv-guide': { sources: [{ url: guideFile }], maxAge: '100000d' },
        dvr: { path: path.join(dir, 'recordings') },
      },
    });
    const importSeconds = (Date.now() - i0) / 1000;
    const importCpu = cpuSeconds(ic);
    try {
      const knex = host.host.knex;
      // Rules as a household makes them, for series: titles airing 2 to 40 times in the fortnight, a few as keywords or patterns.
      const titles = (await knex('livetv_programs').groupBy('title').havingBetween(knex.raw('count(*)') as never, [2, 40]).limit(20_000).select('title'))
        .map((r: { title: string }) => r.title);
      const rnd = mulberry32(29);
      const pick = <T>(list: T[]) => list[Math.floor(rnd() * list.length)];
      const airings = ['all', 'new', 'new-or-unknown'] as const;
      const rows = [];
      for (let i = 0; i < RULES; i++) {
        const spec = { ...defaultSpec(60, 120), airings: pick([...airings]), priority: Math.floor(rnd() * 3), keep: rnd() < 0.5 ? { latest: 5 } : null };
        const kind = rnd();
        if (kind < 0.9) spec.title = pick(titles);
        else if (kind < 0.96) spec.keyword = pick(titles).toLowerCase();
        else spec.regex = `^${pick(titles).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`;
        rows.push({ spec: JSON.stringify(spec), created_by: 1, created_at: begin });
      }
      await knex.batchInsert('dvr_rules', rows, 100);
      const auth = host.authHeaders;
      const t0 = performance.now();
      const c0 = process.cpuUsage();
      const created = await host.inject({ method: 'POST', url: '/api/dvr/rules', headers: auth, payload: { title: pick(titles) } });
      const firstMs = performance.now() - t0;
      const firstCpu = cpuSeconds(c0);
      if (created.statusCode !== 201) throw new Error(`POST /api/dvr/rules: ${created.statusCode} ${created.body}`);
      const byStatus: Record<string, number> = Object.fromEntries((await knex('dvr_recordings').groupBy('status').select('status').count({ n: '*' })).map((r: any) => [r.status, Number(r.n)]));
      const t1 = performance.now();
      const c1 = process.cpuUsage();
      const again = await host.inject({ method: 'PATCH', url: `/api/dvr/rules/${created.json().id}`, headers: auth, payload: {} });
      const secondMs = performance.now() - t1;
      const secondCpu = cpuSeconds(c1);
      if (again.statusCode !== 200) throw new Error(`PATCH: ${again.statusCode} ${again.body}`);
      const after = Number((await knex('dvr_recordings').count({ n: '*' }).first())?.n);
      return {
        guide: { channels: CHANNELS, days: DAYS, programmes: generated.programmes }, importSeconds: round(importSeconds, 1), importCpuSeconds: importCpu, rules: RULES + 1,
        recordings: byStatus, firstEvaluationSeconds: round(firstMs / 1000), secondEvaluationSeconds: round(secondMs / 1000),
        firstEvaluationCpuSeconds: firstCpu, secondEvaluationCpuSeconds: secondCpu,
        secondChangedRows: after - Object.values(byStatus).reduce((a, b) => a + b, 0), targetSeconds: 2,
      };
    } finally {
      await host.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** A household's week, on the planner alone: see the header. */
export function week(): Record<string, unknown> {
  const rnd = mulberry32(7);
  const start = Date.UTC(2030, 0, 7);
  const channels = 12;
  const tuner = { tunerId: 'm3u:Home', tunerName: 'Home', maxStreams: 2 };
  const tuners = new Map(Array.from({ length: channels }, (_, c) => [c + 1, tuner]));
  // 60 series: a new episode a day (or a week) at a fixed hour on one channel, repeated later elsewhere.
  const guide: MatchedAiring[] = [];
  let pid = 1;
  for (let s = 0; s < 60; s++) {
    const channel = 1 + Math.floor(rnd() * channels);
    const hour = 17 + Math.floor(rnd() * 6);
    const weekly = rnd() < 0.3;
    for (let d = 0; d < 21; d++) {
      if (weekly && d % 7 !== s % 7) continue;
      const episode = d + 1;
      const base = { title: `Series ${s}`, season: 1, episode, seriesKey: `t:series ${s}`, episodeKey: `s${s}e${episode}`, isLive: false, episodeTitle: null, matches: [] as number[] };
      guide.push({ ...base, id: pid++, channelId: channel, start: start + d * DAY + hour * HOUR, stop: start + d * DAY + (hour + 1) * HOUR, isNew: true, isRepeat: false });
      const again = 1 + Math.floor(rnd() * channels);
      const later = start + (d + 1 + Math.floor(rnd() * 2)) * DAY + Math.floor(rnd() * 24) * HOUR;
      guide.push({ ...base, id: pid++, channelId: again, start: later, stop: later + HOUR, isNew: false, isRepeat: true });
    }
  }
  guide.sort((a, b) => a.start - b.start || a.channelId - b.channelId);
  const rules: Rule[] = Array.from({ length: 50 }, (_, i) => ({
    ...defaultSpec(60, 120), title: `Series ${i}`, airings: rnd() < 0.5 ? 'all' : 'new-or-unknown', priority: Math.floor(rnd() * 3),
    id: i + 1, createdBy: 1, createdAt: start,
  }));
  for (const a of guide) a.matches = rules.flatMap((r, i) => (r.title === a.title ? [i] : []));
  const window = (r: { start: number; stop: number; prePadding: number | null; postPadding: number | null }) =>
    ({ from: r.start - (r.prePadding ?? 60) * 1000, to: r.stop + (r.postPadding ?? 120) * 1000 });

  const recordings: Recording[] = [];
  let nextId = 1;
  let evaluations = 0;
  let planMs = 0;
  for (let now = start; now <= start + 7 * DAY; now += HOUR) {
    // Recordings start and finish as the clock passes them.
    for (const r of recordings) {
      const w = window(r);
      if (r.status === 'scheduled' && w.from <= now) r.status = 'recording';
      if (r.status === 'recording' && w.to <= now) r.status = 'completed';
    }
    const importedUntil = Math.floor((now - start) / DAY) * DAY + start + 7 * DAY; // a daily import, 7 days ahead
    const airings = guide.filter((a) => a.stop > now && a.start < importedUntil);
    const t0 = performance.now();
    const entries = plan({ rules, airings, tuners, recordings, now, window });
    planMs += performance.now() - t0;
    evaluations++;
    const planned = new Set<number>();
    for (const e of entries) {
      const fields = { channelId: e.airing.channelId, programId: e.airing.id, title: e.airing.title, start: e.airing.start, stop: e.airing.stop, status: e.status, error: e.reason };
      if (e.existing) {
        planned.add(e.existing.id);
        Object.assign(e.existing, fields);
      } else {
        planned.add(nextId);
        recordings.push({
          ...fields, id: nextId++, tunerId: tuner.tunerId, sizeBytes: 0, duration: 0, gaps: [], dir: '', createdBy: 1, createdAt: now,
          ruleId: e.rule.id, episodeKey: e.key, seriesKey: null, season: null, episode: null, episodeTitle: null,
          prePadding: e.rule.pre_padding, postPadding: e.rule.post_padding, watchedAt: null,
        });
      }
    }
    for (let i = recordings.length - 1; i >= 0; i--) {
      const r = recordings[i];
      if (!planned.has(r.id) && replannable(r, now, window)) recordings.splice(i, 1);
    }
  }
  const end = start + 7 * DAY;
  const completed = recordings.filter((r) => r.status === 'completed');
  const perEpisode = new Map<string, number>();
  for (const r of completed) perEpisode.set(r.episodeKey!, (perEpisode.get(r.episodeKey!) ?? 0) + 1);
  const duplicates = [...perEpisode.values()].filter((n) => n > 1).length;
  // Missed: an episode a rule wanted whose airings all fell inside the week, never recorded, with an airing a stream was free for.
  const slots = new TunerSlots();
  for (const r of completed) slots.add(tuner.tunerId, { channelId: r.channelId, ...window(r), label: String(r.id) });
  let wantedEpisodes = 0;
  let missedWithFreeSlot = 0;
  const byEpisode = new Map<string, { rule: Rule; airings: MatchedAiring[] }>();
  for (const a of guide) {
    for (const i of a.matches) {
      const rule = rules[i];
      if (!wanted(rule, a) || a.start <= start) continue;
      const key = episodeIdentity(a);
      const e = byEpisode.get(key) ?? { rule, airings: [] };
      e.airings.push(a);
      byEpisode.set(key, e);
    }
  }
  for (const [key, { rule, airings }] of byEpisode) {
    if (airings.some((a) => window({ ...a, prePadding: rule.pre_padding, postPadding: rule.post_padding }).to > end)) continue; // not over within the week
    wantedEpisodes++;
    if (perEpisode.has(key)) continue;
    const free = airings.some((a) => {
      const w = window({ ...a, prePadding: rule.pre_padding, postPadding: rule.post_padding });
      return slots.blockers(tuner, a.channelId, w.from, w.to).length === 0;
    });
    if (free) missedWithFreeSlot++;
  }
  return {
    channels, streams: tuner.maxStreams, rules: rules.length, evaluations, planMsPerEvaluation: round(planMs / evaluations, 3),
    wantedEpisodes, recorded: completed.length, conflictsLeft: recordings.filter((r) => r.status === 'conflict').length,
    duplicates, missedWithFreeSlot,
  };
}
