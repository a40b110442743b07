/**
 * Recordings as VOD catalog items (PRODUCT.md §2): the automatic "Recordings"
 * library in /libraries, /library/{id} and /item/{id}; play-info pointing at
 * /watch/recording/{id} with a recording-scoped key; continue watching lists
 * them under type=live_tv; library grants apply. Rows are written straight
 * into the DVR's table (recording itself is covered by record.test).
 */
import t from 'tap';
import { createTestHost } from '../../../sdk/testing.js';
import { expectError } from '../../helpers/http.js';

t.test('the Recordings library', async (t) => {
  const host = await createTestHost({ plugins: { dvr: {}, 'continue-watching': {}, 'live-tv': { initialImport: 'skip' } } });
  t.teardown(() => host.close());
  const now = Date.now();
  const row = (title: string, start: number, status: string, duration: number) => ({
    channel_id: 1, program_id: start, tuner_id: 't', title, start, stop: start + 60_000, status, error: null,
    size_bytes: 1000, duration, gaps: '[]', dir: `/nowhere/${title}`, created_by: 1, created_at: start,
  });
  await host.host.knex('dvr_recordings').insert([
    row('Older news', now - 7_200_000, 'completed', 59.5),
    row('Newer news', now - 3_600_000, 'completed', 60),
    row('Later show', now + 3_600_000, 'scheduled', 0),
  ]);
  const get = (url: string, headers: Record<string, string> = host.authHeaders) => host.inject({ method: 'GET', url, headers });

  const libraries = (await get('/libraries')).json().libraries;
  const recordings = libraries.find((l: any) => l.name === 'Recordings');
  t.match(recordings, { type: 'recordings', item_count: 2 }, 'a Recordings library with the two recorded ones');
  const page = (await get(`/library/${recordings.id}`)).json();
  t.strictSame(page.items.map((i: any) => [i.title, i.type, i.duration]), [['Newer news', 'recording', 60], ['Older news', 'recording', 60]], 'newest first');
  t.equal(page.total, 2);
  t.strictSame((await get(`/library/${recordings.id}?limit=1&offset=1`)).json().items.map((i: any) => i.title), ['Older news'], 'paged');
  const id = page.items[0].id;
  t.match(id, /^rec-\d+$/);
  t.match((await get(`/item/${id}`)).json(), { id, type: 'recording', title: 'Newer news', versions: [], children: [] });

  const info = (await get(`/watch/vod/${id}/play-info`)).json();
  t.match(info, { method: 'remux', format: 'hls' });
  t.match(info.url, new RegExp(`^/watch/recording/${id.slice(4)}\\?key=`), 'the recording\'s own manifest, with a key');
  const dash = (await get(`/watch/vod/${id}/play-info`, { ...host.authHeaders, 'device-os': 'STB' })).json();
  t.match(dash, { format: 'dash', url: new RegExp(`^/watch/recording/${id.slice(4)}/master\\.mpd\\?key=`) });
  t.match((await get(`/watch/vod/${id}`)).json(), { status: 'redirecting', type: 'hls' }, 'the Redirect notice');

  // play-info started a continue-watching entry, listed as live TV.
  let live: any;
  for (let i = 0; i < 50 && !live?.items?.length; i++) {
    live = (await get('/api/continue-watching?type=live_tv')).json();
    if (!live.items.length) await new Promise((r) => setTimeout(r, 50));
  }
  t.match(live.items, [{ videoId: id, contentType: 'recording', libraryId: recordings.id, title: 'Newer news' }]);
  t.equal((await get('/api/continue-watching?type=vod')).json().total, 0, 'not among VOD');

  expectError(t, await get('/item/rec-999'), 404);
  expectError(t, await get(`/item/rec-${Number(id.slice(4)) + 1}`), 404, undefined, 'a scheduled recording is no item');
  expectError(t, await get('/watch/vod/rec-999/play-info'), 404);
  expectError(t, await get(`/watch/vod/${id}/file`), 404, undefined, 'a recording has no single file');

  // A user granted another library does not see recordings.
  await host.createUser('restricted', 'restricted-password', { libraries: ['9999'] });
  const other = { authorization: `Bearer ${await host.login('restricted', 'restricted-password')}` };
  t.notOk((await get('/libraries', other)).json().libraries.some((l: any) => l.name === 'Recordings'));
  expectError(t, await get(`/library/${recordings.id}`, other), 404);
  expectError(t, await get(`/item/${id}`, other), 404);
  expectError(t, await get(`/watch/vod/${id}/play-info`, other), 404);
});

