/**
 * The iptv-output plugin: its playlist and guide read back by Antenna's own
 * m3u-tuner and xmltv-guide in a second server give the same channels and
 * programmes; the guide follows the XMLTV DTD's element order; ?group, ?days,
 * gzip, bad keys and paths.
 */
import t from 'tap';
import { gunzipSync } from 'node:zlib';
import { SaxesParser } from 'saxes';
import { createTestHost } from '../../../sdk/testing.js';
import { expectError } from '../../helpers/http.js';
import { m3u, tempDir, write, xt } from '../live-tv/fixtures.js';

const HOUR = 3_600_000;

/** The DTD's content model of <programme> and <channel>, in order (xmltv.dtd). */
const PROGRAMME_ORDER = ['title', 'sub-title', 'desc', 'credits', 'date', 'category', 'keyword', 'language', 'orig-language', 'length', 'icon', 'url',
  'country', 'episode-num', 'video', 'audio', 'previously-shown', 'premiere', 'last-chance', 'new', 'subtitles', 'rating', 'star-rating', 'review', 'image'];
const CHANNEL_ORDER = ['display-name', 'icon', 'url'];

/** The child element names of every <programme> and <channel>, in document order. */
function childOrders(xml: string): { channels: string[][]; programmes: string[][] } {
  const parser = new SaxesParser();
  const out = { channels: [] as string[][], programmes: [] as string[][] };
  let depth = 0;
  let current: string[] | undefined;
  parser.on('opentag', (tag) => {
    depth++;
    if (depth === 2 && (tag.name === 'channel' || tag.name === 'programme')) out[tag.name === 'channel' ? 'channels' : 'programmes'].push((current = []));
    else if (depth === 3) current?.push(tag.name);
  });
  parser.on('closetag', () => { depth--; });
  parser.write(xml).close();
  return out;
}

const inOrder = (names: string[], order: string[]) => names.every((n, i) => order.indexOf(n) >= 0 && (i === 0 || order.indexOf(names[i - 1]!) <= order.indexOf(n)));

