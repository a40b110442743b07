/**
 * Every live-tv route through real HTTP (inject) over a real SQLite file, fed
 * by the m3u-tuner and xmltv-guide plugins from files written here.
 */
import 'reflect-metadata';
import t from 'tap';
import http from 'node:http';
import { writeFile } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import type { TestHost } from '../../../sdk/testing.js';
import type { Channel } from '../../../plugins/live-tv/channel-store.js';
import { searchChannels } from '../../../plugins/live-tv/routes.js';
import { expectError } from '../../helpers/http.js';
import {
  bearer, channels, getJson, guide, ISO_Z, m3u, refresh, startHost, tempDir, write, xmltv, xt, type ChannelView, type GuideEntry, type ProgramView,
} from './fixtures.js';

const PLAYLIST = m3u([
  { name: 'Sports Plus', tvgId: 'sports.us', chno: '22.1', group: 'Sports', url: 'http://streams.invalid/sports' },
  { name: 'Télé Matin', tvgId: 'tele.fr', chno: '5', group: 'News;Public', url: 'http://streams.invalid/tele' },
  { name: 'BBC One', tvgId: 'bbc1.uk', chno: '1', group: 'News', logo: 'http://logos.invalid/bbc1.png', url: 'http://streams.invalid/bbc1' },
  { name: 'No Guide Here', chno: '3', group: 'Movies', url: 'http://streams.invalid/noguide' },
  { name: 'Kids Zone', tvgId: 'kids', chno: '10', group: 'Kids', url: 'http://streams.invalid/kids' },
  { name: 'Public Access', chno: '7', group: 'Public', url: 'http://streams.invalid/public' },
]);
const NUMBER_ORDER = ['BBC One', 'No Guide Here', 'Télé Matin', 'Public Access', 'Kids Zone', 'Sports Plus'];

const GUIDE = xmltv(
  [
    { id: 'bbc1.uk', names: ['BBC One'] },
    { id: 'tele.fr', names: ['Tele Matin'] },
    { id: 'sports.us', names: ['Sports Plus'] },
    { id: 'kids', names: ['Kids'] },
  ],
  [
    { channel: 'bbc1.uk', start: xt('2024-01-01T10:00:00Z'), stop: xt('2024-01-01T11:00:00Z'), title: 'A' },
    { channel: 'bbc1.uk', start: xt('2024-01-01T11:00:00Z'), stop: xt('2024-01-01T12:00:00Z'), title: 'B' },
    { channel: 'bbc1.uk', start: xt('2024-01-01T12:00:00Z'), stop: xt('2024-01-01T13:00:00Z'), title: 'C' },
    { channel: 'tele.fr', start: xt('2024-01-01T10:30:00Z'), stop: xt('2024-01-01T11:30:00Z'), title: 'Journal' },
    { channel: 'sports.us', start: xt('2024-01-01T09:00:00Z'), stop: xt('2024-01-01T10:00:00Z'), title: 'Match' },
    { channel: 'kids', start: xt('2024-01-01T11:00:00Z'), stop: xt('2024-01-01T11:30:00Z'), title: 'Cartoons' },
  ],
);

