/**
 * Playlists and guides changed through the admin API on a server run from a
 * YAML file, applied without a restart: a playlist added is imported at once;
 * a change keeps its channels' ids (and favorites); credentials in a URL are
 * never shown and survive an edit; refresh now; a removed playlist's channels
 * and a removed guide's programmes go, and come back with their ids.
 */
import t from 'tap';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createTestHost } from '../../../sdk/testing.js';
import { expectError } from '../../helpers/http.js';
import { channels, guide, m3u, serve, tempDir, xmltv, xt } from './fixtures.js';

t.test('live TV sources through the admin API', async (t) => {
  const dir = await tempDir(t, 'antenna-sources-admin-');
  const upstream = await serve(t);
  upstream.routes.set('/tv.m3u', { body: m3u([
    { name: 'Harbour News', url: 'http://127.0.0.1:9/news.ts', tvgId: 'news', chno: '1' },
    { name: 'Valley Sport', url: 'http://127.0.0.1:9/sport.ts', tvgId: 'sport', chno: '2' },
    { name: 'Kids Corner', url: 'http://127.0.0.1:9/kids.ts', tvgId: 'kids', chno: '3' },
  ]) });
  const hour = 3600_000;
  const start = Math.floor(Date.now() / hour) * hour;
  upstream.routes.set('/guide.xml', { body: xmltv([{ id: 'news', names: ['Harbour News'] }], [
    { channel: 'news', start: xt(new Date(start).toISOString()), stop: xt(new Date(start + hour).toISOString()), title: 'Morning Bulletin' },
    { channel: 'news', start: xt(new Date(start + hour).toISOString()), stop: xt(new Date(start + 2 * hour).toISOString()), title: 'Noon Bulletin' },
  ]) });
  // Basic credentials the server must check, to prove they are still sent after an edit.
  upstream.routes.set('/private.m3u', (req, res) => {
    if (req.headers.authorization !== `Basic ${Buffer.from('family:s3cret-pass').toString('base64')}`) return void res.writeHead(401).end();
    res.writeHead(200).end(m3u([{ name: 'Private One', url: 'http://127.0.0.1:9/p.ts', tvgId: 'p1' }]));
  });

  const file = path.join(dir, 'antenna.yaml');
  await writeFile(file, `# live TV
plugins:
  m3u-tuner:
    sources: []   # none yet
  xmltv-guide: { sources: [], maxAge: 100000d }
  live-tv: { initialImport: await }
`);
  const host = await createTestHost({ configFile: file });
  t.teardown(() => host.close());
  const api = (method: string, url: string, payload?: unknown) => host.inject({ method: method as 'GET', url, payload: payload as object, headers: host.authHeaders });
  const sources = async () => (await api('GET', '/api/admin/sources')).json();
  const until = async <T>(check: () => Promise<T | undefined | false>, what: string): Promise<T> => {
    for (let i = 0; i < 300; i++) {
      const v = await check();
      if (v) return v;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`timed out waiting for ${what}`);
  };
  const names = async () => (await channels(host)).map((c) => c.name).sort();

  // Added: imported at once, without a restart.
  let res = await api('POST', '/api/admin/sources/playlists', { name: 'Home IPTV', url: `${upstream.base}/tv.m3u`, maxStreams: 2 });
  t.equal(res.statusCode, 201, res.body);
  t.match(res.json(), { playlist: { id: 'm3u:Home_IPTV', name: 'Home IPTV', maxStreams: 2, refresh: '12h' }, result: { applied: ['sources'], restartNeeded: [] } });
  await until(async () => (await names()).length === 3, 'the channels');
  const before = await channels(host);
  const tuner = await until(async () => (await sources()).tuners.find((x: any) => x.id === 'm3u:Home_IPTV' && x.last_import), 'the import result');
  t.match(tuner, { name: 'Home IPTV', kind: 'tuner', max_streams: 2, channels: 3, refresh_ms: 12 * 3600_000, next_refresh: /^\d{4}-/, job: null,
    last_import: { ok: true, channels: 3, added: 3, removed: 0, duplicates: 0 } });
  t.match(await readFile(file, 'utf8'), /# live TV\nplugins:\n {2}m3u-tuner:\n {4}sources:\n {6}- name: Home IPTV\n/, 'written to the file');

  const news = before.find((c) => c.name === 'Harbour News')!;
  await host.inject({ method: 'POST', url: '/me/favorite', headers: host.authHeaders, payload: { channel_id: news.id } });

  // Changed: the same channels, the same ids.
  res = await api('PUT', '/api/admin/sources/playlists/m3u:Home_IPTV', { name: 'Home IPTV', url: `${upstream.base}/tv.m3u`, maxStreams: 3, refresh: '6h' });
  t.equal(res.statusCode, 200, res.body);
  // (A changed playlist is imported again: its last import is a new one once that ends.)
  await until(async () => (await sources()).tuners.find((x: any) => x.max_streams === 3 && x.refresh_ms === 6 * 3600_000 && !x.job && x.last_import.at !== tuner.last_import.at), 'the changed tuner, imported');
  t.same((await channels(host)).map((c) => c.id).sort(), before.map((c) => c.id).sort(), 'the channels keep their ids');

  // Refresh now.
  const hits = upstream.hits.get('/tv.m3u') ?? 0;
  res = await api('POST', '/api/admin/sources/m3u:Home_IPTV/refresh');
  t.equal(res.statusCode, 202);
  await until(async () => (upstream.hits.get('/tv.m3u') ?? 0) > hits, 'the playlist fetched again');
  expectError(t, await api('POST', '/api/admin/sources/m3u:Nowhere/refresh'), 404);

  // A guide.
  res = await api('POST', '/api/admin/sources/guides', { url: `${upstream.base}/guide.xml`, name: 'Guide' });
  t.equal(res.statusCode, 201, res.body);
  await until(async () => (await guide(host)).channels.find((c) => c.id === news.id)?.programs.length === 2, 'the programmes');
  const g = await until(async () => (await sources()).guides.find((x: any) => x.id === 'xmltv:Guide' && x.last_import), 'the guide import result');
  t.match(g, { kind: 'guide', last_import: { ok: true, programmes: 2, channels: 1 } });
  t.match((await api('GET', '/api/admin/sources/guides')).json(), { editable: true, guides: [{ id: 'xmltv:Guide', name: 'Guide', refresh: '6h' }] });

  // Credentials: hidden in every answer; sent back unchanged, they are kept.
  const secretUrl = `http://family:s3cret-pass@127.0.0.1:${upstream.port}/private.m3u`;
  res = await api('POST', '/api/admin/sources/playlists', { name: 'Private', url: secretUrl });
  t.notMatch(res.body, /s3cret-pass/);
  await until(async () => (await names()).includes('Private One'), 'the private channel');
  const private1 = await until(async () => (await sources()).tuners.find((x: any) => x.id === 'm3u:Private' && x.last_import && !x.job), 'the private import');
  const listed = (await api('GET', '/api/admin/sources/playlists')).json().playlists.find((p: any) => p.id === 'm3u:Private');
  t.equal(listed.url, `http://***@127.0.0.1:${upstream.port}/private.m3u`);
  res = await api('PUT', '/api/admin/sources/playlists/m3u:Private', { ...listed, id: undefined, userAgent: 'Family/1.0' });
  t.equal(res.statusCode, 200, res.body);
  t.match(await readFile(file, 'utf8'), new RegExp(`url: ${secretUrl.replace(/[.?]/g, '\\$&')}\\n\\s+maxStreams: 1\\n\\s+refresh: 12h\\n\\s+userAgent: Family/1.0`), 'the file keeps the credentials');
  const private2 = await until(async () => (await sources()).tuners.find((x: any) => x.id === 'm3u:Private' && x.last_import && x.last_import.at !== private1.last_import.at && !x.job), 'the re-import');
  t.match(private2.last_import, { ok: true, channels: 1 }, 'the edited playlist still signs in');

  // Refusals.
  expectError(t, await api('POST', '/api/admin/sources/playlists', { name: 'Home IPTV', url: 'x' }), 409, /already exists/);
  expectError(t, await api('POST', '/api/admin/sources/playlists', { name: 'Zero', url: 'x', maxStreams: 0 }), 400);
  expectError(t, await api('POST', '/api/admin/sources/playlists', { name: 'Slow', url: 'x', refresh: 'often' }), 400);
  expectError(t, await api('PUT', '/api/admin/sources/playlists/m3u:Nowhere', { name: 'N', url: 'x' }), 404);
  expectError(t, await api('DELETE', '/api/admin/sources/guides/xmltv:Nowhere'), 404);
  expectError(t, await api('POST', '/api/admin/sources/guides', { url: `${upstream.base}/guide.xml`, name: 'Guide' }), 409, /already listed/);

  // Removed: its channels go (and the guide's programmes); back again, the same ids.
  res = await api('DELETE', '/api/admin/sources/playlists/m3u:Home_IPTV');
  t.same(res.json().result, { changed: ['sources'], applied: ['sources'], restartNeeded: [] });
  await until(async () => !(await names()).includes('Harbour News'), 'the channels gone');
  t.same(await names(), ['Private One']);
  res = await api('DELETE', '/api/admin/sources/guides/xmltv:Guide');
  t.equal(res.statusCode, 200);
  res = await api('POST', '/api/admin/sources/playlists', { name: 'Home IPTV', url: `${upstream.base}/tv.m3u` });
  await until(async () => (await names()).length === 4, 'the channels back');
  t.same((await channels(host)).filter((c) => c.name !== 'Private One').map((c) => c.id).sort(), before.map((c) => c.id).sort(), 'with their old ids');
  t.ok((await channels(host)).find((c) => c.id === news.id)?.favorited, 'and the favorite');
  await until(async () => (await guide(host)).channels.find((c) => c.id === news.id)?.programs.length === 0, 'no programmes without the guide');
  const yaml = await readFile(file, 'utf8');
  t.notMatch(yaml, /xmltv:|name: Guide/);
  t.match(yaml, /^# live TV\n/);
});
