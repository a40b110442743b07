/**
 * Re-imports through the `guide refresh` command: stable channel ids and
 * numbers, favorites that survive, guide times and text, and sources that
 * fail (the previous data stays). Playlists and guides come from a real
 * local HTTP server (plain and gzipped) or from files.
 */
import t from 'tap';
import { gzipSync } from 'node:zlib';
import { createTestHost } from '../../../sdk/testing.js';
import { expectError } from '../../helpers/http.js';
import {
  bearer, channels, closedPort, failingRefresh, getJson, guide, m3u, programmesByName, refresh, serve, startHost, tempDir, write,
  xmltv, xt, type PlaylistEntry,
} from './fixtures.js';

const M3U = 'application/x-mpegurl';
const XML = 'application/xml';

const byName = <T extends { name: string }>(list: T[]) => Object.fromEntries(list.map((c) => [c.name, c]));
const idsByName = (list: { name: string; id: number }[]) => Object.fromEntries(list.map((c) => [c.name, c.id]));

t.test('channel ids and favorites survive a refresh that reorders, renames and drops channels', async (t) => {
  const server = await serve(t);
  const A: PlaylistEntry = { name: 'Alpha', tvgId: 'alpha.tv', chno: '1', group: 'News', url: 'http://streams.invalid/a' };
  const B: PlaylistEntry = { name: 'Bravo', tvgId: 'bravo.tv', chno: '2', group: 'News', url: 'http://streams.invalid/b' };
  const C: PlaylistEntry = { name: 'Charlie', chno: '3', group: 'Music', url: 'http://streams.invalid/c' }; // no tvg-id: keyed by URL
  const D: PlaylistEntry = { name: 'Delta', tvgId: 'delta.tv', chno: '4', group: 'Music', url: 'http://streams.invalid/d' };
  const E: PlaylistEntry = { name: 'Echo', chno: '5', url: 'http://streams.invalid/e' };
  server.routes.set('/tv.m3u', { body: m3u([A, B, C, D, E]), type: M3U });
  const host = await startHost(t, { playlists: [{ name: 'Remote', url: `${server.base}/tv.m3u` }] });
  await host.createUser('viewer', 'viewer-password-1');
  const viewer = await host.login('viewer', 'viewer-password-1');
  const fav = async (channel_id: number, token = host.adminToken) => {
    const res = await host.inject({ method: 'POST', url: '/me/favorite', headers: bearer(token), payload: { channel_id } });
    t.equal(res.statusCode, 200, `favorite ${channel_id}`);
  };
  const me = async (token = host.adminToken) => (await getJson(host, '/me', token)).body.user.favorites as number[];
  const sorted = (ids: number[]) => [...ids].sort((a, b) => a - b);

  const before = idsByName(await channels(host));
  t.strictSame(Object.keys(before), ['Alpha', 'Bravo', 'Charlie', 'Delta', 'Echo']);
  for (const id of [before.Alpha!, before.Bravo!, before.Charlie!, before.Delta!]) await fav(id);
  await fav(before.Charlie!, viewer);
  t.strictSame(await me(), sorted([before.Alpha!, before.Bravo!, before.Charlie!, before.Delta!]));

  // Reordered, Alpha renamed and renumbered, Bravo and Charlie gone, Foxtrot new.
  const F: PlaylistEntry = { name: 'Foxtrot', tvgId: 'foxtrot.tv', chno: '6', url: 'http://streams.invalid/f' };
  server.routes.set('/tv.m3u', { body: m3u([D, E, F, { ...A, name: 'Alpha HD', chno: '9' }]), type: M3U });
  const lines = await refresh(host);
  t.match(lines.join('\n'), /tuner m3u:Remote: 4 channels, 1 new, 2 gone/, 'the command reports what changed');

  const after = await channels(host);
  const afterIds = idsByName(after);
  t.strictSame(after.map((c) => c.name), ['Delta', 'Echo', 'Foxtrot', 'Alpha HD'], 'in number order, dropped ones gone');
  t.equal(afterIds['Alpha HD'], before.Alpha, 'renamed channel (same tvg-id) keeps its id');
  t.equal(afterIds.Delta, before.Delta, 'Delta keeps its id');
  t.equal(afterIds.Echo, before.Echo, 'Echo (keyed by URL) keeps its id');
  t.notOk(Object.values(before).includes(afterIds.Foxtrot!), 'a new channel gets a new id');
  t.strictSame(await me(), sorted([before.Alpha!, before.Delta!]), 'dropped channels leave GET /me favorites');
  t.strictSame(await me(viewer), [], 'and the other user\'s favorites too');
  t.strictSame(after.filter((c) => c.favorited).map((c) => c.name), ['Delta', 'Alpha HD']);
  const g = await guide(host);
  t.equal(g.total_channels, 4, '/programs no longer lists dropped channels');
  t.notOk(g.channels.some((c) => c.id === before.Bravo || c.id === before.Charlie));
  t.strictSame((await getJson(host, '/channel/categories')).body.categories, [{ name: 'Music', channel_count: 1 }, { name: 'News', channel_count: 1 }]);
  t.strictSame((await getJson(host, '/channels/search?q=bravo')).body.channels, [], 'search does not find a dropped channel');
  expectError(t, await host.inject({ method: 'POST', url: '/me/favorite', headers: host.authHeaders, payload: { channel_id: before.Bravo } }), 404, undefined, 'a dropped channel cannot be favorited');
  const del = await host.inject({ method: 'DELETE', url: '/me/favorite', headers: host.authHeaders, payload: { channel_id: before.Delta } });
  t.strictSame(del.json(), { favorites: [before.Alpha] }, 'the favorites reply never lists dropped channels');
  await fav(before.Delta!);

  // Bravo and Charlie come back (Charlie at the same URL, renamed): old ids, favorites back.
  server.routes.set('/tv.m3u', { body: m3u([{ ...C, name: 'Charlie Again' }, A, B, D, E, F]), type: M3U });
  await refresh(host);
  const back = idsByName(await channels(host));
  t.equal(back.Bravo, before.Bravo, 'Bravo gets its old id back');
  t.equal(back['Charlie Again'], before.Charlie, 'Charlie (same URL) gets its old id back');
  t.equal(back.Foxtrot, afterIds.Foxtrot, 'Foxtrot keeps the id it got');
  t.strictSame(await me(), sorted([before.Alpha!, before.Bravo!, before.Charlie!, before.Delta!]), 'the favorites reappear');
  t.strictSame(await me(viewer), [before.Charlie!], 'the viewer\'s too');
  t.strictSame((await channels(host, '', viewer)).filter((c) => c.favorited).map((c) => c.name), ['Charlie Again']);
});