t.test('live-tv routes', async (t) => {
  const dir = await tempDir(t);
  const host: TestHost = await startHost(t, {
    playlists: [{ name: 'Test IPTV', url: await write(dir, 'tv.m3u', PLAYLIST) }],
    guides: [{ url: await write(dir, 'guide.xml', GUIDE) }],
  });
  const all = await channels(host);
  const id = (name: string) => {
    const c = all.find((x) => x.name === name);
    if (!c) throw new Error(`no channel ${name}`);
    return c.id;
  };
  const names = (list: { name: string }[]) => list.map((c) => c.name);
  const viewerId = await host.createUser('viewer', 'viewer-password-1');
  const viewerToken = await host.login('viewer', 'viewer-password-1');

  t.test('GET /channels: every channel in number order, with the Channel fields', async (t) => {
    t.strictSame(names(all), NUMBER_ORDER);
    const bbc = all.find((c) => c.name === 'BBC One')!;
    t.match(bbc, { name: 'BBC One', tvg_chno: '1', favorited: false, logo: 'http://logos.invalid/bbc1.png', category: 'News', tvg_id: 'bbc1.uk', source: 'Test IPTV' });
    t.ok(Number.isInteger(bbc.id) && bbc.id > 0, 'id is a positive integer');
    t.equal(new Set(all.map((c) => c.id)).size, all.length, 'ids are unique');
    t.equal(all.find((c) => c.name === 'Sports Plus')!.tvg_chno, '22.1', 'a dotted number is kept as given');
    for (const c of all) t.equal(typeof c.tvg_chno, 'string', `${c.name}: tvg_chno is a string`);
  });

  t.test('GET /channels?category= filters, case-insensitively, multi-group channels in each group', async (t) => {
    t.strictSame(names(await channels(host, '?category=News')), ['BBC One', 'Télé Matin']);
    t.strictSame(names(await channels(host, '?category=news')), ['BBC One', 'Télé Matin'], 'lower case');
    t.strictSame(names(await channels(host, '?category=PUBLIC')), ['Télé Matin', 'Public Access'], '"News;Public" is in Public too');
    t.strictSame(names(await channels(host, '?category=Sports')), ['Sports Plus']);
    t.strictSame(await channels(host, '?category=Nothing'), [], 'unknown category: empty list');
    t.strictSame(names(await channels(host, '?category=News%3BPublic')), [], 'the raw "News;Public" is not a category');
  });

  t.test('GET /channels/search', async (t) => {
    const search = async (q: string) => {
      const res = await getJson(host, `/channels/search?q=${encodeURIComponent(q)}`);
      t.equal(res.status, 200, `q=${q}: 200`);
      t.strictSame(Object.keys(res.body), ['channels'], `q=${q}: body is {channels}`);
      return names(res.body.channels);
    };
    t.strictSame(await search('tele'), ['Télé Matin'], 'accent-insensitive: tele finds Télé');
    t.strictSame(await search('TÉLÉ'), ['Télé Matin'], 'case-insensitive');
    t.strictSame(await search('matin'), ['Télé Matin']);
    t.strictSame(await search('22.1'), ['Sports Plus'], 'by number');
    t.strictSame(await search('bbc'), ['BBC One']);
    t.strictSame(await search('o'), ['BBC One', 'No Guide Here', 'Kids Zone', 'Sports Plus'], 'several results, in number order');
    t.strictSame(await search('zzz'), [], 'no match: empty list');
    const res = await getJson(host, '/channels/search?q=tele');
    t.match(res.body.channels[0], { id: id('Télé Matin'), tvg_chno: '5', favorited: false, category: 'News', source: 'Test IPTV' }, 'results are full Channels');

    expectError(t, await host.inject({ method: 'GET', url: '/channels/search?q=', headers: host.authHeaders }), 400, /q/, 'empty q');
    expectError(t, await host.inject({ method: 'GET', url: '/channels/search?q=%20%20', headers: host.authHeaders }), 400, /q/, 'blank q');
    expectError(t, await host.inject({ method: 'GET', url: '/channels/search', headers: host.authHeaders }), 400, /q/, 'missing q');
  });

  t.test('a search through many channels lets other work run meanwhile', async (t) => {
    // The first search of a new snapshot folds every name: 100,000 at once held every other request.
    const many = Array.from({ length: 12_000 }, (_, i) => ({ id: i + 1, search: `channel ${i + 1}` }) as Channel);
    const searching = searchChannels(many, 'channel 1199');
    let ranMeanwhile = false;
    setImmediate(() => { ranMeanwhile = true; });
    const found = await searching;
    t.strictSame(found.map((c) => c.id), [1199, 11990, 11991, 11992, 11993, 11994, 11995, 11996, 11997, 11998, 11999], 'every match, in order');
    t.ok(ranMeanwhile, 'a callback queued after the search began ran before it ended');
  });

  t.test('GET /channel/categories', async (t) => {
    const res = await getJson(host, '/channel/categories');
    t.equal(res.status, 200);
    t.strictSame(res.body, {
      categories: [
        { name: 'Kids', channel_count: 1 },
        { name: 'Movies', channel_count: 1 },
        { name: 'News', channel_count: 2 },
        { name: 'Public', channel_count: 2 },
        { name: 'Sports', channel_count: 1 },
      ],
    });
  });

  t.test('GET /programs: every channel, in number order, programmes as Program', async (t) => {
    const g = await guide(host);
    t.equal(g.total_channels, 6);
    t.equal(g.offset, 0, 'offset defaults to 0 and is echoed');
    t.strictSame(names(g.channels), NUMBER_ORDER, 'limit defaults to -1: every channel');
    t.strictSame(g.channels.map((c) => c.id), all.map((c) => c.id), 'guide entry ids are the channel ids');
    const by = Object.fromEntries(g.channels.map((c) => [c.name, c]));
    t.strictSame(by['No Guide Here']!.programs, [], 'a channel without guide data: programs []');
    t.strictSame(by['BBC One']!.programs.map((p) => [p.title, p.start, p.stop]), [
      ['A', '2024-01-01T10:00:00.000Z', '2024-01-01T11:00:00.000Z'],
      ['B', '2024-01-01T11:00:00.000Z', '2024-01-01T12:00:00.000Z'],
      ['C', '2024-01-01T12:00:00.000Z', '2024-01-01T13:00:00.000Z'],
    ], 'by start time');
    t.strictSame(by['Télé Matin']!.programs.map((p) => p.title), ['Journal'], 'mapped by tvg-id despite a different display name');
    t.strictSame(by['Kids Zone']!.programs.map((p) => p.title), ['Cartoons']);
    const programs = g.channels.flatMap((c) => c.programs);
    t.equal(programs.length, 6);
    for (const p of programs) {
      t.ok(Number.isSafeInteger(p.id) && p.id > 0, `${p.title}: integer id`);
      t.match(p.start, ISO_Z, `${p.title}: start ends in Z`);
      t.match(p.stop, ISO_Z, `${p.title}: stop ends in Z`);
      t.equal(typeof p.title, 'string');
    }
    t.equal(new Set(programs.map((p) => p.id)).size, programs.length, 'program ids are unique');
    t.strictSame(Object.keys(g).sort(), ['channels', 'offset', 'total_channels']);
  });

  t.test('GET /programs paging', async (t) => {
    let g = await guide(host, '?limit=2&offset=1');
    t.equal(g.total_channels, 6, 'total counts every matching channel, not the page');
    t.equal(g.offset, 1);
    t.strictSame(names(g.channels), ['No Guide Here', 'Télé Matin']);
    g = await guide(host, '?limit=2&offset=5');
    t.strictSame(names(g.channels), ['Sports Plus'], 'last, short page');
    t.equal(g.offset, 5);
    g = await guide(host, '?limit=3');
    t.strictSame(names(g.channels), ['BBC One', 'No Guide Here', 'Télé Matin']);
    t.strictSame(g.channels[0]!.programs.map((p) => p.title), ['A', 'B', 'C'], 'programmes on a partial page');
    g = await guide(host, '?offset=4');
    t.strictSame(names(g.channels), ['Kids Zone', 'Sports Plus'], 'offset alone: the rest');
    t.strictSame(g.channels[0]!.programs.map((p) => p.title), ['Cartoons']);
    g = await guide(host, '?offset=100');
    t.strictSame(g.channels, [], 'past the end: empty page');
    t.equal(g.total_channels, 6);
    t.equal(g.offset, 100);
    g = await guide(host, '?limit=-1');
    t.equal(g.channels.length, 6, 'limit=-1: all');
    g = await guide(host, '?category=news&limit=1');
    t.equal(g.total_channels, 2, 'total_channels counts the channels of the category');
    t.strictSame(names(g.channels), ['BBC One']);
    g = await guide(host, '?category=Public');
    t.strictSame(names(g.channels), ['Télé Matin', 'Public Access']);
    t.strictSame(g.channels[0]!.programs.map((p) => p.title), ['Journal']);
  });

  t.test('GET /programs from/to keeps the programmes overlapping the window', async (t) => {
    const titles = async (q: string) => Object.fromEntries((await guide(host, q)).channels.map((c) => [c.name, c.programs.map((p) => p.title)]));
    t.strictSame(await titles('?from=2024-01-01T11:00:00Z&to=2024-01-01T12:00:00Z'), {
      'BBC One': ['B'], 'No Guide Here': [], 'Télé Matin': ['Journal'], 'Public Access': [], 'Kids Zone': ['Cartoons'], 'Sports Plus': [],
    }, 'half-open: ends at from and starts at to are out, every channel still listed');
    t.strictSame((await titles('?from=2024-01-01T10:59:00Z&to=2024-01-01T12:00:01Z'))['BBC One'], ['A', 'B', 'C'], 'partial overlaps are in');
    t.strictSame((await titles('?from=2024-01-01T10:00:00Z'))['Sports Plus'], [], 'from alone');
    t.strictSame((await titles('?from=2024-01-01T10:00:00Z'))['BBC One'], ['A', 'B', 'C']);
    t.strictSame((await titles('?to=2024-01-01T10:00:00Z'))['Sports Plus'], ['Match'], 'to alone');
    t.strictSame((await titles('?to=2024-01-01T10:00:00Z'))['BBC One'], []);
    t.strictSame((await titles('?from=2024-01-01T12:15:00%2B01:00&to=2024-01-01T12:45:00%2B01:00'))['BBC One'], ['B'], 'offsets in from/to are honoured');
    const paged = await guide(host, '?limit=1&offset=2&from=2024-01-01T11:15:00Z&to=2024-01-01T11:20:00Z');
    t.strictSame(paged.channels.map((c) => [c.name, c.programs.map((p) => p.title)]), [['Télé Matin', ['Journal']]], 'window and paging together');
  });

  t.test('every success is a JSON body with exactly the spec\'s keys', async (t) => {
    const json = /^application\/json; charset=utf-8$/;
    const get = (url: string) => host.inject({ method: 'GET', url, headers: host.authHeaders });
    for (const [url, keys] of [
      ['/channels', ['channels']], ['/channels?category=News', ['channels']], ['/channels/search?q=bbc', ['channels']],
      ['/channel/categories', ['categories']], ['/programs', ['channels', 'offset', 'total_channels']],
      ['/programs?limit=2&offset=1', ['channels', 'offset', 'total_channels']],
    ] as const) {
      const res = await get(url);
      t.equal(res.statusCode, 200, `${url}: 200`);
      t.match(res.headers['content-type'], json, `${url}: JSON`);
      t.strictSame(Object.keys(res.json()).sort(), [...keys], `${url}: keys`);
    }
    const unknown = await get('/programs?category=Nothing');
    t.strictSame(unknown.json(), { channels: [], offset: 0, total_channels: 0 }, '/programs of an unknown category: none, and a total of 0');
    for (const method of ['POST', 'DELETE'] as const) {
      const res = await host.inject({ method, url: '/me/favorite', headers: host.authHeaders, payload: { channel_id: id('BBC One') } });
      t.equal(res.statusCode, 200, `${method} /me/favorite: 200`);
      t.match(res.headers['content-type'], json, `${method} /me/favorite: JSON`);
    }
  });

  t.test('GET /programs rejects bad parameters with 400', async (t) => {
    for (const q of ['limit=abc', 'offset=-5', 'limit=-7', 'limit=0', 'offset=abc', 'limit=1.5', 'from=notadate', 'to=yesterday',
      'from=2024-01-01T12:00:00Z&to=2024-01-01T11:00:00Z', 'from=2024-01-01T12:00:00Z&to=2024-01-01T12:00:00Z']) {
      expectError(t, await host.inject({ method: 'GET', url: `/programs?${q}`, headers: host.authHeaders }), 400, undefined, q);
    }
    const res = await host.inject({ method: 'GET', url: '/programs?limit=abc', headers: host.authHeaders });
    t.match(res.json().error, /limit/, 'the message names the field');
    const res2 = await host.inject({ method: 'GET', url: '/programs?from=2024-01-01T12:00:00Z&to=2024-01-01T11:00:00Z', headers: host.authHeaders });
    t.match(res2.json().error, /to/, 'the message names the field');
  });

  t.test('favorites', async (t) => {
    const fav = (method: 'POST' | 'DELETE', payload: unknown, token = host.adminToken) =>
      host.inject({ method, url: '/me/favorite', headers: bearer(token), payload: payload as Record<string, unknown> });
    const me = async (token = host.adminToken) => (await getJson(host, '/me', token)).body.user.favorites;
    const favorited = async (token = host.adminToken) => (await channels(host, '', token)).filter((c: ChannelView) => c.favorited).map((c) => c.name);
    const tele = id('Télé Matin');
    const bbc = id('BBC One');
    const sports = id('Sports Plus');

    t.strictSame(await me(), [], 'none at first');
    let res = await fav('POST', { channel_id: tele });
    t.equal(res.statusCode, 200);
    t.strictSame(res.json(), { favorites: [tele] });
    res = await fav('POST', { channel_id: tele });
    t.equal(res.statusCode, 200, 'adding again: 200');
    t.strictSame(res.json(), { favorites: [tele] }, 'idempotent');
    res = await fav('POST', { channel_id: bbc });
    t.strictSame(res.json(), { favorites: [bbc, tele].sort((a, b) => a - b) });
    t.strictSame(await me(), [bbc, tele].sort((a, b) => a - b), 'GET /me user.favorites');
    t.strictSame(await favorited(), ['BBC One', 'Télé Matin'], 'favorited: true on those channels only');
    const search = await getJson(host, '/channels/search?q=tele');
    t.equal(search.body.channels[0].favorited, true, 'search results carry favorited');

    res = await fav('DELETE', { channel_id: bbc });
    t.equal(res.statusCode, 200);
    t.strictSame(res.json(), { favorites: [tele] });
    res = await fav('DELETE', { channel_id: bbc });
    t.equal(res.statusCode, 200, 'removing again: 200');
    t.strictSame(res.json(), { favorites: [tele] }, 'idempotent');
    t.strictSame(await me(), [tele]);

    t.test('per user', async (t) => {
      t.strictSame(await me(viewerToken), [], 'the viewer has none of the admin favorites');
      t.strictSame(await favorited(viewerToken), [], 'no favorited channel for the viewer');
      const r = await fav('POST', { channel_id: sports }, viewerToken);
      t.strictSame(r.json(), { favorites: [sports] }, 'the reply lists only the caller\'s favorites');
      t.strictSame(await me(viewerToken), [sports]);
      t.strictSame(await favorited(viewerToken), ['Sports Plus']);
      t.strictSame(await me(), [tele], 'the admin\'s are unchanged');
      t.strictSame(await favorited(), ['Télé Matin']);
      const d = await fav('DELETE', { channel_id: tele }, viewerToken);
      t.strictSame(d.json(), { favorites: [sports] }, 'removing a channel the viewer never favorited');
      t.strictSame(await me(), [tele], 'does not touch the admin\'s');
      t.ok(viewerId > 0);
    });

    t.test('unknown channel → 404', async (t) => {
      expectError(t, await fav('POST', { channel_id: 999_999 }), 404, undefined, 'POST unknown');
      expectError(t, await fav('DELETE', { channel_id: 999_999 }), 404, undefined, 'DELETE unknown');
      t.strictSame(await me(), [tele], 'favorites unchanged');
    });

    t.test('bad bodies → 400', async (t) => {
      const bad: [string, unknown][] = [
        ['string "abc"', { channel_id: 'abc' }], ['numeric string "5"', { channel_id: String(tele) }], ['1.5', { channel_id: 1.5 }],
        ['missing', {}], ['null', { channel_id: null }], ['zero', { channel_id: 0 }], ['negative', { channel_id: -3 }],
        ['array', { channel_id: [tele] }], ['extra field', { channel_id: tele, other: 1 }], ['array body', [tele]],
      ];
      for (const method of ['POST', 'DELETE'] as const) {
        for (const [what, body] of bad) expectError(t, await fav(method, body), 400, undefined, `${method} ${what}`);
        expectError(t, await host.inject({ method, url: '/me/favorite', headers: { ...host.authHeaders, 'content-type': 'application/json' }, payload: '{"channel_id": ' }), 400, undefined, `${method} malformed JSON`);
        expectError(t, await host.inject({ method, url: '/me/favorite', headers: { ...host.authHeaders, 'content-type': 'application/json' }, payload: '' }), 400, undefined, `${method} empty JSON body`);
      }
      const r = await fav('POST', { channel_id: 'abc' });
      t.match(r.json().error, /channel_id/, 'the message names the field');
      t.strictSame(await me(), [tele], 'favorites unchanged by bad requests');
    });
  });

  t.test('GET /api/livetv/sources is for admins', async (t) => {
    const res = await getJson(host, '/api/livetv/sources');
    t.equal(res.status, 200);
    t.match(res.body.tuners, [{ name: 'Test IPTV', channels: 6, maxStreams: 1 }]);
    t.equal(res.body.guides.length, 1);
    t.match(res.body.guides[0], { name: 'guide.xml', stats: { programmes: 6 } });
    expectError(t, await host.inject({ method: 'GET', url: '/api/livetv/sources', headers: bearer(viewerToken) }), 403, undefined, 'non-admin');
  });

  t.test('no token → 401 on every route; a bad token too', async (t) => {
    const requests: { method: 'GET' | 'POST' | 'DELETE'; url: string; payload?: Record<string, unknown> }[] = [
      { method: 'GET', url: '/channels' },
      { method: 'GET', url: '/channels?category=News' },
      { method: 'GET', url: '/channels/search?q=tele' },
      { method: 'GET', url: '/channels/search' },
      { method: 'GET', url: '/channel/categories' },
      { method: 'GET', url: '/programs' },
      { method: 'GET', url: '/programs?limit=abc' },
      { method: 'POST', url: '/me/favorite', payload: { channel_id: id('BBC One') } },
      { method: 'DELETE', url: '/me/favorite', payload: { channel_id: id('Télé Matin') } },
      { method: 'GET', url: '/api/livetv/sources' },
    ];
    for (const r of requests) {
      expectError(t, await host.inject(r), 401, undefined, `${r.method} ${r.url} without token`);
      expectError(t, await host.inject({ ...r, headers: { authorization: 'Bearer not-a-token' } }), 401, undefined, `${r.method} ${r.url} bad token`);
    }
    t.strictSame((await getJson(host, '/me')).body.user.favorites, [id('Télé Matin')], 'unauthenticated calls changed nothing');
  });
});

