/**
 * Bounded transcoding (issue 25 item 1), with the real plugin, real ffmpeg and
 * real HTTP: the ladder, signed variant tokens, the global and per-user limits
 * (503 with Retry-After), admins never refused, and the attack as reported
 * (one user, many maxBitrate values, made-up variant tokens), then 50
 * concurrent transcode requests from 5 users while /proc is watched: never
 * more encoding ffmpeg processes than the limit.
 */
import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { copyFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import * as HLS from 'hls-parser';
import pino from 'pino';
import { TranscodeBudgetImpl } from '../../../core/ffmpeg/transcode-budget.js';
import { LADDER, ladderRung } from '../../../plugins/vod/play-decision.js';
import { asInject, expectError, rawGet, type RawResponse } from '../../helpers/http.js';
import { waitFor } from '../../helpers/wait.js';
import { catalog, clip, tempDir, vodHost } from './fixtures.js';

t.setTimeout(300_000);

/** Encoding ffmpeg processes this test process (the server runs in it) started. */
function encoders(): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const m = /^\d+ \((.*)\) (\S) (\d+)/.exec(readFileSync(`/proc/${d}/stat`, 'utf8'));
      if (!m || Number(m[3]) !== process.pid || !m[1]!.startsWith('ffmpeg') || m[2] === 'Z') continue;
      if (readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0').includes('libx264')) out.push(Number(d));
    } catch { /* exited meanwhile */ }
  }
  return out;
}

/** Samples the number of encoders every 20 ms until stopped; the most seen. */
function watchEncoders(): { stop(): number } {
  let most = 0;
  const timer = setInterval(() => { most = Math.max(most, encoders().length); }, 20);
  return { stop: () => { clearInterval(timer); return Math.max(most, encoders().length); } };
}

const silent = pino({ level: 'silent' });

t.test('the budget: global and per-user limits; admins and system work never refused but counted', async (t) => {
  const budget = new TranscodeBudgetImpl({ max: 3, perUser: 2 }, silent);
  const alice = { id: 2, admin: false };
  const bob = { id: 3, admin: false };
  const admin = { id: 1, admin: true };
  const a1 = budget.reserve({ owner: alice, label: 'vod:a' });
  const a2 = budget.reserve({ owner: alice, label: 'vod:b' });
  t.ok('slot' in a1 && 'slot' in a2, 'two for alice');
  const a3 = budget.reserve({ owner: alice, label: 'vod:c' });
  t.match(a3, { refused: 'user', retryAfter: 10, message: /limit per user is 2/ }, 'a third for alice: refused, her own limit');
  const b1 = budget.reserve({ owner: bob, label: 'vod:d' });
  t.ok('slot' in b1, 'bob: the third of three');
  t.match(budget.reserve({ owner: bob, label: 'vod:e' }), { refused: 'server', message: /limit of 3 transcodes/ }, 'a fourth: refused, the server is full');
  const adminSlot = budget.reserve({ owner: admin, label: 'vod:f' });
  const system = budget.reserve({ owner: 'system', label: 'live:1' });
  t.ok('slot' in adminSlot && 'slot' in system, 'an admin and system work get theirs on a full server');
  t.strictSame(budget.usage(), { total: 5, byUser: { 2: 2, 3: 1, 1: 1, system: 1 } }, 'and are counted');
  if ('slot' in a1) { a1.slot.release(); a1.slot.release(); }
  t.equal(budget.usage().total, 4, 'release is idempotent');
  t.match(budget.reserve({ owner: bob, label: 'vod:g' }), { refused: 'server' }, 'admin and system slots count toward the total');
  if ('slot' in adminSlot) adminSlot.slot.release();
  if ('slot' in system) system.slot.release();
  t.ok('slot' in budget.reserve({ owner: bob, label: 'vod:h' }), 'room again once they are released');
});

