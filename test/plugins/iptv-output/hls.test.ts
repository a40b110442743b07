/**
 * channels.m3u?format=hls over real HTTP: its URLs carry keys the access key
 * minted, which ffmpeg plays with no header down to the segments; the URLs do
 * not change from one fetch to the next (clients keep the playlist); a key
 * opens its own channel's watch routes and nothing else; revoking the access
 * key makes master, media playlist and segment answer 401 at once, while
 * another key's URLs go on (and its MPEG-TS stream is cut off); an open
 * network's keys work from it alone; the OpenAPI document shows format=hls.
 */
import t from 'tap';
import { createTestHost, type TestHost } from '../../../sdk/testing.js';
import { routeTable } from '../../../core/http/app.js';
import { expectError } from '../../helpers/http.js';
import { decode, playerPids } from '../../helpers/player.js';
import { killGroup, startUpstream } from '../../helpers/upstream.js';
import { m3u, tempDir, write } from '../live-tv/fixtures.js';

/** GET with no header at all, as a player given only the URL sends it. */
async function get(url: string): Promise<{ status: number; type: string; text: string; bytes: number }> {
  const res = await fetch(url);
  const body = Buffer.from(await res.arrayBuffer());
  return { status: res.status, type: res.headers.get('content-type') ?? '', text: body.toString('utf8'), bytes: body.length };
}

/** The first URI line of a playlist, resolved against its URL. */
const firstUri = (playlist: string, base: string) => new URL(playlist.split('\n').find((l) => l && !l.startsWith('#'))!, base).href;
/** The first segment of a media playlist (its init segment is in #EXT-X-MAP). */
const firstSegment = (playlist: string, base: string) => new URL(playlist.split('\n').find((l) => /\.m4s(\?|$)/.test(l))!, base).href;