t.test('a channel without a tvg-logo takes the icon of its guide channel', async (t) => {
  const dir = await tempDir(t);
  const playlist = m3u([
    { name: 'No Logo', tvgId: 'nologo.tv', chno: '1', url: 'http://streams.invalid/1' },
    { name: 'Own Logo', tvgId: 'own.tv', chno: '2', logo: 'http://logos.invalid/own.png', url: 'http://streams.invalid/2' },
    { name: 'Bare Icon', tvgId: 'bare.tv', chno: '3', url: 'http://streams.invalid/3' },
    { name: 'By Name', chno: '4', url: 'http://streams.invalid/4' },
    { name: 'No Guide', chno: '5', url: 'http://streams.invalid/5' },
  ]);
  const guideXml = (nologoIcon: string) => xmltv([
    { id: 'nologo.tv', names: ['Something Else'], icon: nologoIcon },
    { id: 'own.tv', names: ['Own Logo'], icon: 'https://guide.invalid/own.png' },
    { id: 'bare.tv', names: ['Bare Icon'], icon: 'Logo_UK_RT_2667' },
    { id: 'byname.tv', names: ['By Name'], icon: 'https://guide.invalid/byname.png' },
  ], []);
  const guideFile = await write(dir, 'guide.xml', guideXml('https://guide.invalid/nologo.png'));
  const host = await startHost(t, {
    playlists: [{ name: 'Logos', url: await write(dir, 'logos.m3u', playlist) }],
    guides: [{ name: 'Icons', url: guideFile }],
  });
  const logos = async (path = '') => Object.fromEntries((await channels(host, path)).map((c) => [c.name, c.logo]));
  const expected = {
    'No Logo': 'https://guide.invalid/nologo.png', 'Own Logo': 'http://logos.invalid/own.png', 'Bare Icon': null,
    'By Name': 'https://guide.invalid/byname.png', 'No Guide': null,
  };
  t.strictSame(await logos(), expected, "the guide's icon when the playlist has no logo; the playlist's own first; web URLs only");
  const found = (await getJson(host, '/channels/search?q=no')).body.channels as ChannelView[];
  t.strictSame(Object.fromEntries(found.map((c) => [c.name, c.logo])), { 'No Logo': 'https://guide.invalid/nologo.png', 'No Guide': null }, 'search results too');
  const g = await guide(host);
  t.strictSame(Object.fromEntries(g.channels.map((c: GuideEntry) => [c.name, c.logo])), expected, '/programs too');

  await writeFile(guideFile, guideXml('https://guide.invalid/nologo-v2.png'));
  await refresh(host);
  t.equal((await logos())['No Logo'], 'https://guide.invalid/nologo-v2.png', 'a guide import that changes the icon shows at once');
});

