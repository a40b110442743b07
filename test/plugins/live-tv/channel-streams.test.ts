/**
 * Several streams per channel: with `merge: tvg-id`, entries of two playlists sharing a
 * tvg-id are one channel, their streams in the playlists' config order; an administrator
 * attaches, detaches and reorders streams (PUT /api/admin/channels/{id}/streams), which
 * survives a refresh and a restart; a stream of another channel of several streams is refused.
 */
import t from 'tap';
import { createTestHost, type TestHost } from '../../../sdk/testing.js';
import { channels, m3u, serve, tempDir } from './fixtures.js';

t.test('streams per channel: merged by tvg-id, attached, detached, reordered', async (t) => {
  const dir = await tempDir(t, 'antenna-channel-streams-');
  const upstream = await serve(t);
  upstream.routes.set('/a.m3u', { body: m3u([
    { name: 'News A', tvgId: 'news.tv', chno: '1', url: 'http://127.0.0.1:9/a/news.ts' },
    { name: 'Sport A', tvgId: 'sport.tv', chno: '2', url: 'http://127.0.0.1:9/a/sport.ts' },
  ]) });
  upstream.routes.set('/b.m3u', { body: m3u([
    { name: 'News B', tvgId: 'news.tv', chno: '11', url: 'http://127.0.0.1:9/b/news.ts' },
    { name: 'Movies B', tvgId: 'movies.tv', chno: '12', url: 'http://127.0.0.1:9/b/movies.ts' },
    { name: 'Kids B', chno: '13', url: 'http://127.0.0.1:9/b/kids.ts' },
  ]) });
  const dataDir = `${dir}/data`;
  const plugins = {
    'live-tv': { initialImport: 'await', merge: 'tvg-id' },
    // B first in the config: its streams are tried first.
    'm3u-tuner': { sources: [{ name: 'B', url: `${upstream.base}/b.m3u` }, { name: 'A', url: `${upstream.base}/a.m3u` }] },
  };
  let host: TestHost = await createTestHost({ dataDir, plugins });
  t.teardown(() => host.close());
  const api = (method: string, url: string, payload?: unknown) => host.inject({ method: method as 'GET', url, payload: payload as object, headers: host.authHeaders });
  const admin = async () => new Map(((await api('GET', '/api/admin/channels')).json().channels as any[]).map((c) => [c.id, c]));
  const streamsOf = (c: any) => c.streams.map((s: any) => `${s.source}:${s.name}`);

  let all = await admin();
  t.equal(all.size, 4, 'News A and News B are one channel');
  const news = [...all.values()].find((c) => c.tvg_id === 'news.tv');
  t.strictSame(streamsOf(news), ['m3u:B:News B', 'm3u:A:News A'], 'its streams in the config order of their playlists');
  t.strictSame((await channels(host)).map((c) => c.name).sort(), ['Kids B', 'Movies B', 'News B', 'Sport A']);
  const ids = new Map([...all.values()].flatMap((c) => c.streams.map((s: any) => [s.name, s.id])));
  const sport = all.get(ids.get('Sport A'))!;
  const movies = all.get(ids.get('Movies B'))!;
  const kids = all.get(ids.get('Kids B'))!;

  // Attach (Kids B, a channel of its own, goes) and reorder.
  let res = await api('PUT', `/api/admin/channels/${sport.id}/streams`, { streams: [ids.get('Kids B'), sport.id] });
  t.equal(res.statusCode, 200, res.body);
  t.strictSame(streamsOf(res.json().channel), ['m3u:B:Kids B', 'm3u:A:Sport A']);
  t.notOk((await channels(host)).some((c) => c.id === kids.id), 'the attached stream\'s channel is gone');

  // Refused: a stream of another channel of several streams; unknown ids; the own stream left out; twice the same.
  const error = async (url: string, body: unknown, status: number, message: RegExp) => {
    const r = await api('PUT', url, body);
    t.equal(r.statusCode, status, `${url} ${JSON.stringify(body)}: ${r.body}`);
    t.match(r.json(), { error: message });
  };
  await error(`/api/admin/channels/${movies.id}/streams`, { streams: [movies.id, ids.get('News A')] }, 409, new RegExp(`Stream ${ids.get('News A')} is attached to channel ${news.id}`));
  await error(`/api/admin/channels/${movies.id}/streams`, { streams: [movies.id, ids.get('Kids B')] }, 409, /is attached to channel/);
  await error(`/api/admin/channels/${movies.id}/streams`, { streams: [movies.id, 999999] }, 404, /No stream 999999/);
  await error('/api/admin/channels/999999/streams', { streams: [movies.id] }, 404, /No channel 999999/);
  await error(`/api/admin/channels/${movies.id}/streams`, { streams: [ids.get('Sport A')] }, 409, /attached/);
  await error(`/api/admin/channels/${sport.id}/streams`, { streams: [ids.get('Kids B')] }, 400, /keeps its own stream/);
  await error(`/api/admin/channels/${sport.id}/streams`, { streams: [sport.id, sport.id] }, 400, /once/);
  await error(`/api/admin/channels/${sport.id}/streams`, { streams: [] }, 400, /./);

  // Reorder the merged channel.
  res = await api('PUT', `/api/admin/channels/${news.id}/streams`, { streams: [ids.get('News A'), ids.get('News B')] });
  t.equal(res.statusCode, 200, res.body);
  t.strictSame(streamsOf(res.json().channel), ['m3u:A:News A', 'm3u:B:News B']);

  // A refresh and a restart keep it all.
  const check = async (when: string) => {
    all = await admin();
    t.strictSame(streamsOf(all.get(news.id)), ['m3u:A:News A', 'm3u:B:News B'], `${when}: the order set`);
    t.strictSame(streamsOf(all.get(sport.id)), ['m3u:B:Kids B', 'm3u:A:Sport A'], `${when}: the attached stream`);
    t.notOk(all.has(kids.id), `${when}: no channel of its own`);
  };
  res = await api('POST', '/api/admin/sources/m3u:B/refresh');
  for (let i = 0; i < 100 && (await api('GET', '/api/admin/sources')).json().tuners.some((x: any) => x.job); i++) await new Promise((r) => setTimeout(r, 50));
  await check('after a refresh');
  await host.close();
  host = await createTestHost({ dataDir, plugins });
  await check('after a restart');

  // Detach: Kids B is a channel of its own again, with its id.
  res = await api('PUT', `/api/admin/channels/${sport.id}/streams`, { streams: [sport.id] });
  t.equal(res.statusCode, 200, res.body);
  t.strictSame(streamsOf(res.json().channel), ['m3u:A:Sport A']);
  t.ok((await channels(host)).some((c) => c.id === kids.id && c.name === 'Kids B'), 'the detached stream is its channel again');
});
