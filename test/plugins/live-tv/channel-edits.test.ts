/**
 * Channels for administrators, end to end over a real playlist and guide server: guide
 * matching by each method with its score, tvg-shift, the unmatched channels with their
 * candidates (API and `antenna channels unmatched`), edits and manual mappings that survive a
 * refresh and a restart and show in /channels and /programs, renumbering, and clear errors
 * (403 to other users, 400, 404, 409).
 */
import t from 'tap';
import { createTestHost, type TestHost } from '../../../sdk/testing.js';
import { channels, getJson, guide, serve, tempDir, xmltv, xt } from './fixtures.js';

const HOUR = 3600_000;

function playlist(newsName: string): string {
  return ['#EXTM3U',
    '#EXTINF:-1 tvg-id="news.tv" tvg-chno="1" group-title="News",' + newsName, 'http://family:s3cret-pass@127.0.0.1:9/news.ts',
    '#EXTINF:-1 tvg-id="SPORT.TV " tvg-chno="2" group-title="Sports",Sport HD', 'http://127.0.0.1:9/sport.ts',
    '#EXTINF:-1 tvg-chno="3" group-title="Kids",Télé-Québec', 'http://127.0.0.1:9/tq.ts',
    '#EXTINF:-1 group-title="Kids",US: Cartoon Netwrk', 'http://127.0.0.1:9/cn.ts',
    '#EXTINF:-1 tvg-id="movies" tvg-shift="-2" tvg-chno="5" group-title="Movies",Movies', 'http://127.0.0.1:9/movies.ts',
    '#EXTINF:-1 tvg-chno="6",Mystery Box', 'http://127.0.0.1:9/mystery.ts',
  ].join('\n') + '\n';
}