t.test('GET /channels: a large list is sent gzipped to clients that take it, with the caller\'s favorites', async (t) => {
  const dir = await tempDir(t);
  const entries = Array.from({ length: 300 }, (_, i) => ({ name: `Channel ${i}`, tvgId: `c${i}.tv`, chno: String(i + 1), group: 'News', url: `http://streams.invalid/${i}` }));
  const host = await startHost(t, { playlists: [{ name: 'Big', url: await write(dir, 'big.m3u', m3u(entries)) }] });
  await host.createUser('viewer', 'viewer-password');
  const viewer = await host.login('viewer', 'viewer-password');
  const get = (headers: Record<string, string>, token = host.adminToken) =>
    host.inject({ method: 'GET', url: '/channels', headers: { ...bearer(token), ...headers } });

  const plain = await get({});
  t.equal(plain.headers['content-encoding'], undefined, 'no Accept-Encoding: sent as it is');
  t.equal(plain.headers.vary, 'accept-encoding');
  t.equal(plain.json().channels.length, 300);
  const zipped = await get({ 'accept-encoding': 'gzip, deflate, br' });
  t.equal(zipped.headers['content-encoding'], 'gzip');
  t.equal(zipped.headers.vary, 'accept-encoding');
  t.equal(zipped.headers['content-type'], 'application/json; charset=utf-8', 'gzipped JSON is still JSON');
  t.ok(zipped.rawPayload.length * 4 < plain.rawPayload.length, `much smaller (${zipped.rawPayload.length} bytes against ${plain.rawPayload.length})`);
  t.equal(gunzipSync(zipped.rawPayload).toString(), plain.body, 'the same JSON');

  const fav = plain.json().channels[7].id as number;
  t.equal((await host.inject({ method: 'POST', url: '/me/favorite', headers: bearer(host.adminToken), payload: { channel_id: fav } })).statusCode, 200);
  const favorited = (res: { rawPayload: Buffer }) => (JSON.parse(gunzipSync(res.rawPayload).toString()).channels as ChannelView[]).filter((c) => c.favorited).map((c) => c.id);
  t.strictSame(favorited(await get({ 'accept-encoding': 'gzip' })), [fav], 'the caller\'s favorite, in the compressed list too');
  t.strictSame(favorited(await get({ 'accept-encoding': 'gzip' }, viewer)), [], 'another user: none of it');
  t.strictSame(favorited(await get({ 'accept-encoding': 'gzip' })), [fav], 'and the first user\'s again');
  for (const refused of ['identity', 'gzip;q=0', 'gzip;q=0, *', 'br']) {
    t.equal((await get({ 'accept-encoding': refused })).headers['content-encoding'], undefined, `Accept-Encoding: ${refused}: sent as it is`);
  }
  t.equal((await get({ 'accept-encoding': '*' })).headers['content-encoding'], 'gzip', 'Accept-Encoding: * takes gzip');
});

