/**
 * A guide gzip bomb: a small .xml.gz that inflates far past xmltv-guide's
 * maxBytes fails its import like the other guide limits (the previous guide
 * stays, the command says so) instead of burning a core while it inflates.
 */
import t from 'tap';
import { gzipSync } from 'node:zlib';
import { createTestHost } from '../../../sdk/testing.js';
import { failingRefresh, guide, m3u, refresh, serve, xmltv, xt } from '../live-tv/fixtures.js';

const MiB = 1024 * 1024;

t.test('a guide larger than maxBytes once decompressed fails its import; the previous guide stays', async (t) => {
  const server = await serve(t);
  server.routes.set('/tv.m3u', { body: m3u([{ name: 'News', tvgId: 'news.tv', chno: '1', url: 'http://streams.invalid/news' }]) });
  const good = xmltv([{ id: 'news.tv', names: ['News'] }], [
    { channel: 'news.tv', start: xt('2024-05-01T18:00:00Z'), stop: xt('2024-05-01T19:00:00Z'), title: 'Evening news' },
  ]);
  server.routes.set('/guide.xml.gz', { body: gzipSync(good), type: 'application/gzip' });
  const host = await createTestHost({
    plugins: {
      'live-tv': { initialImport: 'await' },
      'm3u-tuner': { sources: [{ name: 'IPTV', url: `${server.base}/tv.m3u` }] },
      'xmltv-guide': { sources: [{ name: 'Main', url: `${server.base}/guide.xml.gz` }], maxAge: '100000d', maxBytes: 4 * MiB },
    },
  });
  t.teardown(() => host.close());
  const before = await guide(host);
  t.strictSame(before.channels[0]!.programs.map((p) => p.title), ['Evening news']);

  // 64 MiB of whitespace inside a valid document: 64 KB gzipped.
  const head = good.slice(0, good.indexOf('</tv>'));
  const bomb = gzipSync(Buffer.concat([Buffer.from(head), Buffer.alloc(64 * MiB, 0x20), Buffer.from('</tv>\n')]), { level: 9 });
  t.ok(bomb.length < 256 * 1024, `the bomb is ${Math.round(bomb.length / 1024)} KB`);
  server.routes.set('/guide.xml.gz', { body: bomb, type: 'application/gzip' });
  const { error, lines } = await failingRefresh(host);
  t.match(error, /some sources failed/, 'the refresh fails');
  t.match(lines.join('\n'), /guide xmltv:Main: FAILED .*larger than 4194304 bytes \(previous guide kept\)/, 'naming the source and the limit');
  t.strictSame(await guide(host), before, 'the previous guide is intact');

  // Within the limit, the same kind of file imports.
  const fits = gzipSync(Buffer.concat([Buffer.from(head), Buffer.alloc(2 * MiB, 0x20), Buffer.from('</tv>\n')]));
  server.routes.set('/guide.xml.gz', { body: fits, type: 'application/gzip' });
  t.match((await refresh(host)).join('\n'), /guide xmltv:Main: 1 programmes/, 'a guide under the limit imports');
});