t.test('the ladder: any maxBitrate and Device-Max-Height names one of a dozen variants', async (t) => {
  const seen = new Set<string>();
  for (let kbps = 64; kbps <= 30_000; kbps += 37) {
    for (const maxHeight of [undefined, 100, 239, 240, 241, 500, 719, 1079, 4000]) {
      const r = ladderRung(1080, maxHeight, kbps * 1000);
      t.ok(LADDER.some((l) => l.kbps === r.kbps && l.height === r.height), `${kbps} kb/s, max ${maxHeight}: ${r.height}p ${r.kbps} kb/s is a rung`);
      if (maxHeight && maxHeight >= 180) t.ok(r.height <= maxHeight, 'never above the device cap');
      seen.add(`${r.height}/${r.kbps}`);
    }
  }
  t.ok(seen.size <= LADDER.length, `${seen.size} distinct variants from ${Math.ceil((30_000 - 64) / 37) * 9} requests`);
  t.strictSame(ladderRung(180, undefined, 100_000), { height: 180, kbps: 200 }, 'a budget below the ladder: its lowest rung');
  t.strictSame(ladderRung(180, 1080, undefined), { height: 180, kbps: 300 }, 'never taller than the source');
  t.strictSame(ladderRung(720, undefined, 2_500_000), { height: 720, kbps: 2_200 }, 'room for the audio under maxBitrate');
});

