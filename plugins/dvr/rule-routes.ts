import { errors, Type, type AuthService, type AuthUser, type HttpScope } from 'antenna/sdk';
import type { Dvr, RuleView } from './dvr.js';
import { RuleBody, RuleSchema, type RuleSpec } from './rules.js';

const ErrorBody = Type.Object({ error: Type.String() });
const Id = Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1 });
const iso = (ms: number) => new Date(ms).toISOString();

export function ruleView({ rule, next }: RuleView): Record<string, unknown> {
  const { id, createdBy, createdAt: _, ...spec } = rule;
  return {
    id, ...spec, created_by: createdBy,
    next: next.map((r) => ({
      recording_id: r.id, channel_id: r.channelId, program_id: r.programId, start: iso(r.start), status: r.status,
      ...(r.status === 'conflict' ? { reason: r.error ?? 'no free tuner' } : {}),
    })),
  };
}

/**
 * /api/dvr/rules: series rules, the household's like recordings. Every user granted the
 * Recordings library sees and makes them; only a rule's creator or an admin changes or deletes it.
 */
export function ruleRoutes(http: HttpScope, deps: { auth: AuthService; dvr: Dvr; mayUse: (user: AuthUser) => boolean }): void {
  const { auth, dvr, mayUse } = deps;
  const granted = (request: Parameters<AuthService['requireUser']>[0]) => {
    const user = auth.requireUser(request);
    if (!mayUse(user)) throw errors.forbidden('Recordings are not among your libraries');
    return user;
  };
  const Params = Type.Object({ id: Id });
  const codes = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody };

  http.get('/api/dvr/rules', {
    schema: { summary: 'Series rules, each with its coming airings', tags: ['dvr'], response: { 200: Type.Object({ rules: Type.Array(RuleSchema) }), ...codes } },
  }, async (request) => {
    granted(request);
    return { rules: (await dvr.listRules()).map(ruleView) };
  });

  http.get('/api/dvr/rules/:id', {
    schema: { summary: 'One series rule', tags: ['dvr'], params: Params, response: { 200: RuleSchema, ...codes } },
  }, async (request) => {
    granted(request);
    const { id } = request.params as { id: number };
    const view = await dvr.rule(id);
    if (!view) throw errors.notFound(`No rule ${id}`);
    return ruleView(view);
  });

  http.post('/api/dvr/rules', {
    schema: {
      summary: 'Record a series: a rule the DVR schedules recordings from, after every guide import', tags: ['dvr'],
      description: 'Exactly one of title (compared without case or accents), series_id (the series part of dd_progid), keyword (in the title or episode title) ' +
        'or regex (on the title, case-insensitive) picks programmes. channel_id null: any channel. days (0 = Sunday) and start_after/start_before (HH:MM) are in the server\'s time zone. ' +
        'airings: all, new, or new-or-unknown. keep: null (all), {"latest": N} or {"days": N}. Paddings in seconds (default: the configured ones). ' +
        'A higher priority wins tuner conflicts; one-off recordings outrank every rule. 400: no match, two matches, an invalid regex, an unknown channel, a negative keep.',
      body: RuleBody, response: { 201: RuleSchema, ...codes },
    },
  }, async (request, reply) => {
    const view = await dvr.createRule(granted(request), request.body as Partial<RuleSpec>);
    return reply.code(201).send(ruleView(view));
  });

  http.patch('/api/dvr/rules/:id', {
    schema: {
      summary: 'Change a series rule (its creator or an admin; else 403)', tags: ['dvr'],
      description: 'The fields given replace the rule\'s; to pick programmes another way, send the old match field as null. Its scheduled recordings follow at once.',
      params: Params, body: RuleBody, response: { 200: RuleSchema, ...codes },
    },
  }, async (request) => {
    const { id } = request.params as { id: number };
    return ruleView(await dvr.updateRule(granted(request), id, request.body as Partial<RuleSpec>));
  });

  http.delete('/api/dvr/rules/:id', {
    schema: {
      summary: 'Delete a series rule (its creator or an admin; else 403)', tags: ['dvr'],
      description: 'Its scheduled airings go; what it recorded stays (as one-off recordings).',
      params: Params, response: { 200: Type.Object({ ok: Type.Boolean() }), ...codes },
    },
  }, async (request) => {
    const { id } = request.params as { id: number };
    await dvr.removeRule(granted(request), id);
    return { ok: true };
  });
}
