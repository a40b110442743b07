/**
 * What m3u-tuner keeps of a hostile playlist: entries ffmpeg must not open
 * (file://, concat:, …) and entries whose headers would smuggle in headers of
 * their own (CR/LF from a `|` suffix, #EXTHTTP or #KODIPROP) are left out at
 * import with a warning each, counted in the import's result; logos that are
 * not http(s) or data: images are dropped. A channel stored before these checks
 * is refused when it is opened.
 */
import t from 'tap';
import { Writable } from 'node:stream';
import pino from 'pino';
import { createTestHost } from '../../../sdk/testing.js';
import { channels, getJson, refresh, tempDir, write } from '../live-tv/fixtures.js';

function capture() {
  const lines: string[] = [];
  const stream = new Writable({ write(chunk, _enc, cb) { lines.push(...String(chunk).split('\n').filter(Boolean)); cb(); } });
  return { logger: pino({ level: 'debug' }, stream), lines };
}

const PNG_DATA = 'data:image/png;base64,iVBORw0KGgo=';

t.test('entries with a scheme ffmpeg must not open or a header holding CR/LF are left out, with a warning each', async (t) => {
  const dir = await tempDir(t);
  const playlist = [
    '#EXTM3U',
    '#EXTINF:-1 tvg-id="good",Good',
    'http://streams.invalid/good.ts|User-Agent=Fine%20Player&Referer=http://portal.invalid/',
    '#EXTINF:-1 tvg-id="rtmp",Rtmp',
    'rtmp://streams.invalid/live/one',
    '#EXTINF:-1 tvg-id="udp",Multicast',
    'udp://@239.0.0.1:1234',
    '#EXTINF:-1 tvg-id="file",Passwords',
    'file:///etc/passwd',
    '#EXTINF:-1 tvg-id="concat",Concat',
    'concat:/etc/passwd|/etc/shadow',
    '#EXTINF:-1 tvg-id="subfile",Subfile',
    'subfile,,start,0,end,0,,:/etc/passwd',
    '#EXTINF:-1 tvg-id="ftp",Ftp',
    'ftp://files.invalid/a.ts',
    '#EXTINF:-1 tvg-id="data",Data',
    'data:video/mp2t;base64,AAAA',
    '#EXTINF:-1 tvg-id="crlf-suffix",Suffix',
    'http://streams.invalid/a.ts|User-Agent=ok%0d%0aX-Injected: yes',
    '#EXTINF:-1 tvg-id="crlf-exthttp",Exthttp',
    '#EXTHTTP:{"User-Agent":"ok\\r\\nX-Injected: yes"}',
    'http://streams.invalid/b.ts',
    '#EXTINF:-1 tvg-id="crlf-kodi",Kodi',
    '#KODIPROP:inputstream.adaptive.stream_headers=Referer=x%0aX-Injected:%20yes',
    'http://streams.invalid/c.ts',
    '#EXTINF:-1 tvg-id="bad-name",Name',
    'http://streams.invalid/d.ts|Bad Name=1',
    '',
  ].join('\n');
  const file = await write(dir, 'tv.m3u', playlist);
  const { logger, lines } = capture();
  const host = await createTestHost({
    logger,
    plugins: { 'live-tv': { initialImport: 'await' }, 'm3u-tuner': { sources: [{ name: 'IPTV', url: file }] } },
  });
  t.teardown(() => host.close());

  t.strictSame((await channels(host)).map((c) => c.name), ['Good', 'Rtmp', 'Multicast'], 'only the network streams with clean headers are channels');
  const warnings = lines.map((l) => JSON.parse(l)).filter((r) => r.event === 'tuner_warning').map((r) => r.warning as string);
  t.equal(warnings.length, 9, 'one warning per entry left out');
  for (const [name, why] of [
    ['Passwords', /scheme file: is not allowed/], ['Concat', /scheme concat: is not allowed/], ['Subfile', /scheme file: is not allowed/],
    ['Ftp', /scheme ftp: is not allowed/], ['Data', /scheme data: is not allowed/],
    ['Suffix', /header user-agent holds a line break/], ['Exthttp', /header user-agent holds a line break/],
    ['Kodi', /header referer holds a line break/], ['Name', /header name "bad name" is not an HTTP header name/],
  ] as const) {
    t.ok(warnings.some((w) => w.includes(`"${name}"`) && why.test(w)), `${name}: ${why}`);
  }
  t.ok(warnings.every((w) => /^line \d+: ".*": .*; skipped$/.test(w)), 'each names the line and the entry');

  const job = (await getJson(host, '/api/jobs')).body.jobs.find((j: { key: string }) => j.key === 'livetv:tuner:m3u:IPTV');
  t.match(job.message, /3 channels .*, 9 warnings$/, 'the import counts them');
  t.match((await refresh(host)).join('\n'), /tuner m3u:IPTV: 3 channels, 0 new, 0 gone, 9 warnings/, 'and so does guide refresh');
});

