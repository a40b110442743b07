/**
 * Every real playlist and guide in shared/realdata, imported through the
 * m3u-tuner and xmltv-guide plugins into one host, checked through the API.
 * The files are read where they are (never copied into the repo); what is
 * generated here goes to a temp dir.
 */
import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { realM3u, realXmltv } from '../../helpers/realdata.js';
import { channels, getJson, guide, ISO_Z, m3u, startHost, tempDir, write, type PlaylistEntry } from './fixtures.js';

const M3U_DIR = path.dirname(realM3u('x'));
const XMLTV_DIR = path.dirname(realXmltv('x'));

/**
 * Channels each real playlist yields (entries the parser keeps, exact repeats removed, and
 * entries m3u-tuner refuses left out: a scheme ffmpeg must not open).
 */
const CHANNELS: Record<string, number> = {
  'Free-TV--playlist.m3u8': 2043, // 2059 entries - 9 placeholders - 7 exact repeats
  'Threadfin--test_list_1.m3u': 4,
  'caducosilva--cat-news.m3u': 1005,
  'freearhey--base.m3u': 4, // 6 entries, two relative to the (local) playlist: file:// URLs
  'freearhey--comment.m3u': 1,
  'freearhey--duplicate.m3u': 1, // the same entry twice
  'freearhey--kodi.m3u': 1,
  'freearhey--pipe.m3u': 2,
  'freearhey--url_tvg.m3u': 1,
  'freearhey--user_agent.m3u': 1,
  'freearhey--vlcopt.m3u': 1,
  'iptv-org--index.m3u': 11,
  'iptv-org--unsorted.m3u': 4,
  'jnk22--dash.m3u': 42,
  'jnk22--kodi.m3u': 673, // 677 entries, one exact repeat, three Kodi plugin:// URLs
  'jnk22--pipe.m3u': 0, // every URL is pipe://
};

/** Guide channels of real guides, with the first programme each should show (computed from the files by hand). */
const MAPPED: (PlaylistEntry & { file: string; first: [string, string, string] })[] = [
  { file: 'jellyfin--UK_Data.xml', name: 'Mapped UK 134', tvgId: 'UK_RT_134', url: 'http://streams.invalid/uk134', first: ['The WotWots', '2015-11-26T06:00:00.000Z', '2015-11-26T06:10:00.000Z'] },
  { file: 'jellyfin--UK_Data.xml', name: 'Mapped UK 105', tvgId: 'UK_RT_105', url: 'http://streams.invalid/uk105', first: ['Escape to the Country', '2015-11-26T06:00:00.000Z', '2015-11-26T06:45:00.000Z'] },
  { file: 'chrisliatas--xmltv_GREECE_el.xml', name: 'Mapped GR 29', tvgId: '29', url: 'http://streams.invalid/gr29', first: ['Την Επικαιρότητα (Ε)', '2021-02-05T04:00:00.000Z', '2021-02-05T04:30:00.000Z'] },
  { file: 'chrisliatas--xmltv_GREECE_el.xml', name: 'Mapped GR 84', tvgId: '84', url: 'http://streams.invalid/gr84', first: ['Με Λένε Φράνκη', '2021-02-05T04:00:00.000Z', '2021-02-05T04:30:00.000Z'] },
  { file: 'iptv-org--epg.iptvx.one--content.xml', name: 'Mapped Omsk', tvgId: '12-omsk', url: 'http://streams.invalid/omsk', first: ['д/с Необыкновенные люди', '2025-09-21T22:45:00.000Z', '2025-09-22T00:00:00.000Z'] },
  { file: 'iptv-org--guide.xml', name: 'Mapped ANT1', tvgId: 'ANT1Europe.gr@SD', url: 'http://streams.invalid/ant1', first: ['ΚΑΛΗΜΕΡΑ ΕΛΛΑΔΑ', '2026-02-12T04:00:00.000Z', '2026-02-12T07:00:00.000Z'] },
  { file: 'iptv-org--energeek.cl--content.xml', name: 'Mapped Retro', tvgId: 'EnerGeek Retro', url: 'http://streams.invalid/retro', first: ['Noir', '2022-11-29T03:00:00.000Z', '2022-11-29T03:30:00.000Z'] },
  { file: 'nice-shot--tvguide.xml', name: 'Mapped FR3', tvgId: 'FRA3.kazer.org', url: 'http://streams.invalid/fr3', first: ['Nos voisins les Marsupilamis', '2013-07-04T07:36:00.000Z', '2013-07-04T08:05:00.000Z'] },
  { file: 'livre-with-stop.xml', name: 'Mapped Livre', tvgId: 'south-east.bbc1.bbc.co.uk', url: 'http://streams.invalid/livre', first: ['£', '2001-12-11T18:00:00.000Z', '2001-12-11T19:00:00.000Z'] },
];

