/**
 * Live sessions under #25's attacks, with real ffmpeg:
 *
 *  - error bodies: a non-admin's 502 names the channel and the kind of
 *    failure, never the upstream URL, its credentials or ffmpeg's output; an
 *    admin also gets ffmpeg's line (credentials redacted); the log holds no secret;
 *  - a stream that fails before its first segment, with nobody waiting, frees
 *    its tuner slot at once: `file://` and `concat:` inputs (a tuner that hands
 *    them over), an upstream that refuses or answers 404, then another channel
 *    of the same one-stream source plays instead of answering 409;
 *  - sessions that transcode hold a slot of the transcode budget for their
 *    life (kept across an ffmpeg restart, released when they end; 'system' for
 *    a recording's hold); past the limit a user gets 503 with Retry-After and
 *    the channel's tuner slot is free again; an admin is never refused.
 */
import t from 'tap';
import { Writable } from 'node:stream';
import pino from 'pino';
import { definePlugin, liveTvService, tunersExtensionPoint, type LiveTvAccess, type StreamSource, type TunerChannel } from '../../../sdk/index.js';
import { createTestHost, type TestHost } from '../../../sdk/testing.js';
import { expectError } from '../../helpers/http.js';
import { pidAlive, startUpstream } from '../../helpers/upstream.js';
import { waitFor } from '../../helpers/wait.js';
import { bearer, channels, closedPort, m3u, tempDir, write } from './fixtures.js';

t.setTimeout(300_000);

const USER = 'h4rduser';
const PASS = 'h4rdpass';

/** A lavfi test pattern with a tone: raw video, so the session transcodes it. */
const PATTERN: StreamSource = {
  inputArgs: ['-re', '-f', 'lavfi', '-i', 'testsrc=size=320x180:rate=25', '-re', '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000'],
  maps: ['0:v:0', '1:a:0'], videoCodec: 'rawvideo', audioCodec: 'pcm',
};

/** Tuners handing ffmpeg what a playlist could once hold (`file://`, `concat:`), and test patterns. */
const oddTuners = definePlugin({
  id: 'odd-tuners', version: '1.0.0', host: '^1.1', dependsOn: ['live-tv'],
  register(env) {
    env.registerInit({
      deps: { tuners: tunersExtensionPoint },
      init({ tuners }) {
        const tuner = (id: string, maxStreams: number, entries: [string, StreamSource][]) => tuners.addTuner({
          id, name: id, maxStreams,
          async listChannels() {
            return entries.map(([name], i): TunerChannel => ({ key: name, name, number: `${id === 'Odd' ? 50 : 60}${i}`, data: { name } }));
          },
          async openStream({ channel }) {
            return entries.find(([name]) => name === channel.name)![1];
          },
        });
        tuner('Odd', 1, [
          ['File entry', { inputArgs: ['-i', 'file:///nonexistent/antenna-hardening.ts'] }],
          ['Concat entry', { inputArgs: ['-i', 'concat:/nonexistent/a.ts|/nonexistent/b.ts'] }],
          ['Odd pattern', PATTERN],
        ]);
        tuner('Patterns', 3, [['Pattern A', PATTERN], ['Pattern B', PATTERN], ['Pattern C', PATTERN]]);
      },
    });
  },
});

