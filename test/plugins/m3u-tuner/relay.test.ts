/**
 * Provider credentials never reach ffmpeg's command line (what `ps` shows every
 * user of the machine), nor a log line: stream URLs with `user:pass@`, a
 * password in the query, Xtream-style path credentials (long and short form)
 * or the source's own secret as a path segment are read through m3u-tuner's
 * loopback relay, guarded by a per-stream token. A real upstream that checks
 * the credentials serves MPEG-TS and a live HLS playlist; the channels play.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { createTestHost } from '../../../sdk/testing.js';
import { rawGet } from '../../helpers/http.js';
import { startUpstream } from '../../helpers/upstream.js';
import { channels, m3u } from '../live-tv/fixtures.js';

const USER = 'xuser7';
const PASS = 'xp4ssw0rd9';

/** An IPTV provider that checks the credentials, then serves the test upstream's streams. */
async function provider(t: { teardown(fn: () => unknown): void }, upstreamBase: string) {
  const requests: string[] = [];
  let playlist = '';
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    requests.push(req.url ?? '');
    const basic = req.headers.authorization === `Basic ${Buffer.from(`${USER}:${PASS}`).toString('base64')}`;
    const query = url.searchParams.get('username') === USER && url.searchParams.get('password') === PASS;
    const pass = (to: string) => {
      const up = http.get(`${upstreamBase}${to}`, (u) => {
        res.writeHead(u.statusCode ?? 502, { 'content-type': String(u.headers['content-type'] ?? 'video/mp2t') });
        u.pipe(res);
      });
      up.on('error', () => res.destroy());
      res.on('close', () => up.destroy());
    };
    const p = url.pathname;
    if (p === '/get.php' && query) return void res.writeHead(200, { 'content-type': 'audio/x-mpegurl' }).end(playlist);
    if (p === `/live/${USER}/${PASS}/1.ts`) return pass('/live/xtream.ts');
    if (p === `/${USER}/${PASS}/2`) return pass('/live/short.ts');
    if (p === '/basic/3.ts' && basic) return pass('/live/basic.ts');
    if (p === '/play.php' && query) return pass('/live/query.ts');
    if (p === `/hls/${USER}/${PASS}/index.m3u8`) return pass('/hls/index.m3u8');
    const segment = new RegExp(`^/hls/${USER}/${PASS}/(seg-\\d+\\.ts)$`).exec(p);
    if (segment) return pass(`/hls/${segment[1]}`);
    res.writeHead(401).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => { server.closeAllConnections(); server.close(); });
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests, setPlaylist: (text: string) => { playlist = text; } };
}

t.test('streams with credentials play through the relay; ffmpeg\'s command line and the logs never hold them', async (t) => {
  const upstream = await startUpstream();
  t.teardown(() => upstream.close());
  const hls = upstream.startHls();
  const iptv = await provider(t, upstream.base);
  const origin = new URL(iptv.base);
  iptv.setPlaylist(m3u([
    { name: 'Xtream', tvgId: 'x', chno: '1', url: `${iptv.base}/live/${USER}/${PASS}/1.ts` },
    { name: 'Short', tvgId: 's', chno: '2', url: `${iptv.base}/${USER}/${PASS}/2` },
    { name: 'Basic', tvgId: 'b', chno: '3', url: `http://${USER}:${PASS}@${origin.host}/basic/3.ts` },
    { name: 'Query', tvgId: 'q', chno: '4', url: `${iptv.base}/play.php?username=${USER}&password=${PASS}&id=4` },
    // Not an Xtream form: relayed because the source's own URL names these secrets.
    { name: 'HLS', tvgId: 'h', chno: '5', url: `${iptv.base}/hls/${USER}/${PASS}/index.m3u8` },
  ]));
  const playlist = `${iptv.base}/get.php?username=${USER}&password=${PASS}&type=m3u_plus`;
  const lines: string[] = [];
  const logger = pino({ level: 'debug' }, new Writable({ write(c, _e, cb) { lines.push(...String(c).split('\n').filter(Boolean)); cb(); } }));
  const host = await createTestHost({
    listen: true, logger,
    plugins: { 'live-tv': { initialImport: 'await', idleTimeout: '60s', readyTimeout: '30s' }, 'm3u-tuner': { sources: [{ name: 'IPTV', url: playlist, maxStreams: 5 }] } },
  });
  t.teardown(() => host.close());
  await hls;

  const relayUrls: string[] = [];
  for (const channel of await channels(host)) {
    const res = await rawGet(host.url, `/watch/live/${channel.id}?api_key=${host.adminToken}`, {}, 40_000);
    t.equal(res.status, 200, `${channel.name}: plays (${res.status} ${res.status === 200 ? '' : res.body.toString()})`);
    const job = host.host.jobs.get<{ pid: number }>(`live:${channel.id}`);
    const cmdline = readFileSync(`/proc/${job!.data.pid}/cmdline`, 'utf8').split('\0');
    t.notOk(cmdline.some((a) => a.includes(USER) || a.includes(PASS) || a.includes(Buffer.from(`${USER}:${PASS}`).toString('base64'))), `${channel.name}: no credential on ffmpeg's command line`);
    const input = cmdline[cmdline.indexOf('-i') + 1]!;
    t.match(input, new RegExp(`^${host.url}/api/m3u-tuner/relay\\?token=[\\w-]{32}$`), `${channel.name}: ffmpeg reads the relay`);
    relayUrls.push(input);
  }
  t.ok(iptv.requests.some((r) => r.startsWith(`/hls/${USER}/${PASS}/seg-`)), 'HLS segments came from the provider, at URLs made absolute by the relay');

  // The token works only from this machine, only while its stream runs.
  const open = relayUrls[0]!;
  const head = await fetch(open, { signal: AbortSignal.timeout(10_000) });
  t.equal(head.status, 200, 'the token of a running stream opens it from this machine');
  await head.body?.cancel();
  const remote = await host.inject({ method: 'GET', url: new URL(open).pathname + new URL(open).search, remoteAddress: '192.0.2.9' });
  t.equal(remote.statusCode, 401, 'not from another machine');
  t.equal((await fetch(`${host.url}/api/m3u-tuner/relay?token=${'A'.repeat(32)}`)).status, 401, 'not with a made-up token');
  for (const channel of await channels(host)) await host.host.jobs.get(`live:${channel.id}`)?.stop();
  const ended = await fetch(open);
  t.equal(ended.status, 401, 'not once the stream has stopped');
  t.strictSame(await ended.json(), { error: 'Invalid stream token' });

  const all = lines.join('\n');
  t.ok(all.includes('"msg":"ffmpeg spawned"'), 'ffmpeg spawns were logged');
  t.ok(all.includes('relay?token=***'), 'the relay requests were logged, redacted');
  for (const secret of [USER, PASS, ...relayUrls.map((u) => new URL(u).searchParams.get('token')!)]) {
    t.notOk(all.includes(secret), `no log line holds ${secret.slice(0, 4)}…`);
  }
});

