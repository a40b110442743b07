/**
 * What a playlist import stores (a row per channel): nothing new for an
 * identical playlist, only the channels that changed otherwise; ids kept, hidden
 * channels and how long they are kept; keys for tvg-ids a playlist repeats and
 * duplicates; a tuner yielding an async iterable (which may use the database
 * meanwhile), and an import racing another one that changed the channels.
 */
import t from 'tap';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createTestHost, type TestHost } from '../../../sdk/testing.js';
import { channels, getJson, m3u, refresh, startHost, tempDir, write, type PlaylistEntry } from './fixtures.js';

/** A channel as stored (livetv_tuner_channels). */
interface Row {
  id: number; key: string; present: number; assigned_number: string | null;
  name: string; number: string | null; tvg_id: string | null; tvg_name: string | null; logo: string | null; groups: string; data: string;
  /** When it was last written. */
  updated_at: number;
}

/** A tuner's channels as stored, by id (the order the tuner first listed them in). */
async function rows(host: TestHost, tuner = 'm3u:IPTV'): Promise<Row[]> {
  const stored = await host.host.knex('livetv_tuner_channels').where({ tuner_id: tuner }).orderBy('id');
  return stored.map((r) => ({
    id: r.id, key: r.key, present: r.hidden_at === null ? 1 : 0, assigned_number: r.assigned_number, name: r.name, number: r.number,
    tvg_id: r.tvg_id, tvg_name: r.tvg_name, logo: r.logo, groups: r.groups, data: r.data, updated_at: Number(r.updated_at),
  }));
}
const version = async (host: TestHost) => Number((await host.host.knex('livetv_state').where({ key: 'version' }).first('value'))!.value);
const byKey = (list: Row[]) => Object.fromEntries(list.map((r) => [r.key, r]));
const tick = () => new Promise((r) => setTimeout(r, 5)); // the next import's stamp is later

const url = (n: string) => `http://streams.invalid/${n}`;
const A: PlaylistEntry = { name: 'Alpha', tvgId: 'alpha.tv', chno: '1', group: 'News', logo: 'http://logos.invalid/a.png', url: url('a') };
const B: PlaylistEntry = { name: 'Bravo', tvgId: 'bravo.tv', chno: '2', group: 'News', url: url('b') };
const C: PlaylistEntry = { name: 'Charlie', chno: '3', group: 'Music', logo: 'http://logos.invalid/c.png', url: url('c') };
const D: PlaylistEntry = { name: 'Delta', tvgId: 'delta.tv', group: 'Music', url: url('d') };
const E: PlaylistEntry = { name: 'Echo', url: url('e') };
const F: PlaylistEntry = { name: 'Foxtrot', tvgId: 'foxtrot.tv', chno: '6', url: url('f') };

t.test('an identical playlist imported again writes nothing and keeps everything', async (t) => {
  const dir = await tempDir(t);
  const file = await write(dir, 'tv.m3u', m3u([A, B, C, D, E, F]));
  const host = await startHost(t, { playlists: [{ name: 'IPTV', url: file }] });
  const before = await rows(host);
  const listed = await channels(host);
  const v = await version(host);
  t.equal(before.length, 6);

  await tick();
  const lines = await refresh(host);
  t.match(lines.join('\n'), /tuner m3u:IPTV: 6 channels, 0 new, 0 gone/);
  t.strictSame(await rows(host), before, 'every channel as it was (updated_at too: no row was written)');
  t.equal(await version(host), v, 'no new version: no process reloads its channels');
  t.strictSame(await channels(host), listed, 'GET /channels the same');
});

