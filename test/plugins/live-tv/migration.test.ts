/**
 * Upgrading a data dir whose channels were stored a row each (live-tv
 * migrations 001-004) to the tuners' pages (005): ids, assigned numbers,
 * hidden channels, favorites and guide mappings all kept.
 */
import t from 'tap';
import path from 'node:path';
import { createTestHost } from '../../../sdk/testing.js';
import { runMigrations } from '../../../core/db/migrations.js';
import { migrations } from '../../../plugins/live-tv/migrations.js';
import { channels, getJson, m3u, startHost, tempDir, write } from './fixtures.js';

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
  const old = await knex('livetv_channel_pages').where({ tuner_id: 'm3u:Old' }).first('channels');
  t.strictSame(JSON.parse(old.channels).map((e: unknown[]) => [e[0], e[1], e[2]]), [[11, 'tvg:old.tv', 'Old Source']], 'a source no longer configured keeps its channels');
  // The favorites table, made again without the channel's foreign key, keeps the user's.
  const zoe = await host.createUser('zoe', 'zoe-password-123');
  await knex('livetv_favorites').insert({ user_id: zoe, channel_id: 3 });
  await knex('users').where({ id: zoe }).delete();
  t.strictSame(await knex('livetv_favorites').where({ user_id: zoe }).select('channel_id'), [], 'favorites still go with their user');
  await t.rejects(knex('livetv_favorites').insert({ user_id: 999, channel_id: 3 }), 'and need one');
});