t.test('numbers missing from a playlist are assigned without collisions and kept across refreshes', async (t) => {
  const dir = await tempDir(t);
  const url = (n: string) => `http://streams.invalid/${n}`;
  const given: PlaylistEntry[] = [
    { name: 'One', tvgId: 'one', chno: '1', url: url('1') },
    { name: 'Five', tvgId: 'five', chno: '5', url: url('5') },
    { name: 'Dotted', tvgId: 'dotted', chno: '22.1', url: url('22.1') },
  ];
  const Y: PlaylistEntry = { name: 'Unnumbered Y', tvgId: 'y', url: url('y') };
  const W: PlaylistEntry = { name: 'Unnumbered W', url: url('w') };
  const file = await write(dir, 'tv.m3u', m3u([given[0]!, Y, given[1]!, W, given[2]!]));
  const file2 = await write(dir, 'second.m3u', m3u([{ name: 'Second Three', tvgId: 's3', chno: '3', url: url('s3') }, { name: 'Second Unnumbered', url: url('s?') }]));
  const host = await startHost(t, { playlists: [{ name: 'First', url: file }, { name: 'Second', url: file2 }] });
  const numbers = async () => Object.fromEntries((await channels(host)).map((c) => [c.name, c.tvg_chno]));
  const noCollision = (n: Record<string, string>, what: string) => {
    const values = Object.values(n);
    t.equal(new Set(values).size, values.length, `${what}: every number is unique (${JSON.stringify(n)})`);
    for (const v of values) t.match(v, /^\d+(\.\d+)?$/, `${what}: ${v} is a number`);
  };

  const first = await numbers();
  t.equal(first.One, '1');
  t.equal(first.Five, '5');
  t.equal(first.Dotted, '22.1', 'a dotted number is kept');
  t.equal(first['Second Three'], '3');
  noCollision(first, 'first import');
  for (const n of ['Unnumbered Y', 'Unnumbered W', 'Second Unnumbered']) {
    t.match(first[n], /^\d+$/, `${n} got a number`);
    t.notOk(['1', '3', '5', '22.1'].includes(first[n]!), `${n}: not a number the playlists give`);
  }

  await refresh(host);
  t.strictSame(await numbers(), first, 'a refresh with the same playlists changes no number');

  // Reordered, plus a new unnumbered channel: the others keep their numbers.
  await write(dir, 'tv.m3u', m3u([W, given[2]!, { name: 'New Unnumbered', url: url('new') }, Y, given[1]!, given[0]!]));
  await refresh(host);
  const second = await numbers();
  for (const n of Object.keys(first)) t.equal(second[n], first[n], `${n} keeps its number after a reorder`);
  noCollision(second, 'after a reorder');

  // A channel now given the number Y was assigned: Y moves, nothing collides.
  await write(dir, 'tv.m3u', m3u([W, given[2]!, { name: 'New Unnumbered', url: url('new') }, Y, given[1]!, given[0]!,
    { name: 'Takes Y', tvgId: 'takes', chno: first['Unnumbered Y'], url: url('takes') }]));
  await refresh(host);
  const third = await numbers();
  t.equal(third['Takes Y'], first['Unnumbered Y'], 'the given number wins');
  t.not(third['Unnumbered Y'], first['Unnumbered Y'], 'the assigned one moves');
  noCollision(third, 'after a given number took an assigned one');
  await refresh(host);
  t.strictSame(await numbers(), third, 'and stays put on the next refresh');

  // The other playlist now gives the number the first one assigned to W (imported after it), and
  // lists a new unnumbered channel, which takes the next free number: W moves above both.
  await write(dir, 'second.m3u', m3u([{ name: 'Second Three', tvgId: 's3', chno: '3', url: url('s3') }, { name: 'Second Unnumbered', url: url('s?') },
    { name: 'Second Takes W', tvgId: 'takes-w', chno: third['Unnumbered W'], url: url('takes-w') },
    { name: 'Second New Unnumbered', url: url('s-new') }]));
  await refresh(host);
  const fourth = await numbers();
  t.equal(fourth['Second Takes W'], third['Unnumbered W'], 'the number given by the other playlist wins');
  noCollision(fourth, 'after another playlist took an assigned number while adding an unnumbered channel');
  await refresh(host);
  t.strictSame(await numbers(), fourth, 'and nothing moves on the next refresh');
});