t.test('over HTTP: the attack, made-up tokens, and 50 concurrent requests from 5 users', async (t) => {
  const dir = await tempDir(t);
  const movies = path.join(dir, 'movies');
  await mkdir(movies);
  const titles = ['One', 'Two', 'Three', 'Four', 'Five', 'Six'];
  // 24 s each at 320x180 and 5 Mb/s: every maxBitrate below that transcodes, and a transcode is
  // still running when the next requests come.
  await clip(path.join(dir, 'clip.mp4'), { width: 320, height: 180, fps: 25, seconds: 24, gopSeconds: 2, videoBitrate: '5M' });
  for (const [i, title] of titles.entries()) await copyFile(path.join(dir, 'clip.mp4'), path.join(movies, `${title} (${2001 + i}).mp4`));
  const MAX = 3;
  const PER_USER = 2;
  const logs: Record<string, any>[] = [];
  const logger = pino({ level: 'info' }, new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString('utf8').split('\n')) if (l) try { logs.push(JSON.parse(l)); } catch { /* partial */ }
      cb();
    },
  }));
  const host = await vodHost([{ name: 'Movies', type: 'movies', paths: [movies] }], {
    listen: true, logger, vod: { preset: 'ultrafast', idleTimeout: '30s' }, config: { ffmpeg: { maxTranscodes: MAX, maxTranscodesPerUser: PER_USER } },
  });
  t.teardown(() => host.close());
  const { id } = await catalog(host);
  const jobs = () => host.host.jobs.list().filter((j) => j.kind === 'vod-transcode' && j.state === 'running');
  const stopAll = async () => { for (const j of jobs()) await host.host.jobs.get(j.key)?.stop('test'); };
  t.afterEach(stopAll);
  const get = (p: string, headers: Record<string, string> = {}) => rawGet(host.url, p, headers, 90_000);
  const okOr503 = (t: Tap, r: RawResponse, what: string) => {
    const fine = r.status === 200 || (r.status === 503 && Number(r.headers['retry-after']) > 0 && typeof JSON.parse(r.body.toString()).error === 'string');
    t.ok(fine, `${what}: ${r.status}${r.status === 503 ? ` Retry-After ${r.headers['retry-after']} ${r.body}` : r.status === 200 ? '' : ` ${r.body.toString().slice(0, 200)}`}`);
    return r.status;
  };

  await host.createUser('mallory', 'mallory-password');
  const mallory = await host.login('mallory', 'mallory-password', { 'device-id': 'mallory-laptop' });

  t.test('one user, 6 items × 8 maxBitrate values at once: a few ladder jobs, never more encoders than the limits', async (t) => {
    const watch = watchEncoders();
    const bitrates = [300_000, 450_000, 600_000, 700_000, 800_000, 1_000_000, 1_200_000, 1_500_000];
    const transcodes = () => jobs().filter((j) => /:0-t-/.test(j.key));
    const requests = titles.flatMap((title) => bitrates.map((b) => ({ title, b })));
    const answers = await Promise.all(requests.map(({ title, b }) => get(`/watch/vod/${id(title)}/master.m3u8?maxBitrate=${b}&api_key=${mallory}`)));
    const most = watch.stop();
    const statuses = answers.map((r, i) => okOr503(t, r, `${requests[i]!.title} at ${requests[i]!.b}`));
    t.ok(statuses.includes(503), `some were refused (${statuses.filter((s) => s === 503).length} of ${statuses.length})`);
    t.ok(statuses.includes(200), 'some were served');
    t.ok(most <= PER_USER, `at most ${PER_USER} encoders at once for one user (saw ${most})`);
    const variants = new Set(jobs().map((j) => j.key.split(':')[2]));
    t.equal(transcodes().length, jobs().length, 'every job transcodes (every maxBitrate is under the files\' 5 Mb/s)');
    t.ok(jobs().length <= PER_USER, `at most ${PER_USER} jobs left running (${jobs().map((j) => j.key).join(', ')})`);
    t.ok([...variants].every((v) => /^0-t-180-(200|300)-0-/.test(v!)), `every job is a ladder variant (${[...variants].join(', ')})`);
    // Refused at her limit, or replaced by a newer request of the same device while it started.
    const refusals = answers.filter((r) => r.status === 503).map((r) => JSON.parse(r.body.toString()).error as string);
    t.ok(refusals.every((e) => /limit per user|has stopped/.test(e)), `the refusals say why (${[...new Set(refusals)].join('; ')})`);
  });

  t.test('made-up and altered variant tokens: 404, no job, no ffmpeg', async (t) => {
    const master = await get(`/watch/vod/${id('One')}/master.m3u8?maxBitrate=300000&api_key=${mallory}`);
    t.equal(master.status, 200);
    const media = (HLS.parse(master.body.toString()) as HLS.types.MasterPlaylist).variants[0]!.uri;
    const url = new URL(media, `${host.url}/watch/vod/${id('One')}/master.m3u8`);
    const token = /\/t\/([^/]+)\//.exec(url.pathname)![1]!;
    const [, plain, sig] = /^(.+)-([0-9a-f]{16})$/.exec(token)!;
    const fingerprint = plain!.split('-')[5];
    await stopAll();
    await waitFor(() => encoders().length === 0, 10_000);
    const forged = [
      `0-t-240-101-0-${fingerprint}-${sig}`, // another variant under the real signature
      `0-t-180-200-0-${fingerprint}-0123456789abcdef`, // a ladder variant with a made-up signature
      `0-t-180-200-0-${fingerprint}`, // unsigned, as tokens used to be
      `${plain}-${sig!.replace(/^./, (c) => (c === '0' ? '1' : '0'))}`, // the real token, signature altered
    ];
    const started = logs.filter((l) => l.event === 'transcode_start').length;
    for (const bad of forged) {
      for (const file of ['v-1.m4s', 'video.m3u8', 'init-v.mp4']) {
        const r = await get(`/watch/vod/${id('One')}/t/${bad}/${file}?api_key=${mallory}`);
        expectError(t, asInject(r), 404, /cannot be made|No such file|not valid/, `${bad}/${file}`);
      }
      const r = await get(`/watch/vod/${id('One')}/master.m3u8?variant=${bad}&api_key=${mallory}`);
      expectError(t, asInject(r), 404, /not valid/, `master.m3u8?variant=${bad}`);
    }
    // The real token names One's variant only: on another item it is refused too.
    expectError(t, asInject(await get(`/watch/vod/${id('Two')}/t/${token}/v-1.m4s?api_key=${mallory}`)), 404, undefined, 'a token of another item');
    t.equal(jobs().length, 0, 'no job was started');
    t.equal(logs.filter((l) => l.event === 'transcode_start').length, started, 'no ffmpeg was started');
    t.equal((await get(`/watch/vod/${id('One')}/t/${token}/v-1.m4s?api_key=${mallory}`)).status, 200, 'the real token still plays');
  });

  t.test('a user at their limit who starts a transcode on the same device replaces their oldest; an admin is never refused', async (t) => {
    const first = await get(`/watch/vod/${id('One')}/master.m3u8?maxBitrate=300000&api_key=${mallory}`);
    const second = await get(`/watch/vod/${id('Two')}/master.m3u8?maxBitrate=300000&api_key=${mallory}`);
    t.strictSame([first.status, second.status], [200, 200], 'two transcodes');
    const third = await get(`/watch/vod/${id('Three')}/master.m3u8?maxBitrate=300000&api_key=${mallory}`);
    t.equal(third.status, 200, 'a third on the same device: 200');
    const mine = jobs().map((j) => j.key.split(':')[1]);
    t.equal(mine.length, PER_USER, `still ${PER_USER} jobs`);
    t.ok(mine.includes(id('Three')), 'the new one runs');
    const other = await host.login('mallory', 'mallory-password', { 'device-id': 'mallory-phone' });
    const phone = await get(`/watch/vod/${id('Four')}/master.m3u8?maxBitrate=300000&api_key=${other}`);
    expectError(t, asInject(phone), 503, /limit per user/, 'her phone while her laptop runs two');
    t.ok(Number(phone.headers['retry-after']) > 0, 'with Retry-After');
    t.equal(jobs().length, PER_USER, 'and no job was left behind for it');
    // The server is at most at MAX - PER_USER more: fill it with an admin's transcodes, far beyond it.
    const admin = `api_key=${encodeURIComponent(host.adminToken)}`;
    const adminAnswers = await Promise.all(['Four', 'Five', 'Six'].map((title) => get(`/watch/vod/${id(title)}/master.m3u8?maxBitrate=300000&${admin}`)));
    t.strictSame(adminAnswers.map((r) => r.status), [200, 200, 200], 'the admin\'s three: all served');
    t.ok(jobs().length > MAX, `${jobs().length} transcodes running, over the limit of ${MAX}, admins included`);
    await host.createUser('trudy', 'trudy-password');
    const trudy = await host.login('trudy', 'trudy-password');
    expectError(t, asInject(await get(`/watch/vod/${id('Five')}/master.m3u8?maxBitrate=300000&api_key=${trudy}`)), 503, /server is running its limit/, 'an ordinary user while the admin fills the server');
  });

  t.test('load: 50 concurrent transcode requests from 5 users', async (t) => {
    const users: string[] = [];
    for (let u = 0; u < 5; u++) {
      await host.createUser(`load${u}`, 'load-password');
      users.push(await host.login(`load${u}`, 'load-password', { 'device-id': `load-device-${u}` }));
    }
    const bitrates = [300_000, 500_000];
    const watch = watchEncoders();
    const replacedBefore = logs.filter((l) => l.event === 'transcode_replaced').length;
    const started = Date.now();
    const urls = Array.from({ length: 50 }, (_, i) => `/watch/vod/${id(titles[i % titles.length]!)}/master.m3u8?maxBitrate=${bitrates[Math.floor(i / 25)]}&api_key=${users[i % 5]}`);
    const answers = await Promise.all(urls.map((url) => get(url)));
    // And every answered manifest's first segment, while the others are refused or running.
    const segments = await Promise.all(answers.filter((r) => r.status === 200).map(async (r, i) => {
      const master = HLS.parse(r.body.toString()) as HLS.types.MasterPlaylist;
      const list = new URL(master.variants[0]!.uri, `${host.url}${urls[answers.indexOf(r)]}`);
      const listed = await get(list.pathname + list.search);
      if (listed.status !== 200) return { i, r: listed };
      const seg = new URL((HLS.parse(listed.body.toString()) as HLS.types.MediaPlaylist).segments[2]!.uri, list);
      return { i, r: await get(seg.pathname + seg.search) };
    }));
    const most = watch.stop();
    const statuses = answers.map((r, i) => okOr503(t, r, `request ${i}`));
    for (const s of segments) okOr503(t, s.r, `segment of answer ${s.i}`);
    t.ok(most <= MAX, `never more than ${MAX} encoders (saw ${most} at most)`);
    const usage = host.host.transcodes.usage();
    t.ok(usage.total <= MAX, `at most ${MAX} transcode slots held at the end (${usage.total})`);
    t.ok(Object.values(usage.byUser).every((n) => n <= PER_USER), `at most ${PER_USER} per user (${JSON.stringify(usage.byUser)})`);
    // A user's request on the same device may replace their oldest job, so more than MAX
    // may be answered in all; beyond the replaced ones, at most MAX.
    const served = statuses.filter((s) => s === 200).length;
    const replaced = logs.filter((l) => l.event === 'transcode_replaced').length - replacedBefore;
    t.ok(served >= 1 && served - replaced <= MAX, `${served} served, ${replaced} of them replaced by a newer one (at most ${MAX} at once), ${statuses.filter((s) => s === 503).length} refused, in ${Date.now() - started} ms`);
  });
});

interface Tap { ok(...args: any[]): unknown }
