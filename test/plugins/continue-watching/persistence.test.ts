/**
 * Where entries live: memory first, written behind in batches. Entries survive
 * a restart, including progress only in memory at shutdown; explicit actions
 * are written before they answer; a change that cannot be written does not
 * hold back the others.
 */
import t from 'tap';
import { rename } from 'node:fs/promises';
import path from 'node:path';
import { client, cwHost, ids, makeMedia } from './fixtures.js';
import { tempDir } from '../vod/fixtures.js';
import type { TestHost } from '../../../sdk/testing.js';

t.test('entries survive a restart, including progress not yet written', async (t) => {
  const media = await makeMedia(t);
  const dataDir = await tempDir(t, 'antenna-cw-data-');
  // A flush interval longer than the test: only explicit actions and shutdown write.
  const start = () => cwHost(media, { dataDir, cw: { flushInterval: '1h' } });
  let host: TestHost = await start();
  t.teardown(() => host.close());
  const id = await ids(host);
  let admin = client(host, host.adminToken);
  const rows = (videoId: string) => host.host.knex('continue_watching').where({ video_id: videoId });

  t.equal((await admin.watched(id.bravo)).statusCode, 200);
  t.equal((await rows(id.bravo)).length, 1, 'an explicit action is written before it is answered');
  await admin.progress(id.alpha, { position: 30, duration: 100 });
  await admin.progress(id.s1e1, { position: 95, duration: 100 });
  await admin.progress(id.charlie, { position: 12.5, duration: 100 });
  t.strictSame(await admin.listed(), [id.charlie, id.s1e2, id.alpha], 'reads see reports that are only in memory');
  t.equal((await rows(id.alpha)).length, 0, 'progress is not written on each report');
  // A poster URL carries a media key of the signed-in session: the one signed in after the restart differs.
  const withoutKeys = (body: { items: { poster_url?: string }[] }) => ({ ...body, items: body.items.map((e) => ({ ...e, poster_url: e.poster_url?.replace(/&key=[^&]*/, '') })) });
  const before = withoutKeys((await admin.list()).json());

  await host.close();
  host = await start();
  admin = client(host, host.adminToken);
  t.strictSame(withoutKeys((await admin.list()).json()), before, 'the same list after a restart: positions, durations, order, updated_at, posters');
  t.ok(Boolean((await rows(id.bravo))[0]?.watched), 'watched state survived');
  t.ok(Boolean((await rows(id.s1e1))[0]?.watched), 'the 90 % rule result survived');

  // A video whose file is removed (the rescan at start drops it) leaves the list, and is not counted.
  await host.close();
  await rename(path.join(media.movies, 'Charlie (2003)'), path.join(media.dir, 'charlie-away'));
  host = await start();
  admin = client(host, host.adminToken);
  const without = (await admin.list()).json();
  t.strictSame(without.items.map((i: { videoId: string }) => i.videoId), [id.s1e2, id.alpha], 'a removed video is not listed');
  t.equal(without.total, 2);
  t.equal((await rows(id.charlie)).length, 1, 'its entry is kept (the file may come back)');
});

t.test('a change that cannot be written does not hold back the others', async (t) => {
  const media = await makeMedia(t);
  const host = await cwHost(media, { cw: { flushInterval: '1h' } });
  t.teardown(() => host.close());
  const id = await ids(host);
  const goneId = await host.createUser('gone', 'gone-password');
  await host.createUser('stays', 'stays-password');
  const gone = client(host, await host.login('gone', 'gone-password'));
  const stays = client(host, await host.login('stays', 'stays-password'));
  await gone.progress(id.alpha, { position: 10, duration: 100 });
  await stays.progress(id.alpha, { position: 20, duration: 100 });
  // The account disappears while its report waits to be written: its row now breaks the
  // users foreign key, and with it the batch's transaction.
  await host.host.knex('users').where({ id: goneId }).delete();

  t.equal((await stays.watched(id.bravo)).statusCode, 200, 'an explicit action flushes the queue');
  const rows = await host.host.knex('continue_watching').select('user_id', 'video_id', 'position').orderBy('video_id');
  t.strictSame(rows.map((r: { user_id: number }) => r.user_id).filter((u: number) => u === goneId), [], "the deleted user's entry was dropped");
  t.ok(rows.some((r: { video_id: string; position: number }) => r.video_id === id.alpha && Number(r.position) === 20), "the other user's progress was written");
  t.ok(rows.some((r: { video_id: string }) => r.video_id === id.bravo), 'and the action itself');
});

t.test('a user removed by an administrator: what was queued for them is dropped, nothing fails', async (t) => {
  const media = await makeMedia(t);
  const host = await cwHost(media, { cw: { flushInterval: '1h' } });
  t.teardown(() => host.close());
  const id = await ids(host);
  const goneId = await host.createUser('gone', 'gone-password');
  await host.createUser('stays', 'stays-password');
  const gone = client(host, await host.login('gone', 'gone-password'));
  const stays = client(host, await host.login('stays', 'stays-password'));
  await gone.progress(id.alpha, { position: 10, duration: 100 });
  await stays.progress(id.alpha, { position: 20, duration: 100 });
  t.equal((await host.inject({ method: 'DELETE', url: `/api/admin/users/${goneId}`, headers: host.authHeaders })).statusCode, 200);

  t.equal((await stays.watched(id.bravo)).statusCode, 200, 'an explicit action flushes the queue');
  const rows = await host.host.knex('continue_watching').select('user_id', 'video_id', 'position');
  t.strictSame(rows.filter((r: { user_id: number }) => r.user_id === goneId), [], 'nothing of the removed user is written');
  t.ok(rows.some((r: { video_id: string; position: number }) => r.video_id === id.alpha && Number(r.position) === 20), "the other user's progress is");
  const errors = (await host.inject({ method: 'GET', url: '/api/admin/logs?level=error', headers: host.authHeaders })).json().entries;
  t.strictSame(errors, [], 'no write failed');
});
