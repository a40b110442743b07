/**
 * The guide sources for administrators: list, add, change and remove them,
 * written to this plugin's block of the config file and applied at once
 * (live-tv imports a new or changed guide). URLs are shown with their
 * credentials hidden; a URL sent back unchanged keeps them.
 */
import { ConfigChangeSchema, errors, Type, type HttpScope, type PluginSettings, type SourceReader, type Static, type TSchema } from 'antenna/sdk';

type Entry = { url: string; name?: string };

export function guideSourceRoutes<S extends TSchema>(http: HttpScope, deps: {
  schema: S; settings: PluginSettings<{ sources: Static<S>[] }>; sources: SourceReader; guideId: (source: Entry) => string;
}): void {
  const { settings, guideId } = deps;
  const Guide = Type.Intersect([Type.Object({ id: Type.String({ description: 'The guide source id, as in GET /api/admin/sources' }) }), deps.schema]);
  const ErrorBody = Type.Object({ error: Type.String() });
  const Errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody };
  const Params = Type.Object({ id: Type.String({ minLength: 1, maxLength: 191 }) });
  const Changed = Type.Object({ guide: Type.Optional(Guide), result: ConfigChangeSchema });
  const tags = ['admin', 'live-tv'];
  const shown = (s: Entry) => ({ ...s, id: guideId(s), url: deps.sources.redact(s.url) });
  const valid = (s: Record<string, unknown>): s is Entry => typeof s.url === 'string';

  const edit = (change: (list: Record<string, unknown>[]) => void) => settings.update((block) => {
    const list = Array.isArray(block.sources) ? (block.sources as Record<string, unknown>[]) : [];
    change(list);
    block.sources = list;
  });
  const indexOf = (list: Record<string, unknown>[], id: string) => list.findIndex((s) => valid(s) && guideId(s) === id);
  const taken = (list: Record<string, unknown>[], entry: Entry, except = -1) => {
    if (list.some((s, i) => i !== except && valid(s) && guideId(s) === guideId(entry))) throw errors.conflict(`This guide source is already listed (${entry.name ?? deps.sources.redact(entry.url)})`);
  };

  http.get('/api/admin/sources/guides', {
    schema: {
      summary: 'XMLTV guide sources (admin)', tags,
      response: { 200: Type.Object({ editable: Type.Boolean(), reason: Type.Optional(Type.String()), guides: Type.Array(Guide) }), ...Errors },
    },
  }, async () => ({ ...(await settings.editable()), guides: (settings.current().sources as Entry[]).map(shown) }));

  http.post('/api/admin/sources/guides', {
    schema: {
      summary: 'Add an XMLTV guide source (admin)', tags,
      description: 'Written to the config file (plugins.xmltv-guide.sources) and imported at once. The same source twice → 409; no config file, or a read-only one → 409 with the reason.',
      body: deps.schema, response: { 201: Changed, ...Errors },
    },
  }, async (request, reply) => {
    const body = request.body as Entry;
    const result = await edit((list) => { taken(list, body); list.push({ ...body }); });
    reply.code(201);
    return { guide: shown(body), result };
  });

  http.put('/api/admin/sources/guides/:id', {
    schema: { summary: 'Change an XMLTV guide source (admin)', tags, params: Params, body: deps.schema, response: { 200: Changed, ...Errors } },
  }, async (request) => {
    const { id } = request.params as { id: string };
    const body = { ...(request.body as Entry) };
    const result = await edit((list) => {
      const at = indexOf(list, id);
      if (at < 0) throw errors.notFound(`No guide source ${id}`);
      const old = list[at] as Entry;
      if (body.url === deps.sources.redact(old.url)) body.url = old.url;
      taken(list, body, at);
      list[at] = { ...body };
    });
    return { guide: shown(body), result };
  });

  http.delete('/api/admin/sources/guides/:id', {
    schema: { summary: 'Remove an XMLTV guide source (admin)', description: 'Its programmes leave the guide.', tags, params: Params, response: { 200: Changed, ...Errors } },
  }, async (request) => {
    const { id } = request.params as { id: string };
    const result = await edit((list) => {
      const at = indexOf(list, id);
      if (at < 0) throw errors.notFound(`No guide source ${id}`);
      list.splice(at, 1);
    });
    return { result };
  });
}