t.test('a refresh where some channels changed: ids kept, new ones added, gone ones hidden', async (t) => {
  const dir = await tempDir(t);
  const file = await write(dir, 'tv.m3u', m3u([A, B, C, D, E, F]));
  const host = await startHost(t, { playlists: [{ name: 'IPTV', url: file }] });
  const before = byKey(await rows(host));
  const v = await version(host);

  await tick();
  const G: PlaylistEntry = { name: 'Golf', tvgId: 'golf.tv', chno: '9', url: url('g') };
  // Bravo renamed, Charlie's logo and Delta's group changed, Echo gone (so Foxtrot is one place
  // higher), Golf new; Alpha and Foxtrot as they were.
  await write(dir, 'tv.m3u', m3u([A, { ...B, name: 'Bravo Two' }, { ...C, logo: 'http://logos.invalid/c2.png' }, { ...D, group: 'Sport' }, F, G]));
  const lines = await refresh(host);
  t.match(lines.join('\n'), /tuner m3u:IPTV: 6 channels, 1 new, 1 gone/);
  const after = byKey(await rows(host));
  t.equal(await version(host), v + 1, 'one new version');

  const content = ({ id, key, name, number, tvg_id, tvg_name, logo, groups, data, assigned_number }: Row) => ({ id, key, name, number, tvg_id, tvg_name, logo, groups, data, assigned_number });
  t.strictSame(content(after['tvg:alpha.tv']!), content(before['tvg:alpha.tv']!), 'Alpha as it was');
  t.strictSame(content(after['tvg:foxtrot.tv']!), content(before['tvg:foxtrot.tv']!), 'Foxtrot as it was');
  const unchanged = ['tvg:alpha.tv', 'tvg:foxtrot.tv'];
  t.strictSame(unchanged.map((k) => after[k]!.updated_at), unchanged.map((k) => before[k]!.updated_at), 'and neither written');
  t.match(after['url:http://streams.invalid/e'], { id: before['url:http://streams.invalid/e']!.id, present: 0 }, 'Echo hidden, not deleted');
  t.equal(after['tvg:golf.tv']!.id, Math.max(...Object.values(before).map((r) => r.id)) + 1, 'Golf: the next id');
  for (const key of Object.keys(before)) t.equal(after[key]!.id, before[key]!.id, `${key} keeps its id`);
  t.equal(after['tvg:bravo.tv']!.name, 'Bravo Two');
  t.equal(after['url:http://streams.invalid/c']!.logo, 'http://logos.invalid/c2.png');
  t.equal(after['tvg:delta.tv']!.groups, '["Sport"]');
  t.equal(after['tvg:delta.tv']!.assigned_number, before['tvg:delta.tv']!.assigned_number, 'Delta keeps its assigned number');

  const listed = await channels(host);
  t.strictSame(listed.map((c) => c.name), ['Alpha', 'Bravo Two', 'Charlie', 'Foxtrot', 'Delta', 'Golf'], 'GET /channels shows the new state, in number order');
  t.equal(listed.find((c) => c.name === 'Delta')!.category, 'Sport');
  t.equal(listed.find((c) => c.name === 'Charlie')!.logo, 'http://logos.invalid/c2.png');
  t.strictSame((await getJson(host, '/channels/search?q=two')).body.channels.map((c: { name: string }) => c.name), ['Bravo Two'], 'search finds the new name');

  // Echo comes back, unchanged: shown again, with its id, the others as they were.
  await tick();
  await write(dir, 'tv.m3u', m3u([A, { ...B, name: 'Bravo Two' }, { ...C, logo: 'http://logos.invalid/c2.png' }, { ...D, group: 'Sport' }, F, G, E]));
  t.match((await refresh(host)).join('\n'), /tuner m3u:IPTV: 7 channels, 0 new, 0 gone/);
  const back = byKey(await rows(host));
  for (const key of Object.keys(after)) if (key !== 'url:http://streams.invalid/e') t.strictSame(content(back[key]!), content(after[key]!), `${key} as it was`);
  t.equal(back['url:http://streams.invalid/e']!.present, 1);
  t.equal(back['url:http://streams.invalid/e']!.id, before['url:http://streams.invalid/e']!.id, 'with its old id');
});

t.test('a channel number beyond counting (1e308) is kept as given; unnumbered channels still get the next ones', async (t) => {
  const dir = await tempDir(t);
  // Numbers are assigned above the largest in use: above 1e308 there is no next integer (an import hung on this).
  const file = await write(dir, 'tv.m3u', m3u([{ name: 'Huge', tvgId: 'huge.tv', chno: '1e308', url: url('huge') },
    { name: 'Two', chno: '2', url: url('two') }, E, { name: 'Golf', url: url('g') }]));
  const host = await startHost(t, { playlists: [{ name: 'IPTV', url: file }] });
  t.strictSame((await channels(host)).map((c) => [c.name, c.tvg_chno]), [['Two', '2'], ['Echo', '3'], ['Golf', '4'], ['Huge', '1e308']]);

  // Just below a billion: the numbers assigned pass over the given ones beyond it.
  await write(dir, 'tv.m3u', m3u([{ name: 'Edge', chno: '999999999', url: url('edge') }, { name: 'Billion', chno: '1000000000', url: url('b0') },
    { name: 'Billion one', chno: '1000000001', url: url('b1') }, { name: 'Unnumbered', url: url('u') }]));
  await refresh(host);
  t.strictSame((await channels(host)).map((c) => [c.name, c.tvg_chno]),
    [['Edge', '999999999'], ['Billion', '1000000000'], ['Billion one', '1000000001'], ['Unnumbered', '1000000002']]);
});