t.test('guide: offsets, entities, languages, mapping, channels not in the playlist', async (t) => {
  const dir = await tempDir(t);
  const playlist = await write(dir, 'tv.m3u', m3u([
    { name: 'West', tvgId: 'west.tv', chno: '1', url: 'http://streams.invalid/west' },
    { name: 'East', tvgId: 'east.tv', chno: '2', url: 'http://streams.invalid/east' },
    { name: 'Entities', tvgId: 'ent.tv', chno: '3', url: 'http://streams.invalid/ent' },
    { name: 'Langs', tvgId: 'lang.tv', chno: '4', url: 'http://streams.invalid/lang' },
    { name: 'Nàmed Only', chno: '5', url: 'http://streams.invalid/named' },
    { name: 'Priority', tvgId: 'prio.tv', chno: '6', url: 'http://streams.invalid/prio' },
    { name: 'Unmapped', tvgId: 'nowhere.tv', chno: '7', url: 'http://streams.invalid/unmapped' },
    { name: 'Second Langs', tvgId: 'lang2.tv', chno: '8', url: 'http://streams.invalid/lang2' },
    { name: 'Case Id', tvgId: 'CASE.tv', chno: '9', url: 'http://streams.invalid/case' },
  ]));
  const titles = (en: string, fr: string, de: string) => `<title lang="en">${en}</title><title lang="fr">${fr}</title><title lang="de">${de}</title>`;
  const main = await write(dir, 'main.xml', xmltv(
    [
      { id: 'west.tv', names: ['West'] }, { id: 'east.tv', names: ['East'] }, { id: 'ent.tv', names: ['Entities'] },
      { id: 'lang.tv', names: ['Langs'] }, { id: 'named.id', names: ['Something Else', 'NAMED ONLY'] },
      { id: 'prio.tv', names: ['Not The Name'] }, { id: 'decoy.tv', names: ['Priority'] }, { id: 'ghost.tv', names: ['Ghost'] },
      { id: 'case.tv', names: ['Case Id'] },
    ],
    [
      { channel: 'west.tv', start: xt('2024-03-10T12:00:00Z', '-0430'), stop: xt('2024-03-10T13:15:00Z', '-0430'), title: 'Western' },
      { channel: 'west.tv', start: '20240310000000 -0430', stop: '20240310003000 -0430', title: 'Midnight West' },
      { channel: 'east.tv', start: xt('2024-03-10T12:00:00Z', '+0530'), stop: xt('2024-03-10T13:00:00Z', '+0530'), title: 'Eastern' },
      { channel: 'east.tv', start: '20240310010000 +0530', stop: '20240310020000 +0530', title: 'Early East' },
      { channel: 'ent.tv', start: xt('2024-03-10T12:00:00Z'), stop: xt('2024-03-10T13:00:00Z'), title: 'Tom &amp; Jerry &lt;3 &#163;5 &#x20AC; &quot;q&quot; &apos;a&apos;' },
      { channel: 'lang.tv', start: xt('2024-03-10T12:00:00Z'), stop: xt('2024-03-10T13:00:00Z'), titlesXml: titles('Hello', 'Bonjour', 'Hallo') },
      { channel: 'lang.tv', start: xt('2024-03-10T13:00:00Z'), stop: xt('2024-03-10T14:00:00Z'), titlesXml: '<title lang="de">Nur Deutsch</title><title lang="en">English Only</title>' },
      { channel: 'named.id', start: xt('2024-03-10T12:00:00Z'), stop: xt('2024-03-10T13:00:00Z'), title: 'By Name' },
      { channel: 'prio.tv', start: xt('2024-03-10T12:00:00Z'), stop: xt('2024-03-10T13:00:00Z'), title: 'By Id' },
      { channel: 'decoy.tv', start: xt('2024-03-10T12:00:00Z'), stop: xt('2024-03-10T13:00:00Z'), title: 'Decoy' },
      { channel: 'ghost.tv', start: xt('2024-03-10T12:00:00Z'), stop: xt('2024-03-10T13:00:00Z'), title: 'Boo' },
      { channel: 'case.tv', start: xt('2024-03-10T12:00:00Z'), stop: xt('2024-03-10T13:00:00Z'), title: 'Case' },
    ],
  ));
  const second = await write(dir, 'second.xml', xmltv([{ id: 'lang2.tv', names: ['Second Langs'] }], [
    { channel: 'lang2.tv', start: xt('2024-03-10T12:00:00Z'), stop: xt('2024-03-10T13:00:00Z'), titlesXml: titles('Hello', 'Bonjour', 'Hallo') },
  ]));
  const host = await startHost(t, {
    playlists: [{ name: 'IPTV', url: playlist }],
    guides: [{ url: main }, { url: second, preferredLanguage: 'de' }],
    preferredLanguage: 'fr',
  });
  const p = await programmesByName(host);

  t.strictSame(p.West, [
    ['Midnight West', '2024-03-10T04:30:00.000Z', '2024-03-10T05:00:00.000Z'],
    ['Western', '2024-03-10T12:00:00.000Z', '2024-03-10T13:15:00.000Z'],
  ], '-0430 becomes UTC (local midnight is 04:30Z)');
  t.strictSame(p.East, [
    ['Early East', '2024-03-09T19:30:00.000Z', '2024-03-09T20:30:00.000Z'],
    ['Eastern', '2024-03-10T12:00:00.000Z', '2024-03-10T13:00:00.000Z'],
  ], '+0530 becomes UTC, across the date line');
  t.strictSame(p.Entities!.map((x) => x[0]), ['Tom & Jerry <3 £5 € "q" \'a\''], 'entities decoded once');
  t.strictSame(p.Langs!.map((x) => x[0]), ['Bonjour', 'Nur Deutsch'], 'preferredLanguage fr; the first title when fr is missing');
  t.strictSame(p['Second Langs']!.map((x) => x[0]), ['Hallo'], 'a source\'s own preferredLanguage wins');
  t.strictSame(p['Nàmed Only']!.map((x) => x[0]), ['By Name'], 'no tvg-id: mapped by display name (any of them, case- and accent-insensitive)');
  t.strictSame(p.Priority!.map((x) => x[0]), ['By Id'], 'tvg-id wins over a display name');
  t.strictSame(p['Case Id']!.map((x) => x[0]), ['Case'], 'tvg-id matched case-insensitively');
  t.strictSame(p.Unmapped, [], 'a channel no guide knows: programs []');
  t.notOk('Ghost' in p, 'guide channels absent from the playlist are not listed');
  const g = await guide(host);
  t.equal(g.total_channels, 9, 'only playlist channels count');
  t.notOk(g.channels.flatMap((c) => c.programs).some((x) => x.title === 'Boo' || x.title === 'Decoy'), 'their programmes appear nowhere');

  // Program ids are stable across a re-import of the same guide.
  const ids = g.channels.flatMap((c) => c.programs.map((x) => x.id));
  await refresh(host);
  t.strictSame((await guide(host)).channels.flatMap((c) => c.programs.map((x) => x.id)), ids, 'program ids are stable across a refresh');
});

