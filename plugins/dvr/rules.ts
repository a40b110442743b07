/**
 * Series rules: what a household leaves running ("record Acme Mystery, new episodes, keep 5").
 * A rule is stored as its JSON (RuleSpec); the series scheduler (series.ts) turns rules into
 * recordings.
 */
import { errors, Type, type AiringMatch, type Database } from 'antenna/sdk';

export type AiringsWanted = 'all' | 'new' | 'new-or-unknown';
export type Keep = null | { latest: number } | { days: number };

export interface RuleSpec {
  title: string | null;
  series_id: string | null;
  keyword: string | null;
  regex: string | null;
  channel_id: number | null;
  days: number[];
  start_after: string | null;
  start_before: string | null;
  airings: AiringsWanted;
  keep: Keep;
  /** Seconds. */
  pre_padding: number;
  post_padding: number;
  priority: number;
}

export interface Rule extends RuleSpec {
  id: number;
  createdBy: number | null;
  createdAt: number;
}

export const MATCH_FIELDS = ['title', 'series_id', 'keyword', 'regex'] as const;
const HHMM = '^([01][0-9]|2[0-3]):[0-5][0-9]$';
const MatchText = Type.Union([Type.String({ maxLength: 512 }), Type.Null()]);
const Padding = Type.Integer({ minimum: 0, maximum: 6 * 3600 });

/** The fields a client sends (POST: all optional but one match; PATCH: any). */
export const RuleBody = Type.Object({
  title: Type.Optional(MatchText),
  series_id: Type.Optional(MatchText),
  keyword: Type.Optional(MatchText),
  regex: Type.Optional(MatchText),
  channel_id: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1 }), Type.Null()], { description: 'null: any channel' })),
  days: Type.Optional(Type.Array(Type.Integer({ minimum: 0, maximum: 6 }), { minItems: 1, maxItems: 7, uniqueItems: true, description: 'Weekdays, 0 (Sunday) to 6, in the server\'s time zone' })),
  start_after: Type.Optional(Type.Union([Type.String({ pattern: HHMM }), Type.Null()], { description: 'HH:MM in the server\'s time zone' })),
  start_before: Type.Optional(Type.Union([Type.String({ pattern: HHMM }), Type.Null()], { description: 'HH:MM in the server\'s time zone' })),
  airings: Type.Optional(Type.Union([Type.Literal('all'), Type.Literal('new'), Type.Literal('new-or-unknown')])),
  keep: Type.Optional(Type.Union([
    Type.Null(),
    Type.Object({ latest: Type.Integer({ minimum: 1, maximum: 10_000 }) }, { additionalProperties: false }),
    Type.Object({ days: Type.Integer({ minimum: 1, maximum: 36_500 }) }, { additionalProperties: false }),
  ], { description: 'null: keep all; {"latest": N}; {"days": N}' })),
  pre_padding: Type.Optional(Padding),
  post_padding: Type.Optional(Padding),
  priority: Type.Optional(Type.Integer({ minimum: -1000, maximum: 1000, description: 'Higher wins tuner conflicts' })),
}, { additionalProperties: false });

const NextAiring = Type.Object({
  recording_id: Type.Integer(),
  channel_id: Type.Integer(),
  program_id: Type.Integer(),
  start: Type.String({ format: 'date-time' }),
  status: Type.String({ description: 'scheduled, recording or conflict' }),
  reason: Type.Optional(Type.String({ description: 'For a conflict: what holds the tuner' })),
});

export const RuleSchema = Type.Object({
  id: Type.Integer(),
  title: MatchText, series_id: MatchText, keyword: MatchText, regex: MatchText,
  channel_id: Type.Union([Type.Integer(), Type.Null()]),
  days: Type.Array(Type.Integer()),
  start_after: Type.Union([Type.String(), Type.Null()]),
  start_before: Type.Union([Type.String(), Type.Null()]),
  airings: Type.String(),
  keep: Type.Union([Type.Null(), Type.Object({ latest: Type.Integer() }), Type.Object({ days: Type.Integer() })]),
  pre_padding: Type.Integer(), post_padding: Type.Integer(), priority: Type.Integer(),
  created_by: Type.Union([Type.Integer(), Type.Null()]),
  next: Type.Array(NextAiring, { description: 'Its coming airings: scheduled, recording, or in conflict' }),
});

/**
 * The rule a body makes (over `base` for PATCH). 400 unless exactly one match field is set and
 * non-blank, and its regular expression compiles; the channel is checked by the caller.
 */