t.test('live sessions under attack', async (t) => {
  const upstream = await startUpstream();
  t.teardown(() => upstream.close());
  upstream.fail('/live/missing.ts', 404);
  const dead = await closedPort();
  const dir = await tempDir(t, 'antenna-live-hardening-');
  const list = await write(dir, 'tv.m3u', m3u([
    { name: 'Refused', tvgId: 'refused', chno: '1', url: `http://127.0.0.1:${dead}/live/${USER}/${PASS}/1.ts` },
    { name: 'Missing', tvgId: 'missing', chno: '2', url: `${upstream.base}/live/missing.ts?username=${USER}&password=${PASS}` },
    { name: 'Good', tvgId: 'good', chno: '3', url: `${upstream.base}/live/good.ts` },
  ]));
  let access: LiveTvAccess | undefined;
  const holder = definePlugin({
    id: 'holder', version: '1.0.0', host: '^1.1',
    register(env) { env.registerInit({ deps: { live: liveTvService }, init({ live }) { access = live; } }); },
  });
  const lines: string[] = [];
  const logger = pino({ level: 'debug' }, new Writable({ write(c, _e, cb) { lines.push(...String(c).split('\n').filter(Boolean)); cb(); } }));
  const host: TestHost = await createTestHost({
    listen: true, logger,
    definitions: [oddTuners, holder],
    config: { ffmpeg: { maxTranscodes: 1 } },
    plugins: {
      // idleTimeout: what a failed start held its slot for before.
      'live-tv': { initialImport: 'await', idleTimeout: '60s', readyTimeout: '20s' },
      'm3u-tuner': { sources: [{ name: 'Main', url: list, maxStreams: 1 }] },
      'odd-tuners': {},
      holder: {},
    },
  });
  t.teardown(() => host.close());
  const all = await channels(host);
  const id = (name: string) => all.find((c) => c.name === name)!.id;
  const job = (cid: number) => host.host.jobs.get<{ pid: number }>(`live:${cid}`);
  await host.createUser('viewer', 'viewer-password-1');
  await host.createUser('other', 'other-password-1');
  const viewer = await host.login('viewer', 'viewer-password-1');
  const other = await host.login('other', 'other-password-1');
  const watch = (cid: number, token: string) => host.inject({ method: 'GET', url: `/watch/live/${cid}`, headers: bearer(token) });

  t.test('error bodies name the channel and the kind of failure; admins also get the detail', async (t) => {
    const refused = await watch(id('Refused'), viewer);
    expectError(t, refused, 502, 'Channel "Refused" cannot be played: the source refused the connection', 'a refused upstream, for a user');
    t.match(refused.headers['retry-after'], /^\d+$/, 'with Retry-After');
    const missing = await watch(id('Missing'), viewer);
    expectError(t, missing, 502, 'Channel "Missing" cannot be played: the source answered HTTP 404', 'a 404 upstream, for a user');
    const file = await watch(id('File entry'), viewer);
    expectError(t, file, 502, 'Channel "File entry" cannot be played: the source could not be opened', 'a file:// input, for a user');
    for (const res of [refused, missing, file]) {
      for (const leak of [String(dead), upstream.base, '127.0.0.1', USER, PASS, 'nonexistent', 'ffmpeg', 'tcp://']) t.notOk(res.body.includes(leak), `no ${leak} in ${res.body}`);
    }
    const adminRefused = await watch(id('Refused'), host.adminToken);
    t.equal(adminRefused.statusCode, 502);
    const detail = /^Channel "Refused" cannot be played: the source refused the connection \((.+)\)$/.exec(JSON.parse(adminRefused.body).error);
    t.ok(detail, `an admin gets the detail after it (${adminRefused.body})`);
    // The URL holds credentials, so ffmpeg reads it through m3u-tuner's relay, which tells what it met.
    t.match(detail?.[1], /ECONNREFUSED/, 'the words of what read the upstream');
    const adminMissing = JSON.parse((await watch(id('Missing'), host.adminToken)).body).error as string;
    t.match(adminMissing, /HTTP 404 \(.+\)$/, `with its detail: ${adminMissing}`);
    for (const text of [adminRefused.body, adminMissing, lines.join('\n')]) {
      t.notOk(text.includes(PASS), 'the password is in no admin body and no log line');
    }
  });

  t.test('a stream that fails before its first segment frees its tuner slot at once', async (t) => {
    // Main allows one stream: a failed channel that held its slot would make the next one 409.
    for (const name of ['Refused', 'Missing']) {
      const res = await watch(id(name), viewer);
      t.equal(res.statusCode, 502, `${name}: 502`);
      t.notOk(job(id(name)), `${name}: its session has ended`);
    }
    const good = await watch(id('Good'), viewer);
    t.equal(good.statusCode, 200, `then another channel of the source plays (${good.statusCode} ${good.statusCode === 200 ? '' : good.body})`);
    await job(id('Good'))?.stop();
    // Odd allows one stream: file:// and concat: inputs fail at once, and give it back.
    for (const name of ['File entry', 'Concat entry']) {
      const res = await watch(id(name), viewer);
      expectError(t, res, 502, `Channel "${name}" cannot be played: the source could not be opened`, name);
      t.notOk(job(id(name)), `${name}: its session has ended`);
    }
    const pattern = await watch(id('Odd pattern'), host.adminToken);
    t.equal(pattern.statusCode, 200, `the tuner's other channel plays (${pattern.statusCode} ${pattern.statusCode === 200 ? '' : pattern.body})`);
    await job(id('Odd pattern'))?.stop();
    t.equal(host.host.transcodes.usage().total, 0, 'its transcode slot is back once it ended');
  });

  t.test('sessions that transcode count toward the transcode budget', async (t) => {
    const budget = host.host.transcodes;
    const [a, b, c] = ['Pattern A', 'Pattern B', 'Pattern C'].map(id);
    t.equal((await watch(a, viewer)).statusCode, 200, 'a user watches a channel that must be transcoded');
    t.strictSame(budget.usage(), { total: 1, byUser: { [String(await userId(host, viewer))]: 1 } }, 'one slot, the viewer\'s');
    const refused = await watch(b, other);
    expectError(t, refused, 503, 'Channel "Pattern B" cannot be played: the server is running its limit of 1 transcodes; try again shortly', 'another user, past maxTranscodes');
    t.match(refused.headers['retry-after'], /^\d+$/, 'with Retry-After');
    t.notOk(job(b), 'no session holds a tuner slot for it');
    t.equal((await watch(b, host.adminToken)).statusCode, 200, 'an admin is never refused');
    t.equal(budget.usage().total, 2, 'but counts');
    // An ffmpeg restart keeps the slot: never two, never none.
    const pid = job(a)!.data.pid;
    const seen = new Set<number>();
    const sampler = setInterval(() => seen.add(budget.usage().total), 50);
    process.kill(pid, 'SIGKILL');
    const restarted = await waitFor(() => { const p = job(a)?.data.pid; return p && p !== pid && pidAlive(p) ? p : 0; }, 30_000);
    clearInterval(sampler);
    t.ok(restarted, `ffmpeg restarted (${pid} → ${restarted})`);
    t.strictSame([...seen], [2], 'the slot is kept across the restart');
    // A recording's hold: the system's slot.
    const hold = await access!.hold(c, 'test recording');
    await waitFor(() => budget.usage().byUser.system === 1, 30_000);
    t.equal(budget.usage().byUser.system, 1, "a recording's session takes the system's slot");
    hold.release();
    for (const cid of [a, b, c]) await job(cid)?.stop();
    t.strictSame(budget.usage(), { total: 0, byUser: {} }, 'every slot is released when the sessions end');
    t.equal((await watch(b, other)).statusCode, 200, 'and the user who was refused plays now');
    await job(b)?.stop();
  });
});

async function userId(host: TestHost, token: string): Promise<number> {
  return (await host.inject({ method: 'GET', url: '/me', headers: bearer(token) })).json().user.id;
}