const GOOD_GUIDE = (title: string) => xmltv([{ id: 'news.tv', names: ['News'] }, { id: 'film.tv', names: ['Film'] }], [
  { channel: 'news.tv', start: xt('2024-05-01T18:00:00Z'), stop: xt('2024-05-01T19:00:00Z'), title: `${title} 1` },
  { channel: 'news.tv', start: xt('2024-05-01T19:00:00Z'), stop: xt('2024-05-01T20:00:00Z'), title: `${title} 2` },
  { channel: 'film.tv', start: xt('2024-05-01T18:30:00Z'), stop: xt('2024-05-01T20:30:00Z'), title: `${title} Film` },
]);
const BOMB = `<?xml version="1.0"?>
<!DOCTYPE tv [
  <!ENTITY a "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa">
  <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
  <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">
  <!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">
  <!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;">
  <!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;">
]>
<tv>
  <channel id="news.tv"><display-name>&f;</display-name></channel>
  <programme start="20240501180000 +0000" stop="20240501190000 +0000" channel="news.tv"><title>&f;</title></programme>
</tv>
`;
const RSS = `<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0"><channel><title>News feed</title><item><title>Not a guide</title></item></channel></rss>
`;

t.test('a guide that fails to import leaves the previous guide intact, and the command says so', async (t) => {
  const server = await serve(t);
  const other = await serve(t);
  server.routes.set('/guide.xml', { body: GOOD_GUIDE('First'), type: XML });
  other.routes.set('/guide.xml', { body: xmltv([{ id: 'other.tv', names: ['Other'] }], [
    { channel: 'other.tv', start: xt('2024-05-01T18:00:00Z'), stop: xt('2024-05-01T19:00:00Z'), title: 'Elsewhere' },
  ]), type: XML });
  server.routes.set('/tv.m3u', { body: m3u([
    { name: 'News', tvgId: 'news.tv', chno: '1', url: 'http://streams.invalid/news' },
    { name: 'Film', tvgId: 'film.tv', chno: '2', url: 'http://streams.invalid/film' },
    { name: 'Other', tvgId: 'other.tv', chno: '3', url: 'http://streams.invalid/other' },
  ]), type: M3U });
  const host = await startHost(t, {
    playlists: [{ name: 'IPTV', url: `${server.base}/tv.m3u` }],
    guides: [{ name: 'Main', url: `${server.base}/guide.xml` }, { name: 'Other', url: `${other.base}/guide.xml` }],
  });
  const good = await guide(host);
  t.strictSame(good.channels.map((c) => c.programs.map((p) => p.title)), [['First 1', 'First 2'], ['First Film'], ['Elsewhere']], 'both guides imported');

  const text = GOOD_GUIDE('First');
  const cases: [string, () => void][] = [
    ['truncated XML', () => server.routes.set('/guide.xml', { body: text.slice(0, Math.floor(text.length * 0.6)), type: XML })],
    ['truncated after the last programme', () => server.routes.set('/guide.xml', { body: text.slice(0, text.lastIndexOf('</tv>')), type: XML })],
    ['a non-XMLTV document (<rss>)', () => server.routes.set('/guide.xml', { body: RSS, type: XML })],
    ['an entity-expansion bomb', () => server.routes.set('/guide.xml', { body: BOMB, type: XML })],
    ['not XML at all', () => server.routes.set('/guide.xml', { body: '{"json": true}', type: 'application/json' })],
    ['a corrupt gzip', () => server.routes.set('/guide.xml', { body: gzipSync(Buffer.from(text)).subarray(0, 60), type: 'application/gzip' })],
    ['HTTP 404', () => server.routes.delete('/guide.xml')],
    ['HTTP 500', () => server.routes.set('/guide.xml', (_req, res) => { res.writeHead(500).end('boom'); })],
  ];
  for (const [what, breakIt] of cases) {
    breakIt();
    const { error, lines } = await failingRefresh(host);
    t.match(error, /some sources failed/, `${what}: the command fails`);
    t.match(lines.join('\n'), /guide xmltv:Main: FAILED .*\(previous guide kept\)/, `${what}: and names the failed source`);
    t.match(lines.join('\n'), /guide xmltv:Other: 1 programmes/, `${what}: the other source still imports`);
    t.strictSame(await guide(host), good, `${what}: the previous guide is intact (same programmes, same ids)`);
  }
  const sources = (await getJson(host, '/api/livetv/sources')).body.guides;
  t.match(sources.find((s: { name: string }) => s.name === 'Main'), { stats: { programmes: 3 } }, 'the last good import is what /api/livetv/sources shows');

  // The source works again: its new data replaces the old.
  server.routes.set('/guide.xml', { body: GOOD_GUIDE('Second'), type: XML });
  await refresh(host);
  t.strictSame((await guide(host)).channels.map((c) => c.programs.map((p) => p.title)), [['Second 1', 'Second 2'], ['Second Film'], ['Elsewhere']], 'a good import replaces it');

  // The other source's server goes away: connection refused on a closed port.
  const before = await guide(host);
  await other.close();
  const { error, lines } = await failingRefresh(host);
  t.match(error, /some sources failed/, 'unreachable URL: the command fails');
  t.match(lines.join('\n'), /guide xmltv:Other: FAILED .*127\.0\.0\.1/, 'and names the source and the address');
  t.strictSame(await guide(host), before, 'unreachable URL: the previous guide is intact');
});

