/**
 * /api/continue-watching over a real vod library: progress reports, the list
 * (newest first, paging, total, type), the 90 % rule, watched / unwatched,
 * removal, up next after an episode, every error, isolation between users and
 * restricted users who lose a library.
 */
import t from 'tap';
import { expectError } from '../../helpers/http.js';
import { client, cwHost, ids, makeMedia } from './fixtures.js';

t.test('continue watching', async (t) => {
  const media = await makeMedia(t);
  const host = await cwHost(media);
  t.teardown(() => host.close());
  const id = await ids(host);
  const admin = client(host, host.adminToken);

  t.test('progress creates entries; the list is newest first, paged, with total', async (t) => {
    t.strictSame((await admin.list()).json(), { items: [], total: 0 }, 'nothing yet');

    const res = await admin.progress(id.alpha, { position: 30, duration: 100 });
    t.equal(res.statusCode, 200);
    const entry = res.json();
    t.strictSame(Object.keys(entry).sort(), [
      'contentType', 'duration', 'episode_number', 'libraryId', 'position', 'season_number', 'series_title', 'title', 'updated_at', 'videoId', 'watched',
    ]);
    t.match(entry, { videoId: id.alpha, libraryId: id.moviesLib, contentType: 'movie', title: 'Alpha', position: 30, duration: 100, watched: false });
    t.strictSame([entry.series_title, entry.season_number, entry.episode_number], [null, null, null], 'a movie names no series');
    t.match(entry.updated_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, 'updated_at is ISO 8601 UTC');

    t.equal((await admin.progress(id.bravo, { position: 10, duration: 100 })).statusCode, 200);
    t.equal((await admin.progress(id.charlie, { position: 50, duration: 100 })).statusCode, 200);
    t.strictSame(await admin.listed(), [id.charlie, id.bravo, id.alpha], 'newest first');
    t.equal((await admin.progress(id.alpha, { position: 35, duration: 100 })).statusCode, 200);
    t.strictSame(await admin.listed(), [id.alpha, id.charlie, id.bravo], 'a new report moves an entry to the top');

    const listed = (await admin.list()).json();
    t.equal(listed.total, 3);
    t.match(listed.items[0], { videoId: id.alpha, position: 35, duration: 100, watched: false, title: 'Alpha' }, 'the latest report is what is read');
    const stamps = listed.items.map((i: { updated_at: string }) => Date.parse(i.updated_at));
    t.ok(stamps[0] > stamps[1] && stamps[1] > stamps[2], 'updated_at descends');

    const page1 = (await admin.list('?limit=2')).json();
    t.strictSame(page1.items.map((i: { videoId: string }) => i.videoId), [id.alpha, id.charlie]);
    t.equal(page1.total, 3, 'total counts every entry, not the page');
    const page2 = (await admin.list('?limit=2&offset=2')).json();
    t.strictSame(page2.items.map((i: { videoId: string }) => i.videoId), [id.bravo]);
    t.equal(page2.total, 3);
    t.strictSame((await admin.list('?offset=10')).json(), { items: [], total: 3 }, 'past the end');
    t.strictSame((await admin.list('?limit=0')).json(), { items: [], total: 3 }, 'limit=0: just the total');

    const episode = (await admin.progress(id.s1e2, { position: 5, duration: 100 })).json();
    t.match(episode, { videoId: id.s1e2, libraryId: id.showsLib, contentType: 'episode', watched: false });
    t.match(episode, { series_title: 'Show One', season_number: 1, episode_number: 2 }, 'an episode names its series, season and number');
    t.strictSame(await admin.listed('?type=vod'), [id.s1e2, id.alpha, id.charlie, id.bravo], 'type=vod lists movies and episodes');
    t.strictSame((await admin.list('?type=live_tv')).json(), { items: [], total: 0 }, 'type=live_tv lists recordings only (none here)');
    t.equal((await admin.list()).json().total, 4, 'no type: everything');

    // A player that does not know the duration may leave it out.
    const over = (await admin.progress(id.bravo, { position: 20 })).json();
    t.match(over, { position: 20, duration: 100 }, 'duration omitted: the known one is used');
    t.equal((await admin.remove(id.s1e2)).statusCode, 200);
  });

  t.test('past 90 % a video is watched and leaves the list; unwatched resets it', async (t) => {
    t.match((await admin.progress(id.charlie, { position: 89.9, duration: 100 })).json(), { watched: false, position: 89.9 });
    t.ok((await admin.listed()).includes(id.charlie), 'below 90 %: listed');
    const watched = (await admin.progress(id.charlie, { position: 90, duration: 100 })).json();
    t.match(watched, { watched: true, position: 90 }, 'at 90 %: watched');
    t.notOk((await admin.listed()).includes(id.charlie), 'a watched video leaves the list');
    const total = (await admin.list()).json().total;

    const clamped = (await admin.progress(id.charlie, { position: 130, duration: 100 })).json();
    t.match(clamped, { position: 100, duration: 100, watched: true }, 'position past the duration: clamped, and still watched');

    const reset = await admin.unwatched(id.charlie);
    t.equal(reset.statusCode, 200);
    t.match(reset.json(), { videoId: id.charlie, watched: false, position: 0, duration: 100 }, 'unwatched resets the position');
    t.strictSame((await admin.listed())[0], id.charlie, 'and lists it again, on top');
    t.equal((await admin.list()).json().total, total + 1);

    const marked = await admin.watched(id.bravo);
    t.equal(marked.statusCode, 200);
    t.match(marked.json(), { videoId: id.bravo, watched: true, position: 20 }, 'PATCH watched keeps the position');
    t.notOk((await admin.listed()).includes(id.bravo), 'marked watched: not listed');

    // Watching a watched video again: a report below 90 % brings it back.
    t.match((await admin.progress(id.bravo, { position: 3, duration: 100 })).json(), { watched: false, position: 3 });
    t.equal((await admin.listed())[0], id.bravo);

    // One video's state, for item pages: watched ones too, which the list leaves out.
    const one = await admin.state(id.charlie);
    t.equal(one.statusCode, 200);
    t.match(one.json(), { videoId: id.charlie, watched: false, position: 0 }, 'GET one entry');
    t.match((await admin.state(id.bravo)).json(), { videoId: id.bravo, watched: false, position: 3 });
    t.equal((await admin.watched(id.bravo)).statusCode, 200);
    t.match((await admin.state(id.bravo)).json(), { watched: true, position: 3 }, 'a watched video answers too');
    t.equal((await admin.progress(id.bravo, { position: 3, duration: 100 })).statusCode, 200);
    const never = (await admin.state(id.s2e1)).json();
    t.match(never, { videoId: id.s2e1, watched: false, position: 0, updated_at: null, contentType: 'episode' }, 'never played: a blank state');
    t.notOk((await admin.listed()).includes(id.s2e1), 'and reading it starts no entry');

    // PATCH watched on a video never played creates its entry (watched).
    const fresh = await admin.watched(id.s2e1);
    t.match(fresh.json(), { videoId: id.s2e1, watched: true, position: 0, contentType: 'episode' });
    t.equal((await admin.unwatched(id.s2e1)).json().watched, false);
    t.equal((await admin.remove(id.s2e1)).statusCode, 200);
  });

  t.test('DELETE removes an entry', async (t) => {
    t.ok((await admin.listed()).includes(id.alpha));
    const res = await admin.remove(id.alpha);
    t.equal(res.statusCode, 200);
    t.strictSame(res.json(), { ok: true });
    t.notOk((await admin.listed()).includes(id.alpha), 'gone from the list');
    t.strictSame((await admin.remove(id.alpha)).json(), { ok: true }, 'removing it again is harmless');
    const again = (await admin.progress(id.alpha, { position: 1, duration: 100 })).json();
    t.match(again, { position: 1, watched: false }, 'a new report starts a new entry');
  });

  t.test('finishing an episode puts the next one in the list at position 0 (up next)', async (t) => {
    await host.createUser('viewer', 'viewer-password');
    const viewer = client(host, await host.login('viewer', 'viewer-password'));
    await viewer.progress(id.alpha, { position: 10, duration: 100 });
    await viewer.progress(id.s1e1, { position: 40, duration: 100 });
    t.strictSame(await viewer.listed(), [id.s1e1, id.alpha]);

    t.equal((await viewer.progress(id.s1e1, { position: 95, duration: 100 })).json().watched, true);
    const list = (await viewer.list()).json();
    t.strictSame(list.items.map((i: { videoId: string }) => i.videoId), [id.s1e2, id.alpha], 'S01E02 is up next, on top; S01E01 left');
    t.match(list.items[0], { videoId: id.s1e2, position: 0, watched: false, contentType: 'episode', libraryId: id.showsLib, title: String });
    t.ok(list.items[0].duration > 1.5 && list.items[0].duration < 2.6, "the catalog's duration");

    t.equal((await viewer.watched(id.s1e2)).statusCode, 200);
    t.strictSame(await viewer.listed(), [id.s2e1, id.alpha], 'marking watched also brings the next one: across seasons');
    t.equal((await viewer.progress(id.s2e1, { position: 2, duration: 2 })).json().watched, true);
    t.strictSame(await viewer.listed(), [id.alpha], 'the last episode has no next');

    // An episode seen already is not put back.
    await host.createUser('viewer2', 'viewer2-password');
    const other = client(host, await host.login('viewer2', 'viewer2-password'));
    await other.watched(id.s1e2);
    t.strictSame(await other.listed(), [id.s2e1], 'S02E01 is up next after S01E02');
    await other.watched(id.s1e1);
    t.strictSame(await other.listed(), [id.s2e1], 'S01E02 was watched already: not up next again');
    // Movies have no next.
    await other.watched(id.alpha);
    t.strictSame(await other.listed(), [id.s2e1]);
  });

  t.test('entries are per user', async (t) => {
    await host.createUser('alice', 'alice-password');
    await host.createUser('bob', 'bob-password');
    const alice = client(host, await host.login('alice', 'alice-password'));
    const bob = client(host, await host.login('bob', 'bob-password'));
    await alice.progress(id.alpha, { position: 10, duration: 100 });
    await alice.progress(id.bravo, { position: 20, duration: 100 });
    await bob.progress(id.bravo, { position: 70, duration: 100 });
    t.strictSame(await alice.listed(), [id.bravo, id.alpha]);
    t.strictSame(await bob.listed(), [id.bravo]);
    t.equal((await alice.list()).json().items[0].position, 20, "bob's report did not touch alice's entry");
    await bob.watched(id.bravo);
    t.strictSame(await alice.listed(), [id.bravo, id.alpha], "bob's watched is his alone");
    t.strictSame(await bob.listed(), []);
    await alice.remove(id.alpha);
    t.equal((await client(host, host.adminToken).list()).json().items.some((i: { videoId: string }) => i.videoId === id.alpha), true, "alice's delete left admin's entry");
  });

  t.test('listed entries carry the picture their library card shows', async (t) => {
    await host.createUser('carol', 'carol-password');
    const token = await host.login('carol', 'carol-password');
    const carol = client(host, token);
    await carol.progress(id.alpha, { position: 10, duration: 100 });
    await carol.progress(id.s1e2, { position: 10, duration: 100 });
    const listed = (await carol.list()).json().items as { videoId: string; poster_url: string | null }[];
    const withoutKey = (url: string | null | undefined) => url?.replace(/[?&]key=[^&]*/, '');
    const card = ((await host.inject({ method: 'GET', url: `/library/${id.moviesLib}`, headers: carol.headers })).json().items as { id: string; poster_url: string }[])
      .find((i) => i.id === id.alpha)!;
    t.ok(card.poster_url, 'the movie\'s card has a picture');
    t.equal(withoutKey(listed.find((e) => e.videoId === id.alpha)?.poster_url), withoutKey(card.poster_url), 'the movie\'s entry has the same one');
    const episode = listed.find((e) => e.videoId === id.s1e2)?.poster_url;
    t.match(episode, new RegExp(`^/api/items/${id.s1e2}/images/poster\\?`), 'an episode has its own');
    const image = await host.inject({ method: 'GET', url: `${episode}&width=120`, headers: carol.headers });
    t.equal(image.statusCode, 200, 'which is served');
    t.match(image.headers['content-type'], /^image\//);
    t.notOk('poster_url' in (await carol.progress(id.alpha, { position: 11, duration: 100 })).json(), 'progress reports stay free of lookups');
  });

  t.test('restricted users: only granted libraries, and a revoked grant hides entries at once', async (t) => {
    const kidId = await host.createUser('kid', 'kid-password', { libraries: [String(id.showsLib)] });
    const kid = client(host, await host.login('kid', 'kid-password'));
    expectError(t, await kid.progress(id.alpha, { position: 1, duration: 100 }), 404, undefined, 'a movie of a library not granted');
    expectError(t, await kid.watched(id.alpha), 404);
    expectError(t, await kid.unwatched(id.alpha), 404);
    expectError(t, await kid.remove(id.alpha), 404);
    const unknown = await kid.progress('aaaaaaaaaaaaaaaa', { position: 1, duration: 100 });
    const forbidden = await kid.progress(id.alpha, { position: 1, duration: 100 });
    t.equal(forbidden.json().error, unknown.json().error.replace('aaaaaaaaaaaaaaaa', id.alpha), 'a forbidden id looks exactly like an unknown one');
    t.equal((await kid.progress(id.s1e1, { position: 5, duration: 100 })).statusCode, 200, 'a granted episode');

    // sam may see both libraries, watches one of each, then loses Movies.
    const samId = await host.createUser('sam', 'sam-password', { libraries: [String(id.moviesLib), String(id.showsLib)] });
    const sam = client(host, await host.login('sam', 'sam-password'));
    await sam.progress(id.alpha, { position: 42, duration: 100 });
    await sam.progress(id.s1e1, { position: 7, duration: 100 });
    t.strictSame(await sam.listed(), [id.s1e1, id.alpha]);

    await host.host.accounts.setLibraries(samId, [String(id.showsLib)]);
    host.host.auth.invalidateUser(samId);
    const after = (await sam.list()).json();
    t.strictSame(after.items.map((i: { videoId: string }) => i.videoId), [id.s1e1], 'the Movies entry is hidden');
    t.equal(after.total, 1, 'and not counted');
    t.strictSame(await sam.listed('?type=vod&limit=1&offset=1'), [], 'nor paged to');
    expectError(t, await sam.progress(id.alpha, { position: 50, duration: 100 }), 404, undefined, 'progress on it');
    expectError(t, await sam.watched(id.alpha), 404);
    expectError(t, await sam.state(id.alpha), 404, undefined, 'reading its state');
    expectError(t, await sam.unwatched(id.alpha), 404);
    expectError(t, await sam.remove(id.alpha), 404, undefined, 'deleting it');

    await host.host.accounts.setLibraries(samId, [String(id.moviesLib), String(id.showsLib)]);
    host.host.auth.invalidateUser(samId);
    const back = (await sam.list()).json();
    t.strictSame(back.items.map((i: { videoId: string }) => i.videoId), [id.s1e1, id.alpha], 'granted again: the entry is back');
    t.equal(back.items[1].position, 42, 'with its position');
    t.ok(kidId > 0);
  });

  t.test('errors', async (t) => {
    for (const bad of ['abc', '-1', '1.5', '1001']) expectError(t, await admin.list(`?limit=${bad}`), 400, /limit/, `limit=${bad}`);
    for (const bad of ['-1', 'x']) expectError(t, await admin.list(`?offset=${bad}`), 400, /offset/, `offset=${bad}`);
    for (const bad of ['movies', 'VOD', '']) expectError(t, await admin.list(`?type=${bad}`), 400, /type/, `type=${bad}`);

    expectError(t, await admin.progress(id.alpha, { position: -1, duration: 100 }), 400, /position/, 'negative position');
    expectError(t, await admin.progress(id.alpha, { position: 1, duration: -5 }), 400, /duration/, 'negative duration');
    expectError(t, await admin.progress(id.alpha, { position: '12', duration: 100 }), 400, /position/, 'a string');
    expectError(t, await admin.progress(id.alpha, { position: 1e8, duration: 100 }), 400, /position/, 'absurd position');
    expectError(t, await admin.progress(id.alpha, { duration: 100 }), 400, /position is required/, 'no position');
    expectError(t, await admin.progress(id.alpha, [1, 2]), 400, undefined, 'not an object');
    expectError(t, await host.inject({ method: 'POST', url: `/api/continue-watching/${id.alpha}/progress`, headers: { ...admin.headers, 'content-type': 'application/json' }, payload: '{"position":' }), 400, undefined, 'malformed JSON');

    for (const unknown of ['aaaaaaaaaaaaaaaa', 'no.such/id', id.series, 'x'.repeat(80)]) {
      const enc = encodeURIComponent(unknown);
      expectError(t, await admin.progress(enc, { position: 1, duration: 100 }), 404, undefined, `progress ${unknown.slice(0, 20)}`);
      expectError(t, await admin.watched(enc), 404, undefined, `watched ${unknown.slice(0, 20)}`);
      expectError(t, await admin.unwatched(enc), 404, undefined, `unwatched ${unknown.slice(0, 20)}`);
      expectError(t, await admin.remove(enc), 404, undefined, `delete ${unknown.slice(0, 20)}`);
      expectError(t, await admin.state(enc), 404, undefined, `get ${unknown.slice(0, 20)}`);
    }
    expectError(t, await host.inject({ method: 'GET', url: '/api/continue-watching' }), 401, undefined, 'no token');
    expectError(t, await host.inject({ method: 'POST', url: `/api/continue-watching/${id.alpha}/progress`, payload: { position: 1 } }), 401);
  });

  t.test('the routes are in the OpenAPI document', async (t) => {
    const doc = (await host.inject({ method: 'GET', url: '/api/docs/json', headers: host.authHeaders })).json();
    for (const [path, method] of [['/api/continue-watching', 'get'], ['/api/continue-watching/{videoId}/progress', 'post'], ['/api/continue-watching/{videoId}/watched', 'patch'], ['/api/continue-watching/{videoId}/unwatched', 'patch'], ['/api/continue-watching/{videoId}', 'delete'], ['/api/continue-watching/{videoId}', 'get']]) {
      const op = doc.paths?.[path!]?.[method!];
      t.ok(op, `${method!.toUpperCase()} ${path}`);
      t.strictSame(op?.tags, ['continue-watching']);
      t.ok(op?.responses?.['200'] && op?.responses?.['404'], 'with its 200 and 404');
    }
  });
});
