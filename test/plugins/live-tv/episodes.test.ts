/**
 * /programs gives what the guide says about each programme as an episode, beside the spec's
 * fields: real guides (shared/realdata) imported through m3u-tuner and xmltv-guide into a real
 * database, read through HTTP. On SQLite the JSON is written by SQL, on PostgreSQL by
 * JavaScript: both must say the same.
 */
import 'reflect-metadata';
import t from 'tap';
import { realXmltv } from '../../helpers/realdata.js';
import { guide, m3u, startHost, tempDir, write } from './fixtures.js';

t.test('/programs: season, episode, episode_title, is_new, is_repeat, is_live, series_key', async (t) => {
  const dir = await tempDir(t);
  const host = await startHost(t, {
    playlists: [{ name: 'IPTV', url: await write(dir, 'tv.m3u', m3u([
      { name: 'Channel 4', tvgId: 'UK_RT_2056', chno: '4', url: 'http://streams.invalid/c4' },
      { name: 'Sci', tvgId: 'EPG123.10108.schedulesdirect.org', chno: '5', url: 'http://streams.invalid/sci' },
    ])) }],
    guides: [{ url: realXmltv('jellyfin--UK_Data.xml') }, { url: realXmltv('jellyfin--schedulesdirect.xml') }],
  });
  const g = await guide(host, '?from=2015-01-01T00:00:00Z&to=2030-01-01T00:00:00Z');
  const programs = g.channels.flatMap((c) => c.programs) as any[];
  t.ok(programs.length > 100, `${programs.length} programmes`);
  t.ok(programs.every((p) => ['id', 'title', 'start', 'stop'].every((k) => k in p)), 'the spec\'s fields stay');
  t.ok(programs.every((p) => ['is_new', 'is_repeat', 'is_live'].every((k) => typeof p[k] === 'boolean')), 'is_new, is_repeat, is_live: booleans');
  t.notOk(programs.some((p) => p.is_new && p.is_repeat), 'never new and repeat');
  const secret = programs.find((p) => p.title === 'The Secret Life of' && p.is_new);
  t.match(secret, {
    season: 1, episode: 4, episode_title: 'The Secret Life of 5 Year Olds', is_new: true, is_repeat: false, is_live: false,
    series_key: 't:the secret life of', episode_num: '0.3/6.',
  });
  t.ok(programs.some((p) => p.is_repeat), 'UK_Data has repeats');
  t.ok(programs.some((p) => !p.is_new && !p.is_repeat), 'and airings it says nothing about');
  const match = programs.find((p) => p.title === 'Match Game');
  t.match(match, { season: 2, episode: 12, episode_title: 'Match Game', is_repeat: true, series_key: 'dd:02420905' });
  const news = programs.find((p) => p.title === 'Channel 4 News');
  t.match(news, { season: null, episode: 26 }, 'xmltv_ns .25/0. has an episode and no season');
  const plain = programs.find((p) => !p.sub_title);
  t.equal(plain.episode_title, null, 'no sub-title: episode_title null');
});