t.test('a guide source on a closed port from the start, next to a good one', async (t) => {
  const dir = await tempDir(t);
  const port = await closedPort();
  const host = await startHost(t, {
    playlists: [{ name: 'IPTV', url: await write(dir, 'tv.m3u', m3u([{ name: 'News', tvgId: 'news.tv', chno: '1', url: 'http://streams.invalid/news' }])) }],
    guides: [
      { name: 'Gone', url: `http://127.0.0.1:${port}/guide.xml` }, { name: 'Local', url: await write(dir, 'guide.xml', GOOD_GUIDE('Local')) },
      { url: `http://epg:s3cret-pass@127.0.0.1:${port}` }, // unnamed, with credentials and no path
    ],
  });
  t.strictSame((await guide(host)).channels[0]!.programs.map((p) => p.title), ['Local 1', 'Local 2'], 'the host starts and the good source is imported');
  const { error, lines } = await failingRefresh(host);
  t.match(error, /some sources failed/);
  t.match(lines.join('\n'), new RegExp(`guide xmltv:Gone: FAILED .*127\\.0\\.0\\.1:${port}`));
  t.match(lines.join('\n'), /guide xmltv:Local: 3 programmes/);
  const sources = (await getJson(host, '/api/livetv/sources')).body.guides as { name: string }[];
  t.ok(sources.some((s) => s.name === `***@127.0.0.1:${port}`), 'an unnamed source is named after its URL without the credentials');
  t.notMatch(JSON.stringify(sources) + lines.join('\n'), /s3cret-pass/, 'its password is in neither the sources nor the output');
});

