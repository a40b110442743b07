/**
 * Libraries changed through the admin API on a server run from a YAML file,
 * applied without a restart: a library added is scanned at once and users
 * granted it see it; a rename keeps its id (and so the grants); a folder that
 * is not there is refused; a removed library disappears and comes back under
 * its old id; scan now; `antenna library list` names the ids.
 */
import t from 'tap';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createTestHost } from '../../../sdk/testing.js';
import { expectError } from '../../helpers/http.js';
import { clip, tempDir } from './fixtures.js';

t.test('libraries through the admin API', async (t) => {
  const dir = await tempDir(t, 'antenna-vod-admin-');
  await Promise.all([
    clip(path.join(dir, 'movies', 'Alpha (2020).mp4'), { seconds: 1, width: 160, height: 90, fps: 25 }),
    clip(path.join(dir, 'shows', 'Show', 'Season 01', 'Show - S01E01.mp4'), { seconds: 1, width: 160, height: 90, fps: 25 }),
  ]);
  await mkdir(path.join(dir, 'more'));
  const file = path.join(dir, 'antenna.yaml');
  await writeFile(file, `plugins:
  vod:
    # What we own
    libraries:
      - name: Movies   # on the NAS
        type: movies
        paths: [./movies]
    initialScan: await
`);
  const host = await createTestHost({ configFile: file });
  t.teardown(() => host.close());
  const api = (method: string, url: string, payload?: unknown, headers = host.authHeaders) => host.inject({ method: method as 'GET', url, payload: payload as object, headers });
  const list = async () => (await api('GET', '/api/admin/libraries')).json();
  const until = async <T>(check: () => Promise<T | undefined>, what: string): Promise<T> => {
    for (let i = 0; i < 300; i++) {
      const v = await check();
      if (v) return v;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`timed out waiting for ${what}`);
  };

  let page = await list();
  t.match(page, { editable: true });
  t.match(page.libraries, [{ name: 'Movies', type: 'movies', paths: [path.join(dir, 'movies')], item_count: 1, source: 'config', scan: null, last_scan: { ok: true, files: 1, added: 1, items: 1 } }]);
  const moviesId = page.libraries[0].id;

  // Added: written to the file, scanned at once (its progress in the answer), seen by a user granted it.
  let res = await api('POST', '/api/admin/libraries', { name: 'Shows', type: 'shows', paths: ['./shows'] });
  t.equal(res.statusCode, 201, res.body);
  const added = res.json();
  t.same(added.result, { changed: ['libraries'], applied: ['libraries'], restartNeeded: [] });
  t.match(added.library, { name: 'Shows', type: 'shows', paths: [path.join(dir, 'shows')], source: 'config' });
  t.ok(added.library.scan || added.library.last_scan, 'the scan started');
  const showsId = added.library.id;
  const scanned = await until(async () => (await list()).libraries.find((l: any) => l.id === showsId && l.last_scan), 'the scan of Shows');
  t.match(scanned, { item_count: 1, scan: null, last_scan: { ok: true, files: 1, added: 1, items: 3 } });
  let yaml = await readFile(file, 'utf8');
  t.match(yaml, /# What we own\n {4}libraries:\n {6}- name: Movies +# on the NAS\n/, 'the comments stayed');
  t.match(yaml, /- name: Shows\n\s+type: shows\n\s+paths:\n\s+- \.\/shows\n/, 'the new library, as given');

  await host.createUser('kid', 'kid-password-1', { libraries: [String(showsId)] });
  const kid = { authorization: `Bearer ${await host.login('kid', 'kid-password-1')}` };
  t.same((await api('GET', '/libraries', undefined, kid)).json().libraries.map((l: any) => l.name), ['Shows'], 'the user sees the library granted');

  // Renamed: the same id, so the grant holds; another folder is scanned.
  res = await api('PATCH', `/api/admin/libraries/${showsId}`, { name: 'TV', paths: ['./shows', './more'] });
  t.equal(res.statusCode, 200, res.body);
  t.match(res.json().library, { id: showsId, name: 'TV', paths: [path.join(dir, 'shows'), path.join(dir, 'more')] });
  t.same((await api('GET', '/libraries', undefined, kid)).json().libraries.map((l: any) => l.name), ['TV'], 'the grant follows the rename');
  await until(async () => (await list()).libraries.find((l: any) => l.id === showsId && !l.scan && l.last_scan), 'the rescan');
  t.match(await readFile(file, 'utf8'), /- name: TV\n/);

  expectError(t, await api('PATCH', `/api/admin/libraries/${showsId}`, { paths: ['./nowhere'] }), 400, `paths: there is no folder at ${path.join(dir, 'nowhere')}`);
  expectError(t, await api('PATCH', `/api/admin/libraries/${showsId}`, { name: 'Movies' }), 409, /already exists/);
  expectError(t, await api('POST', '/api/admin/libraries', { name: 'Movies', type: 'movies', paths: ['./more'] }), 409, /already exists/);
  expectError(t, await api('POST', '/api/admin/libraries', { name: 'X', type: 'music', paths: ['./more'] }), 400);
  expectError(t, await api('POST', '/api/admin/libraries', { name: 'X', type: 'movies', paths: [] }), 400);
  expectError(t, await api('PATCH', '/api/admin/libraries/999', { name: 'Y' }), 404);
  expectError(t, await api('POST', '/api/admin/libraries/999/scan'), 404);

  // Scan now: answered at once with the scan under way (or just done), then its result.
  const before = scanned.last_scan.at;
  res = await api('POST', `/api/admin/libraries/${moviesId}/scan`);
  t.equal(res.statusCode, 202);
  t.match(res.json().library, { id: moviesId, name: 'Movies' });
  await until(async () => (await list()).libraries.find((l: any) => l.id === moviesId && !l.scan && l.last_scan.at > before), 'the new scan');

  const command = host.host.findCommand(['library', 'list'])!;
  const lines: string[] = [];
  await host.host.runCommand(command.entry, command.args, { progress: { update() {}, done() {} }, out: (l) => lines.push(l) });
  t.same(lines[0]!.split('\t'), ['ID', 'NAME', 'TYPE', 'ITEMS', 'FOLDERS']);
  t.ok(lines.includes(`${moviesId}\tMovies\tmovies\t1\t${path.join(dir, 'movies')}`), `library list names the ids (${lines.join(' | ')})`);
  t.ok(lines.some((l) => l.startsWith(`${showsId}\tTV\tshows\t1\t`)));

  // Removed: gone for everyone, at once; added back under its name, the same id.
  res = await api('DELETE', `/api/admin/libraries/${showsId}`);
  t.same(res.json().result, { changed: ['libraries'], applied: ['libraries'], restartNeeded: [] });
  t.same((await api('GET', '/libraries', undefined, kid)).json().libraries, [], 'the user sees nothing now');
  expectError(t, await api('GET', `/library/${showsId}`), 404);
  yaml = await readFile(file, 'utf8');
  t.notMatch(yaml, /name: TV/);
  t.match(yaml, /- name: Movies +# on the NAS\n/);
  res = await api('POST', '/api/admin/libraries', { name: 'TV', type: 'shows', paths: ['./shows'] });
  t.equal(res.json().library.id, showsId, 'back under its old id');
  t.same((await api('GET', '/libraries', undefined, kid)).json().libraries.map((l: any) => l.name), ['TV'], 'and the grant with it');

  // Renaming to the name of a removed library would take its id: refused.
  await api('POST', '/api/admin/libraries', { name: 'Old', type: 'movies', paths: ['./more'] });
  const old = (await list()).libraries.find((l: any) => l.name === 'Old');
  await api('DELETE', `/api/admin/libraries/${old.id}`);
  expectError(t, await api('PATCH', `/api/admin/libraries/${showsId}`, { name: 'Old' }), 409, /removed earlier/);
  t.match((await list()).libraries.find((l: any) => l.id === showsId), { name: 'TV' }, 'nothing changed');
});