t.test('the relay: the connect timeout is for the answer, never the body; playlists get absolute URIs', async (t) => {
  const { StreamRelay, absolutePlaylist } = await import('../../../plugins/m3u-tuner/relay.js');
  const upstream = http.createServer((req, res) => {
    if (req.url === '/silent') return; // never answers
    if (req.url === '/slow.ts') {
      // 20 chunks over 2 s: longer than the relay's 300 ms connect timeout.
      res.writeHead(200, { 'content-type': 'video/mp2t' });
      let n = 0;
      const timer = setInterval(() => {
        res.write(Buffer.alloc(1000, n));
        if (++n === 20) { clearInterval(timer); res.end(); }
      }, 100);
      res.on('close', () => clearInterval(timer));
      return;
    }
    if (req.url === '/list/index.m3u8') {
      res.writeHead(200, { 'content-type': 'application/vnd.apple.mpegurl' });
      res.end('#EXTM3U\n#EXT-X-KEY:METHOD=AES-128,URI="key.bin"\n#EXTINF:2,\nseg-1.ts\n#EXTINF:2,\n/abs/seg-2.ts\n#EXTINF:2,\nhttp://cdn.invalid/seg-3.ts\n');
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  t.teardown(() => { upstream.closeAllConnections(); upstream.close(); });
  const up = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;

  const { default: Fastify } = await import('fastify');
  const app = Fastify();
  let base: string | undefined;
  const relay = new StreamRelay(() => base, 300);
  relay.routes(app as never);
  await app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => app.close());
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const ended = new AbortController();
  t.teardown(() => ended.abort());

  const slow = await fetch(relay.open(`http://u:p@${new URL(up).host}/slow.ts`, {}, ended.signal).url);
  t.equal(slow.status, 200);
  t.equal(Buffer.from(await slow.arrayBuffer()).length, 20_000, 'a body longer than the connect timeout arrives whole');

  const silent = await fetch(relay.open(`${up}/silent`, {}, new AbortController().signal).url);
  t.equal(silent.status, 502, 'an upstream that never answers: 502 after the connect timeout');
  await silent.arrayBuffer();

  const listUrl = `http://u:p@${new URL(up).host}/list/index.m3u8`;
  const list = await fetch(relay.open(listUrl, {}, new AbortController().signal).url);
  t.strictSame((await list.text()).split('\n').filter((l) => l && !l.startsWith('#EXTINF')), [
    '#EXTM3U',
    `#EXT-X-KEY:METHOD=AES-128,URI="http://u:p@${new URL(up).host}/list/key.bin"`,
    `http://u:p@${new URL(up).host}/list/seg-1.ts`,
    `http://u:p@${new URL(up).host}/abs/seg-2.ts`,
    'http://cdn.invalid/seg-3.ts',
  ], 'URIs absolute; on the upstream\'s own origin with its credentials, elsewhere as they are');
  t.equal(absolutePlaylist('#EXTM3U\nseg.ts', 'http://h/a/x.m3u8', 'http://h/a/x.m3u8'), '#EXTM3U\nhttp://h/a/seg.ts');
  t.equal(relay.size, 3, 'three streams open');
  ended.abort();
  t.equal(relay.size, 2, 'a stream whose signal aborts is closed');
});
