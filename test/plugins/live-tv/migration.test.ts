/**
 * Upgrading a data dir whose channels were stored a row each (live-tv
 * migrations 001-004), through the tuners' pages (005), to a row per channel
 * again (006); and one whose channels are in pages, as the first release wrote
 * them: ids, assigned numbers, hidden channels and how long they are kept,
 * favorites and guide mappings all kept.
 */
import t from 'tap';
import path from 'node:path';
import { createTestHost } from '../../../sdk/testing.js';
import { runMigrations } from '../../../core/db/migrations.js';
import { migrations } from '../../../plugins/live-tv/migrations.js';
import { channels, getJson, m3u, refresh, startHost, tempDir, write, type PlaylistEntry } from './fixtures.js';

t.test('channels stored as rows come through the upgrade with their ids, numbers and favorites', async (t) => {
  const dir = await tempDir(t);
  const dataDir = path.join(dir, 'data');
  // A data dir as an earlier version left it: the core's tables and the admin (user 1), and
  // live-tv's tables as they were before 005 (on the server's own database: SQLite, foreign keys
  // enforced, or PostgreSQL with ANTENNA_TEST_PG).
  const before = await createTestHost({ dataDir });
  const db = before.host.knex;
  await runMigrations(db, 'live-tv', migrations.filter((m) => m.name < '005'));
  const row = (id: number, tuner: string, tvgId: string, name: string, number: string | null, assigned: string | null, present: boolean, position: number) => ({
    id, tuner_id: tuner, key: `tvg:${tvgId}`, name, number, assigned_number: assigned, tvg_id: tvgId, tvg_name: name, logo: null,
    groups: '["News"]', extra: '{}', data: JSON.stringify({ url: `http://streams.invalid/${tvgId}`, headers: {} }), present, position, updated_at: 1,
  });
  await db('livetv_channels').insert([
    row(3, 'm3u:IPTV', 'a.tv', 'Alpha', '1', null, true, 0),
    row(5, 'm3u:IPTV', 'b.tv', 'Bravo', null, '40', true, 1),
    row(7, 'm3u:IPTV', 'gone.tv', 'Gone', null, '41', false, 2),
    row(9, 'm3u:IPTV', 'c.tv', 'Charlie', '3', null, true, 2),
    row(11, 'm3u:Old', 'old.tv', 'Old Source', null, '50', true, 0),
  ]);
  await db('livetv_favorites').insert([{ user_id: 1, channel_id: 5 }, { user_id: 1, channel_id: 7 }]);
  await db('livetv_channel_guide').insert({ channel_id: 3, source_id: 'guide', guide_id: 'a.tv' });
  await before.close();

  // The new version starts on it: Alpha and Charlie as before, Bravo still without a number,
  // Gone listed again, Delta new.
  const url = (id: string) => `http://streams.invalid/${id}`;
  const file = await write(dir, 'tv.m3u', m3u([
    { name: 'Alpha', tvgId: 'a.tv', chno: '1', group: 'News', url: url('a.tv') },
    { name: 'Bravo', tvgId: 'b.tv', group: 'News', url: url('b.tv') },
    { name: 'Charlie', tvgId: 'c.tv', chno: '3', group: 'News', url: url('c.tv') },
    { name: 'Gone', tvgId: 'gone.tv', group: 'News', url: url('gone.tv') },
    { name: 'Delta', tvgId: 'd.tv', group: 'News', url: url('d.tv') },
  ]));
  const host = await startHost(t, { dataDir, playlists: [{ name: 'IPTV', url: file }] });
  const listed = await channels(host);
  t.strictSame(listed.map((c) => [c.name, c.id, c.tvg_chno]), [
    ['Alpha', 3, '1'], ['Charlie', 9, '3'], ['Bravo', 5, '40'], ['Gone', 7, '41'], ['Delta', 12, '51'],
  ], 'the ids and assigned numbers kept; the new channel gets the next id after every old one (11) and a free number');
  t.strictSame((await getJson(host, '/me')).body.user.favorites, [5, 7], 'favorites kept (the hidden channel\'s too, shown again now)');
  const knex = host.host.knex;
  t.strictSame(await knex('livetv_channel_guide').select('channel_id', 'guide_id'), [], 'guide mappings recomputed (no guide source configured)');
  t.notOk(await knex.schema.hasTable('livetv_channels'), 'the rows table is gone');
  t.notOk(await knex.schema.hasTable('livetv_channel_pages'), 'and so are the pages');
  const old = await knex('livetv_tuner_channels').where({ tuner_id: 'm3u:Old' }).select('id', 'key', 'name');
  t.strictSame(old, [{ id: 11, key: 'tvg:old.tv', name: 'Old Source' }], 'a source no longer configured keeps its channels');
  // The favorites table, made again without the channel's foreign key, keeps the user's.
  const zoe = await host.createUser('zoe', 'zoe-password-123');
  await knex('livetv_favorites').insert({ user_id: zoe, channel_id: 3 });
  await knex('users').where({ id: zoe }).delete();
  t.strictSame(await knex('livetv_favorites').where({ user_id: zoe }).select('channel_id'), [], 'favorites still go with their user');
  await t.rejects(knex('livetv_favorites').insert({ user_id: 999, channel_id: 3 }), 'and need one');
});