t.test('the Recordings library grant decides who may list, play, schedule and delete recordings', async (t) => {
  const host = await createTestHost({ plugins: { dvr: {}, 'live-tv': { initialImport: 'skip' } } });
  t.teardown(() => host.close());
  const now = Date.now();
  const [id] = await host.host.knex('dvr_recordings').insert({
    channel_id: 1, program_id: now, tuner_id: 't', title: 'Finished', start: now - 3_600_000, stop: now - 3_540_000, status: 'completed',
    error: null, size_bytes: 1000, duration: 60, gaps: '[]', dir: '/nowhere/finished', created_by: 1, created_at: now - 3_600_000,
  }).returning('id').then((rows: any[]) => rows.map((r) => (typeof r === 'object' ? r.id : r)));
  const recordings = (await host.inject({ method: 'GET', url: '/libraries', headers: host.authHeaders })).json().libraries.find((l: any) => l.name === 'Recordings');

  await host.createUser('movies-only', 'movies-only-password', { libraries: ['9999'] });
  await host.createUser('with-recordings', 'with-recordings-password', { libraries: [String(recordings.id)] });
  const as = async (name: string) => ({ authorization: `Bearer ${await host.login(name, `${name}-password`)}` });
  const restricted = await as('movies-only');
  const granted = await as('with-recordings');
  const call = (method: 'GET' | 'POST' | 'DELETE', url: string, headers: Record<string, string>, payload?: object) => host.inject({ method, url, headers, payload });

  t.same((await call('GET', '/recordings', restricted)).json(), [], 'not granted: no recordings listed');
  expectError(t, await call('GET', `/recordings/${id}`, restricted), 404);
  expectError(t, await call('GET', `/watch/recording/${id}`, restricted), 404, undefined, 'nor played');
  expectError(t, await call('GET', `/watch/recording/${id}/master.mpd`, restricted), 404);
  expectError(t, await call('GET', `/watch/recording/${id}/s/0/init-video.mp4`, restricted), 404, undefined, 'nor its segments');
  expectError(t, await call('DELETE', `/recordings/${id}`, restricted), 404, undefined, 'nor deleted');
  expectError(t, await call('POST', '/recordings', restricted, { channel_id: 1, program_id: 1 }), 403, /Recordings are not among your libraries/, 'nor scheduled');

  t.same((await call('GET', '/recordings', granted)).json().map((r: any) => r.id), [id], 'granted: listed');
  t.equal((await call('GET', `/recordings/${id}`, granted)).json().title, 'Finished');
  t.equal((await call('GET', `/watch/recording/${id}`, granted)).statusCode, 409, 'and played (this one has no media on disk: 409, not 404)');
});

t.test('up next across a series\' recordings: the next episode, then the next season', async (t) => {
  const { RecordingItems } = await import('../../../plugins/dvr/catalog-items.js');
  const rec = (id: number, season: number | null, episode: number | null, seriesKey: string | null = 't:show') => ({
    id, channelId: 1, programId: id, tunerId: 't', title: 'Show', start: id * 1000, stop: id * 1000 + 500, status: 'completed' as const, error: null,
    sizeBytes: 1, duration: 60, gaps: [], dir: `/x/${id}`, createdBy: 1, createdAt: 0, ruleId: 1, episodeKey: null, seriesKey,
    season, episode, episodeTitle: null, prePadding: null, postPadding: null, watchedAt: null,
  });
  const rows = [rec(1, 1, 2), rec(2, 1, 1), rec(3, 2, 1), rec(4, null, null, null)];
  const items = new RecordingItems({ list: async () => rows } as any, {} as any);
  t.equal((await items.nextItem('rec-2'))?.id, 'rec-1', 'S1E1 → S1E2');
  t.equal((await items.nextItem('rec-1'))?.id, 'rec-3', 'S1E2 → S2E1');
  t.equal(await items.nextItem('rec-3'), undefined, 'the last: none');
  t.equal(await items.nextItem('rec-4'), undefined, 'no series: none');
});
