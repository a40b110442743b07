/**
 * continue-watching with the vod plugin's playback: play-info and manifest
 * requests start an entry (the catalog's onPlay), and play-info carries
 * resume_position (the catalog's play-info fields).
 */
import t from 'tap';
import { client, cwHost, ids, makeMedia } from './fixtures.js';

/** The vod plugin calls play listeners without waiting for them: poll the list a little. */
async function listedSoon(list: () => Promise<string[]>, id: string): Promise<boolean> {
  for (let i = 0; i < 50; i++) {
    if ((await list()).includes(id)) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
}

t.test('play-info and manifests start entries; play-info carries resume_position', async (t) => {
  const media = await makeMedia(t);
  const host = await cwHost(media);
  t.teardown(() => host.close());
  const id = await ids(host);
  const admin = client(host, host.adminToken);
  const playInfo = async (videoId: string) => {
    const res = await host.inject({ method: 'GET', url: `/watch/vod/${videoId}/play-info`, headers: admin.headers });
    t.equal(res.statusCode, 200, `play-info ${videoId}`);
    return res.json();
  };

  t.notOk('resume_position' in (await playInfo(id.alpha)), 'no progress: no resume_position');
  t.ok(await listedSoon(() => admin.listed(), id.alpha), 'play-info started an entry');
  const started = (await admin.list()).json().items[0] ?? {};
  t.match(started, { videoId: id.alpha, position: 0, watched: false, contentType: 'movie', title: 'Alpha' });
  const duration = (await host.inject({ method: 'GET', url: `/item/${id.alpha}`, headers: admin.headers })).json().duration;
  t.ok(duration > 1.5 && Math.abs(started.duration - duration) < 0.001, "the catalog's duration");
  t.notOk('resume_position' in (await playInfo(id.alpha)), 'position 0: nothing to resume');

  await admin.progress(id.alpha, { position: 1.25 });
  t.equal((await playInfo(id.alpha)).resume_position, 1.25, 'resume_position is the last reported position');
  t.equal((await admin.progress(id.alpha, { position: duration })).json().watched, true);
  t.notOk('resume_position' in (await playInfo(id.alpha)), 'watched: start from the beginning');
  // Opening a watched video leaves it watched. (Play listeners run in request order: once
  // bravo's play has started its entry, alpha's has been handled.)
  await playInfo(id.bravo);
  t.ok(await listedSoon(() => admin.listed(), id.bravo), 'play-info of another video started its entry');
  t.notOk((await admin.listed()).includes(id.alpha), 'alpha was opened again but stays watched');

  // A user without access gets 404 from play-info, and no entry.
  await host.createUser('kid', 'kid-password', { libraries: [String(id.showsLib)] });
  const kid = client(host, await host.login('kid', 'kid-password'));
  t.equal((await host.inject({ method: 'GET', url: `/watch/vod/${id.bravo}/play-info`, headers: kid.headers })).statusCode, 404);

  // The HLS manifest (the transcoded path) starts an entry too.
  const manifest = await host.inject({ method: 'GET', url: `/watch/vod/${id.charlie}/master.m3u8`, headers: admin.headers });
  t.equal(manifest.statusCode, 200, 'master.m3u8');
  t.ok(await listedSoon(() => admin.listed(), id.charlie), 'a manifest request started an entry');
  t.strictSame(await kid.listed(), [], "kid's list is untouched");
});