t.test('channels for administrators: guide matches, edits, manual mappings, renumbering', async (t) => {
  const dir = await tempDir(t, 'antenna-channel-edits-');
  const upstream = await serve(t);
  upstream.routes.set('/tv.m3u', { body: playlist('Harbour News') });
  const start = Math.floor(Date.now() / HOUR) * HOUR;
  const at = (h: number) => xt(new Date(start + h * HOUR).toISOString());
  upstream.routes.set('/guide.xml', { body: xmltv([
    { id: 'news.tv', names: ['Harbour News'] }, { id: 'sport.tv', names: ['Sport'] }, { id: 'tq', names: ['Tele Quebec'] },
    { id: 'cn', names: ['Cartoon Network'] }, { id: 'movies', names: ['Movies'] }, { id: 'mb', names: ['The Box of Mysteries'] },
  ], [
    { channel: 'news.tv', start: at(0), stop: at(1), title: 'Bulletin' },
    { channel: 'movies', start: at(2), stop: at(4), title: 'Feature' },
    { channel: 'mb', start: at(0), stop: at(1), title: 'Riddles' },
  ]) });

  const dataDir = `${dir}/data`;
  const plugins = {
    'live-tv': { initialImport: 'await' },
    'm3u-tuner': { sources: [{ name: 'IPTV', url: `${upstream.base}/tv.m3u` }] },
    'xmltv-guide': { sources: [{ url: `${upstream.base}/guide.xml` }], maxAge: '100000d' },
  };
  let host: TestHost = await createTestHost({ dataDir, plugins });
  t.teardown(() => host.close());
  const api = (method: string, url: string, payload?: unknown, token = host.adminToken) =>
    host.inject({ method: method as 'GET', url, payload: payload as object, headers: { authorization: `Bearer ${token}` } });
  const admin = async () => {
    const res = await api('GET', '/api/admin/channels');
    t.equal(res.statusCode, 200, res.body);
    return new Map((res.json().channels as any[]).map((c) => [c.name, c]));
  };

  // Guide matches, each with its method and score.
  let all = await admin();
  t.strictSame([...all.keys()], ['Harbour News', 'Sport HD', 'Télé-Québec', 'Movies', 'Mystery Box', 'US: Cartoon Netwrk']);
  t.match(all.get('Harbour News')!.guide, { channel_id: 'news.tv', method: 'tvg_id', score: 1 });
  t.match(all.get('Sport HD')!.guide, { channel_id: 'sport.tv', method: 'tvg_id_folded', score: 1 });
  t.match(all.get('Télé-Québec')!.guide, { channel_id: 'tq', method: 'name', score: 1 });
  const cn = all.get('US: Cartoon Netwrk')!;
  t.match(cn.guide, { channel_id: 'cn', method: 'fuzzy' });
  t.ok(cn.guide.score > 0.75 && cn.guide.score < 0.9, `a fuzzy score (${cn.guide.score})`);
  t.equal(all.get('Mystery Box')!.guide, null, 'no guide for a channel that only looks a bit like one');
  const news = all.get('Harbour News')!;
  t.strictSame(news.streams, [{
    id: news.id, source: 'm3u:IPTV', name: 'Harbour News', url: 'http://***@127.0.0.1:9/news.ts', state: 'standby', last_failure: null, viewers: 0,
  }], 'its stream, credentials redacted, not playing');
  t.notMatch(JSON.stringify([...all.values()]), /s3cret/, 'no credentials anywhere');
  t.match(all.get('Movies')!, { tvg_shift: -2, categories: ['Movies'], hidden: false, number: '5' });

  // tvg-shift moves the channel's programmes.
  const programmes = async () => new Map((await guide(host)).channels.map((c) => [c.name, c.programs.map((p) => [p.title, p.start])]));
  t.strictSame((await programmes()).get('Movies'), [['Feature', new Date(start).toISOString()]], 'two hours earlier, as tvg-shift says');

  // The unmatched and doubtful channels, with their closest guide channels.
  let res = await api('GET', '/api/admin/channels/unmatched');
  t.equal(res.statusCode, 200, res.body);
  const unmatched = res.json();
  t.strictSame(unmatched.channels.map((c: any) => c.name), ['Mystery Box', 'US: Cartoon Netwrk'], 'the unmatched one and the low-confidence one');
  t.equal(unmatched.total, 2);
  t.equal(unmatched.channels[0].candidates[0].channel_id, 'mb', 'the closest guide channel first');
  t.ok(unmatched.channels[0].candidates.length <= 5);
  const lines: string[] = [];
  await host.host.runCommand(host.host.findCommand(['channels', 'unmatched'])!.entry, [], { progress: { update() {}, done() {} }, out: (l) => lines.push(l) });
  t.match(lines.join('\n'), /Mystery Box\t-\tmb "The Box of Mysteries"/, 'the CLI lists them too');
  t.match(lines.at(-1), /^2 channels unmatched/);

  // Non-admins get 403 on every admin channel route.
  await host.createUser('viewer', 'viewer-password');
  const viewer = await host.login('viewer', 'viewer-password');
  for (const [method, url, body] of [['GET', '/api/admin/channels'], ['GET', '/api/admin/channels/unmatched'],
    ['PATCH', `/api/admin/channels/${news.id}`, { name: 'x' }], ['POST', '/api/admin/channels/renumber', { start: 1, by: 'name' }]] as const) {
    res = await api(method, url, body, viewer);
    t.equal(res.statusCode, 403, `${method} ${url}: 403 to a user`);
    t.type(res.json().error, 'string');
  }

  // Edits.
  const mystery = all.get('Mystery Box')!;
  res = await api('PATCH', `/api/admin/channels/${news.id}`, { name: 'Harbour News Live', number: '10', logo: 'http://img.invalid/n.png', categories: ['Local', 'News'] });
  t.equal(res.statusCode, 200, res.body);
  t.match(res.json().channel, { id: news.id, name: 'Harbour News Live', number: '10', logo: 'http://img.invalid/n.png', categories: ['Local', 'News'], guide: { channel_id: 'news.tv' } });
  res = await api('PATCH', `/api/admin/channels/${mystery.id}`, { guide_channel_id: 'mb', hidden: true });
  t.equal(res.statusCode, 200, res.body);
  t.match(res.json().channel, { hidden: true, guide: { channel_id: 'mb', method: 'manual', score: 1 } }, 'a manual mapping');

  // Bad input.
  const error = async (method: string, url: string, body: unknown, status: number, message: RegExp) => {
    const r = await api(method, url, body);
    t.equal(r.statusCode, status, `${method} ${url} ${JSON.stringify(body)}: ${r.body}`);
    t.match(r.json(), { error: message });
  };
  await error('PATCH', `/api/admin/channels/${news.id}`, { number: '2' }, 409, /Number 2 is already in use/);
  await error('PATCH', '/api/admin/channels/999999', { name: 'x' }, 404, /No channel 999999/);
  await error('PATCH', `/api/admin/channels/${news.id}`, { guide_channel_id: 'nowhere' }, 404, /No guide channel nowhere/);
  await error('PATCH', `/api/admin/channels/${news.id}`, {}, 400, /./);
  await error('PATCH', `/api/admin/channels/${news.id}`, { colour: 'red' }, 400, /./);
  await error('PATCH', `/api/admin/channels/${news.id}`, { number: '   ' }, 400, /number must not be empty/);
  await error('PATCH', '/api/admin/channels/abc', { name: 'x' }, 400, /./);
  await error('POST', '/api/admin/channels/renumber', { start: 1, by: 'colour' }, 400, /./);

  // What users see: the edited values; the hidden channel gone.
  const shown = async () => new Map((await channels(host)).map((c) => [c.id, c]));
  const checkShown = async (when: string) => {
    const list = await shown();
    t.match(list.get(news.id), { name: 'Harbour News Live', tvg_chno: '10', logo: 'http://img.invalid/n.png', category: 'Local' }, `${when}: /channels shows the edits`);
    t.notOk(list.has(mystery.id), `${when}: a hidden channel is not listed`);
    const grid = (await guide(host)).channels.find((c) => c.id === news.id)!;
    t.match(grid, { name: 'Harbour News Live', tvg_chno: '10', programs: [{ title: 'Bulletin' }] }, `${when}: /programs too`);
    const mine = (await admin()).get('Mystery Box')!;
    t.match(mine, { hidden: true, guide: { channel_id: 'mb', method: 'manual' } }, `${when}: the manual mapping kept`);
  };
  await checkShown('after the edits');
  t.equal((await getJson(host, '/channels', viewer)).body.channels.some((c: any) => c.id === mystery.id), false, 'nor to a user');

  // A refresh (the playlist renames the channel) undoes nothing.
  upstream.routes.set('/tv.m3u', { body: playlist('Harbour News (new name)') });
  res = await api('POST', '/api/admin/sources/m3u:IPTV/refresh');
  t.equal(res.statusCode, 202);
  for (let i = 0; i < 100 && (await getJson(host, '/api/admin/sources')).body.tuners[0].job; i++) await new Promise((r) => setTimeout(r, 50));
  await checkShown('after a refresh');
  res = await api('PATCH', `/api/admin/channels/${news.id}`, { name: null });
  t.equal(res.json().channel.name, 'Harbour News (new name)', 'null gives back the playlist\'s name, as it is now');
  await api('PATCH', `/api/admin/channels/${news.id}`, { name: 'Harbour News Live' });

  // And a restart.
  await host.close();
  host = await createTestHost({ dataDir, plugins });
  await checkShown('after a restart');

  // Renumbering, category order from 100; channels without a category last.
  res = await api('POST', '/api/admin/channels/renumber', { start: 100, by: 'category' });
  t.equal(res.statusCode, 200, res.body);
  t.same(res.json(), { renumbered: 6 });
  all = await admin();
  t.strictSame([...all.values()].map((c) => [c.categories[0] ?? null, c.number, c.name]), [
    ['Kids', '100', 'Télé-Québec'], ['Kids', '101', 'US: Cartoon Netwrk'], ['Local', '102', 'Harbour News Live'],
    ['Movies', '103', 'Movies'], ['Sports', '104', 'Sport HD'], [null, '105', 'Mystery Box'],
  ]);
  res = await api('POST', '/api/admin/channels/renumber', { start: 1, by: 'name' });
  t.strictSame([...(await admin()).values()].map((c) => [c.number, c.name]), [
    ['1', 'Harbour News Live'], ['2', 'Movies'], ['3', 'Mystery Box'], ['4', 'Sport HD'], ['5', 'Télé-Québec'], ['6', 'US: Cartoon Netwrk'],
  ]);
  // Removing the manual mapping: the automatic match comes back (here, none).
  res = await api('PATCH', `/api/admin/channels/${mystery.id}`, { guide_channel_id: null, hidden: false });
  t.match(res.json().channel, { hidden: false, guide: null });
  t.ok((await shown()).has(mystery.id), 'shown again');
});