t.test('a playlist that fails to import leaves the previous channels intact', async (t) => {
  const server = await serve(t);
  const other = await serve(t);
  const list = m3u([
    { name: 'News', tvgId: 'news.tv', chno: '1', group: 'News', url: 'http://streams.invalid/news' },
    { name: 'Film', tvgId: 'film.tv', chno: '2', group: 'Movies', url: 'http://streams.invalid/film' },
  ]);
  server.routes.set('/tv.m3u', { body: list, type: M3U });
  other.routes.set('/other.m3u', { body: m3u([{ name: 'Other', chno: '7', url: 'http://streams.invalid/other' }]), type: M3U });
  server.routes.set('/guide.xml', { body: GOOD_GUIDE('Kept'), type: XML });
  const host = await startHost(t, {
    playlists: [{ name: 'Main', url: `${server.base}/tv.m3u` }, { name: 'Other', url: `${other.base}/other.m3u` }],
    guides: [{ url: `${server.base}/guide.xml` }],
  });
  const fav = await host.inject({ method: 'POST', url: '/me/favorite', headers: host.authHeaders, payload: { channel_id: (await channels(host))[0]!.id } });
  t.equal(fav.statusCode, 200);
  const goodChannels = await channels(host);
  const goodGuide = await guide(host);
  t.strictSame(goodChannels.map((c) => c.name), ['News', 'Film', 'Other']);

  const cases: [string, () => void][] = [
    ['an HTML page', () => server.routes.set('/tv.m3u', { body: '<!doctype html><html><body>Login required</body></html>', type: 'text/html' })],
    ['a JSON document', () => server.routes.set('/tv.m3u', { body: '{"channels": []}', type: 'application/json' })],
    ['HTTP 404', () => server.routes.delete('/tv.m3u')],
    ['HTTP 403', () => server.routes.set('/tv.m3u', (_req, res) => { res.writeHead(403).end('forbidden'); })],
    // A live stream's URL given as the playlist: MPEG-TS packets (a NUL in the first bytes) without end.
    ['an endless MPEG-TS stream', () => server.routes.set('/tv.m3u', (req, res) => {
      res.writeHead(200, { 'content-type': 'video/mp2t' });
      const packet = Buffer.alloc(188 * 64, 0xff);
      for (let i = 0; i < packet.length; i += 188) packet.set([0x47, 0x40, 0x00, 0x10], i);
      const timer = setInterval(() => res.write(packet), 5);
      req.on('close', () => clearInterval(timer));
    })],
  ];
  for (const [what, breakIt] of cases) {
    breakIt();
    const { error, lines } = await failingRefresh(host);
    t.match(error, /some sources failed/, `${what}: the command fails`);
    t.match(lines.join('\n'), /tuner m3u:Main: FAILED .*\(previous channels kept\)/, `${what}: and names the playlist`);
    if (what.includes('MPEG-TS')) t.match(lines.join('\n'), /Main is not an M3U playlist \(binary data\)/, `${what}: told at once`);
    t.match(lines.join('\n'), /tuner m3u:Other: 1 channels/, `${what}: the other playlist still imports`);
    t.strictSame(await channels(host), goodChannels, `${what}: channels, ids, numbers and favorites intact`);
    t.strictSame(await guide(host), goodGuide, `${what}: the guide still maps to them`);
    t.strictSame((await getJson(host, '/me')).body.user.favorites, [goodChannels[0]!.id], `${what}: the favorite stays`);
  }

  await other.close();
  const { error, lines } = await failingRefresh(host);
  t.match(error, /some sources failed/, 'unreachable playlist URL: the command fails');
  t.match(lines.join('\n'), /tuner m3u:Other: FAILED .*127\.0\.0\.1/);
  t.strictSame(await channels(host), goodChannels, 'unreachable playlist URL: channels intact');

  // A valid, empty playlist is not a failure: it empties the tuner.
  server.routes.set('/tv.m3u', { body: '#EXTM3U\n', type: M3U });
  const after = await failingRefresh(host);
  t.match(after.lines.join('\n'), /tuner m3u:Main: 0 channels, 0 new, 2 gone/, 'an empty #EXTM3U playlist imports as empty');
  t.strictSame((await channels(host)).map((c) => c.name), ['Other']);
});