t.test('a hidden channel keeps its id for keepHiddenChannels, a favorited one until it comes back', async (t) => {
  const dir = await tempDir(t);
  let now = Date.parse('2026-01-01T00:00:00Z');
  const day = 86_400_000;
  const file = await write(dir, 'tv.m3u', m3u([A, B, C]));
  const host = await startHost(t, { playlists: [{ name: 'IPTV', url: file }], clock: { now: () => now }, liveTv: { keepHiddenChannels: '2d' } });
  const first = byKey(await rows(host));
  const id = (key: string) => first[key]!.id;
  const favorite = await host.inject({ method: 'POST', url: '/me/favorite', headers: host.authHeaders, payload: { channel_id: id('tvg:bravo.tv') } });
  t.equal(favorite.statusCode, 200);

  await write(dir, 'tv.m3u', m3u([A]));
  t.match((await refresh(host)).join('\n'), /1 channels, 0 new, 2 gone/);
  now += day;
  await refresh(host);
  t.strictSame((await rows(host)).map((r) => [r.key, r.present]), [['tvg:alpha.tv', 1], ['tvg:bravo.tv', 0], ['url:http://streams.invalid/c', 0]], 'a day later both still kept, hidden');

  now += 2 * day;
  await refresh(host);
  t.strictSame((await rows(host)).map((r) => [r.key, r.present]), [['tvg:alpha.tv', 1], ['tvg:bravo.tv', 0]], 'three days after: Charlie forgotten, Bravo (a favorite) kept');

  await write(dir, 'tv.m3u', m3u([A, B, C]));
  t.match((await refresh(host)).join('\n'), /3 channels, 1 new, 0 gone/);
  const back = byKey(await rows(host));
  t.equal(back['tvg:bravo.tv']!.id, id('tvg:bravo.tv'), 'Bravo back with its id');
  t.ok(back['url:http://streams.invalid/c']!.id > id('url:http://streams.invalid/c'), 'Charlie back as a new channel, with a new id');
  t.strictSame((await getJson(host, '/me')).body.user.favorites, [id('tvg:bravo.tv')], 'and Bravo still a favorite');
});

t.test('tvg-ids a playlist repeats are keyed with their URL; exact repeats are duplicates, counted', async (t) => {
  const dir = await tempDir(t);
  const X1: PlaylistEntry = { name: 'X HD', tvgId: 'x.tv', chno: '1', url: url('x-hd') };
  const X2: PlaylistEntry = { name: 'X SD', tvgId: 'x.tv', chno: '2', url: url('x-sd') };
  const Y: PlaylistEntry = { name: 'Y', tvgId: 'y.tv', chno: '3', url: url('y') };
  const Z: PlaylistEntry = { name: 'Z', chno: '4', url: url('z') };
  // X1 first, its repeat last: whether x.tv repeats is known only at the end of the list.
  const file = await write(dir, 'tv.m3u', m3u([X1, Y, { ...Y, name: 'Y again' }, Z, { ...Z, name: 'Z again' }, X2]));
  const host = await startHost(t, { playlists: [{ name: 'IPTV', url: file }] });
  const first = await rows(host);
  t.strictSame(first.map((r) => [r.key, r.name]), [
    ['tvg:x.tv|http://streams.invalid/x-hd', 'X HD'],
    ['tvg:y.tv|http://streams.invalid/y', 'Y'],
    ['url:http://streams.invalid/z', 'Z'],
    ['tvg:x.tv|http://streams.invalid/x-sd', 'X SD'],
  ], 'x.tv with each URL; Y listed twice at one URL is one channel (the first), so is Z');
  const job = (await getJson(host, '/api/jobs')).body.jobs.find((j: { key: string }) => j.key === 'livetv:tuner:m3u:IPTV');
  t.match(job.message, /4 channels \(4 new, 0 gone, 2 duplicates skipped\)/, 'the duplicates are counted');

  // x.tv and y.tv now listed once: keyed by their tvg-ids alone (new channels); the others leave.
  await write(dir, 'tv.m3u', m3u([X1, Y, Z]));
  t.match((await refresh(host)).join('\n'), /tuner m3u:IPTV: 3 channels, 2 new, 3 gone/);
  const second = byKey(await rows(host));
  t.equal(second['tvg:x.tv']!.present, 1);
  t.equal(second['tvg:x.tv|http://streams.invalid/x-hd']!.present, 0);
  t.equal(second['tvg:x.tv|http://streams.invalid/x-sd']!.present, 0);
  t.equal(second['tvg:y.tv|http://streams.invalid/y']!.present, 0);
  t.equal(second['tvg:y.tv']!.present, 1);
  t.equal(second['url:http://streams.invalid/z']!.id, first[2]!.id, 'Z keeps its id');
  t.strictSame((await channels(host)).map((c) => c.name), ['X HD', 'Y', 'Z']);
});

