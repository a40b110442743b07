/**
 * What the series rules want recorded, given the guide and the recordings there are: a plan the
 * DVR applies (dvr.ts evaluateRules). Pure, so that an evaluation is the same every time for the
 * same guide and recordings (idempotent) and can be measured apart.
 *
 * - Each rule picks airings (match, channel, days and hours, new/repeat); airings of one episode
 *   (the guide's identity, live-tv episode.ts) are one entry: recorded once, on one airing.
 * - An episode already recorded (a completed recording, still there), being recorded, or
 *   scheduled by a one-off is not wanted again; one a user cancelled for the rule (skipped) neither.
 * - Tuner slots are given out in rank order: running recordings and one-offs first, then rules
 *   by priority (higher first, then the older rule), each rule's episodes by time. An entry takes
 *   the airing it has when that still fits, else the first that fits; none: a conflict naming
 *   what is in the way.
 */
import type { LiveProgramme, MatchedAiring } from 'antenna/sdk';
import type { Recording } from './model.js';
import { inRuleTime, type Rule } from './rules.js';
import { conflictReason, TunerSlots, type TunerInfo } from './slots.js';

export interface PlanInput {
  rules: Rule[];
  /** The guide's airings that the rules' matches pick (matches: indices into rules). */
  airings: MatchedAiring[];
  tuners: Map<number, TunerInfo>;
  recordings: Recording[];
  now: number;
  /** The recording window of an airing with these paddings (seconds; null: the configured ones). */
  window(airing: { start: number; stop: number; prePadding: number | null; postPadding: number | null }): { from: number; to: number };
}

export interface PlannedEntry {
  rule: Rule;
  /** The episode identity (the recording's episode_key). */
  key: string;
  airing: LiveProgramme;
  status: 'scheduled' | 'conflict';
  reason: string | null;
  /** The rule's row for this episode, when there is one. */
  existing: Recording | undefined;
}

/** An airing's episode identity: the guide's, else the airing itself (recorded as it comes). */
export const episodeIdentity = (a: Pick<LiveProgramme, 'episodeKey' | 'channelId' | 'id'>): string => a.episodeKey ?? `airing:${a.channelId}:${a.id}`;

export function wanted(rule: Rule, a: LiveProgramme): boolean {
  if (rule.channel_id !== null && a.channelId !== rule.channel_id) return false;
  if (rule.airings === 'new' && !a.isNew) return false;
  if (rule.airings === 'new-or-unknown' && a.isRepeat) return false;
  return inRuleTime(rule, a.start);
}

const label = (r: { title: string; channelId: number }, by: string) => `"${r.title}" on channel ${r.channelId} (${by})`;

/** Rule rows an evaluation may still change: not started, scheduled or in conflict. */
export const replannable = (r: Recording, now: number, window: PlanInput['window']): boolean =>
  r.ruleId !== null && (r.status === 'scheduled' || r.status === 'conflict') && window(r).from > now;

export function plan(input: PlanInput): PlannedEntry[] {
  const { rules, airings, tuners, recordings, now, window } = input;
  const slots = new TunerSlots();
  /** Episodes no rule should record again. */
  const done = new Set<string>();
  /** rule id → episodes (and airings) a user cancelled for it. */
  const skipped = new Map<number, Set<string>>();
  /** rule id → episode → its row still to plan. */
  const rows = new Map<number, Map<string, Recording>>();
  for (const r of recordings) {
    if (r.status === 'skipped' && r.ruleId !== null) {
      let s = skipped.get(r.ruleId);
      if (!s) skipped.set(r.ruleId, (s = new Set()));
      if (r.episodeKey) s.add(r.episodeKey);
      s.add(`airing:${r.channelId}:${r.programId}`);
      continue;
    }
    if (replannable(r, now, window)) {
      let m = rows.get(r.ruleId!);
      if (!m) rows.set(r.ruleId!, (m = new Map()));
      if (r.episodeKey) m.set(r.episodeKey, r);
      continue;
    }
    if (r.status === 'completed' || r.status === 'recording' || r.status === 'scheduled') {
      if (r.episodeKey) done.add(r.episodeKey);
      if (r.status !== 'completed') {
        const tuner = tuners.get(r.channelId);
        if (tuner) slots.add(tuner.tunerId, { channelId: r.channelId, ...window(r), label: label(r, `recording ${r.id}`) });
      }
    }
  }

  // Each rule's airings, by start (airings come by start): one pass over the airings.
  const ofRule = new Map<Rule, MatchedAiring[]>(rules.map((r) => [r, []]));
  for (const a of airings) if (a.start > now) for (const i of a.matches) ofRule.get(rules[i])?.push(a);
  const ranked = [...rules].sort((a, b) => b.priority - a.priority || a.id - b.id);
  const out: PlannedEntry[] = [];
  const taken = new Set(done);
  for (const rule of ranked) {
    const cancelled = skipped.get(rule.id);
    const mine = rows.get(rule.id);
    // This rule's episodes, each with its airings by time (airings come by start).
    const episodes = new Map<string, LiveProgramme[]>();
    for (const a of ofRule.get(rule)!) {
      if (!wanted(rule, a)) continue;
      const key = episodeIdentity(a);
      if (taken.has(key) || cancelled?.has(key) || cancelled?.has(`airing:${a.channelId}:${a.id}`)) continue;
      const list = episodes.get(key);
      if (list) list.push(a);
      else episodes.set(key, [a]);
    }
    const padding = { prePadding: rule.pre_padding, postPadding: rule.post_padding };
    for (const [key, options] of episodes) {
      taken.add(key);
      const existing = mine?.get(key);
      const fits = (a: LiveProgramme) => {
        const tuner = tuners.get(a.channelId);
        if (!tuner) return undefined; // its channel is gone: never fits
        const { from, to } = window({ ...a, ...padding });
        return slots.blockers(tuner, a.channelId, from, to).length === 0;
      };
      const kept = existing && options.find((a) => a.channelId === existing.channelId && a.id === existing.programId);
      const choice = kept && fits(kept) ? kept : options.find((a) => fits(a));
      if (choice) {
        const tuner = tuners.get(choice.channelId)!;
        slots.add(tuner.tunerId, { channelId: choice.channelId, ...window({ ...choice, ...padding }), label: label(choice, `rule ${rule.id}`) });
        out.push({ rule, key, airing: choice, status: 'scheduled', reason: null, existing });
      } else {
        const first = kept ?? options[0];
        const tuner = tuners.get(first.channelId);
        const { from, to } = window({ ...first, ...padding });
        const reason = tuner ? conflictReason(tuner, slots.blockers(tuner, first.channelId, from, to)) : `Channel ${first.channelId} is gone`;
        out.push({ rule, key, airing: first, status: 'conflict', reason, existing });
      }
    }
  }
  return out;
}
