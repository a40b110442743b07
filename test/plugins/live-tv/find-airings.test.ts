/**
 * findAirings (what the DVR's series rules pick) through the live-tv access service, with a real
 * database and guide imports: titles compared folded, keywords in titles and episode titles,
 * patterns on titles; and after a re-import that changes the titles, what the new guide says
 * (the distinct titles that keywords and patterns are tried on are read once per generation).
 */
import 'reflect-metadata';
import t from 'tap';
import { writeFile } from 'node:fs/promises';
import { definePlugin, liveTvService, type LiveTvAccess } from '../../../sdk/index.js';
import { createTestHost } from '../../../sdk/testing.js';
import { m3u, refresh, tempDir, write, xmltv, xt } from './fixtures.js';

const HOUR = 3600_000;
const BASE = Date.UTC(2030, 0, 7, 12);

/** One programme an hour on guide channel `a`, from BASE: [title, sub-title]. */
const guideOf = (shows: [string, string | null][]) => xmltv([{ id: 'a', names: ['A'] }], shows.map(([title, sub], i) => ({
  channel: 'a', start: xt(new Date(BASE + i * HOUR).toISOString()), stop: xt(new Date(BASE + (i + 1) * HOUR).toISOString()),
  titlesXml: `<title>${title}</title>${sub === null ? '' : `<sub-title>${sub}</sub-title>`}`,
})));

t.test('findAirings: titles, keywords and patterns, on the guide as it is now', async (t) => {
  const dir = await tempDir(t);
  const guideFile = await write(dir, 'guide.xml', guideOf([
    ['Acme Mystery', 'The River'], ['Night Train', null], ['ACME  mystery', null], ['Café Society', 'Riverside'],
  ]));
  let live: LiveTvAccess | undefined;
  const holder = definePlugin({
    id: 'airings-reader', version: '1.0.0', host: '^1.1',
    register(env) { env.registerInit({ deps: { live: liveTvService }, init(deps) { live = deps.live; } }); },
  });
  const host = await createTestHost({
    definitions: [holder],
    plugins: {
      'live-tv': { initialImport: 'await' },
      'm3u-tuner': { sources: [{ name: 'Main', url: await write(dir, 'tv.m3u', m3u([{ name: 'A', tvgId: 'a', chno: '1', url: 'http://streams.invalid/a' }])) }] },
      'xmltv-guide': { sources: [{ url: guideFile }], maxAge: '100000d' },
    },
  });
  t.teardown(() => host.close());
  const matches = [{ title: 'acme mystery' }, { keyword: 'river' }, { regex: '^night' }, { keyword: 'CAFÉ' }];
  const found = async () => (await live!.findAirings(matches, BASE - HOUR, BASE + 10 * HOUR)).map((a) => [a.title, a.start - BASE, a.matches]);

  t.strictSame(await found(), [
    ['Acme Mystery', 0, [0, 1]], // the title, and "river" in its episode title
    ['Night Train', HOUR, [2]],
    ['ACME  mystery', 2 * HOUR, [0]], // folded: case and spaces aside
    ['Café Society', 3 * HOUR, [1, 3]], // "river" in "Riverside"; the keyword without case
  ], 'each airing with the matches that pick it, by start');

  await writeFile(guideFile, guideOf([['Night Shift', null], ['River Monsters', 'Acme']]));
  await refresh(host);
  t.strictSame(await found(), [['Night Shift', 0, [2]], ['River Monsters', HOUR, [1]]], 'after a re-import: the new titles, none of the old');
});