t.test('a playlist listing more channels than maxChannelsPerTuner fails its import; the channels stored stay', async (t) => {
  const dir = await tempDir(t);
  const entry = (i: number) => ({ name: `Channel ${i}`, tvgId: `c${i}.tv`, chno: String(i), url: `http://streams.invalid/${i}` });
  const file = await write(dir, 'tv.m3u', m3u([1, 2, 3].map(entry)));
  const host = await startHost(t, { playlists: [{ name: 'Main', url: file }], liveTv: { maxChannelsPerTuner: 3 } });
  const stored = await channels(host);
  t.strictSame(stored.map((c) => c.name), ['Channel 1', 'Channel 2', 'Channel 3'], 'as many as allowed: imported');

  await write(dir, 'tv.m3u', m3u([1, 2, 3, 4].map(entry)));
  const { error, lines } = await failingRefresh(host);
  t.match(error, /some sources failed/);
  t.match(lines.join('\n'), /tuner m3u:Main: FAILED .*lists more than 3 channels \(live-tv's maxChannelsPerTuner\) \(previous channels kept\)/, 'one more: the import fails and says why');
  t.strictSame(await channels(host), stored, 'the channels stored stay as they were');

  const jobs = await host.inject({ method: 'GET', url: '/api/jobs', headers: host.authHeaders });
  t.match(JSON.stringify(jobs.json()), /lists more than 3 channels/, 'the failed job says why too');
});

t.test('gzipped playlist and guide over HTTP, served as plain bytes', async (t) => {
  const server = await serve(t);
  const list = m3u([
    { name: 'Zipped News', tvgId: 'news.tv', chno: '1', url: 'http://streams.invalid/news' },
    { name: 'Zipped Film', tvgId: 'film.tv', chno: '2', url: 'http://streams.invalid/film' },
  ], '\r\n');
  server.routes.set('/tv.m3u.gz', { body: gzipSync(Buffer.from('\ufeff' + list)), type: 'application/gzip' });
  server.routes.set('/guide.xml.gz', { body: gzipSync(Buffer.from(GOOD_GUIDE('Gz'))), type: 'application/gzip' });
  const host = await startHost(t, { playlists: [{ name: 'Gz', url: `${server.base}/tv.m3u.gz` }], guides: [{ url: `${server.base}/guide.xml.gz` }] });
  const p = await programmesByName(host);
  t.strictSame(Object.keys(p), ['Zipped News', 'Zipped Film'], 'gzipped playlist (BOM, CRLF) read, names clean');
  t.strictSame(p['Zipped News'], [['Gz 1', '2024-05-01T18:00:00.000Z', '2024-05-01T19:00:00.000Z'], ['Gz 2', '2024-05-01T19:00:00.000Z', '2024-05-01T20:00:00.000Z']]);
  t.strictSame(p['Zipped Film']!.map((x) => x[0]), ['Gz Film']);
  t.equal(server.hits.get('/tv.m3u.gz'), 1, 'the playlist was fetched over HTTP');
  t.equal(server.hits.get('/guide.xml.gz'), 1, 'the guide was fetched over HTTP');

  server.routes.set('/guide.xml.gz', { body: gzipSync(Buffer.from(GOOD_GUIDE('Gz Two'))), type: 'application/gzip' });
  await refresh(host);
  t.strictSame((await programmesByName(host))['Zipped Film']!.map((x) => x[0]), ['Gz Two Film'], 'a refresh fetches it again');
});

// The server reads the shared version at most once a second, so a refresh made by another
// process (the CLI) shows within a second, without a query per request.
t.test('a refresh run by another process on the same data (the CLI) is seen by the running server', async (t) => {
  const dir = await tempDir(t);
  const A: PlaylistEntry = { name: 'Alpha', tvgId: 'alpha.tv', chno: '1', url: 'http://streams.invalid/a' };
  const B: PlaylistEntry = { name: 'Bravo', tvgId: 'bravo.tv', chno: '2', url: 'http://streams.invalid/b' };
  const file = await write(dir, 'tv.m3u', m3u([A, B]));
  const server = await startHost(t, { playlists: [{ name: 'IPTV', url: file }] });
  const ids = idsByName(await channels(server));
  for (const id of [ids.Alpha!, ids.Bravo!]) {
    t.equal((await server.inject({ method: 'POST', url: '/me/favorite', headers: server.authHeaders, payload: { channel_id: id } })).statusCode, 200);
  }
  await write(dir, 'tv.m3u', m3u([A]));
  const cli = await createTestHost({
    dataDir: server.dataDir,
    plugins: { 'live-tv': { initialImport: 'skip' }, 'm3u-tuner': { sources: [{ name: 'IPTV', url: file }] } },
  });
  t.teardown(() => cli.close());
  await refresh(cli);
  await new Promise((r) => setTimeout(r, 1100));
  t.strictSame((await getJson(server, '/me')).body.user.favorites, [ids.Alpha], 'GET /me after the refresh: the dropped favorite is gone');
  t.strictSame((await channels(server)).map((c) => c.name), ['Alpha'], 'GET /channels');
});