export function ruleSpec(body: Partial<RuleSpec>, base: RuleSpec): RuleSpec {
  const spec: RuleSpec = { ...base, ...body, days: body.days ? [...body.days].sort() : base.days };
  for (const f of MATCH_FIELDS) {
    const v = spec[f];
    spec[f] = typeof v === 'string' && v.trim() !== '' ? v.trim() : null;
  }
  const set = MATCH_FIELDS.filter((f) => spec[f] !== null);
  if (set.length !== 1) {
    throw errors.badRequest(set.length === 0
      ? 'A rule needs what to record: one of title, series_id, keyword or regex (not empty)'
      : `A rule picks programmes by one of title, series_id, keyword or regex, not by ${set.join(' and ')}`);
  }
  if (spec.regex !== null) {
    try { new RegExp(spec.regex, 'iu'); } catch (err) { throw errors.badRequest(`regex: not a valid regular expression (${(err as Error).message})`); }
  }
  return spec;
}

export const defaultSpec = (prePadding: number, postPadding: number): RuleSpec => ({
  title: null, series_id: null, keyword: null, regex: null, channel_id: null, days: [0, 1, 2, 3, 4, 5, 6],
  start_after: null, start_before: null, airings: 'all', keep: null, pre_padding: prePadding, post_padding: postPadding, priority: 0,
});

export function matchOf(rule: RuleSpec): AiringMatch {
  if (rule.title !== null) return { title: rule.title };
  if (rule.series_id !== null) return { seriesId: rule.series_id };
  if (rule.keyword !== null) return { keyword: rule.keyword };
  return { regex: rule.regex ?? '' };
}

const minutes = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/** Whether an airing starting at `start` (ms) is on the rule's days and hours, in the server's time zone. */
export function inRuleTime(rule: RuleSpec, start: number): boolean {
  const d = new Date(start);
  if (!rule.days.includes(d.getDay())) return false;
  const m = d.getHours() * 60 + d.getMinutes();
  if (rule.start_after !== null && m < minutes(rule.start_after)) return false;
  if (rule.start_before !== null && m >= minutes(rule.start_before)) return false;
  return true;
}

const TABLE = 'dvr_rules';

export class RuleStore {
  constructor(private readonly knex: Database) {}

  private static fromRow(r: any): Rule {
    return { ...(JSON.parse(r.spec) as RuleSpec), id: Number(r.id), createdBy: r.created_by === null ? null : Number(r.created_by), createdAt: Number(r.created_at) };
  }

  async all(): Promise<Rule[]> {
    return (await this.knex(TABLE).orderBy('id')).map(RuleStore.fromRow);
  }

  async get(id: number): Promise<Rule | undefined> {
    const r = await this.knex(TABLE).where({ id }).first();
    return r ? RuleStore.fromRow(r) : undefined;
  }

  async insert(spec: RuleSpec, createdBy: number, now: number): Promise<Rule> {
    const [inserted] = await this.knex(TABLE).insert({ spec: JSON.stringify(spec), created_by: createdBy, created_at: now }).returning('id');
    const id = Number(typeof inserted === 'object' ? inserted.id : inserted);
    return { ...spec, id, createdBy, createdAt: now };
  }

  async update(id: number, spec: RuleSpec): Promise<void> {
    await this.knex(TABLE).where({ id }).update({ spec: JSON.stringify(spec) });
  }

  async remove(id: number): Promise<void> {
    await this.knex(TABLE).where({ id }).delete();
  }
}

/** What `antenna dvr rules` prints: a line per rule, then one per coming airing. */
export async function describeRules(rules: Rule[], upcoming: { ruleId: number | null; id: number; channelId: number; start: number; title: string; status: string; error: string | null }[],
  channelName: (id: number) => Promise<string | undefined>): Promise<string[]> {
  const lines: string[] = [];
  const name = async (id: number) => `${(await channelName(id)) ?? 'channel'} (${id})`;
  for (const rule of rules) {
    const field = MATCH_FIELDS.find((f) => rule[f] !== null)!;
    const keep = rule.keep === null ? 'keep all' : 'latest' in rule.keep ? `keep latest ${rule.keep.latest}` : `keep ${rule.keep.days} days`;
    const channel = rule.channel_id === null ? 'any channel' : await name(rule.channel_id);
    lines.push(`rule ${rule.id}: ${field} ${JSON.stringify(rule[field])}, ${rule.airings} airings, ${channel}, ${keep}, priority ${rule.priority}`);
    const next = upcoming.filter((r) => r.ruleId === rule.id);
    if (!next.length) lines.push('  no coming airings');
    for (const r of next) {
      const why = r.status === 'conflict' ? `: ${r.error ?? 'no free tuner'}` : '';
      lines.push(`  ${new Date(r.start).toISOString().slice(0, 16).replace('T', ' ')}Z  ${await name(r.channelId)}  "${r.title}"  ${r.status} (recording ${r.id})${why}`);
    }
  }
  return lines;
}