t.test('channels stored in pages (the first release) come through the upgrade to rows, every field and hidden channel kept', async (t) => {
  const dir = await tempDir(t);
  const dataDir = path.join(dir, 'data');
  const day = 86_400_000;
  let now = Date.parse('2026-03-01T00:00:00Z');
  const clock = { now: () => now };
  const before = await createTestHost({ dataDir });
  const db = before.host.knex;
  await runMigrations(db, 'live-tv', migrations.filter((m) => m.name < '006'));
  // Pages as the first release wrote them: 400 entries each, a listed channel as
  // [id, key, name, number, assigned, tvg-id, tvg-name, logo, groups, extra, data] and a hidden one
  // as [id, key, assigned, hidden at]. 450 listed channels over two pages, then three hidden ones:
  // one gone a day, one gone 60 days but a favorite, one gone 60 days.
  const url = (i: number) => `http://streams.invalid/${i}`;
  const listedEntry = (i: number) => [i, `tvg:c${i}.tv`, i % 3 ? `Channel ${i}` : `Канал ${i} ñ`, i % 10 ? String(i) : null, i % 10 ? null : String(1000 + i),
    `c${i}.tv`, i % 2 ? `Channel ${i}` : null, i % 4 ? `http://logos.invalid/${i}.png` : null, i % 5 ? '["News"]' : '["News","Public"]',
    i % 7 ? '{}' : '{"tvg-country":"AR"}', JSON.stringify(i % 9 ? { url: url(i) } : { url: url(i), headers: { 'user-agent': 'VLC/3.0' } })];
  const entries: unknown[][] = Array.from({ length: 450 }, (_, i) => listedEntry(i + 1));
  entries.push([451, 'tvg:recent.tv', '2001', now - day], [452, 'tvg:favorite.tv', '2002', now - 60 * day], [453, 'url:http://streams.invalid/stale', '2003', now - 60 * day]);
  await db('livetv_channel_pages').insert([
    { tuner_id: 'm3u:IPTV', page: 0, channels: JSON.stringify(entries.slice(0, 400)), updated_at: now - day },
    { tuner_id: 'm3u:IPTV', page: 1, channels: JSON.stringify(entries.slice(400)), updated_at: now - day },
    { tuner_id: 'm3u:Old', page: 0, channels: JSON.stringify([[454, 'url:http://streams.invalid/old', 'Old', null, '3000', null, null, null, '[]', '{}', '{"url":"http://streams.invalid/old"}']]), updated_at: now - day },
  ]);
  await db('livetv_state').where({ key: 'next_channel_id' }).update({ value: 500 }); // ids up to 499 were given once
  await db('livetv_favorites').insert([{ user_id: 1, channel_id: 3 }, { user_id: 1, channel_id: 452 }]);
  await db('livetv_channel_guide').insert({ channel_id: 3, source_id: 'guide', guide_id: 'c3.tv' });
  await before.close();

  // Started with no playlist: the rows are what the pages held.
  const upgraded = await startHost(t, { dataDir, playlists: [], clock });
  const stored = await upgraded.host.knex('livetv_tuner_channels').orderBy('id');
  t.equal(stored.length, 454);
  const fields = (r: Record<string, any>) => [r.id, r.key, r.name, r.number, r.assigned_number, r.tvg_id, r.tvg_name, r.logo, r.groups, r.extra, r.data];
  t.strictSame(stored.slice(0, 450).map(fields), entries.slice(0, 450), 'every listed channel, every field');
  t.ok(stored.slice(0, 450).every((r) => r.hidden_at === null && r.tuner_id === 'm3u:IPTV'), 'listed, of their tuner');
  t.strictSame(stored.slice(450, 453).map((r) => [r.id, r.key, r.assigned_number, Number(r.hidden_at)]), entries.slice(450), 'the hidden ones, with when they went');
  t.strictSame(fields(stored[453]).slice(0, 5), [454, 'url:http://streams.invalid/old', 'Old', null, '3000'], 'a source no longer configured keeps its channels');
  t.notOk(await upgraded.host.knex.schema.hasTable('livetv_channel_pages'), 'the pages are gone');
  await upgraded.close();

  t.strictSame(fields(stored[62]).slice(9), ['{"tvg-country":"AR"}', JSON.stringify({ url: url(63), headers: { 'user-agent': 'VLC/3.0' } })], 'what opening a stream needs');
  await upgraded.close();

  // The playlist again, as it was, with two of the hidden channels back and a new one.
  const m3uEntries: PlaylistEntry[] = entries.slice(0, 450).map((e) => ({ name: e[2] as string, tvgId: e[5] as string, chno: (e[3] as string | null) ?? undefined,
    tvgName: (e[6] as string | null) ?? undefined, logo: (e[7] as string | null) ?? undefined, url: url(e[0] as number) }));
  m3uEntries.push({ name: 'Recent', tvgId: 'recent.tv', url: url(451) }, { name: 'Favorite', tvgId: 'favorite.tv', url: url(452) },
    { name: 'New', tvgId: 'new.tv', url: url(999) });
  const file = await write(dir, 'tv.m3u', m3u(m3uEntries));
  now += day;
  const host = await startHost(t, { dataDir, playlists: [{ name: 'IPTV', url: file }], clock });
  const listed = async () => new Map((await channels(host)).map((c) => [c.tvg_id ?? c.name, c]));
  const first = await listed();
  t.equal(first.size, 453);
  t.strictSame([3, 10, 450].map((i) => [first.get(`c${i}.tv`)!.id, first.get(`c${i}.tv`)!.tvg_chno]), [[3, '3'], [10, '1010'], [450, '1450']], 'ids and assigned numbers kept');
  t.strictSame([first.get('recent.tv')!.id, first.get('recent.tv')!.tvg_chno], [451, '2001'], 'a channel hidden a day ago comes back with its id and number');
  t.strictSame([first.get('favorite.tv')!.id, first.get('favorite.tv')!.tvg_chno], [452, '2002'], 'a favorite hidden 60 days ago too');
  t.equal(first.get('new.tv')!.id, 500, 'a new channel gets the next id, never one given before');
  t.strictSame((await getJson(host, '/me')).body.user.favorites, [3, 452], 'favorites kept');
  t.notOk(await host.host.knex('livetv_tuner_channels').where({ id: 453 }).first(), 'a channel hidden 60 days ago, not a favorite, is forgotten');

  m3uEntries.push({ name: 'Stale', url: 'http://streams.invalid/stale' });
  await write(dir, 'tv.m3u', m3u(m3uEntries));
  await refresh(host);
  const second = await listed();
  t.equal(second.size, 454);
  t.equal(second.get('Stale')!.id, 501, 'so it comes back as a new channel');
  t.strictSame([...second.values()].filter((c) => c.name !== 'Stale').map((c) => [c.id, c.tvg_chno]), [...first.values()].map((c) => [c.id, c.tvg_chno]), 'the others as they were');
});