/** A tuner plugin (plain JS, as a third party ships one) whose channels come from an async generator. */
async function iterableTunerPlugin(dir: string): Promise<string> {
  const sdk = path.resolve(__dirname, '../../../sdk/index.js');
  const pluginDir = path.join(dir, 'iterable-tuner');
  await mkdir(pluginDir, { recursive: true });
  await writeFile(path.join(pluginDir, 'index.js'), `
    const sdk = require(${JSON.stringify(sdk)});
    // The test sets globalThis.__iterableTuner = { channels: [...], midway(db) {...} }.
    module.exports = sdk.definePlugin({
      id: 'iterable-tuner', version: '1.0.0', host: '^1', dependsOn: ['live-tv'],
      register(env) {
        env.registerInit({
          deps: { tuners: sdk.tunersExtensionPoint, db: sdk.coreServices.database },
          async init({ tuners, db }) {
            tuners.addTuner({
              id: 'iter', name: 'Iterable', maxStreams: 1,
              async *listChannels() {
                const { channels, midway } = globalThis.__iterableTuner;
                for (let i = 0; i < channels.length; i++) {
                  if (i === Math.floor(channels.length / 2) && midway) await midway(db);
                  yield i % 3 ? channels[i] : [channels[i]]; // one at a time, or several at once as an array
                }
              },
              async openStream() { return { inputArgs: ['-i', 'testsrc'] }; },
            });
          },
        });
      },
    });
  `);
  return pluginDir;
}

t.test('a tuner yielding an async iterable, which uses the database meanwhile, while another import changes the channels', async (t) => {
  const dir = await tempDir(t);
  const plugin = await iterableTunerPlugin(dir);
  const channel = (n: number, name = `Channel ${n}`) => ({ key: `k${n}`, name, number: String(n), groups: ['G'], data: { n } });
  const state = { channels: [1, 2, 3, 4].map((n) => channel(n)), midway: undefined as undefined | ((db: TestHost['host']['knex']) => Promise<void>) };
  (globalThis as { __iterableTuner?: unknown }).__iterableTuner = state;
  const host = await createTestHost({ plugins: { 'live-tv': { initialImport: 'await' }, [plugin]: {} } });
  t.teardown(() => host.close());
  t.strictSame((await channels(host)).map((c) => c.name), ['Channel 1', 'Channel 2', 'Channel 3', 'Channel 4']);
  const ids = Object.fromEntries((await rows(host, 'iter')).map((r) => [r.key, r.id]));

  // Midway through the list, "another import" (as the CLI's would be, in another process) changes
  // a row of this tuner behind the snapshot's back and moves the version on. The tuner's own
  // database query must not wait for the import (it reads its list outside the transaction).
  state.channels = [1, 2, 3, 4, 5].map((n) => channel(n));
  state.midway = async (db) => {
    await db('livetv_tuner_channels').where({ tuner_id: 'iter', key: 'k2' }).update({ name: 'Changed Elsewhere' });
    await db('livetv_state').where({ key: 'version' }).increment('value', 1);
  };
  t.match((await refresh(host)).join('\n'), /tuner iter: 5 channels, 1 new, 0 gone/);
  const after = byKey(await rows(host, 'iter'));
  t.equal(after.k2!.name, 'Channel 2', 'the channel changed meanwhile is written back as the tuner lists it');
  for (const key of ['k1', 'k2', 'k3', 'k4']) t.equal(after[key]!.id, ids[key], `${key} keeps its id`);
  t.strictSame((await channels(host)).map((c) => c.name), ['Channel 1', 'Channel 2', 'Channel 3', 'Channel 4', 'Channel 5'], 'the channels reloaded, not a stale snapshot');
});

