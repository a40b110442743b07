/**
 * The playlists for administrators: list, add, change and remove them. Each
 * change is written to this plugin's block of the config file and applied at
 * once (index.ts swaps the tuners; live-tv imports a new or changed one).
 * URLs are shown with their credentials hidden; a URL sent back unchanged
 * keeps the credentials it had.
 */
import { ConfigChangeSchema, errors, Type, type HttpScope, type PluginSettings, type SourceReader, type Static, type TSchema } from 'antenna/sdk';

export function playlistRoutes<S extends TSchema>(http: HttpScope, deps: {
  schema: S; settings: PluginSettings<{ sources: Static<S>[] }>; sources: SourceReader; tunerId: (name: string) => string;
}): void {
  const { settings, tunerId } = deps;
  type Source = Static<S> & { name: string; url: string };
  const Playlist = Type.Intersect([Type.Object({ id: Type.String({ description: 'The tuner id, as in GET /api/admin/sources' }) }), deps.schema]);
  const ErrorBody = Type.Object({ error: Type.String() });
  const Errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody };
  const Params = Type.Object({ id: Type.String({ minLength: 1, maxLength: 191 }) });
  const Changed = Type.Object({ playlist: Type.Optional(Playlist), result: ConfigChangeSchema });
  const tags = ['admin', 'live-tv'];
  const shown = (s: Source) => ({ ...s, id: tunerId(s.name), url: deps.sources.redact(s.url) });

  /** Edits the file's list of sources; `change` gets the list and the index of `id` (-1 when absent). */
  const edit = (change: (list: Record<string, unknown>[]) => void) => settings.update((block) => {
    const list = Array.isArray(block.sources) ? (block.sources as Record<string, unknown>[]) : [];
    change(list);
    block.sources = list;
  });
  const indexOf = (list: Record<string, unknown>[], id: string) => list.findIndex((s) => typeof s.name === 'string' && tunerId(s.name) === id);
  const taken = (list: Record<string, unknown>[], name: string, except = -1) => {
    if (list.some((s, i) => i !== except && typeof s.name === 'string' && tunerId(s.name) === tunerId(name))) throw errors.conflict(`A playlist named ${name} already exists`);
  };

  http.get('/api/admin/sources/playlists', {
    schema: {
      summary: 'M3U playlists (admin)', tags,
      response: { 200: Type.Object({ editable: Type.Boolean(), reason: Type.Optional(Type.String()), playlists: Type.Array(Playlist) }), ...Errors },
    },
  }, async () => ({ ...(await settings.editable()), playlists: (settings.current().sources as Source[]).map(shown) }));

  http.post('/api/admin/sources/playlists', {
    schema: {
      summary: 'Add an M3U playlist (admin)', tags,
      description: 'Written to the config file (plugins.m3u-tuner.sources) and imported at once: its channels appear as the import ends (GET /api/admin/sources shows the progress). A name in use → 409; no config file, or a read-only one → 409 with the reason.',
      body: deps.schema, response: { 201: Changed, ...Errors },
    },
  }, async (request, reply) => {
    const body = request.body as Source;
    const result = await edit((list) => { taken(list, body.name); list.push({ ...body }); });
    reply.code(201);
    return { playlist: shown(body), result };
  });

  http.put('/api/admin/sources/playlists/:id', {
    schema: { summary: 'Change an M3U playlist (admin)', tags, params: Params, body: deps.schema, response: { 200: Changed, ...Errors } },
  }, async (request) => {
    const { id } = request.params as { id: string };
    const body = { ...(request.body as Source) };
    const result = await edit((list) => {
      const at = indexOf(list, id);
      if (at < 0) throw errors.notFound(`No playlist ${id}`);
      taken(list, body.name, at);
      const old = list[at]!;
      // The URL as we showed it (credentials hidden) means "keep the URL".
      if (typeof old.url === 'string' && body.url === deps.sources.redact(old.url)) body.url = old.url;
      list[at] = { ...body };
    });
    return { playlist: shown(body), result };
  });

  http.delete('/api/admin/sources/playlists/:id', {
    schema: { summary: 'Remove an M3U playlist (admin)', description: 'Its channels are hidden (they keep their ids and favorites if it comes back).', tags, params: Params, response: { 200: Changed, ...Errors } },
  }, async (request) => {
    const { id } = request.params as { id: string };
    const result = await edit((list) => {
      const at = indexOf(list, id);
      if (at < 0) throw errors.notFound(`No playlist ${id}`);
      list.splice(at, 1);
    });
    return { result };
  });
}