t.test('iptv-output', async (t) => {
  const dir = await tempDir(t, 'antenna-iptv-');
  const hour = Math.floor(Date.now() / HOUR) * HOUR;
  const playlist = await write(dir, 'tv.m3u', m3u([
    { name: 'News One', tvgId: 'news.example', chno: '4', group: 'News;Public', logo: 'http://logos.example/news.png', url: 'http://streams.invalid/news' },
    { name: 'Movies & More', tvgId: 'movies.example', chno: '7.2', group: 'Movies', logo: 'http://logos.example/movies.png', url: 'http://streams.invalid/movies' },
    { name: 'Same Id A', tvgId: 'dup.example', chno: '9', group: 'Kids', url: 'http://streams.invalid/a' },
    { name: 'Same Id B', tvgId: 'dup.example', chno: '10', group: 'Kids', url: 'http://streams.invalid/b' },
  ]));
  const p = (k: number, channel: string, inner: string) => `<programme start="${xt(new Date(hour + k * HOUR).toISOString())}" stop="${xt(new Date(hour + (k + 1) * HOUR).toISOString())}" channel="${channel}">${inner}</programme>`;
  const guide = await write(dir, 'guide.xml', `<?xml version="1.0" encoding="UTF-8"?>
<tv>
<channel id="news.example"><display-name>News One</display-name></channel>
<channel id="movies.example"><display-name>Movies &amp; More</display-name></channel>
${p(0, 'news.example', '<title>Morning &lt;Live&gt;</title><sub-title>Part 1</sub-title><desc>What happened.</desc><category>News</category><category>Current affairs</category><icon src="http://img.example/m.jpg"/><episode-num system="xmltv_ns">1.4.</episode-num><episode-num system="dd_progid">EP012345.0005</episode-num><new/>')}
${p(1, 'news.example', '<title>Noon</title><episode-num system="onscreen">S02E05</episode-num><previously-shown start="20200101000000 +0000"/>')}
${p(30 * 24, 'news.example', '<title>Far ahead</title>')}
${p(2, 'movies.example', '<title>A Film</title><desc>Two "friends" &amp; a dog.</desc><category>Film</category>')}
</tv>
`);
  const a = await createTestHost({
    listen: true,
    plugins: {
      'live-tv': { initialImport: 'await' },
      'm3u-tuner': { sources: [{ name: 'IPTV', url: playlist }] },
      'xmltv-guide': { sources: [{ url: guide }] },
      'iptv-output': {},
    },
  });
  t.teardown(() => a.close());
  const key: string = (await a.inject({ method: 'POST', url: '/api/admin/access-keys', headers: a.authHeaders, payload: { name: 'tivimate' } })).json().access_key.key;

  t.test('playlist', async (t) => {
    const res = await a.inject({ method: 'GET', url: `/iptv/${key}/channels.m3u`, headers: { host: 'tv.lan:8096' } });
    t.equal(res.statusCode, 200);
    t.match(res.headers['content-type'], /mpegurl/);
    const lines = res.body.trim().split('\n');
    t.equal(lines[0], `#EXTM3U url-tvg="http://tv.lan:8096/iptv/${key}/guide.xml.gz" x-tvg-url="http://tv.lan:8096/iptv/${key}/guide.xml.gz"`);
    t.equal(lines[1], '#EXTINF:-1 tvg-id="news.example" tvg-chno="4" tvg-name="News One" tvg-logo="http://logos.example/news.png" group-title="News;Public",News One');
    t.match(lines[2], new RegExp(`^http://tv\\.lan:8096/iptv/${key}/stream/\\d+\\.ts$`));
    t.equal(lines.filter((l) => l.startsWith('#EXTINF:-1 ')).length, 4);
    t.match(lines[5], /tvg-id="\d+\.antenna"/, 'a tvg-id two channels share is made unique');
    const kids = (await a.inject({ method: 'GET', url: `/iptv/${key}/channels.m3u?group=Kids` })).body;
    t.strictSame([...kids.matchAll(/,(.*)$/gm)].map((m) => m[1]), ['Same Id A', 'Same Id B'], '?group keeps one category');
  });

  t.test('guide: DTD order, days, gzip', async (t) => {
    const res = await a.inject({ method: 'GET', url: `/iptv/${key}/guide.xml` });
    t.equal(res.statusCode, 200);
    const xml = res.body;
    const { channels, programmes } = childOrders(xml);
    t.equal(channels.length, 4);
    t.strictSame(channels[0], ['display-name', 'display-name', 'icon']);
    for (const c of channels) t.ok(inOrder(c, CHANNEL_ORDER), `channel children in DTD order: ${c.join(',')}`);
    t.equal(programmes.length, 3, 'the programme 30 days ahead is past the 14 days written by default');
    for (const pr of programmes) t.ok(inOrder(pr, PROGRAMME_ORDER), `programme children in DTD order: ${pr.join(',')}`);
    t.strictSame(programmes[0], ['title', 'sub-title', 'desc', 'category', 'category', 'icon', 'episode-num', 'episode-num', 'new']);
    t.strictSame(programmes[1], ['title', 'episode-num', 'previously-shown']);
    t.match(xml, `<programme start="${xt(new Date(hour).toISOString())}" stop="${xt(new Date(hour + HOUR).toISOString())}" channel="news.example">`);
    t.match(xml, /start="\d{14} \+0000"/);
    t.match(xml, '<title>Morning &lt;Live&gt;</title>');
    t.match(xml, '<episode-num system="xmltv_ns">1.4.</episode-num>');
    t.match(xml, '<episode-num system="onscreen">S02E05</episode-num>');
    t.match(xml, '<episode-num system="dd_progid">EP012345.0005</episode-num>', 'every episode-num system the guide had');
    t.match(xml, '<previously-shown start="20200101000000 +0000"/>');
    const oneDay = (await a.inject({ method: 'GET', url: `/iptv/${key}/guide.xml?days=1` })).body;
    t.equal(childOrders(oneDay).programmes.length, 3);
    const gz = await a.inject({ method: 'GET', url: `/iptv/${key}/guide.xml.gz?days=31` });
    t.equal(gz.statusCode, 200);
    t.equal(childOrders(gunzipSync(gz.rawPayload).toString()).programmes.length, 4, '?days=31 reaches the far programme');
    expectError(t, await a.inject({ method: 'GET', url: `/iptv/${key}/guide.xml?days=0` }), 400);
    expectError(t, await a.inject({ method: 'GET', url: `/iptv/${key}/guide.xml?days=x` }), 400);
  });

  t.test('bad keys, channels and paths', async (t) => {
    expectError(t, await a.inject({ method: 'GET', url: '/iptv/channels.m3u' }), 401, /access key/);
    expectError(t, await a.inject({ method: 'GET', url: `/iptv/${'a'.repeat(32)}/guide.xml` }), 401, 'Invalid access key');
    expectError(t, await a.inject({ method: 'GET', url: `/iptv/${key}/channels.m3u`, headers: { host: 'a b' } }), 400);
    expectError(t, await a.inject({ method: 'GET', url: `/iptv/${key}/stream/99999.ts` }), 404, 'No channel 99999');
    expectError(t, await a.inject({ method: 'GET', url: `/iptv/${key}/stream/..%2f..%2fetc%2fpasswd` }), 404);
    expectError(t, await a.inject({ method: 'GET', url: `/iptv/${key}/stream/1.mp4` }), 404);
  });

  t.test('round trip through m3u-tuner and xmltv-guide', async (t) => {
    const b = await createTestHost({
      plugins: {
        'live-tv': { initialImport: 'await' },
        'm3u-tuner': { sources: [{ name: 'Antenna', url: `${a.url}/iptv/${key}/channels.m3u` }] },
        'xmltv-guide': { sources: [{ url: `${a.url}/iptv/${key}/guide.xml.gz` }] },
      },
    });
    t.teardown(() => b.close());
    const view = async (host: typeof a) => {
      const channels = (await host.inject({ method: 'GET', url: '/channels', headers: host.authHeaders })).json().channels;
      const programs = (await host.inject({ method: 'GET', url: '/programs?limit=-1', headers: host.authHeaders })).json().channels;
      return channels.map((c: any) => ({
        name: c.name, number: c.tvg_chno, logo: c.logo, category: c.category,
        programs: programs.find((g: any) => g.tvg_chno === c.tvg_chno).programs.map(({ id: _id, ...rest }: any) => rest),
      }));
    };
    const [before, after] = [await view(a), await view(b)];
    t.equal(after.length, 4);
    // The output covers 14 days: the programme 30 days ahead is the one left out.
    const within = before.map((c: any) => ({ ...c, programs: c.programs.filter((pr: any) => Date.parse(pr.start) < Date.now() + 14 * 24 * HOUR) }));
    t.strictSame(after, within, 'channels, numbers, logos, categories and programmes with their details come back the same');
    const bChannels = (await b.inject({ method: 'GET', url: '/channel/categories', headers: b.authHeaders })).json().categories.map((c: any) => c.name).sort();
    t.strictSame(bChannels, ['Kids', 'Movies', 'News', 'Public'], 'every group of a channel comes back');
    t.ok(after[0].programs[0].episode_num === '1.4.' && after[0].programs[1].episode_num === 'S02E05', 'episode numbers of both systems');
    t.match(after[0].programs[0], { is_new: true, is_repeat: false, series_key: /^dd:/ }, 'new, and the series from dd_progid, come back');
    t.match(after[0].programs[1], { is_new: false, is_repeat: true }, 'a repeat comes back a repeat');
  });
});