t.test('tvg-logo: http(s) URLs and data: images are kept, anything else dropped', async (t) => {
  const dir = await tempDir(t);
  const logos: [string, string, string | null][] = [
    ['Https', 'https://logos.invalid/a.png', 'https://logos.invalid/a.png'],
    ['Http', 'http://logos.invalid/b.png', 'http://logos.invalid/b.png'],
    ['Data', PNG_DATA, PNG_DATA],
    ['File', 'file:///etc/passwd', null],
    ['Script', 'javascript:alert(1)', null],
    ['Html', 'data:text/html,<script>alert(1)</script>', null],
    ['Relative', 'logos/c.png', null],
    ['Smb', '//server/share/d.png', null],
  ];
  const text = ['#EXTM3U', ...logos.flatMap(([name, logo], i) => [`#EXTINF:-1 tvg-chno="${i + 1}" tvg-logo="${logo}",${name}`, `http://streams.invalid/${i}.ts`])].join('\n');
  const file = await write(dir, 'tv.m3u', text);
  const host = await createTestHost({ plugins: { 'live-tv': { initialImport: 'await' }, 'm3u-tuner': { sources: [{ name: 'IPTV', url: file }] } } });
  t.teardown(() => host.close());
  const byName = Object.fromEntries((await channels(host)).map((c) => [c.name, c.logo]));
  for (const [name, , kept] of logos) t.equal(byName[name], kept, `${name}: ${kept ?? 'dropped'}`);
});

t.test('a stored channel with a bad header or scheme is refused when opened', async (t) => {
  const { streamInput } = await import('../../../plugins/m3u-tuner/index.js');
  const sources = { secretsOf: () => [] as string[] } as never;
  const relay = { open: () => { throw new Error('not relayed'); } } as never;
  const source = { secrets: [], userAgent: 'Antenna' };
  const signal = new AbortController().signal;
  const open = (data: Record<string, unknown>) => {
    try {
      return streamInput({ name: 'Old', data }, source, sources, relay, signal);
    } catch (err) {
      return err as { statusCode: number; message: string };
    }
  };
  t.match(open({ url: 'http://streams.invalid/a.ts', headers: { 'user-agent': 'ok\r\nX-Injected: yes' } }), { statusCode: 502, message: /Channel Old cannot be played: header user-agent holds a line break/ });
  t.match(open({ url: 'file:///etc/passwd' }), { statusCode: 502, message: /scheme file: is not allowed/ });
  t.strictSame(open({ url: 'http://streams.invalid/a.ts', headers: { referer: 'http://portal.invalid/' } }), {
    inputArgs: ['-user_agent', 'Antenna', '-headers', 'referer: http://portal.invalid/\r\n', '-reconnect', '1', '-reconnect_streamed', '1', '-reconnect_delay_max', '5', '-i', 'http://streams.invalid/a.ts'],
    secrets: [],
  }, 'a clean one opens as before');
});