t.test('every real playlist and guide, through the plugins and the API', async (t) => {
  const dir = await tempDir(t);
  const m3uFiles = readdirSync(M3U_DIR).sort();
  const xmltvFiles = readdirSync(XMLTV_DIR).sort();
  t.strictSame(m3uFiles, Object.keys(CHANNELS).sort(), 'every file in realdata/m3u has an expected channel count');

  // Our playlist, with a BOM and CRLF line ends, whose tvg-ids are channel ids of real guides.
  const mapped = await write(dir, 'mapped.m3u', '\ufeff' + m3u(MAPPED.map(({ file: _f, first: _x, ...e }) => e), '\r\n'));
  // XMLTV--test_livre.xml's only programme has no stop (and no programme after it), so it is
  // skipped; the same bytes (ISO-8859-1 £) with a stop added show that the title survives.
  const livre = readFileSync(realXmltv('XMLTV--test_livre.xml'));
  const withStop = Buffer.from(livre.toString('latin1').replace('start="20011211180000"', 'start="20011211180000" stop="20011211190000"'), 'latin1');
  t.ok(withStop.includes(Buffer.from([0x3e, 0xa3, 0x3c])), 'the copy keeps the single 0xA3 byte');
  const livreCopy = await write(dir, 'livre-with-stop.xml', withStop);

  const host = await startHost(t, {
    playlists: [...m3uFiles.map((f) => ({ name: f, url: realM3u(f) })), { name: 'Mapped', url: mapped }],
    guides: [...xmltvFiles.map((f) => ({ name: f, url: realXmltv(f) })), { name: 'livre-with-stop.xml', url: livreCopy }],
  });

  const sources = (await getJson(host, '/api/livetv/sources')).body;
  t.test('channel counts per playlist (GET /api/livetv/sources)', async (t) => {
    const counts = Object.fromEntries(sources.tuners.map((s: { name: string; channels: number }) => [s.name, s.channels]));
    for (const f of m3uFiles) t.equal(counts[f], CHANNELS[f], `${f}: ${CHANNELS[f]} channels`);
    t.equal(counts.Mapped, MAPPED.length);
  });

  const all = await channels(host);
  t.test('channels as the API lists them', async (t) => {
    const total = Object.values(CHANNELS).reduce((a, b) => a + b, 0) + MAPPED.length;
    t.equal(all.length, total, 'GET /channels lists every imported channel');
    t.notOk(all.some((c) => c.source === 'jnk22--pipe.m3u'), 'no channel from jnk22--pipe.m3u (every URL is pipe://)');
    t.notOk(all.some((c) => c.name === '[NO PUBLIC STREAM]' || c.name.includes('NO PUBLIC STREAM')), 'no "[NO PUBLIC STREAM]" channel');
    const dirty = all.filter((c) => /[\r\n\ufeff]/.test(c.name) || c.name !== c.name.trim() || c.name === '');
    t.strictSame(dirty.map((c) => `${c.source}: ${JSON.stringify(c.name)}`), [], 'every name is clean (no CR, no BOM, trimmed, not empty)');
    const named = (source: string, name: string) => all.find((c) => c.source === source && c.name === name);
    t.ok(named('iptv-org--index.m3u', 'ЛДПР ТВ (1080p)'), 'Cyrillic name intact (CRLF file)');
    t.ok(named('iptv-org--unsorted.m3u', 'Visit-X TV'), 'CRLF file: clean name');
    t.ok(named('Free-TV--playlist.m3u8', 'Η Φωνή της Ελλάδας'), 'Greek name intact');
    t.ok(named('jnk22--kodi.m3u', 'WDR Düsseldorf HD'), 'umlaut intact');
    t.ok(named('jnk22--kodi.m3u', 'Ö3-VisualRadio'), 'capital umlaut intact');
    t.strictSame(all.filter((c) => c.source === 'Mapped').map((c) => c.name).sort(), MAPPED.map((m) => m.name).sort(), 'BOM + CRLF playlist: names clean');
    const dotted = all.filter((c) => c.tvg_chno === '22.1');
    t.strictSame(dotted.map((c) => [c.source, c.name]), [['Free-TV--playlist.m3u8', 'Encuentro Ⓨ Ⓖ']], 'Free-TV number 22.1 kept');
    const ids = all.map((c) => c.id);
    t.equal(new Set(ids).size, ids.length, 'channel ids are unique');
    const search = await getJson(host, '/channels/search?q=dusseldorf');
    t.ok(search.body.channels.some((c: { name: string }) => c.name === 'WDR Düsseldorf HD'), 'accent-insensitive search on real names');
    const cyr = await getJson(host, '/channels/search?q=лдпр');
    t.ok(cyr.body.channels.some((c: { name: string }) => c.name === 'ЛДПР ТВ (1080p)'), 'case-insensitive search in Cyrillic');
  });

  t.test('guides', async (t) => {
    const guides = Object.fromEntries(sources.guides.map((g: { name: string }) => [g.name, g]));
    for (const f of xmltvFiles) t.match(guides[f], { last_import: ISO_Z, stats: { programmes: Number } }, `${f}: imported`);
    const stats = (f: string) => guides[f]?.stats;
    t.match(stats('jellyfin--UK_Data.xml'), { channels: 5, programmes: 1964 - 49, skipped: 49 }, 'UK_Data: 1964 programmes, 49 of them zero-length');
    t.match(stats('nice-shot--tvguide.xml'), { channels: 13, programmes: 3354 });
    t.match(stats('chrisliatas--xmltv_GREECE_el.xml'), { channels: 110 });
    t.match(stats('iptv-org--vantagetv.ee--content.xml'), { channels: 3, programmes: 332 });
    t.match(stats('iptv-org--epg.iptvx.one--content.xml'), { channels: 1, programmes: 230 });
    t.strictSame(stats('iptv-org--epg.iptvx.one--content.xml.gz'), stats('iptv-org--epg.iptvx.one--content.xml'), 'the .xml.gz reads exactly like the .xml');
    t.match(stats('XMLTV--empty.xml'), { channels: 0, programmes: 0, skipped: 0 });
    t.match(stats('XMLTV--test_livre.xml'), { programmes: 0, skipped: 1 }, 'test_livre: its only programme has no stop and nothing after it');
    t.match(guides['livre-with-stop.xml']?.stats, { programmes: 1, skipped: 0 });
    const g = await guide(host);
    t.equal(g.total_channels, all.length);
    const programs = g.channels.flatMap((c) => c.programs);
    t.ok(programs.length > 5000, `many programmes shown (${programs.length})`);
    const bad = programs.filter((p) => !ISO_Z.test(p.start) || !ISO_Z.test(p.stop) || !(Date.parse(p.stop) > Date.parse(p.start)) || typeof p.title !== 'string');
    t.strictSame(bad, [], 'every programme has ISO Z start < stop and a title');
    const byName = Object.fromEntries(g.channels.map((c) => [c.name, c]));
    for (const m of MAPPED) {
      const c = byName[m.name];
      t.ok(c, `${m.name} listed`);
      const first = c?.programs[0];
      t.strictSame(first && [first.title, first.start, first.stop], m.first, `${m.name} (${m.file} ${m.tvgId}): first programme`);
    }
    // The mapped playlist has no tvg-logo: each channel shows its guide channel's <icon>, when that
    // is a web URL (UK_Data's icons are bare names like "Logo_UK_RT_105"; some channels have none).
    t.strictSame(Object.fromEntries(all.filter((c) => c.source === 'Mapped').map((c) => [c.name, c.logo])), {
      'Mapped UK 134': null, 'Mapped UK 105': null,
      'Mapped GR 29': 'https://www.digea.gr/images/channel-icons/BERGINA%20EPG.jpg',
      'Mapped GR 84': 'https://www.digea.gr/images/channel-icons/NICKELODEON.png',
      'Mapped Omsk': 'https://iptvx.one/picons/12-omsk.png', 'Mapped ANT1': 'https://i.imgur.com/DTfwJGM.png',
      'Mapped Retro': 'https://i.imgur.com/PzEK6DI.png', 'Mapped FR3': null, 'Mapped Livre': null,
    }, 'logos from the real guides\' channel icons');
  });
});
