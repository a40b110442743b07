import t from 'tap';
import childProcess from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { M3uParser, MAX_LINE_BYTES, parseM3u, type M3uEntry, type M3uPlaylist } from '../../../plugins/m3u-tuner/m3u-parser.js';
import { realM3u } from '../../helpers/realdata.js';

const read = (name: string): Buffer => readFileSync(realM3u(name));
const parseReal = (name: string, baseUrl?: string): M3uPlaylist => parseM3u(read(name), baseUrl ? { baseUrl } : {});
const byName = (p: M3uPlaylist, name: string): M3uEntry => {
  const e = p.entries.find((x) => x.name === name);
  if (!e) throw new Error(`no entry named ${JSON.stringify(name)}; have ${p.entries.map((x) => x.name).join(' | ')}`);
  return e;
};
const count = (p: M3uPlaylist, f: (e: M3uEntry) => boolean): number => p.entries.filter(f).length;
/** #EXTINF lines in the raw file: every one must end up as an entry or as a skip. */
const extinfLines = (buf: Buffer): number => (buf.toString('utf8').match(/^\s*#EXTINF/gim) ?? []).length;

// Every real playlist, with what SOURCES.md (and the files) say it holds. A new file in
// shared/realdata/m3u without a row here fails the coverage test below.
const EXPECTED: Record<string, { entries: number; skipped: number; guideUrls: number; baseUrl?: string }> = {
  'Free-TV--playlist.m3u8': { entries: 2059 - 9, skipped: 9, guideUrls: 101 },
  'jnk22--kodi.m3u': { entries: 677, skipped: 0, guideUrls: 0 },
  'jnk22--dash.m3u': { entries: 42, skipped: 0, guideUrls: 0 },
  'jnk22--pipe.m3u': { entries: 0, skipped: 677, guideUrls: 0 },
  'freearhey--base.m3u': { entries: 6, skipped: 0, guideUrls: 1, baseUrl: 'http://lists.example.com/iptv/base.m3u' },
  'freearhey--comment.m3u': { entries: 1, skipped: 0, guideUrls: 0 },
  'freearhey--duplicate.m3u': { entries: 2, skipped: 0, guideUrls: 1 },
  'freearhey--kodi.m3u': { entries: 1, skipped: 0, guideUrls: 1 },
  'freearhey--pipe.m3u': { entries: 2, skipped: 0, guideUrls: 0 },
  'freearhey--url_tvg.m3u': { entries: 1, skipped: 0, guideUrls: 1 },
  'freearhey--user_agent.m3u': { entries: 1, skipped: 0, guideUrls: 0 },
  'freearhey--vlcopt.m3u': { entries: 1, skipped: 0, guideUrls: 0 },
  'iptv-org--index.m3u': { entries: 11, skipped: 0, guideUrls: 0 },
  'iptv-org--unsorted.m3u': { entries: 4, skipped: 0, guideUrls: 0 },
  'caducosilva--cat-news.m3u': { entries: 1005, skipped: 0, guideUrls: 2 },
  'Threadfin--test_list_1.m3u': { entries: 4, skipped: 0, guideUrls: 2 },
};

t.test('every real playlist: counts, and invariants on every entry', async (t) => {
  const files = readdirSync(path.dirname(realM3u('x'))).sort();
  t.strictSame(files, Object.keys(EXPECTED).sort(), 'every file in realdata/m3u has expectations');
  for (const file of files) {
    const exp = EXPECTED[file];
    const buf = read(file);
    const p = parseM3u(buf, exp.baseUrl ? { baseUrl: exp.baseUrl } : {});
    t.equal(p.entries.length, exp.entries, `${file}: entries`);
    t.equal(p.skipped, exp.skipped, `${file}: skipped`);
    t.equal(p.guideUrls.length, exp.guideUrls, `${file}: guide URLs`);
    t.equal(p.entries.length + p.skipped, extinfLines(buf), `${file}: every #EXTINF is an entry or a skip`);
    t.equal(p.warningCount, p.skipped, `${file}: one warning per skipped entry, none otherwise`);
    const bad = p.entries.filter(
      (e) =>
        !/^[a-z][a-z0-9+.-]*:\/\/\S/i.test(e.url) || // a real URL (relative ones resolved)
        /^pipe:/i.test(e.url) ||
        e.url.includes('|') || // Kodi header suffix removed
        /[\r\n]/.test(e.url + e.name) ||
        e.name !== e.name.trim() ||
        e.name === '' ||
        e.line < 1,
    );
    t.strictSame(bad.map((e) => `${e.line}: ${e.name} ${e.url}`), [], `${file}: url/name/line well-formed`);
  }
});

t.test('Free-TV: 2059 entries, 9 [NO PUBLIC STREAM] placeholders skipped, ~100 guide URLs', async (t) => {
  const p = parseReal('Free-TV--playlist.m3u8');
  t.equal(p.entries.length, 2050);
  t.equal(p.warnings.length, 9);
  t.equal(p.warnings.filter((w) => w.includes('[NO PUBLIC STREAM]')).length, 9, 'each warning names the placeholder');
  t.match(p.warnings[0], /^line 2168: #EXTINF "NHK BSP4K"/);
  t.equal(count(p, (e) => e.url.includes('NO PUBLIC')), 0);
  t.equal(count(p, (e) => e.name === 'NHK BSP4K'), 0, 'the placeholder entry itself is gone');

  t.equal(p.guideUrls[0], 'https://epgshare01.online/epgshare01/epg_ripper_AL1.xml.gz', 'comma+space list split and trimmed');
  t.equal(p.guideUrls.at(-1), 'https://epgshare01.online/epgshare01/locomotiontv.xml.gz');
  t.equal(p.guideUrls.filter((u) => /^https:\/\/\S+\.xml\.gz$/.test(u)).length, 101);
  t.equal(p.header['x-tvg-url'].split(',').length, 101, 'raw header attribute kept');

  t.equal(count(p, (e) => e.number !== undefined), 1500 - 9, 'tvg-chno on 1500 entries, 9 of them placeholders');
  t.strictSame(p.entries.filter((e) => e.number === '22.1').map((e) => e.name), ['Encuentro Ⓨ Ⓖ'], 'decimal channel number');
  t.equal(count(p, (e) => !('tvg-id' in e.attrs)), 482, 'entries without tvg-id');
  t.equal(count(p, (e) => e.attrs['tvg-id'] === ''), 42, 'tvg-id="" kept in attrs');
  t.equal(count(p, (e) => e.attrs['tvg-id'] === '' && e.tvgId === undefined), 42, 'but tvgId is undefined for it');
  t.equal(count(p, (e) => /^rtmp:\/\//.test(e.url)), 3, 'rtmp kept as-is');
  t.strictSame(p.entries.filter((e) => e.url.startsWith('rtsp:')).map((e) => e.url), ['rtsp://185.50.56.16:554/neontelvizija']);
  t.equal(count(p, (e) => /\.mpd(\?|$)/.test(e.url)), 22, 'DASH URLs');
  t.equal(count(p, (e) => /[^\x00-\x7f]/.test(e.name)), 794, 'non-ASCII names decoded as UTF-8');

  const first = p.entries[0];
  t.strictSame(
    { name: first.name, tvgId: first.tvgId, tvgName: first.tvgName, groups: first.groups, country: first.attrs['tvg-country'], line: first.line },
    { name: 'Kanali 7 Ⓢ', tvgId: 'Kanali7.al', tvgName: 'Kanali 7', groups: ['Albania'], country: 'AL', line: 2 },
  );
});

t.test('jnk22 kodi: 677 entries, radio attr, plugin:// URLs', async (t) => {
  const p = parseReal('jnk22--kodi.m3u');
  t.equal(p.entries.length, 677);
  t.equal(count(p, (e) => e.attrs.radio === 'true'), 362, 'radio="true" kept in attrs');
  t.equal(count(p, (e) => !('tvg-id' in e.attrs)), 362);
  t.equal(count(p, (e) => e.attrs['tvg-id'] === ''), 109);
  t.strictSame(
    p.entries.filter((e) => e.url.startsWith('plugin://')).map((e) => e.name),
    ['RiC', 'pearl.tv', 'Sky News'],
    'plugin:// kept as-is',
  );
  t.equal(byName(p, 'Das Erste HD').url, 'https://daserste-live.ard-mcdn.de/daserste/live/hls/de/master.m3u8');
  t.equal(p.entries.at(-1)?.name, 'Radio 2000');
  t.equal(p.entries.at(-1)?.groups[0], 'Italien und Südtirol');
});

t.test('jnk22 pipe: all 677 pipe:// entries skipped, nothing executed', async (t) => {
  const cp = childProcess as unknown as Record<string, unknown>;
  const names = ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'];
  const saved = names.map((n) => cp[n]);
  const calls: string[] = [];
  for (const n of names) cp[n] = (...args: unknown[]) => { calls.push(`${n} ${String(args[0])}`); throw new Error('no processes'); };
  let p: M3uPlaylist;
  try {
    p = parseReal('jnk22--pipe.m3u');
  } finally {
    names.forEach((n, i) => { cp[n] = saved[i]; });
  }
  t.strictSame(calls, [], 'no child process started');
  t.equal(p.entries.length, 0);
  t.equal(p.skipped, 677);
  t.equal(p.warningCount, 677);
  t.equal(p.warnings.length, 100, 'warnings capped at 100');
  t.equal(p.warnings.filter((w) => w.includes('pipe://')).length, 100);
  t.match(p.warnings[0], /^line 2: #EXTINF "Das Erste HD" has a pipe:\/\/ URL/);
});

t.test('jnk22 dash: #KODIPROP between #EXTINF and URL', async (t) => {
  const p = parseReal('jnk22--dash.m3u');
  t.equal(p.entries.length, 42);
  const das = byName(p, 'Das Erste HD');
  t.strictSame(das.kodiProps, { inputstreamaddon: 'inputstream.adaptive', 'inputstream.adaptive.manifest_type': 'mpd' });
  t.equal(das.url, 'http://daserste-live.ard-mcdn.de/daserste/replay/dash/de/manifest.mpd');
  t.equal(count(p, (e) => e.kodiProps['inputstream.adaptive.manifest_type'] === 'mpd'), 20);
  t.equal(count(p, (e) => Object.keys(e.kodiProps).length === 0), 22, 'props do not leak into the following entries');
});

t.test('freearhey base.m3u torture test, with a baseUrl', async (t) => {
  const p = parseReal('freearhey--base.m3u', 'http://lists.example.com/iptv/base.m3u');
  t.strictSame(p.header, { 'x-tvg-url': 'http://195.154.221.171/epg/guidealbania.xml.gz' }, 'second #EXTM3U mid-file ignored');
  t.strictSame(p.guideUrls, ['http://195.154.221.171/epg/guidealbania.xml.gz']);
  t.strictSame(p.entries.map((e) => e.name), [
    'Channel 1 (Tested)',
    'Channel 2',
    '=>(★ TURKİYE ★)<=',
    'TRT 1 HD',
    'name,with comma',
    'The Good, the Bad and the Ugly',
  ]);
  t.equal(count(p, (e) => e.name.includes('sudan') || e.url.includes('sudan')), 0, 'separator line is not an entry');

  const ch1 = p.entries[0];
  t.equal(ch1.tvgId, 'CH1', 'indented line, tvg-ID read as tvg-id');
  t.equal(ch1.attrs['tvg-id'], 'CH1');
  t.notOk('tvg-ID' in ch1.attrs, 'keys lower-cased');
  t.equal(ch1.tvgLogo, 'http://www.rtvchannel.com.au/wp-content/uploads/2017/04/xshow_08.png,Mic_.2KNN9OHw1p.png.pagespeed.ce.2KNN9OHw1p.png', 'comma inside a quoted logo');
  t.equal(ch1.attrs['tvg-rec'], '3');
  t.strictSame(ch1.groups, ['Только Android'], '#EXTGRP overrides group-title');
  t.equal(ch1.attrs['group-title'], 'Music', 'group-title still in attrs');
  t.equal(ch1.referrer, 'http://player.livesports.pw/la2/', '#EXTVLCOPT http-referrer');
  t.equal(ch1.userAgent, 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_14_5) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/76.0.3809.25 Safari/537.36');
  t.strictSame(Object.keys(ch1.headers).sort(), ['referer', 'user-agent']);
  t.equal(ch1.url, 'http://livestream.htp.tv/hls-live/livepkgr/_definst_/H1/H1_HQ.m3u8');
  t.equal(ch1.line, 2);

  const ch2 = p.entries[1];
  t.equal(ch2.duration, 16);
  t.equal(ch2.url, 'http://lists.example.com/iptv/stream/chunklist.m3u8', 'relative URL resolved against baseUrl');
  t.strictSame(ch2.headers, {}, 'EXTVLCOPT of entry 1 not carried over');

  const turk = p.entries[2];
  t.equal(turk.url, 'http://wodpro24.tr4545.in:8080/expred/peru8k.mp4', 'blank line between #EXTINF and URL');
  t.equal(turk.duration, 1);

  const trt = byName(p, 'TRT 1 HD');
  t.equal(trt.attrs['tvg-shift'], '-4.5');
  t.equal(trt.attrs.catchup, 'shift');
  t.equal(trt.attrs['catchup-days'], '3');
  t.equal(trt.attrs['catchup-source'], 'https://m3u-server/hls-apple-s4-c494-abcdef.m3u8?utc=325234234&lutc=3123125324');
  t.equal(trt.attrs.lang, 'tur');
  t.match(trt.url, /^https:\/\/video-rvd-lmg\.rnp\.br\/live\/ocp\(t\(FfZfeFx3QG4\).*'a\(vuk2sg\).*\/index\.m3u8$/, 'parentheses and quotes kept');

  t.equal(byName(p, 'name,with comma').duration, -1, '"#EXTINF: -1" with a space');
  const ugly = byName(p, 'The Good, the Bad and the Ugly');
  t.equal(ugly.tvgName, 'The Good, the Bad and the Ugly', 'comma in quoted tvg-name');
  t.equal(ugly.url, 'http://lists.example.com/iptv/movie.m3u8');
});

t.test('freearhey base.m3u without a baseUrl: relative URLs are not URLs', async (t) => {
  const p = parseReal('freearhey--base.m3u');
  t.strictSame(p.entries.map((e) => e.name), ['Channel 1 (Tested)', '=>(★ TURKİYE ★)<=', 'TRT 1 HD', 'name,with comma']);
  t.equal(p.skipped, 2);
  t.match(p.warnings[0], /^line 7: #EXTINF "Channel 2" has no stream URL.*"stream\/chunklist\.m3u8" is not a URL/);
  t.match(p.warnings[1], /^line 19: #EXTINF "The Good, the Bad and the Ugly" has no stream URL before the end of the file/);
});

t.test('small freearhey fixtures', async (t) => {
  const comment = parseReal('freearhey--comment.m3u');
  t.strictSame(
    comment.entries.map((e) => [e.name, e.url]),
    [['tamazight tv8', 'http://cdn-hls.globecast.tv/live/ramdisk/tamazight_tv8_snrt/hls_snrt/index.m3u8']],
    'separator line before #EXTINF ignored',
  );

  const dup = parseReal('freearhey--duplicate.m3u');
  t.strictSame(dup.entries[0], { ...dup.entries[1], line: 2 }, 'duplicates kept, identical but for the line');
  t.equal(dup.entries[1].line, 4);
  t.equal(dup.entries[0].userAgent, 'Mozilla/5.0 (iPhone; CPU iPhone OS 12_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148', 'user-agent attribute');
  t.strictSame(dup.guideUrls, ['http://195.154.221.171/epg/guidealbania.xml.gz'], 'url-tvg header');

  const kodi = parseReal('freearhey--kodi.m3u');
  t.equal(kodi.entries.length, 1);
  const rtp = kodi.entries[0];
  t.equal(rtp.name, 'RTP 1');
  t.equal(rtp.url, 'https://streaming-live.rtp.pt/liverepeater/rtpClean1HD.smil/playlist.m3u8', '|user-agent= suffix removed');
  t.strictSame(rtp.headers, { 'user-agent': 'RTP Play/2.0.26 (Linux;Android 11) ExoPlayerLib/2.11.8' });
  t.strictSame(rtp.kodiProps, { inputstream: 'inputstream.adaptive', 'inputstream.adaptive.manifest_type': 'hls' });
  t.strictSame(rtp.groups, ['TV']);
  t.equal(rtp.tvgId, 'rtp1hd.tv.vodafone.pt');
  t.strictSame(kodi.guideUrls, ['https://github.com/LITUATUI/M3UPT/raw/main/epg/epg-vodafone.xml.gz']);

  const pipe = parseReal('freearhey--pipe.m3u');
  t.strictSame(pipe.entries.map((e) => e.duration), [17, 555], 'positive durations');
  t.strictSame(pipe.entries[0].headers, {
    'user-agent': 'Mozilla/5.0 (Windows NT 6.1; WOW64; Trident/7.0; AS; rv:11.0) like Gecko',
    referer: 'http://180upload.abc/embed-uaqmgcckhpcl.html',
  }, '|User-Agent=…&Referer=… suffix');
  t.equal(pipe.entries[0].url, 'http://192.54.104.122:8080/d/abcdef/video.mp4');
  t.equal(pipe.entries[1].referrer, 'http://test.abc/blank.html', '|Referer= suffix');
  t.equal(pipe.entries[1].userAgent, 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_14_5) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/76.0.3809.25 Safari/537.36', 'EXTVLCOPT kept beside the suffix');
  t.equal(pipe.entries[1].url, 'http://my-news-stream:8999/d/letsplay/video.mp4');

  const urlTvg = parseReal('freearhey--url_tvg.m3u');
  t.strictSame(urlTvg.header, { 'url-tvg': 'http://195.154.221.171/epg/guidealbania.xml.gz' });
  t.strictSame(urlTvg.guideUrls, ['http://195.154.221.171/epg/guidealbania.xml.gz']);

  const ua = parseReal('freearhey--user_agent.m3u');
  t.equal(ua.entries[0].headers['user-agent'], 'Mozilla/5.0 (iPhone; CPU iPhone OS 12_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148');
  t.strictSame(ua.entries[0].groups, ['Entertainment']);

  const vlc = parseReal('freearhey--vlcopt.m3u');
  const test = vlc.entries[0];
  t.equal(test.duration, 0, '#EXTINF:0');
  t.strictSame(test.groups, ['News'], '#EXTGRP overrides group-title');
  t.equal(test.attrs['group-title'], 'Entertainment');
  t.equal(test.userAgent, 'Dalvik/2.1.0 (Linux; U; Android 6.0.1;)', 'quotes around an EXTVLCOPT value stripped');
  t.equal(test.tvgName, 'TestChannel');
});

t.test('iptv-org index.m3u: CRLF, quoted |Referer="…"|User-Agent="…"|Origin="…" suffix, multi-group', async (t) => {
  const buf = read('iptv-org--index.m3u');
  t.ok(buf.includes('\r\n'), 'fixture really is CRLF');
  const p = parseM3u(buf);
  t.equal(p.entries.length, 11);
  t.equal(count(p, (e) => /\r/.test(e.url + e.name + Object.values(e.attrs).join(''))), 0, 'no \\r left anywhere');

  const andorra = byName(p, 'Andorra TV (720p) [Not 24/7]');
  t.equal(andorra.url, 'http://1111296894.rsc.cdn77.org/LS-ATL-54548-6/index2.m3u8', 'suffix removed');
  t.strictSame(andorra.headers, {
    'user-agent': 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_7 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1',
    referer: 'https://referer.xyz/',
    origin: 'https://origin.xyz',
  }, 'URL suffix wins over EXTVLCOPT and attributes');
  t.equal(andorra.attrs['http-referrer'], 'http://imn.iq', 'http-referrer attribute kept in attrs');
  t.equal(andorra.tvgId, undefined, 'tvg-id="" means none');
  t.equal(andorra.tvgLogo, undefined, 'tvg-logo="" means none');

  t.strictSame(byName(p, 'BBC News HD').groups, ['General', 'News'], '"General;News" split');
  t.equal(byName(p, 'ATV HD').tvgId, 'AndorraTV.ad@HD', 'feed-suffixed id');
  t.equal(byName(p, 'ЛДПР ТВ (1080p)').url, 'http://46.46.143.222:1935/live/mp4:ldpr.stream/blocked.m3u8', 'Cyrillic name');
  t.strictSame(byName(p, 'Daawah TV').headers, {}, 'no headers for a plain entry');
});

t.test('iptv-org unsorted.m3u: EXTVLCOPT + KODIPROP + suffix on one entry', async (t) => {
  const p = parseReal('iptv-org--unsorted.m3u');
  const a = byName(p, 'Andorra TV (720p) [Not 24/7]');
  t.strictSame(Object.keys(a.kodiProps), [
    'inputstream',
    'inputstream.adaptive.manifest_type',
    'inputstream.adaptive.license_type',
    'inputstream.adaptive.license_key',
  ]);
  t.match(a.kodiProps['inputstream.adaptive.license_key'], /^https:\/\/drm\.ors\.at\/acquire-license\/widevine\?BrandGuid=.*\|Content-Type=application\/octet-stream\|R\{SSM\}\|$/, 'KODIPROP value kept whole, pipes and all');
  t.equal(a.referrer, 'https://referer.xyz/');
  t.equal(a.headers.origin, 'https://origin.xyz');
  t.equal(a.url, 'http://1111296894.rsc.cdn77.org/LS-ATL-54548-6/index2.m3u8');
  t.strictSame(byName(p, 'Visit-X TV').kodiProps, {}, 'KODIPROP not shared with other entries');
});

t.test('caducosilva cat-news: 1005 entries, multi-groups, header attributes', async (t) => {
  const p = parseReal('caducosilva--cat-news.m3u');
  t.equal(p.entries.length, 1005);
  t.strictSame(p.guideUrls, ['https://raw.githubusercontent.com/StrangeDrVN/epg/public/guide.xml.gz', 'https://worker-9dd4.onrender.com/guide.xml.gz']);
  t.equal(count(p, (e) => e.groups.length > 1), 89, 'multi-groups like "News;Public"');
  t.equal(count(p, (e) => e.groups.length === 2 && e.groups[0] === 'News' && e.groups[1] === 'Public'), 8);
  t.equal(count(p, (e) => e.attrs['http-referrer'] !== undefined), 29);
  t.equal(count(p, (e) => e.attrs['http-user-agent'] !== undefined), 46);
  t.equal(count(p, (e) => e.userAgent !== undefined), 46);
  t.equal(count(p, (e) => /\.mpd(\?|$)/.test(e.url)), 13);
  t.equal(count(p, (e) => (e.userAgent ?? '').includes('#EXTVLCOPT')), 0, 'doubled "#EXTVLCOPT:http-user-agent=" prefix removed');
  t.equal(byName(p, 'Public First (576p)').userAgent, 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/147.0.0.0 Safari/537.36');
  t.equal(byName(p, '2GB Sydney (1080p)').tvgId, '2GB.au@SD');
});

t.test('Threadfin: #123 comment between #EXTINF and URL, tvg-chno, both guide headers', async (t) => {
  const p = parseReal('Threadfin--test_list_1.m3u');
  t.strictSame(p.guideUrls, ['http://example.com/file.xml', 'http://example.com/threadfin.xml'], 'url-tvg and x-tvg-url, in header order');
  t.strictSame(
    p.entries.map((e) => [e.name, e.number ?? null, e.duration, e.url]),
    [
      ['Channel 1', '1', 0, 'http://example.com/stream/1'],
      ['Channel 2', '2', 0, 'http://example.com/stream/2'],
      ['Sample artist - Sample title', null, 123, 'http://example.com/stream/3'],
      ['Example Artist - Example title', null, 321, 'http://example.com/stream/4'],
    ],
    'leading space in name trimmed, no-attribute entries kept',
  );
  t.equal(p.entries[0].attrs.channelid, '1', 'channelID lower-cased');
  t.equal(p.entries[1].line, 5);
});

// ---- synthetic edge cases -------------------------------------------------

t.test('empty and garbage input: zero entries, no throw', async (t) => {
  for (const input of ['', Buffer.alloc(0), '\n\n   \r\n', '\uFEFF']) {
    const p = parseM3u(input);
    t.strictSame([p.entries.length, p.skipped, p.warningCount, p.guideUrls.length], [0, 0, 0, 0]);
  }
  // Deterministic pseudo-random bytes (xorshift), including NULs, lone '#', '"' and '|'.
  let x = 0x9e3779b9;
  const bytes = Buffer.alloc(256 * 1024);
  for (let i = 0; i < bytes.length; i++) {
    x ^= x << 13; x ^= x >>> 17; x ^= x << 5;
    bytes[i] = x & 0xff;
  }
  const p = parseM3u(bytes);
  t.equal(p.entries.length, 0, 'random bytes: no entries');
  const q = parseM3u(Buffer.concat([Buffer.from('#EXTM3U\n#EXTINF:-1 tvg-name="'), bytes]));
  t.equal(q.entries.length, 0, 'unterminated quote then garbage: no entries');
});

t.test('mutated real playlists never throw', async (t) => {
  const src = read('freearhey--base.m3u').toString('utf8') + read('iptv-org--unsorted.m3u').toString('utf8');
  let seed = 12345;
  const rnd = (n: number): number => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
  const alphabet = '"\'=,|#:\r\n -\uFEFF[]/';
  let parsed = 0;
  for (let round = 0; round < 300; round++) {
    const chars = src.split('');
    for (let k = 0; k < 20; k++) {
      const at = rnd(chars.length);
      if (rnd(2)) chars[at] = alphabet[rnd(alphabet.length)];
      else chars.splice(at, rnd(5));
    }
    const p = parseM3u(chars.join(''), round % 2 ? { baseUrl: 'http://h/x/' } : {});
    if (Array.isArray(p.entries) && p.entries.every((e) => typeof e.url === 'string' && e.url.length > 0)) parsed++;
  }
  t.equal(parsed, 300);
});

t.test('BOM, CRLF, Buffer and UTF-16', async (t) => {
  const text = '#EXTM3U x-tvg-url="http://g/1.xml"\r\n#EXTINF:-1 tvg-id="a.b",Café\r\nhttp://s/1\r\n';
  for (const input of ['\uFEFF' + text, Buffer.from('\uFEFF' + text, 'utf8'), Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')])]) {
    const p = parseM3u(input);
    t.strictSame(p.guideUrls, ['http://g/1.xml'], 'header seen despite the BOM');
    t.strictSame(p.entries.map((e) => [e.name, e.tvgId, e.url]), [['Café', 'a.b', 'http://s/1']]);
    t.equal(p.warningCount, 0);
  }
});

t.test('unquoted, single-quoted and odd attributes', async (t) => {
  const p = parseM3u([
    '#EXTM3U url-tvg=http://g/a.xml,http://g/b.xml',
    "#EXTINF:-1 tvg-id=abc.de tvg-chno=7 group-title=News tvg-logo='http://l/x, y.png' stray,Name, with comma",
    'http://s/1',
    '#EXTINF:-1 channel-id="12" __proto__="x" TVG-NAME="Upper",',
    'http://s/2',
    '#EXTINF:-1 channel-id="abc" tvg-num="3",Num',
    'http://s/3',
    '#EXTINF:-1 tvg-name="unterminated,Lost',
    'http://s/4',
    '#extinf:5.5 channel-number="9",lower case tag',
    'http://s/5',
  ].join('\n'));
  t.strictSame(p.guideUrls, ['http://g/a.xml', 'http://g/b.xml'], 'unquoted header value with commas');
  const [a, b, c, d, e] = p.entries;
  t.strictSame(a.attrs, { 'tvg-id': 'abc.de', 'tvg-chno': '7', 'group-title': 'News', 'tvg-logo': 'http://l/x, y.png' });
  t.equal(a.name, 'Name, with comma');
  t.equal(a.number, '7');
  t.strictSame(b.attrs, { 'channel-id': '12', 'tvg-name': 'Upper' }, '__proto__ dropped, keys lower-cased');
  t.equal(Object.getPrototypeOf(b.attrs), Object.prototype, 'prototype not polluted');
  t.equal(b.name, 'Upper', 'empty name falls back to tvg-name');
  t.equal(b.number, '12', 'numeric channel-id is a number');
  t.equal(c.number, '3', 'tvg-num alias; non-numeric channel-id ignored');
  t.equal(d.url, 'http://s/4', 'an unterminated quote does not swallow the URL line');
  t.equal(d.name, 'unterminated,Lost', 'no name after a comma: falls back to tvg-name');
  t.equal(e.duration, 5.5);
  t.equal(e.number, '9');
  t.equal(e.name, 'lower case tag');
});

t.test('attribute aliases: canonical names win whatever the order', async (t) => {
  const p = parseM3u([
    '#EXTINF:-1 tvg-num="3" tvg-chno="5" http-user-agent="A" user-agent="B" referrer="http://r/",One',
    'http://s/1',
    '#EXTINF:-1 tvg-chno="5" channel-number="3" user-agent="B" http-user-agent="A" http-referer="http://r2/",Two',
    'http://s/2',
    '#EXTINF:-1 channelID="42" Tvg-Chno="" timeshift="2" catchup-type="append" tvg-rec="3" lang="de",Three',
    'http://s/3',
  ].join('\n'));
  t.strictSame(p.entries.map((e) => [e.number, e.userAgent, e.referrer]), [
    ['5', 'B', 'http://r/'],
    ['5', 'B', 'http://r2/'],
    ['42', undefined, undefined],
  ]);
  t.strictSame(p.entries[2].attrs, { channelid: '42', 'tvg-chno': '', timeshift: '2', 'catchup-type': 'append', 'tvg-rec': '3', lang: 'de' }, 'empty tvg-chno falls back to channelID');
});

t.test('URL lines: schemes, pipe://, placeholders, bare URLs, missing URLs', async (t) => {
  const p = parseM3u([
    '#EXTM3U',
    'http://bare/one.m3u8',
    '#EXTINF:-1,RTMP',
    'rtmp://h/app playpath=x live=1',
    '#EXTINF:-1,UDP',
    'udp://@239.0.0.1:1234',
    '#EXTINF:-1,Pipe upper',
    'PIPE://rm -rf /',
    '#EXTINF:-1,Placeholder',
    '[NO PUBLIC STREAM]',
    '#EXTINF:-1,No URL',
    '#EXTINF:-1,Separated',
    '--------',
    '# a comment',
    '',
    'https://h/sep.m3u8',
    'pipe://echo bare',
    '#EXTINF:-1,Relative',
    'live/rel.m3u8',
    '#EXTM3U x-tvg-url="http://ignored/"',
    '#EXTINF:-1,Last',
  ].join('\n'));
  t.strictSame(p.entries.map((e) => [e.name, e.url]), [
    ['http://bare/one.m3u8', 'http://bare/one.m3u8'],
    ['RTMP', 'rtmp://h/app playpath=x live=1'],
    ['UDP', 'udp://@239.0.0.1:1234'],
    ['Separated', 'https://h/sep.m3u8'],
  ]);
  t.equal(p.entries[0].duration, -1);
  t.equal(p.entries[0].line, 2);
  t.strictSame(p.header, {}, 'a later #EXTM3U is ignored');
  t.equal(p.skipped, 6);
  t.strictSame(p.warnings, [
    'line 7: #EXTINF "Pipe upper" has a pipe:// URL (a shell command, never executed); skipped',
    'line 9: #EXTINF "Placeholder" has placeholder [NO PUBLIC STREAM] instead of a URL; skipped',
    'line 11: #EXTINF "No URL" has no stream URL before the next #EXTINF; skipped',
    'line 17: entry has a pipe:// URL (a shell command, never executed); skipped',
    'line 18: #EXTINF "Relative" has no stream URL before the next #EXTINF (line 19 "live/rel.m3u8" is not a URL); skipped',
    'line 21: #EXTINF "Last" has no stream URL before the end of the file; skipped',
  ]);
});

t.test('baseUrl: relative and absolute paths resolved, separators still not URLs', async (t) => {
  const p = parseM3u([
    '#EXTINF:-1,Rel',
    'live/a.m3u8',
    '#EXTINF:-1,Abs',
    '/root/b.ts',
    '#EXTINF:-1,Sep',
    '=====news=====',
    'c.m3u8',
    'd.m3u8',
  ].join('\n'), { baseUrl: 'https://host.example/lists/x.m3u?token=1' });
  t.strictSame(p.entries.map((e) => [e.name, e.url]), [
    ['Rel', 'https://host.example/lists/live/a.m3u8'],
    ['Abs', 'https://host.example/root/b.ts'],
    ['Sep', 'https://host.example/lists/c.m3u8'],
  ], 'a relative line with no #EXTINF before it (d.m3u8) is not an entry');
});

t.test('headers: #EXTHTTP, percent-encoded suffix, precedence, KODIPROP stream_headers', async (t) => {
  const p = parseM3u([
    '#EXTINF:-1 http-user-agent="AttrUA" http-referrer="http://attr/",Precedence',
    '#EXTVLCOPT:http-user-agent=VlcUA',
    'http://s/1|User-Agent=Suffix%20UA%2F1.0',
    '#EXTINF:-1,Json',
    '#EXTHTTP:{"User-Agent":"JsonUA","Cookie":"a=b","X-N":5}',
    'http://s/2',
    '#EXTINF:-1,BadJson',
    '#EXTHTTP:{nope',
    'http://s/3',
    '#EXTINF:-1,Kodi',
    '#KODIPROP:inputstream.adaptive.stream_headers=Referer=http%3A%2F%2Fk%2F&User-Agent=KodiUA',
    'http://s/4',
    '#EXTINF:-1 http-origin="http://o",Origin',
    '#EXTVLCOPT:network-caching=1000',
    'http://s/5',
  ].join('\n'));
  const [prec, json, bad, kodi, origin] = p.entries;
  t.strictSame(prec.headers, { 'user-agent': 'Suffix UA/1.0', referer: 'http://attr/' }, 'suffix > EXTVLCOPT > attribute');
  t.equal(prec.userAgent, 'Suffix UA/1.0');
  t.equal(prec.referrer, 'http://attr/');
  t.equal(prec.url, 'http://s/1');
  t.strictSame(json.headers, { 'user-agent': 'JsonUA', cookie: 'a=b' }, 'non-string JSON values dropped');
  t.strictSame(bad.headers, {});
  t.equal(p.warningCount, 1);
  t.match(p.warnings[0], /^line 8: #EXTHTTP is not valid JSON/);
  t.strictSame(kodi.headers, { referer: 'http://k/', 'user-agent': 'KodiUA' });
  t.equal(kodi.kodiProps['inputstream.adaptive.stream_headers'], 'Referer=http%3A%2F%2Fk%2F&User-Agent=KodiUA');
  t.strictSame(origin.headers, { origin: 'http://o' }, 'other VLC options are not headers');
});

t.test('directives before #EXTINF belong to the next entry only; warnings are capped', async (t) => {
  const p = parseM3u([
    '#EXTVLCOPT:http-referrer=http://before/',
    '#EXTGRP:Films;Kids',
    '#EXTINF:-1,First',
    'http://s/1',
    '#EXTINF:-1 group-title="A; B ;",Second',
    'http://s/2',
  ].join('\n'));
  t.equal(p.entries[0].referrer, 'http://before/');
  t.strictSame(p.entries[0].groups, ['Films', 'Kids']);
  t.equal(p.entries[1].referrer, undefined);
  t.strictSame(p.entries[1].groups, ['A', 'B'], 'empty groups dropped, parts trimmed');

  const many = Array.from({ length: 150 }, (_, i) => `#EXTINF:-1,P${i}\n[NO PUBLIC STREAM]`).join('\n');
  const q = parseM3u(many);
  t.equal(q.warningCount, 150);
  t.equal(q.warnings.length, 100);
  t.equal(q.skipped, 150);
  t.equal(parseM3u(many, { maxWarnings: 3 }).warnings.length, 3);
});

t.test('fed in pieces, as a download arrives: the same playlist as parsed whole', async (t) => {
  const synthetic = '\uFEFF#EXTM3U x-tvg-url="http://g/1.xml"\r\n#EXTINF:-1 tvg-id="a.b" group-title="Новости;News",Café Канал 📺\r\n' +
    '#EXTVLCOPT:http-user-agent=VLC\r\nhttp://s/1|Referer=http://r/\r\n\r\n#EXTINF:-1,No trailing newline\r\nhttp://s/2';
  const inputs: [string, Buffer, string?][] = [
    ['synthetic', Buffer.from(synthetic, 'utf8')],
    ['UTF-16', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(synthetic.slice(1), 'utf16le')])],
    ...Object.keys(EXPECTED).map((name): [string, Buffer, string?] => [name, read(name), EXPECTED[name].baseUrl]),
  ];
  for (const [name, buf, baseUrl] of inputs) {
    const options = baseUrl ? { baseUrl } : {};
    const whole = parseM3u(buf, options);
    for (const size of buf.length < 20_000 ? [1, 2, 3, 7, 100, 4096] : [100, 4096, 65_536]) {
      const parser = new M3uParser(options);
      for (let i = 0; i < buf.length; i += size) parser.write(buf.subarray(i, i + size));
      t.strictSame(parser.end(), whole, `${name}: bytes in pieces of ${size}`);
    }
    if (name === 'UTF-16') continue;
    const text = buf.toString('utf8');
    const parser = new M3uParser(options);
    for (let i = 0; i < text.length; i += 777) parser.write(text.slice(i, i + 777));
    t.strictSame(parser.end(), parseM3u(text, options), `${name}: text in pieces`);
    const seen: M3uEntry[] = [];
    const streaming = new M3uParser({ ...options, onEntry: (e) => seen.push(e) });
    for (let i = 0; i < buf.length; i += 4096) streaming.write(buf.subarray(i, i + 4096));
    const rest = streaming.end();
    t.strictSame(seen, whole.entries, `${name}: onEntry gets every entry, in order`);
    t.strictSame({ ...rest, entries: whole.entries }, whole, `${name}: and end() the rest`);
    t.equal(rest.entries.length, 0);
  }
  const e = parseM3u(Buffer.from(synthetic, 'utf8')).entries;
  t.strictSame(e.map((x) => [x.name, x.groups, x.headers, x.url]), [
    ['Café Канал 📺', ['Новости', 'News'], { 'user-agent': 'VLC', referer: 'http://r/' }, 'http://s/1'],
    ['No trailing newline', [], {}, 'http://s/2'],
  ], 'the synthetic playlist itself parses as meant');
});

t.test('bytes whose lines are ASCII and not, mixed: what the text gives', async (t) => {
  // Such pieces are read as runs of ASCII lines with the other lines decoded one by one; a
  // '|' header suffix on either kind of line, or none, must land on the right URL.
  let seed = 7;
  const rand = (n: number) => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed % n; };
  const names = ['News', 'Café', 'Канал', 'Sport 📺', 'Plain', 'Ñandú', 'Kids'];
  const lines = ['#EXTM3U'];
  for (let i = 0; i < 3000; i++) {
    const name = `${names[rand(names.length)]} ${i}`;
    lines.push(`#EXTINF:-1 tvg-id="c${i}" group-title="${rand(3) ? 'G' : 'Группа'}",${name}`);
    if (!rand(4)) lines.push(`#EXTVLCOPT:http-referrer=http://r/${rand(2) ? 'ü' : 'u'}${i}`);
    lines.push(`http://s/${i}${rand(3) ? '' : '/é'}${rand(5) ? '' : `|User-Agent=UA${i}&Referer=http://ref/${i}`}`);
  }
  const text = lines.join('\n') + '\n';
  const whole = parseM3u(text);
  t.equal(whole.entries.length, 3000);
  const buf = Buffer.from(text, 'utf8');
  for (const size of [333, 4096, 16_384, buf.length]) {
    const parser = new M3uParser();
    for (let i = 0; i < buf.length; i += size) parser.write(buf.subarray(i, i + size));
    t.strictSame(parser.end(), whole, `bytes in pieces of ${size}`);
  }
  t.ok(whole.entries.some((e) => e.headers['user-agent'] && e.url.endsWith('/é')), 'suffixes on URL lines beyond ASCII too');
  t.ok(whole.entries.some((e) => e.headers['user-agent'] && !e.url.endsWith('/é')), 'and on ASCII ones');

  // Pieces that are the same bytes one after the other: what one piece found of the next '|' says nothing of the next.
  const unit = '#EXTINF:-1,Café\nhttp://h/1|Referer=http://r/\n#EXTINF:-1,Plain\nhttp://h/2\n#EXTINF:-1,Más\nhttp://h/3\n';
  const same = Buffer.from(unit.repeat(50), 'utf8');
  const parser = new M3uParser();
  const step = Buffer.byteLength(unit);
  for (let i = 0; i < same.length; i += step) parser.write(same.subarray(i, i + step));
  const repeated = parser.end().entries;
  t.equal(repeated.length, 150);
  t.strictSame(repeated.filter((e) => e.headers.referer).map((e) => e.url), Array(50).fill('http://h/1'), 'each suffix on its own URL, in every piece');
});

t.test('bytes with no line end for more than MAX_LINE_BYTES: refused, not gathered', async (t) => {
  // A data: URI logo of 200 KB is a real (if rare) line, read whole.
  const logo = `data:image/png;base64,${'A'.repeat(200_000)}`;
  const ok = new M3uParser();
  const big = Buffer.from(`#EXTM3U\n#EXTINF:-1 tvg-logo="${logo}",Big Logo\nhttp://h/1\n`);
  for (let i = 0; i < big.length; i += 16_384) ok.write(big.subarray(i, i + 16_384));
  t.equal(ok.end().entries[0]!.tvgLogo, logo, 'a line of 200 KB is kept');

  const parser = new M3uParser();
  parser.write(Buffer.from('#EXTM3U\n#EXTINF:-1 tvg-name="'));
  const junk = Buffer.alloc(64 * 1024, 0x61);
  let written = 0;
  t.throws(() => { for (;;) { parser.write(junk); written += junk.length; } }, { message: `not an M3U playlist: a line longer than ${MAX_LINE_BYTES} bytes` });
  t.ok(written <= MAX_LINE_BYTES, `refused once past the limit (${written} bytes taken)`);
  t.strictSame(parseM3u(Buffer.alloc(2 * MAX_LINE_BYTES, 0x61)).entries, [], 'parseM3u, given the whole input at once, never throws');
});

t.test('linear time: 100k entries, and inputs that would make a per-line search quadratic', async (t) => {
  // No timed assertion (shared machines make them flaky): a quadratic regression on these inputs
  // takes many minutes and trips the suite's per-file timeout; test/bench/m3u-parse.bench.ts measures speed.
  const lines = ['#EXTM3U'];
  for (let i = 0; i < 100_000; i++) {
    lines.push(`#EXTINF:-1 tvg-id="ch${i}.us" tvg-name="Channel ${i}, HD" tvg-logo="https://l.example/${i}.png" tvg-chno="${i + 1}" group-title="G${i % 20}",Channel ${i}`);
    lines.push(`https://cdn.example.com/live/${i}/index.m3u8`);
  }
  const text = lines.join('\n');
  const p = parseM3u(text);
  t.equal(p.entries.length, 100_000);
  t.equal(p.entries[99_999].tvgName, 'Channel 99999, HD');
  t.equal(p.entries[99_999].number, '100000');
  t.strictSame(p.entries[99_999].groups, ['G19']);

  // No '|' anywhere (a per-URL indexOf('|') would rescan to EOF) and an unterminated quote on
  // every #EXTINF (a per-line indexOf('"') would too, were there no later quotes).
  const nasty = '#EXTINF:-1 tvg-name="x,y\nhttp://h/1\n'.repeat(50_000) + 'http://h/2\n'.repeat(200_000);
  const q = parseM3u(nasty);
  t.equal(q.entries.length, 250_000);
});