t.test('a long playlist (more channels than the import copies at once): every channel stored and shown as listed', async (t) => {
  const dir = await tempDir(t);
  // 4,500 entries (more than one statement's worth): names in Latin, Cyrillic and Greek script,
  // tvg-names equal to the name, different or absent, and a tvg-id listed at the start and again at the end.
  const n = 4500;
  const entries: PlaylistEntry[] = [];
  for (let i = 0; i < n; i++) {
    const name = i % 3 === 0 ? `Канал ${i}` : i % 3 === 1 ? `Channel ${i}` : `Κανάλι ${i} ñ`;
    entries.push({
      name, url: url(`s${i}`), tvgId: i % 4 === 0 ? undefined : `c${i}.tv`, chno: i % 5 === 0 ? undefined : String(i + 1),
      tvgName: i % 2 === 0 ? name : i % 7 === 0 ? undefined : `${name} (tvg)`, logo: i % 6 === 0 ? undefined : `http://logos.invalid/${i}.png`,
      group: i % 2 ? 'News' : 'Music',
    });
  }
  entries[n - 1] = { ...entries[n - 1]!, tvgId: 'c1.tv' }; // c1.tv repeats: both keyed with their URLs
  const file = await write(dir, 'tv.m3u', m3u(entries));
  const host = await startHost(t, { playlists: [{ name: 'IPTV', url: file }] });
  const stored = (await rows(host)).map(({ key, name, tvg_id, tvg_name, logo, groups, data, number, present }) => ({ key, name, tvg_id, tvg_name, logo, groups, data, number, present }));
  t.equal(stored.length, n);
  const expected = entries.map((e, i) => ({
    key: e.tvgId === undefined ? `url:${e.url}` : i === 1 || i === n - 1 ? `tvg:${e.tvgId}|${e.url}` : `tvg:${e.tvgId}`,
    name: e.name, tvg_id: e.tvgId ?? null, tvg_name: e.tvgName ?? null, logo: e.logo ?? null, groups: JSON.stringify([e.group]),
    data: JSON.stringify({ url: e.url }), number: e.chno ?? null, present: 1,
  }));
  t.strictSame(stored, expected, 'each channel as listed');

  const byName = new Map((await channels(host)).map((c) => [c.name, c]));
  t.equal(byName.size, n);
  t.ok(entries.every((e) => byName.get(e.name)?.logo === (e.logo ?? null) || (e.logo === undefined && !byName.get(e.name)?.logo)), 'GET /channels: every name and logo');

  const before = await rows(host);
  await tick();
  t.match((await refresh(host)).join('\n'), new RegExp(`tuner m3u:IPTV: ${n} channels, 0 new, 0 gone`));
  t.strictSame(await rows(host), before, 'the same playlist again: no row written');

  // One channel renamed near the start and one near the end: only those rows are written.
  await tick();
  entries[500] = { ...entries[500]!, name: 'Renamed' };
  entries[4450] = { ...entries[4450]!, name: 'Renamed too' };
  await write(dir, 'tv.m3u', m3u(entries));
  t.match((await refresh(host)).join('\n'), new RegExp(`tuner m3u:IPTV: ${n} channels, 0 new, 0 gone`));
  const after = await rows(host);
  t.strictSame(after.filter((r, i) => r.updated_at > before[i]!.updated_at).map((r) => r.name), ['Renamed', 'Renamed too'], 'only the two renamed channels written');
  t.strictSame(after.filter((r) => !r.name.startsWith('Renamed')), before.filter((r, i) => i !== 500 && i !== 4450), 'the others as they were');
  t.ok(byName.has(entries[0]!.name) && (await channels(host)).some((c) => c.name === 'Renamed'), 'GET /channels shows the new name');
});

t.test('channels are listed by number: as numbers, then by number text, name and id; unnumbered by what is assigned', async (t) => {
  const dir = await tempDir(t);
  const entry = (name: string, chno?: string): PlaylistEntry => ({ name, chno, url: url(name) });
  // Given in no particular order: decimals, a number written twice ("5" and "05"), two channels
  // on one number, numbers that are not numbers ("BS101", "A1"), and one without a number.
  const file = await write(dir, 'tv.m3u', m3u([
    entry('Ten', '10'), entry('Five B', '5'), entry('BS', 'BS101'), entry('Two point one', '2.1'), entry('Zero five', '05'),
    entry('Five A', '5'), entry('Two', '2'), entry('A one', 'A1'), entry('Unnumbered'), entry('Two point ten', '2.10'), entry('Twenty-two', '22'),
  ]));
  const host = await startHost(t, { playlists: [{ name: 'IPTV', url: file }] });
  const listed = await channels(host);
  t.strictSame(listed.map((c) => `${c.tvg_chno} ${c.name}`), [
    '2 Two', '2.1 Two point one', '2.10 Two point ten', '05 Zero five', '5 Five A', '5 Five B', '10 Ten', '22 Twenty-two',
    '23 Unnumbered', 'A1 A one', 'BS101 BS',
  ]);
});
