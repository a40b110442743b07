/**
 * The hdhomerun plugin end to end: its documents against the fields clients
 * read, ffmpeg playing auto/v<n>, TS clients sharing the channel's one upstream
 * connection with an HLS viewer, the 805 answer of a full tuner, a revoked key
 * closing its streams, and bad keys, numbers and paths.
 */
import t from 'tap';
import { createTestHost, type TestHost } from '../../../sdk/testing.js';
import { expectError, rawGet, asInject, openStream } from '../../helpers/http.js';
import { decode, playerPids } from '../../helpers/player.js';
import { waitFor } from '../../helpers/wait.js';
import { killGroup, startUpstream } from '../../helpers/upstream.js';
import { m3u, tempDir, write } from '../live-tv/fixtures.js';
import { deviceIdentity, newDeviceId, validDeviceId } from '../../../plugins/hdhomerun/device.js';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { guideNumbers } from '../../../plugins/hdhomerun/lineup.js';

t.test('guide numbers: unique, without .0, names after the numbers', async (t) => {
  const c = (id: number, number: string) => ({ id, number, name: `C${id}`, groups: [] });
  const numbers = [...guideNumbers([c(1, '5.0'), c(2, '5'), c(3, '07'), c(4, '22.10'), c(5, 'News'), c(6, '9')]).entries()].map(([n, ch]) => `${n}=${ch.id}`);
  t.strictSame(numbers, ['5=1', '5.1=2', '7=3', '22.1=4', '9=6', '23=5']);
});

t.test('device ids pass libhdhomerun\'s check', async (t) => {
  // The rule as libhdhomerun's README-level description gives it: the hex digits left to right,
  // the 1st, 3rd, 5th and 7th through the table, XORed together with the others, make 0.
  const TABLE = [0xa, 0x5, 0xf, 0x6, 0x7, 0xc, 0x1, 0xb, 0x9, 0x2, 0x8, 0xd, 0x4, 0x3, 0xe, 0x0];
  const reference = (hex: string) => [...hex].reduce((sum, d, i) => sum ^ (i % 2 === 0 ? TABLE[parseInt(d, 16)]! : parseInt(d, 16)), 0) === 0;
  for (let i = 0; i < 200; i++) {
    const id = newDeviceId();
    const hex = id.toString(16).toUpperCase().padStart(8, '0');
    t.ok(reference(hex) && validDeviceId(id) && hex.startsWith('1'), `${hex} is valid`);
    const other = (id & ~0xf) | ((id + 1) & 0xf);
    t.notOk(validDeviceId(other >>> 0), 'with another last digit it is not');
    if (i > 20) break;
  }
  t.notOk(validDeviceId(0x12345678), '12345678 is not valid');
  t.equal(validDeviceId(0x12345678), reference('12345678'));
});

t.test('the device identity is kept across restarts', async (t) => {
  const dir = await tempDir(t, 'antenna-hdhr-id-');
  const first = await deviceIdentity(dir);
  t.strictSame(await deviceIdentity(dir), first, 'read back the same');
  await writeFile(path.join(dir, 'device.json'), '{"deviceId":"12345678","deviceAuth":"x"}');
  const remade = await deviceIdentity(dir);
  t.ok(validDeviceId(parseInt(remade.deviceId, 16)), 'an invalid kept id is replaced by a valid one');
  t.equal(remade.deviceAuth.length, 24);
});

