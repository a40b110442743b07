/**
 * A source's credentials, in any of the three forms providers use
 * (`user:pass@`, the query, the path), never reach a log line, the output of
 * `antenna guide refresh`, GET /api/jobs, GET /api/livetv/sources or an error
 * body: playlists and guides that fail every way they can (HTTP errors, a
 * refused connection, corrupt gzip, not a playlist, too large), a playlist
 * whose refused entries are named after their URL, and a channel whose
 * upstream fails while a user watches it.
 */
import t from 'tap';
import { Writable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import pino from 'pino';
import { createTestHost } from '../../../sdk/testing.js';
import { bearer, closedPort, failingRefresh, getJson, serve } from './fixtures.js';

const USER = 'cr3duser';
const PASS = 'cr3dpass';
const FORMS = [USER, PASS, Buffer.from(`${USER}:${PASS}`).toString('base64'), encodeURIComponent(`${USER}:${PASS}`)];

t.test('credentials in no log line, command output, job or error body', async (t) => {
  const server = await serve(t);
  const dead = await closedPort();
  const host127 = new URL(server.base).host;
  // Playlists: each form of credentials, each kind of failure; one that imports, with entries that are refused.
  const playlists = [
    { name: 'Userinfo404', url: `http://${USER}:${PASS}@${host127}/missing.m3u` },
    { name: 'Query500', url: `${server.base}/get.php?username=${USER}&password=${PASS}&type=m3u_plus` },
    { name: 'PathRefused', url: `http://127.0.0.1:${dead}/live/${USER}/${PASS}/list.m3u` },
    { name: 'ShortGzip', url: `${server.base}/${USER}/${PASS}/7` },
    { name: 'Binary', url: `${server.base}/binary.php?user=${USER}&pass=${PASS}` },
    { name: 'Good', url: `${server.base}/good.php?username=${USER}&password=${PASS}` },
  ];
  server.routes.set('/get.php', (_req, res) => { res.writeHead(500).end('internal'); });
  server.routes.set(`/${USER}/${PASS}/7`, { body: gzipSync('#EXTM3U\n').subarray(0, 12), type: 'application/gzip' });
  server.routes.set('/binary.php', { body: Buffer.from([0x47, 0, 0, 0, 0x47]), type: 'video/mp2t' });
  server.routes.set('/good.php', {
    type: 'audio/x-mpegurl',
    body: [
      '#EXTM3U',
      `#EXTINF:-1 tvg-id="a",Alpha`,
      `${server.base}/live/${USER}/${PASS}/1.ts`,
      // Refused entries without a name: named after their URL, which the warning must not show.
      '#EXTINF:-1 tvg-id="b",',
      `file:///live/${USER}/${PASS}/2.ts`,
      '#EXTINF:-1 tvg-id="c",',
      `${server.base}/play/${USER}/${PASS}/3.ts|User-Agent=a%0d%0aX: y`,
      '',
    ].join('\n'),
  });
  const guides = [
    { name: 'GuideUserinfo', url: `http://${USER}:${PASS}@${host127}/guide-missing.xml` },
    { url: `${server.base}/xmltv.php?username=${USER}&password=${PASS}` },
    { url: `http://127.0.0.1:${dead}/live/${USER}/${PASS}/guide.xml` },
    { url: `${server.base}/${USER}/${PASS}/8` },
  ];
  server.routes.set('/xmltv.php', (_req, res) => { res.writeHead(403).end('no'); });
  server.routes.set(`/${USER}/${PASS}/8`, { body: gzipSync(Buffer.alloc(4 * 1024 * 1024, 0x20)), type: 'application/gzip' });

  const lines: string[] = [];
  const logger = pino({ level: 'trace' }, new Writable({ write(c, _e, cb) { lines.push(...String(c).split('\n').filter(Boolean)); cb(); } }));
  const host = await createTestHost({
    listen: true, logger,
    plugins: {
      'live-tv': { initialImport: 'await', readyTimeout: '20s' },
      'm3u-tuner': { sources: playlists },
      'xmltv-guide': { sources: guides, maxBytes: 1024 * 1024 },
    },
  });
  t.teardown(() => host.close());
  await host.createUser('viewer', 'viewer-password');
  const viewer = await host.login('viewer', 'viewer-password');

  const seen: [string, string][] = [];
  const { error, lines: output } = await failingRefresh(host);
  seen.push(['refresh error', String(error)], ['refresh output', output.join('\n')]);
  t.match(output.join('\n'), /tuner m3u:Good: 1 channels, 0 new, 0 gone, 2 warnings/, 'the good playlist imports, two entries refused');
  t.equal(output.filter((l) => / FAILED /.test(l)).length, 9, 'every broken source is reported');
  seen.push(['jobs', JSON.stringify((await getJson(host, '/api/jobs')).body)]);
  seen.push(['sources', JSON.stringify((await getJson(host, '/api/livetv/sources')).body)]);

  // A user watches the channel: its upstream is not there (404), through the relay.
  const channel = (await getJson(host, '/channels', viewer)).body.channels[0];
  const watch = await host.inject({ method: 'GET', url: `/watch/live/${channel.id}`, headers: bearer(viewer) });
  t.ok(watch.statusCode >= 500, `watching fails (${watch.statusCode})`);
  seen.push(['watch error body', watch.body]);
  const relay = await host.inject({ method: 'GET', url: '/api/m3u-tuner/relay?token=nope' });
  seen.push(['relay error body', relay.body]);
  await host.host.jobs.get(`live:${channel.id}`)?.stop();
  seen.push(['logs', lines.join('\n')]);

  t.ok(lines.some((l) => l.includes('import_failed')), 'the failures were logged');
  t.ok(lines.some((l) => l.includes('tuner_warning')), 'the refused entries were logged');
  for (const [where, text] of seen) {
    for (const form of FORMS) t.notOk(text.includes(form), `${where}: no ${form}`);
  }
});
