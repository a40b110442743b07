/**
 * Scheduling recordings, with a real core (in process) and a guide of 1-minute
 * programmes: the API's answers (201, 400, 401, 403, 404, 409), the tuner check
 * over the padded windows, following guide changes, cancelling, and scheduled
 * recordings surviving a restart. Nothing here needs a stream to play: the
 * programmes are later ones, and the on-air one has a dead upstream.
 */
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { writeFile } from 'node:fs/promises';
import { createTestHost, type TestHost } from '../../../sdk/testing.js';
import { expectError } from '../../helpers/http.js';
import { closedPort, m3u, refresh, tempDir, write } from '../live-tv/fixtures.js';
import { guideByName, MINUTE, slotAt, slotGuide, programmeAt } from './fixtures.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const PAD = 30_000;

t.test('dvr scheduling', async (t) => {
  const dir = await tempDir(t, 'antenna-dvr-schedule-');
  const dead = await closedPort();
  const url = (name: string) => `http://127.0.0.1:${dead}/live/${name}.ts`;
  // S2's upstream accepts and never answers: a viewer's session keeps its slot while the viewer
  // waits (a refused connection would end it at once, as it should).
  const stalled = http.createServer(() => {});
  await new Promise<void>((resolve) => stalled.listen(0, '127.0.0.1', resolve));
  t.teardown(() => { stalled.closeAllConnections(); stalled.close(); });
  const s2Url = `http://127.0.0.1:${(stalled.address() as AddressInfo).port}/live/s2.ts`;
  const main = await write(dir, 'main.m3u', m3u([
    { name: 'One', tvgId: 'one', chno: '1', url: url('one') },
    { name: 'Two', tvgId: 'two', chno: '2', url: url('two') },
  ]));
  const single = await write(dir, 'single.m3u', m3u([
    { name: 'S1', tvgId: 's1', chno: '11', url: url('s1') },
    { name: 'S2', tvgId: 's2', chno: '12', url: s2Url },
  ]));
  const t0 = Date.now();
  const channels = ['one', 'two', 's1', 's2'];
  const guideFile = await write(dir, 'guide.xml', slotGuide(channels, t0, -30, 120));
  const dataDir = path.join(dir, 'data');
  const plugins = {
    'live-tv': { initialImport: 'await', idleTimeout: '2s', readyTimeout: '3s' },
    'm3u-tuner': { sources: [{ name: 'Main', url: main, maxStreams: 2 }, { name: 'Single IPTV', url: single, maxStreams: 1 }] },
    'xmltv-guide': { sources: [{ url: guideFile }], maxAge: '100000d' },
    dvr: { path: path.join(dir, 'recordings'), prePadding: '30s', postPadding: '30s' },
  };
  let host: TestHost = await createTestHost({ dataDir, plugins });
  t.teardown(() => host.close());

  const auth = (token = host.adminToken) => ({ authorization: `Bearer ${token}` });
  const get = async (u: string, token?: string) => {
    const res = await host.inject({ method: 'GET', url: u, headers: auth(token) });
    if (res.statusCode !== 200) throw new Error(`GET ${u}: ${res.statusCode} ${res.body}`);
    return res.json();
  };
  const post = (body: unknown, token?: string) => host.inject({ method: 'POST', url: '/recordings', headers: auth(token), payload: body as any });
  const del = (id: number | string, token?: string) => host.inject({ method: 'DELETE', url: `/recordings/${id}`, headers: auth(token) });
  let guide = await guideByName(get);
  const at = (channel: string, offset: number) => programmeAt(guide, channel, slotAt(t0, offset));
  const record = async (channel: string, offset: number) => {
    const { channelId, programme } = at(channel, offset);
    return post({ channel_id: channelId, program_id: programme.id });
  };
  const tasks = async () => host.host.scheduler.list('dvr.start');

  t.test('without a token: 401 everywhere', async (t) => {
    const one = at('One', 10);
    for (const [method, u, payload] of [
      ['GET', '/recordings'], ['POST', '/recordings', { channel_id: one.channelId, program_id: one.programme.id }],
      ['GET', '/recordings/1'], ['DELETE', '/recordings/1'], ['GET', '/watch/recording/1'], ['GET', '/watch/recording/1/master.mpd'],
      ['GET', '/watch/recording/1/hls/video.m3u8'], ['GET', '/watch/recording/1/s/0/init-0.mp4'],
    ] as const) {
      expectError(t, await host.inject({ method, url: u, payload: payload as any }), 401, undefined, `${method} ${u}`);
    }
    expectError(t, await host.inject({ method: 'GET', url: '/recordings', headers: { authorization: 'Bearer not-a-token' } }), 401, undefined, 'bad token');
    expectError(t, await host.inject({ method: 'GET', url: '/watch/recording/1?api_key=not-a-token' }), 401, undefined, 'bad api_key');
    t.strictSame(await tasks(), [], 'nothing was scheduled');
  });

  t.test('malformed requests: 400 naming the field', async (t) => {
    const one = at('One', 10);
    const cases: [unknown, RegExp][] = [
      [{}, /channel_id is required/],
      [{ channel_id: one.channelId }, /program_id is required/],
      [{ program_id: one.programme.id }, /channel_id is required/],
      [{ channel_id: 'one', program_id: one.programme.id }, /channel_id/],
      [{ channel_id: 1.5, program_id: one.programme.id }, /channel_id/],
      [{ channel_id: -1, program_id: one.programme.id }, /channel_id/],
      [{ channel_id: one.channelId, program_id: 'x' }, /program_id/],
      [{ channel_id: one.channelId, program_id: one.programme.id, at: 'now' }, /unknown field at/],
      [[one.channelId, one.programme.id], /body/],
    ];
    for (const [body, message] of cases) expectError(t, await post(body), 400, message, JSON.stringify(body));
    expectError(t, await host.inject({ method: 'POST', url: '/recordings', headers: { ...auth(), 'content-type': 'application/json' }, payload: '{"channel_id": 1,' }), 400, /JSON/, 'broken JSON');
    expectError(t, await del('abc'), 400, /id/, 'DELETE /recordings/abc');
    expectError(t, await host.inject({ method: 'GET', url: '/watch/recording/abc', headers: auth() }), 400, /id/, 'watch abc');
    t.strictSame(await get('/recordings'), [], 'nothing was created');
  });

  t.test('unknown channel or programme: 404; a programme that is over: 400', async (t) => {
    const one = at('One', 10);
    const two = at('Two', 10);
    expectError(t, await post({ channel_id: 999999, program_id: one.programme.id }), 404, /channel 999999/, 'unknown channel');
    expectError(t, await post({ channel_id: one.channelId, program_id: 12345 }), 404, /programme 12345/, 'unknown programme');
    expectError(t, await post({ channel_id: one.channelId, program_id: two.programme.id }), 404, /programme/, "another channel's programme");
    expectError(t, await record('One', -10), 400, /already over/, 'ten minutes ago');
    expectError(t, await record('One', -1), 400, /already over/, 'the previous minute');
    expectError(t, await del(999999), 404, /999999/, 'DELETE an unknown recording');
    t.strictSame(await get('/recordings'), [], 'nothing was created');
  });

  let later = 0;
  t.test('a later programme: 201 scheduled, with a persisted start task; the same again: 409', async (t) => {
    const one = at('One', 20);
    const res = await record('One', 20);
    t.equal(res.statusCode, 201, res.body);
    const rec = res.json();
    later = rec.id;
    t.strictSame(Object.keys(rec).sort(), ['channel_id', 'duration', 'episode', 'episode_title', 'gaps', 'id', 'program_id', 'rule_id', 'season', 'series_key', 'size_bytes', 'start', 'status', 'stop', 'title'],
      'fields (no error unless failed)');
    t.match(rec, { rule_id: null, season: null, episode: null, episode_title: null, series_key: `t:${one.programme.title.toLowerCase()}` }, 'a one-off, of a programme without episode data');
    t.match(rec, { channel_id: one.channelId, program_id: one.programme.id, status: 'scheduled', title: one.programme.title, start: one.programme.start, stop: one.programme.stop, size_bytes: 0, gaps: [] });
    t.strictSame((await tasks()).map((k) => [k.id, k.at]), [[`dvr:${rec.id}`, Date.parse(one.programme.start) - PAD]], 'a start task at start - prePadding');
    t.match(await get(`/recordings/${rec.id}`), { id: rec.id, status: 'scheduled' });
    expectError(t, await record('One', 20), 409, new RegExp(`already recorded by recording ${rec.id}`), 'the same programme again');
    t.equal((await get('/recordings')).length, 1, 'still one recording');
  });

  t.test('a one-stream tuner: a recording of another channel overlapping (padding included) is refused, naming it', async (t) => {
    const first = await record('S1', 10);
    t.equal(first.statusCode, 201, first.body);
    const s1 = first.json();
    const refused = expectError(t, await record('S2', 10), 409, /Single IPTV/, 'S2 at the same time');
    t.match(refused.error, new RegExp(`"${s1.title}" on channel ${s1.channel_id} \\(recording ${s1.id}\\)`), `the message names the recording in the way: ${refused.error}`);
    expectError(t, await record('S2', 11), 409, /Single IPTV/, 'S2 in the next minute: the paddings overlap');
    expectError(t, await record('S2', 9), 409, /Single IPTV/, 'S2 in the minute before');
    const same = await record('S1', 11);
    t.equal(same.statusCode, 201, `the same channel right after shares the stream (${same.body})`);
    expectError(t, await record('S2', 12), 409, /Single IPTV/, 'S2 right after that');
    const apart = await record('S2', 13);
    t.equal(apart.statusCode, 201, `S2 once the windows no longer overlap (${apart.body})`);
    const main = await record('Two', 20);
    t.equal(main.statusCode, 201, 'a two-stream tuner takes a second channel at once');
  });

  t.test('guide changes before the start are followed', async (t) => {
    const moved = at('One', 30);
    const longer = at('One', 40);
    const a = (await record('One', 30)).json();
    const b = (await record('One', 40)).json();
    const newStart = slotAt(t0, 33);
    await writeFile(guideFile, slotGuide(channels, t0, -30, 120, (channel, start) => {
      if (channel !== 'one') return undefined;
      if (start === Date.parse(moved.programme.start)) return { start: newStart, stop: newStart + 2 * MINUTE };
      if (start >= slotAt(t0, 31) && start < slotAt(t0, 35)) return null; // make room
      if (start === Date.parse(longer.programme.start)) return { start, stop: start + 3 * MINUTE };
      if (start === slotAt(t0, 41) || start === slotAt(t0, 42)) return null;
      return undefined;
    }));
    await refresh(host);
    guide = await guideByName(get);
    const newId = programmeAt(guide, 'One', newStart).programme.id;
    t.not(newId, moved.programme.id, 'the moved programme has a new id in the guide');
    let seen: any;
    for (const deadline = Date.now() + 20_000; Date.now() < deadline; await sleep(500)) {
      seen = await get(`/recordings/${a.id}`);
      if (seen.start !== moved.programme.start) break;
    }
    t.match(seen, { start: new Date(newStart).toISOString(), stop: new Date(newStart + 2 * MINUTE).toISOString(), program_id: newId, status: 'scheduled' }, 'the moved programme: new times and id');
    t.equal((await tasks()).find((k) => k.id === `dvr:${a.id}`)?.at, newStart - PAD, 'its start task moved');
    // The guide follower updates recordings one after another: wait for the second too.
    const longerStop = new Date(Date.parse(longer.programme.start) + 3 * MINUTE).toISOString();
    let seenB: any;
    for (const deadline = Date.now() + 20_000; Date.now() < deadline; await sleep(500)) {
      seenB = await get(`/recordings/${b.id}`);
      if (seenB.stop === longerStop) break;
    }
    t.match(seenB, { start: longer.programme.start, stop: longerStop, program_id: longer.programme.id }, 'the lengthened one: new stop');
    expectError(t, await post({ channel_id: moved.channelId, program_id: newId }), 409, /already recorded/, 'the moved programme under its new id is a duplicate');
  });

  t.test('cancel a scheduled recording, then delete it', async (t) => {
    const res = await del(later);
    t.equal(res.statusCode, 200);
    t.strictSame(res.json(), { ok: true });
    t.match(await get(`/recordings/${later}`), { status: 'cancelled' });
    t.notOk((await tasks()).some((k) => k.id === `dvr:${later}`), 'its start task is gone');
    const again = await record('One', 20);
    t.equal(again.statusCode, 201, 'a cancelled recording does not block the programme');
    expectError(t, await host.inject({ method: 'GET', url: `/watch/recording/${again.json().id}`, headers: auth() }), 409, /scheduled/, 'nothing to play before it starts');
    t.equal((await del(later)).statusCode, 200, 'deleting the cancelled one');
    expectError(t, await host.inject({ method: 'GET', url: `/recordings/${later}`, headers: auth() }), 404, undefined, 'gone');
    expectError(t, await del(later), 404, undefined, 'gone for DELETE too');
  });

  t.test('other users see every recording but may not remove one they did not schedule', async (t) => {
    await host.createUser('viewer', 'viewer-password-1');
    const token = await host.login('viewer', 'viewer-password-1');
    const all = await get('/recordings', token);
    t.ok(all.length >= 5, `the viewer lists them (${all.length})`);
    expectError(t, await del(all[0].id, token), 403, /administrator/, "someone else's recording");
    const own = await post({ channel_id: at('Two', 50).channelId, program_id: at('Two', 50).programme.id }, token);
    t.equal(own.statusCode, 201);
    t.equal((await del(own.json().id, token)).statusCode, 200, 'their own');
  });

  t.test('on air: records at once; a dead upstream is retried, not failed; cancel stops it', async (t) => {
    const now = Date.now();
    const onAir = guide.get('Two')!.programs.find((p) => Date.parse(p.start) <= now + 2000 && Date.parse(p.stop) > now + 2000)!;
    const res = await post({ channel_id: guide.get('Two')!.id, program_id: onAir.id });
    t.equal(res.statusCode, 201, res.body);
    const rec = res.json();
    t.equal(rec.status, 'recording', 'starts at once');
    t.ok(host.host.jobs.get(`dvr:${rec.id}`), 'its job runs');
    await sleep(3000);
    t.match(await get(`/recordings/${rec.id}`), { status: 'recording', size_bytes: 0 }, 'still recording while the upstream is down');
    t.equal((await del(rec.id)).statusCode, 200);
    t.match(await get(`/recordings/${rec.id}`), { status: 'cancelled' });
    t.notOk(host.host.jobs.get(`dvr:${rec.id}`), 'its job stopped');
    expectError(t, await host.inject({ method: 'GET', url: `/watch/recording/${rec.id}`, headers: auth() }), 409, /no media/, 'nothing to play');
  });

  t.test('a recording starting on a full tuner stops a channel only viewers use', async (t) => {
    const s1 = guide.get('S1')!;
    const s2 = guide.get('S2')!;
    // A viewer tunes S2 (its upstream never answers: the session keeps trying while the viewer waits).
    const viewer = host.inject({ method: 'GET', url: `/watch/live/${s2.id}`, headers: auth() });
    let waited = 0;
    // The session lives while the viewer waits (readyTimeout); on a busy machine the request may take a while to start it.
    while (!host.host.jobs.get(`live:${s2.id}`) && waited < 10_000) { await sleep(50); waited += 50; }
    t.ok(host.host.jobs.get(`live:${s2.id}`), 'S2 holds the only stream of its tuner');
    const now = Date.now();
    const onAir = s1.programs.find((p) => Date.parse(p.start) <= now + 2000 && Date.parse(p.stop) > now + 2000)!;
    const res = await post({ channel_id: s1.id, program_id: onAir.id });
    t.equal(res.statusCode, 201, res.body);
    let running = false;
    for (const deadline = Date.now() + 5000; Date.now() < deadline && !running; await sleep(100)) {
      running = !!host.host.jobs.get(`live:${s1.id}`) && !host.host.jobs.get(`live:${s2.id}`);
    }
    t.ok(running, "the recording's channel runs; the viewer's channel was stopped for it");
    const answer = await viewer;
    t.ok([502, 503].includes(answer.statusCode), `the viewer gets ${answer.statusCode}`);
    const refused = await host.inject({ method: 'GET', url: `/watch/live/${s2.id}`, headers: auth() });
    expectError(t, refused, 409, /Single IPTV/, 'S2 cannot be tuned while the recording holds the tuner');
    t.equal((await del(res.json().id)).statusCode, 200, 'cancelled');
  });

  t.test('scheduled recordings survive a restart', async (t) => {
    const before = (await get('/recordings')).filter((r: any) => r.status === 'scheduled');
    const tasksBefore = (await tasks()).map((k) => k.id).sort();
    await host.close();
    host = await createTestHost({ dataDir, plugins });
    const after = (await get('/recordings')).filter((r: any) => r.status === 'scheduled');
    t.strictSame(after, before, 'the same scheduled recordings');
    t.strictSame((await tasks()).map((k) => k.id).sort(), tasksBefore, 'with their start tasks');
    t.ok(before.length >= 5, `${before.length} of them`);
  });
});