t.test('GET /programs: a large guide is written in pieces as the client reads, gzipped for clients that take it', async (t) => {
  const dir = await tempDir(t);
  const COUNT = 250; // above the 100 channels a page is made at once
  const entries = Array.from({ length: COUNT }, (_, i) => ({ name: `Channel ${i}`, tvgId: `c${i}.tv`, chno: String(i + 1), group: i % 2 ? 'Odd' : 'Even', url: `http://streams.invalid/${i}` }));
  // Every 7th channel has no guide data; the others three programmes each, on the hour.
  const guided = entries.filter((_, i) => i % 7 !== 0);
  const programmes = guided.flatMap((e) => [10, 11, 12].map((h) => ({
    channel: e.tvgId, start: xt(`2024-01-01T${h}:00:00Z`), stop: xt(`2024-01-01T${h + 1}:00:00Z`), title: `${e.name} at ${h}`,
  })));
  const host = await startHost(t, {
    playlists: [{ name: 'Big', url: await write(dir, 'big.m3u', m3u(entries)) }],
    guides: [{ url: await write(dir, 'big.xml', xmltv(guided.map((e) => ({ id: e.tvgId, names: [e.name] })), programmes)) }],
    listen: true,
  });
  // Real HTTP: the headers and bytes a client gets, whatever inject would make of a stream.
  const get = (path: string, headers: Record<string, string> = {}) => new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
    http.get(`${host.url}${path}`, { headers: { ...bearer(host.adminToken), ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c)).on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) })).on('error', reject);
    }).on('error', reject);
  });

  const plain = await get('/programs');
  t.equal(plain.status, 200);
  t.equal(plain.headers['transfer-encoding'], 'chunked', 'written in pieces');
  t.equal(plain.headers['content-type'], 'application/json; charset=utf-8');
  t.equal(plain.headers['content-length'], undefined);
  t.equal(plain.headers['content-encoding'], undefined, 'no Accept-Encoding: not compressed');
  t.equal(plain.headers.vary, 'accept-encoding');
  const all = JSON.parse(plain.body.toString()) as { total_channels: number; offset: number; channels: GuideEntry[] };
  t.equal(all.total_channels, COUNT);
  t.equal(all.offset, 0);
  t.strictSame(all.channels.map((c) => c.name), entries.map((e) => e.name), 'every channel, in number order');
  const wrong = all.channels.filter((c, i) => JSON.stringify(c.programs.map((p) => p.title)) !== JSON.stringify(i % 7 ? [10, 11, 12].map((h) => `${c.name} at ${h}`) : []));
  t.strictSame(wrong.map((c) => c.name), [], 'each channel with its own programmes, none for those without guide data');

  // The pieces say what whole pages say: the same channels, byte for byte.
  let paged = '';
  for (let offset = 0; offset < COUNT; offset += 100) {
    const page = await get(`/programs?limit=100&offset=${offset}`, { 'accept-encoding': 'gzip' });
    t.ok(page.headers['content-length'], `a page of ${Math.min(100, COUNT - offset)} channels is made at once`);
    t.equal(page.headers['content-encoding'], undefined, 'and sent as it is');
    const body = page.body.toString();
    paged += (offset ? ',' : '') + body.slice(body.indexOf('[') + 1, -2);
  }
  t.equal(paged, plain.body.toString().slice(plain.body.indexOf('[') + 1, -2), 'the streamed channels are those of the pages');

  const zipped = await get('/programs', { 'accept-encoding': 'gzip, deflate' });
  t.equal(zipped.headers['content-encoding'], 'gzip');
  t.ok(zipped.body.length * 4 < plain.body.length, `much smaller (${zipped.body.length} bytes against ${plain.body.length})`);
  t.ok(gunzipSync(zipped.body).equals(plain.body), 'the same JSON once decoded');

  const windowed = JSON.parse((await get(`/programs?category=odd&offset=11&from=${encodeURIComponent('2024-01-01T11:30:00Z')}&to=${encodeURIComponent('2024-01-01T12:30:00Z')}`)).body.toString());
  t.equal(windowed.total_channels, COUNT / 2, 'category counts before paging');
  t.equal(windowed.channels.length, COUNT / 2 - 11);
  t.strictSame(windowed.channels[0].programs.map((p: ProgramView) => p.title), ['Channel 23 at 11', 'Channel 23 at 12'], 'the window keeps what overlaps it');

  // A client that goes away mid-guide: the server stops writing and serves the next one.
  await new Promise<void>((resolve, reject) => {
    const req = http.get(`${host.url}/programs`, { headers: bearer(host.adminToken) }, (res) => {
      res.once('data', () => { req.destroy(); resolve(); });
    });
    req.on('error', (err) => ((err as NodeJS.ErrnoException).code === 'ECONNRESET' ? resolve() : reject(err)));
  });
  const again = await get('/programs?limit=1');
  t.equal(again.status, 200);
  t.equal(JSON.parse(again.body.toString()).channels[0].programs.length, 0, 'channel 0 has no guide data');
});