t.test('channels.m3u?format=hls', async (t) => {
  const upstream = await startUpstream();
  t.teardown(async () => {
    await upstream.close();
    for (const pid of playerPids) killGroup(pid);
  });
  const dir = await tempDir(t, 'antenna-iptv-hls-');
  const playlist = await write(dir, 'tv.m3u', m3u([
    { name: 'One', tvgId: 'one', chno: '1', group: 'News', url: `${upstream.base}/live/one.ts` },
    { name: 'Two', tvgId: 'two', chno: '2', group: 'Kids', url: `${upstream.base}/live/two.ts` },
  ]));
  const host: TestHost = await createTestHost({
    listen: true,
    plugins: {
      'live-tv': { initialImport: 'await', idleTimeout: '3s', segmentSeconds: 1 },
      'm3u-tuner': { sources: [{ name: 'IPTV', url: playlist, maxStreams: 2 }] },
      'iptv-output': {},
    },
  });
  t.teardown(() => host.close());
  const newKey = async (name: string) => (await host.inject({ method: 'POST', url: '/api/admin/access-keys', headers: host.authHeaders, payload: { name } })).json().access_key as { id: number; key: string };
  const tivimate = await newKey('tivimate');
  const vlc = await newKey('vlc');

  /** The playlist's entries: channel name → stream URL. */
  const entries = async (key: string) => {
    const res = await get(`${host.url}/iptv/${key}/channels.m3u?format=hls`);
    if (res.status !== 200) throw new Error(`channels.m3u answered ${res.status}: ${res.text}`);
    t.equal(res.type, 'audio/x-mpegurl', 'the bare type: players that go by it (mpv) take a playlist URL with a query');
    const lines = res.text.trim().split('\n');
    const out = new Map<string, string>();
    for (let i = 1; i < lines.length; i += 2) out.set(/,(.*)$/.exec(lines[i]!)![1]!, lines[i + 1]!);
    return out;
  };
  const urls = await entries(tivimate.key);
  const one = urls.get('One')!;
  const two = urls.get('Two')!;
  const ids = { one: Number(/\/watch\/live\/(\d+)\//.exec(one)![1]), two: Number(/\/watch\/live\/(\d+)\//.exec(two)![1]) };

  t.test('the playlist lists keyed HLS URLs that do not change', async (t) => {
    t.equal(urls.size, 2);
    for (const url of urls.values()) {
      t.match(url, new RegExp(`^${host.url}/watch/live/\\d+/master\\.m3u8\\?key=[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$`));
      t.notMatch(url, tivimate.key, 'the access key itself is not in the URL');
    }
    t.strictSame(await entries(tivimate.key), urls, 'the same URLs on the next fetch: a client may keep the playlist');
    t.not((await entries(vlc.key)).get('One'), one, 'another access key mints other keys');
    t.match((await get(`${host.url}/iptv/${tivimate.key}/channels.m3u`)).text, `/iptv/${tivimate.key}/stream/${ids.one}.ts`, 'MPEG-TS stays the default');
    t.match((await get(`${host.url}/iptv/${tivimate.key}/channels.m3u?format=ts`)).text, `/stream/${ids.one}.ts`);
    expectError(t, await host.inject({ method: 'GET', url: `/iptv/${tivimate.key}/channels.m3u?format=dash` }), 400);
  });

  t.test('ffmpeg plays a URL with no header, and every level answers without one', async (t) => {
    const played = await decode(one, 4);
    t.equal(played.code, 0, played.stderr);
    t.ok(played.seconds >= 3, `decoded ${played.seconds.toFixed(2)} s of video`);
    const master = await get(one);
    t.equal(master.status, 200);
    t.match(master.type, /mpegurl/i);
    const media = firstUri(master.text, one);
    t.match(media, /\?key=/, 'the media playlist URL carries a key');
    const mediaRes = await get(media);
    t.equal(mediaRes.status, 200);
    const segment = firstSegment(mediaRes.text, media);
    const seg = await get(segment);
    t.equal(seg.status, 200, 'a segment answers with no header');
    t.ok(seg.bytes > 1000);
    const logged = JSON.stringify(host.host.logs.query({ level: 'trace', limit: 5000 }));
    t.notOk(logged.includes(new URL(one).searchParams.get('key')!.split('.')[1]!), 'no log line holds a minted key');
    t.match(logged, /master\.m3u8\?key=\*\*\*/, 'the request lines are there, redacted');
  });

  t.test('a key opens its own channel and nothing else', async (t) => {
    const key = new URL(one).searchParams.get('key')!;
    expectError(t, await host.inject({ method: 'GET', url: `/watch/live/${ids.two}/master.m3u8?key=${key}` }), 401, undefined, 'another channel');
    expectError(t, await host.inject({ method: 'GET', url: `/watch/live/${ids.one}/master.m3u8?key=${key.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A'))}` }), 401, undefined, 'a forged key');
    expectError(t, await host.inject({ method: 'GET', url: `/watch/live/${ids.one}/master.m3u8?api_key=${key}` }), 401, undefined, 'not a token');
    expectError(t, await host.inject({ method: 'GET', url: '/channels', headers: { authorization: `Bearer ${key}` } }), 401, undefined, 'not a bearer token');
    const info = await host.inject({ method: 'GET', url: `/watch/live/${ids.one}/play-info?key=${key}` });
    t.equal(info.statusCode, 200, 'its own channel\'s routes take it');
    t.match(info.json().url, `?key=${key}`, 'and hand out the same key again: it cannot be renewed into another');
    // Every other route of the server, with the key in the query.
    const at = (url: string) => url.replace(/:[A-Za-z0-9_]+(\([^)]*\))?/g, String(ids.one)).replace(/\*/g, '1');
    let checked = 0;
    for (const r of routeTable(host.app)) {
      if (r.auth === 'public' || r.url.startsWith('/watch/live/:channel_id')) continue;
      const res = await host.inject({ method: r.method as 'GET', url: `${at(r.url)}?key=${key}` });
      if (r.method !== 'HEAD') expectError(t, res, 401, undefined, `${r.method} ${r.url}`);
      else t.equal(res.statusCode, 401, `${r.method} ${r.url}`);
      checked++;
    }
    t.ok(checked > 50, `${checked} routes checked`);
  });

  t.test('a revoked access key: 401 on master, media playlist and segments at once', async (t) => {
    const vlcTwo = (await entries(vlc.key)).get('Two')!;
    const chain = async (url: string) => {
      const master = await get(url);
      const media = firstUri(master.text, url);
      const segment = firstSegment((await get(media)).text, media);
      return { master: url, media, segment };
    };
    const mine = await chain(two);
    const theirs = await chain(vlcTwo);
    for (const url of Object.values(mine)) t.equal((await get(url)).status, 200, `before: ${url.replace(/\?.*/, '')}`);
    // The same key's MPEG-TS stream, open while it is revoked.
    const ts = await fetch(`${host.url}/iptv/${tivimate.key}/stream/${ids.one}.ts`);
    t.equal(ts.status, 200);
    const reader = ts.body!.getReader();
    t.ok((await reader.read()).value?.length, 'the TS stream flows');
    const ended = (async () => {
      try {
        while (!(await reader.read()).done);
      } catch { /* cut off: that is an end too */ }
    })();
    const revoked = await host.inject({ method: 'DELETE', url: `/api/admin/access-keys/${tivimate.id}`, headers: host.authHeaders });
    t.equal(revoked.statusCode, 200);
    for (const [what, url] of Object.entries(mine)) {
      const res = await get(url);
      t.equal(res.status, 401, `${what} refused`);
      t.match(JSON.parse(res.text), { error: 'Invalid access key' });
    }
    const cutOff = await Promise.race([ended.then(() => true), new Promise<false>((resolve) => setTimeout(() => resolve(false), 5000))]);
    if (!cutOff) await reader.cancel();
    t.ok(cutOff, 'the TS stream of the revoked key ended');
    for (const [what, url] of Object.entries(theirs)) t.equal((await get(url)).status, 200, `another key's ${what} goes on`);
    expectError(t, await host.inject({ method: 'GET', url: `/iptv/${tivimate.key}/channels.m3u?format=hls` }), 401);
    const again = await newKey('tivimate');
    t.not((await entries(again.key)).get('Two'), two, 'a new key of the same name mints new URLs; the old ones stay dead');
    t.equal((await get(two)).status, 401);
  });
});

t.test('an open network\'s minted keys work from that network only', async (t) => {
  const dir = await tempDir(t, 'antenna-iptv-open-');
  const playlist = await write(dir, 'tv.m3u', m3u([{ name: 'One', tvgId: 'one', chno: '1', url: 'http://streams.invalid/one' }]));
  const host = await createTestHost({
    plugins: { 'live-tv': { initialImport: 'await' }, 'm3u-tuner': { sources: [{ name: 'IPTV', url: playlist }] }, 'iptv-output': {} },
    config: { accessKeys: { open: ['127.0.0.0/8'] } },
  });
  t.teardown(() => host.close());
  const listed = await host.inject({ method: 'GET', url: '/iptv/channels.m3u?format=hls', remoteAddress: '127.0.0.1', headers: { host: 'tv.lan' } });
  t.equal(listed.statusCode, 200);
  const url = listed.body.trim().split('\n')[2]!;
  t.match(url, /^http:\/\/tv\.lan\/watch\/live\/\d+\/master\.m3u8\?key=/);
  const info = new URL(url).pathname.replace('master.m3u8', 'play-info') + new URL(url).search;
  t.equal((await host.inject({ method: 'GET', url: info, remoteAddress: '127.0.0.1' })).statusCode, 200, 'from the open network');
  expectError(t, await host.inject({ method: 'GET', url: info, remoteAddress: '10.9.8.7' }), 401, /access key/, 'from elsewhere');
  expectError(t, await host.inject({ method: 'GET', url: '/iptv/channels.m3u?format=hls', remoteAddress: '10.9.8.7' }), 401);

  const doc = (await host.inject({ method: 'GET', url: '/api/docs/json', headers: host.authHeaders })).json();
  const format = doc.paths['/iptv/{key}/channels.m3u'].get.parameters.find((p: any) => p.name === 'format');
  t.match(JSON.stringify(format.schema), /"hls"/, 'the OpenAPI document lists format=hls');
  t.ok(doc.paths['/watch/live/{channel_id}/master.m3u8']?.get, 'and the master.m3u8 path');
});
