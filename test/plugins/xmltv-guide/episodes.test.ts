/**
 * What the import keeps of a programme as an episode (every episode-num system, new, premiere,
 * previously-shown, live) and what live-tv decides from it (new, repeat or unknown; season and
 * episode; series and episode identity), on the real guides in shared/realdata.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { parseXmltv } from '../../../plugins/xmltv-guide/xmltv-parser.js';
import { AIRING_LIVE, AIRING_NEW, AIRING_REPEAT, episodeInfo, TitleFolder } from '../../../plugins/live-tv/episode.js';
import type { GuideProgramme } from '../../../sdk/livetv.js';
import { realXmltv } from '../../helpers/realdata.js';

async function programmesOf(xml: Buffer | string): Promise<GuideProgramme[]> {
  const out: GuideProgramme[] = [];
  await parseXmltv(Readable.from([Buffer.from(xml)]), {
    channel() {}, programmes: async (b) => void out.push(...b), warning() {}, progress() {},
  }, { maxAgeMs: Infinity });
  return out;
}
const real = (name: string) => programmesOf(readFileSync(realXmltv(name)));
const info = (p: GuideProgramme) => episodeInfo(p, new TitleFolder());
const kind = (p: GuideProgramme) => {
  const a = info(p).airing;
  return a & AIRING_NEW ? 'new' : a & AIRING_REPEAT ? 'repeat' : 'unknown';
};

t.test('UK_Data: new, premiere and previously-shown decide new, repeat and unknown', async (t) => {
  const all = await real('jellyfin--UK_Data.xml');
  const file = readFileSync(realXmltv('jellyfin--UK_Data.xml'), 'utf8');
  const count = (re: RegExp) => (file.match(re) ?? []).length;
  t.equal(all.filter((p) => p.isNew).length, count(/<new\s*\/>/g), 'every <new/> kept');
  t.equal(all.filter((p) => p.premiere).length, count(/<premiere[\s>]/g), 'every <premiere> kept');
  t.equal(all.filter((p) => p.previouslyShown).length, count(/<previously-shown[\s/>]/g), 'every <previously-shown> kept');

  const secret = all.find((p) => p.title === 'The Secret Life of' && p.isNew)!;
  t.ok(secret.premiere, 'the <new/> one is also a premiere');
  t.equal(kind(secret), 'new');
  t.match(info(secret), { season: 1, episode: 4 }, 'xmltv_ns 0.3/6. is season 1 episode 4');
  const premiereOnly = all.find((p) => p.premiere && !p.isNew)!;
  t.equal(kind(premiereOnly), 'new', 'a premiere without <new/> is new');
  const repeat = all.find((p) => p.previouslyShown && !p.premiere && !p.isNew)!;
  t.equal(kind(repeat), 'repeat', 'previously shown, not new: a repeat');
  const plain = all.find((p) => !p.previouslyShown && !p.premiere && !p.isNew)!;
  t.equal(kind(plain), 'unknown', 'nothing said: unknown, neither new nor repeat');
  t.equal(all.filter((p) => kind(p) === 'new').length, all.filter((p) => p.isNew || p.premiere).length);
  t.equal(all.filter((p) => kind(p) === 'repeat').length, all.filter((p) => p.previouslyShown && !p.isNew && !p.premiere).length);
});

t.test('schedulesdirect: dd_progid names the series and the episode; every system is kept', async (t) => {
  const all = await real('jellyfin--schedulesdirect.xml');
  const match = all.find((p) => p.title === 'Match Game')!;
  t.strictSame(match.episodeNums, [{ system: 'dd_progid', value: 'EP02420905.0022' }, { system: 'xmltv_ns', value: '1.11.0/1' }]);
  t.equal(match.episodeNum, '1.11.0/1', 'the readable one stays episode_num');
  const i = info(match);
  t.match(i, { season: 2, episode: 12, seriesKey: 'dd:02420905' });
  t.equal(kind(match), 'repeat', '<previously-shown/> without a date');
  // The same episode id on another channel or airing is the same episode; another id is not.
  const again = info({ ...match, channel: 'other', start: match.start + 86_400_000, subTitle: undefined, description: undefined });
  t.equal(again.episodeKey, i.episodeKey, 'identified by dd_progid before anything else');
  const other = info({ ...match, episodeNums: [{ system: 'dd_progid', value: 'EP02420905.0023' }] });
  t.not(other.episodeKey, i.episodeKey);
});

t.test('nzxmltv: bare dd_progid, dd_seriesid and systems Antenna does not read are kept', async (t) => {
  const all = await real('iptv-org--nzxmltv.com--content.xml');
  const sunday = all.find((p) => p.title === 'Sunday' && p.episodeNums)!;
  t.equal(sunday.episodeNums!.length, 9, 'all nine episode-num elements');
  t.ok(sunday.episodeNums!.some((n) => n.system === 'original-air-date'));
  t.match(info(sunday), { seriesKey: 'dd:1035483', season: 2023, episode: 37 });
});

t.test('previously-shown dated the airing\'s own day is not a repeat; live is kept', async (t) => {
  const xml = `<tv><channel id="a"><display-name>A</display-name></channel>
    <programme channel="a" start="20260301200000 +0000" stop="20260301210000 +0000"><title>Same day</title><previously-shown start="20260301"/></programme>
    <programme channel="a" start="20260302200000 +0000" stop="20260302210000 +0000"><title>Older</title><previously-shown start="20250101120000 +0000"/></programme>
    <programme channel="a" start="20260303200000 +0000" stop="20260303210000 +0000"><title>Both</title><new/><previously-shown/></programme>
    <programme channel="a" start="20260304200000 +0000" stop="20260304210000 +0000"><title>Match</title><live/><episode-num system="onscreen">S03E07</episode-num></programme>
  </tv>`;
  const [sameDay, older, both, live] = await programmesOf(xml);
  t.strictSame(sameDay.previouslyShown, { start: Date.UTC(2026, 2, 1) });
  t.equal(kind(sameDay), 'unknown');
  t.equal(kind(older), 'repeat');
  t.equal(kind(both), 'new', '<new/> wins over previously-shown');
  t.ok(live.live);
  t.equal(info(live).airing & AIRING_LIVE, AIRING_LIVE);
  t.match(info(live), { season: 3, episode: 7 }, 'onscreen S03E07');
  t.equal(info(sameDay).episodeKey, null, 'nothing to identify it by');
});

t.test('episode identity: (series, season, episode), then (title, episode title), then description', async (t) => {
  const base: GuideProgramme = { channel: 'a', start: 0, stop: 1, title: 'Acme Mystery' };
  const key = (p: Partial<GuideProgramme>) => info({ ...base, ...p }).episodeKey;
  t.equal(key({ episodeNum: '0.4.', subTitle: 'x' }), key({ episodeNum: '0.4.', subTitle: 'y', channel: 'b' }), 'season and episode before the episode title');
  t.not(key({ episodeNum: '0.4.' }), key({ episodeNum: '0.5.' }));
  t.equal(key({ subTitle: 'The Clock' }), key({ title: 'ACME  mystery', subTitle: 'the clock' }), 'title and episode title, folded');
  t.not(key({ subTitle: 'The Clock' }), key({ subTitle: 'The Key' }));
  t.equal(key({ description: 'A clock stops.' }), key({ description: 'a clock stops.' }), 'then the description');
  t.not(key({ description: 'A clock stops.' }), key({ description: 'A key turns.' }));
});
