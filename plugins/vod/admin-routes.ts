/**
 * Libraries for administrators: list them with their folders, item counts,
 * the scan running now and the last one; add, change and remove them (written
 * to vod's block of the config file and applied at once: a new or changed
 * library is scanned straight away); scan one now.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { ConfigChangeSchema, errors, Type, type HttpScope, type JobManager, type PluginSettings, type Static } from 'antenna/sdk';
import type { Library } from './model.js';
import type { LibraryScanner } from './scanner.js';
import type { VodStore } from './store.js';
import type { VodConfig } from './index.js';

const ErrorBody = Type.Object({ error: Type.String() });
const Errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody };
const tags = ['admin', 'vod'];
const Name = Type.String({ minLength: 1, maxLength: 255 });
const Kind = Type.Union([Type.Literal('movies'), Type.Literal('shows')]);
const Paths = Type.Array(Type.String({ minLength: 1, maxLength: 4096 }), { minItems: 1, maxItems: 100, description: 'Folders, absolute or relative to the config file' });
const Params = Type.Object({ id: Type.Integer({ minimum: 1 }) });

const Scan = Type.Union([Type.Object({
  state: Type.String(), progress: Type.Number(), message: Type.Optional(Type.String()), error: Type.Optional(Type.String()),
}), Type.Null()], { description: 'The scan running now' });
const LastScan = Type.Union([Type.Object({
  at: Type.String({ format: 'date-time' }), ok: Type.Boolean(), error: Type.Optional(Type.String()),
  files: Type.Optional(Type.Integer()), added: Type.Optional(Type.Integer()), changed: Type.Optional(Type.Integer()),
  removed: Type.Optional(Type.Integer()), unreadable: Type.Optional(Type.Integer()), items: Type.Optional(Type.Integer()),
}), Type.Null()], { description: 'The last scan since the server started' });
const AdminLibrary = Type.Object({
  id: Type.Integer(), name: Type.String(), type: Type.Union([Kind, Type.Literal('recordings')]), paths: Type.Array(Type.String()),
  item_count: Type.Integer({ description: 'Movies, or series, at the top level' }),
  source: Type.Union([Type.Literal('config'), Type.Literal('demo'), Type.Literal('plugin')], { description: 'config: in the config file, editable here; demo: the demo\'s; plugin: another plugin\'s (the DVR\'s recordings)' }),
  scan: Scan, last_scan: LastScan,
});
const Changed = Type.Object({ library: Type.Optional(AdminLibrary), result: ConfigChangeSchema });

type LibraryEntry = { name: string; type: 'movies' | 'shows'; paths: string[] };

export function adminLibraryRoutes(http: HttpScope, deps: {
  store: VodStore; scanner: LibraryScanner; jobs: JobManager; settings: PluginSettings<VodConfig>; configDir: string; demoNames: Set<string>;
}): void {
  const { store, scanner, jobs, settings } = deps;

  const view = async (lib: Library, counts?: Map<number, number>): Promise<Static<typeof AdminLibrary>> => {
    const job = jobs.get(`vod:scan:${lib.id}`);
    const last = scanner.lastScans.get(lib.id);
    const source = lib.type === 'recordings' ? 'plugin' : deps.demoNames.has(lib.name) && !inConfig(lib.name) ? 'demo' : 'config';
    return {
      id: lib.id, name: lib.name, type: lib.type, paths: lib.paths,
      item_count: (counts ?? (await store.topLevelCounts())).get(lib.id) ?? 0, source,
      scan: job ? { state: job.state, progress: job.progress, ...(job.message ? { message: job.message } : {}), ...(job.error ? { error: job.error } : {}) } : null,
      last_scan: last ? {
        at: new Date(last.at).toISOString(), ok: last.ok,
        ...(last.ok ? { files: last.summary.files, added: last.summary.added, changed: last.summary.changed, removed: last.summary.removed, unreadable: last.summary.unreadable, items: last.summary.items } : { error: last.error }),
      } : null,
    };
  };
  const inConfig = (name: string) => settings.current().libraries.some((l) => l.name === name);
  const libraryOr404 = (id: number) => {
    const lib = store.library(id);
    if (!lib) throw errors.notFound(`No library ${id}`);
    return lib;
  };
  const configured = (id: number) => {
    const lib = libraryOr404(id);
    if (!inConfig(lib.name)) throw errors.conflict(`${lib.name} is not in the config file (${lib.type === 'recordings' ? 'the DVR provides it' : 'it is the demo\'s'}); it cannot be changed here`);
    return lib;
  };
  /** Every folder must be there when it is added: a typo would otherwise give an empty library and no hint. */
  const checkFolders = async (paths: string[]) => {
    for (const p of paths) {
      const full = path.resolve(deps.configDir, p);
      const info = await stat(full).catch(() => undefined);
      if (!info?.isDirectory()) throw errors.badRequest(`paths: there is no folder at ${full}`);
    }
  };
  const nameFree = (name: string, except?: string) => {
    if (name !== except && store.libraries().some((l) => l.name === name)) throw errors.conflict(`A library named ${name} already exists`);
  };
  const edit = (change: (list: LibraryEntry[]) => void) => settings.update((block) => {
    const list = Array.isArray(block.libraries) ? (block.libraries as LibraryEntry[]) : [];
    change(list);
    block.libraries = list;
  });
  const at = (list: LibraryEntry[], name: string) => {
    const i = list.findIndex((l) => l.name === name);
    if (i < 0) throw errors.conflict(`${name} is no longer in the config file; reload`);
    return i;
  };

  http.get('/api/admin/libraries', {
    schema: {
      summary: 'Libraries with their folders and scans (admin)', tags,
      response: { 200: Type.Object({ editable: Type.Boolean(), reason: Type.Optional(Type.String()), libraries: Type.Array(AdminLibrary) }), ...Errors },
    },
  }, async () => {
    const counts = await store.topLevelCounts();
    return { ...(await settings.editable()), libraries: await Promise.all(store.libraries().map((l) => view(l, counts))) };
  });

  http.post('/api/admin/libraries', {
    schema: {
      summary: 'Add a library (admin)', tags,
      description: 'Written to the config file (plugins.vod.libraries) and scanned at once (`scan` shows the progress). A missing folder → 400; a name in use → 409; no config file, or a read-only one → 409 with the reason.',
      body: Type.Object({ name: Name, type: Kind, paths: Paths }, { additionalProperties: false }),
      response: { 201: Changed, ...Errors },
    },
  }, async (request, reply) => {
    const body = request.body as LibraryEntry;
    nameFree(body.name);
    await checkFolders(body.paths);
    const result = await edit((list) => { list.push({ name: body.name, type: body.type, paths: body.paths }); });
    const lib = store.libraries().find((l) => l.name === body.name);
    reply.code(201);
    return { library: lib && (await view(lib)), result };
  });

  http.patch('/api/admin/libraries/:id', {
    schema: {
      summary: 'Change a library: its name, type or folders (admin)', tags,
      description: 'A renamed library keeps its id (users\' grants stay); changed folders or type are scanned at once.',
      params: Params,
      body: Type.Object({ name: Type.Optional(Name), type: Type.Optional(Kind), paths: Type.Optional(Paths) }, { additionalProperties: false, minProperties: 1 }),
      response: { 200: Changed, ...Errors },
    },
  }, async (request) => {
    const { id } = request.params as { id: number };
    const body = request.body as Partial<LibraryEntry>;
    const lib = configured(id);
    if (body.name) nameFree(body.name, lib.name);
    if (body.paths) await checkFolders(body.paths);
    if (body.name && body.name !== lib.name) {
      // The row is renamed first, so that the changed config finds it by its new name.
      await store.renameLibrary(lib.name, body.name).catch((err: Error) => { throw errors.conflict(`${err.message} (by a library removed earlier: add that one back, or choose another name)`); });
    }
    try {
      const result = await edit((list) => { const i = at(list, lib.name); list[i] = { ...list[i]!, ...body }; });
      return { library: await view(libraryOr404(id)), result };
    } catch (err) {
      if (body.name && body.name !== lib.name) await store.renameLibrary(body.name, lib.name);
      throw err;
    }
  });

  http.delete('/api/admin/libraries/:id', {
    schema: {
      summary: 'Remove a library (admin)', tags,
      description: 'It leaves the config file and disappears for everyone; its items are kept hidden, so adding a library of the same name brings it back with its id.',
      params: Params, response: { 200: Changed, ...Errors },
    },
  }, async (request) => {
    const lib = configured((request.params as { id: number }).id);
    const result = await edit((list) => { list.splice(at(list, lib.name), 1); });
    return { result };
  });

  http.post('/api/admin/libraries/:id/scan', {
    schema: {
      summary: 'Scan a library now (admin)', tags,
      description: 'Starts the scan (or joins the one running) and answers at once with its progress; GET /api/admin/libraries follows it.',
      params: Params, response: { 202: Type.Object({ library: AdminLibrary }), ...Errors },
    },
  }, async (request, reply) => {
    const lib = libraryOr404((request.params as { id: number }).id);
    if (lib.type === 'recordings') throw errors.conflict(`${lib.name} has no folders to scan`);
    void scanner.scan(lib).catch(() => {}); // logged by the scanner, kept in lastScans
    reply.code(202);
    return { library: await view(lib) };
  });
}