t.test('hdhomerun', async (t) => {
  const upstream = await startUpstream();
  t.teardown(async () => {
    await upstream.close();
    for (const pid of playerPids) killGroup(pid);
  });
  const dir = await tempDir(t, 'antenna-hdhr-');
  const live = (name: string) => `${upstream.base}/live/${name}.ts`;
  const main = await write(dir, 'main.m3u', m3u([
    { name: 'One', tvgId: 'one', chno: '1', url: live('one') },
    { name: 'Two', tvgId: 'two', chno: '2.0', url: live('two') },
    { name: 'Three', tvgId: 'three', chno: '3', url: live('three') },
  ]));
  const single = await write(dir, 'single.m3u', m3u([
    { name: 'S1', tvgId: 's1', chno: '11', url: live('s1') },
    { name: 'S2', tvgId: 's2', chno: '12', url: live('s2') },
  ]));
  const host: TestHost = await createTestHost({
    listen: true,
    plugins: {
      'live-tv': { initialImport: 'await', idleTimeout: '2s', segmentSeconds: 1 },
      'm3u-tuner': { sources: [{ name: 'Main', url: main, maxStreams: 4 }, { name: 'Single', url: single, maxStreams: 1 }] },
      hdhomerun: { friendlyName: 'Test Tuner' },
    },
  });
  t.teardown(() => host.close());
  const created = await host.inject({ method: 'POST', url: '/api/admin/access-keys', headers: host.authHeaders, payload: { name: 'plex' } });
  t.equal(created.statusCode, 201);
  const key: string = created.json().access_key.key;
  t.match(key, /^[A-Za-z0-9_-]{32}$/);
  const base = `${host.url}/hdhr/${key}`;

  t.test('documents', async (t) => {
    const discover = await host.inject({ method: 'GET', url: `/hdhr/${key}/discover.json`, headers: { host: 'tuner.lan:8096' } });
    t.equal(discover.statusCode, 200);
    const d = discover.json();
    t.strictSame(Object.keys(d).sort(), ['BaseURL', 'DeviceAuth', 'DeviceID', 'FirmwareName', 'FirmwareVersion', 'FriendlyName', 'LineupURL', 'Manufacturer', 'ModelNumber', 'TunerCount'].sort());
    t.match(d, { FriendlyName: 'Test Tuner', ModelNumber: 'HDTC-2US', FirmwareName: 'hdhomeruntc_atsc', TunerCount: 5 });
    t.match(d.DeviceID, /^[0-9A-F]{8}$/);
    t.ok(validDeviceId(parseInt(d.DeviceID, 16)), 'DeviceID passes the check digit');
    t.match(d.DeviceAuth, /^[A-Za-z0-9]{24}$/);
    t.equal(d.BaseURL, `http://tuner.lan:8096/hdhr/${key}`, 'BaseURL is built from the request host');
    t.equal(d.LineupURL, `http://tuner.lan:8096/hdhr/${key}/lineup.json`);

    const lineup = (await host.inject({ method: 'GET', url: `/hdhr/${key}/lineup.json`, headers: { host: '10.0.0.5:8096' } })).json();
    t.strictSame(lineup.map((l: any) => l.GuideNumber), ['1', '2', '3', '11', '12'], 'every channel in number order, 2.0 written 2');
    t.strictSame(lineup[0], { GuideNumber: '1', GuideName: 'One', URL: `http://10.0.0.5:8096/hdhr/${key}/auto/v1`, HD: 1, VideoCodec: 'H264', AudioCodec: 'AAC' });
    for (const l of lineup) t.notMatch(l.URL, /\?/, 'no query string in a lineup URL');

    t.strictSame((await host.inject({ method: 'GET', url: `/hdhr/${key}/lineup_status.json` })).json(), { ScanInProgress: 0, ScanPossible: 1, Source: 'Cable', SourceList: ['Cable'] });
    for (const method of ['GET', 'POST'] as const) {
      const post = await host.inject({ method, url: `/hdhr/${key}/lineup.post?scan=start` });
      t.equal(post.statusCode, 200, `${method} lineup.post`);
      t.strictSame(post.json(), {});
    }
    const xml = await host.inject({ method: 'GET', url: `/hdhr/${key}/device.xml`, headers: { host: 'tuner.lan' } });
    t.equal(xml.statusCode, 200);
    t.match(xml.headers['content-type'], /xml/);
    t.match(xml.body, `<URLBase>http://tuner.lan/hdhr/${key}</URLBase>`);
    t.match(xml.body, `<serialNumber>${d.DeviceID}</serialNumber>`);

    // Stable across a restart of the same data dir is checked by the identity file: the same on a second read.
    const again = (await host.inject({ method: 'GET', url: `/hdhr/${key}/discover.json` })).json();
    t.equal(again.DeviceID, d.DeviceID);
  });

  t.test('bad keys, numbers and paths', async (t) => {
    expectError(t, await host.inject({ method: 'GET', url: '/hdhr/discover.json' }), 401, /access key/, 'no key from a network that is not open');
    expectError(t, await host.inject({ method: 'GET', url: `/hdhr/${'x'.repeat(32)}/discover.json` }), 401, 'Invalid access key');
    expectError(t, await host.inject({ method: 'GET', url: `/hdhr/${key.slice(0, -1)}/lineup.json` }), 401, 'Invalid access key');
    expectError(t, await host.inject({ method: 'GET', url: `/hdhr/${key}/lineup.json`.replace(key, key.toUpperCase()) }), 401, undefined, 'keys are case-sensitive');
    expectError(t, await host.inject({ method: 'GET', url: `/hdhr/x/discover.json`, headers: host.authHeaders }), 401, undefined, 'a token does not open keyed paths');
    expectError(t, await host.inject({ method: 'GET', url: `/hdhr/${key}/auto/v99` }), 404, 'No channel 99');
    expectError(t, await host.inject({ method: 'GET', url: `/hdhr/${key}/auto/99` }), 404, /expected v<GuideNumber>/);
    expectError(t, await host.inject({ method: 'GET', url: `/hdhr/${key}/auto/v1;rm` }), 404);
    expectError(t, await host.inject({ method: 'GET', url: `/hdhr/${key}/../../api/admin/users` }), 401, undefined, 'a dot-dot path is not the admin API');
    expectError(t, await host.inject({ method: 'GET', url: `/hdhr/${key}/%2e%2e/%2e%2e/etc/passwd` }), 404);
    expectError(t, await host.inject({ method: 'GET', url: `/hdhr/${key}/discover.json`, headers: { host: 'evil"><x' } }), 400, /Host/);
  });

  t.test('ffmpeg plays auto/v<n>, ?transcode=heavy too', async (t) => {
    const played = await decode(`${base}/auto/v1`, 6);
    t.equal(played.code, 0, played.stderr);
    t.ok(played.seconds >= 5, `decoded ${played.seconds.toFixed(2)} s of video`);
    const heavy = await decode(`${base}/auto/v1?transcode=heavy&duration=60`, 2);
    t.ok(heavy.seconds >= 1.5, `?transcode=heavy plays (${heavy.seconds.toFixed(2)} s)`);
  });

  t.test('live-tv\'s /watch/live/{id}/stream.ts (what another node of a cluster reads): the same MPEG-TS, with a token or a channel key', async (t) => {
    const played = await decode(`${host.url}/watch/live/1/stream.ts?api_key=${host.adminToken}`, 3);
    t.equal(played.code, 0, played.stderr);
    t.ok(played.seconds >= 2.5, `decoded ${played.seconds.toFixed(2)} s of video`);
    expectError(t, await host.inject({ method: 'GET', url: '/watch/live/1/stream.ts' }), 401, undefined, 'no token, no key');
    const info = (await host.inject({ method: 'GET', url: '/watch/live/2/play-info', headers: host.authHeaders })).json();
    const otherKey = new URL(info.url, host.url).searchParams.get('key');
    expectError(t, await host.inject({ method: 'GET', url: `/watch/live/1/stream.ts?key=${otherKey}` }), 401, undefined, 'another channel\'s key');
    expectError(t, await host.inject({ method: 'GET', url: '/watch/live/999/stream.ts', headers: host.authHeaders }), 404, 'No channel 999');
  });

  t.test('two TS clients and an HLS viewer share one upstream connection', async (t) => {
    const before = upstream.connections('/live/two.ts');
    const a = await openStream(`${base}/auto/v2`);
    const b = await openStream(`${base}/auto/v2?transcode=mobile`);
    t.equal(a.status, 200);
    t.match(a.headers['content-type'], 'video/mp2t');
    const watch = await host.inject({ method: 'GET', url: '/watch/live/2', headers: host.authHeaders });
    t.equal(watch.statusCode, 200, 'the HLS viewer gets the master playlist');
    await new Promise((r) => setTimeout(r, 1500));
    t.ok(b.received() > 0 && a.received() > 0);
    t.equal(upstream.connections('/live/two.ts') - before, 1, 'one upstream connection');
    t.equal(upstream.peakConnections('/live/two.ts'), 1);
    a.close();
    b.close();
  });

  t.test('a full tuner answers 805', async (t) => {
    const s1 = await openStream(`${base}/auto/v11`);
    t.equal(s1.status, 200);
    const full = await rawGet(host.url, `/hdhr/${key}/auto/v12`);
    expectError(t, asInject(full), 503, /All Tuners In Use/);
    t.equal(full.headers['x-hdhomerun-error'], '805 All Tuners In Use');
    s1.close();
    // A client that disconnects releases its hold at once: the other channel tunes.
    const s2 = await waitFor(async () => {
      const s = await openStream(`${base}/auto/v12`);
      if (s.status === 200) return s;
      s.close();
      return undefined;
    }, 15_000, 300);
    t.equal(s2!.status, 200, 'the slot is free again');
    s2!.close();
  });

  t.test('a revoked key is refused at once and its streams close', async (t) => {
    const other = (await host.inject({ method: 'POST', url: '/api/admin/access-keys', headers: host.authHeaders, payload: { name: 'kodi' } })).json().access_key;
    const s = await openStream(`${host.url}/hdhr/${other.key}/auto/v3`);
    t.equal(s.status, 200);
    const keep = await openStream(`${base}/auto/v3`);
    const revoked = await host.inject({ method: 'DELETE', url: `/api/admin/access-keys/${other.id}`, headers: host.authHeaders });
    t.equal(revoked.statusCode, 200);
    expectError(t, await host.inject({ method: 'GET', url: `/hdhr/${other.key}/discover.json` }), 401, 'Invalid access key');
    await Promise.race([s.ended, new Promise((_, reject) => setTimeout(() => reject(new Error('stream still open')), 5000))]);
    t.pass('the stream opened with the revoked key ended');
    const before = keep.received();
    await new Promise((r) => setTimeout(r, 1500));
    t.ok(keep.received() > before, 'a stream of another key goes on');
    keep.close();
    const listed = (await host.inject({ method: 'GET', url: '/api/admin/access-keys', headers: host.authHeaders })).json().access_keys;
    t.match(listed.find((k: any) => k.id === other.id), { key: null, revoked_at: /Z$/ });
  });
});
