/**
 * Series rules through the API with a real core (in process), a real database and a generated
 * 7-day guide, on a clock the test sets (a week in 2030): episodes recorded once across channels
 * and airings, cancelled airings staying skipped, conflicts moved to another airing or marked,
 * keep limits deleting files, rules surviving a restart, bad rules and other users' rules refused.
 * Nothing records here: every airing is hours ahead of the clock.
 */
import t from 'tap';
import path from 'node:path';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { createTestHost, type TestHost } from '../../../sdk/testing.js';
import { expectError } from '../../helpers/http.js';
import { closedPort, m3u, tempDir, write, xmltv, xt, type GuideProgrammeDef } from '../live-tv/fixtures.js';

process.env.TZ = 'UTC'; // rule days and hours are in the server's time zone
const HOUR = 3600_000;
const DAY = 24 * HOUR;
/** Monday 7 January 2030, 00:00 UTC. */
const MONDAY = Date.UTC(2030, 0, 7);
const at = (day: number, hour: number) => MONDAY + day * DAY + hour * HOUR;
/** The rule weekday (0 = Sunday) of day `d` of the week. */
const weekday = (d: number) => (d + 1) % 7;

/** The week's guide: a series airing new, then again elsewhere, and a few shows made to collide on a one-stream tuner. */
function weekGuide(): string {
  const programmes: GuideProgrammeDef[] = [];
  const add = (channel: string, start: number, title: string, inner = '') => programmes.push({
    channel, start: xt(new Date(start).toISOString()), stop: xt(new Date(start + HOUR).toISOString()),
    titlesXml: `<title>${title}</title>${inner}`,
  });
  for (let d = 0; d < 7; d++) {
    const ep = `<sub-title>Case ${d + 1}</sub-title><episode-num system="xmltv_ns">0.${d}.</episode-num>`;
    add('c1', at(d, 20), 'Acme Mystery', `${ep}<new/>`);              // first showing
    add('c3', at(d, 23), 'ACME mystery', ep);                          // same night elsewhere, unmarked
    add('c2', at(d + 1, 12), 'Acme Mystery', `${ep}<previously-shown/>`); // repeat next day
    add('s1', at(d, 18), 'Alpha', `<sub-title>Alpha ${d}</sub-title>`);
    add('s2', at(d, 18), 'Beta', `<sub-title>Beta ${d}</sub-title>`);
    add('s2', at(d, 22), 'Beta', `<sub-title>Beta ${d}</sub-title><previously-shown/>`);
    add('s1', at(d, 15), 'Gamma', `<sub-title>Gamma ${d}</sub-title>`);
    add('s2', at(d, 15), 'Delta', `<sub-title>Delta ${d}</sub-title>`);
  }
  return xmltv(['c1', 'c2', 'c3', 's1', 's2'].map((id) => ({ id, names: [id] })), programmes);
}

t.test('series rules', async (t) => {
  const dir = await tempDir(t, 'antenna-dvr-series-');
  const dead = await closedPort();
  const url = (name: string) => `http://127.0.0.1:${dead}/live/${name}.ts`;
  const main = await write(dir, 'main.m3u', m3u(['c1', 'c2', 'c3'].map((id, i) => ({ name: id.toUpperCase(), tvgId: id, chno: String(i + 1), url: url(id) }))));
  const single = await write(dir, 'single.m3u', m3u(['s1', 's2'].map((id, i) => ({ name: id.toUpperCase(), tvgId: id, chno: String(i + 11), url: url(id) }))));
  const guideFile = await write(dir, 'guide.xml', weekGuide());
  const dataDir = path.join(dir, 'data');
  const recordings = path.join(dir, 'recordings');
  const plugins = {
    'live-tv': { initialImport: 'await' },
    'm3u-tuner': { sources: [{ name: 'Main', url: main, maxStreams: 2 }, { name: 'Single IPTV', url: single, maxStreams: 1 }] },
    'xmltv-guide': { sources: [{ url: guideFile }], maxAge: '100000d' },
    dvr: { path: recordings, prePadding: '60s', postPadding: '120s' },
  };
  let now = at(0, 8);
  const clock = { now: () => now };
  let host: TestHost = await createTestHost({ dataDir, plugins, clock });
  t.teardown(() => host.close());

  const auth = (token = host.adminToken) => ({ authorization: `Bearer ${token}` });
  const req = async (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', u: string, payload?: unknown, token?: string) =>
    host.inject({ method, url: u, headers: auth(token), ...(payload === undefined ? {} : { payload: payload as any }) });
  const ok = async (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', u: string, payload?: unknown, token?: string) => {
    const res = await req(method, u, payload, token);
    if (res.statusCode >= 300) throw new Error(`${method} ${u}: ${res.statusCode} ${res.body}`);
    return res.json();
  };
  const channelId = new Map<string, number>((await ok('GET', '/channels')).channels.map((c: any) => [c.name.toLowerCase(), c.id]));
  const ofRule = async (ruleId: number) => (await ok('GET', '/recordings') as any[]).filter((r) => r.rule_id === ruleId);
  const iso = (ms: number) => new Date(ms).toISOString();

  t.test('bad rules: 400 with the reason', async (t) => {
    for (const [body, re] of [
      [{}, /one of title, series_id, keyword or regex/],
      [{ title: '   ' }, /not empty/],
      [{ title: 'a', keyword: 'b' }, /not by title and keyword/],
      [{ regex: '(unclosed' }, /regex: not a valid regular expression/],
      [{ title: 'a', channel_id: 999_999 }, /channel_id: no channel 999999/],
      [{ title: 'a', keep: { latest: -1 } }, /keep/],
      [{ title: 'a', keep: { days: 0 } }, /keep/],
      [{ title: 'a', days: [7] }, /days/],
      [{ title: 'a', start_after: '25:00' }, /start_after/],
      [{ title: 'a', airings: 'some' }, /airings/],
      [{ title: 'a', pre_padding: -5 }, /pre_padding/],
    ] as [unknown, RegExp][]) {
      expectError(t, await req('POST', '/api/dvr/rules', body), 400, re, JSON.stringify(body));
    }
    t.strictSame((await ok('GET', '/api/dvr/rules')).rules, [], 'nothing was made');
    expectError(t, await host.inject({ method: 'GET', url: '/api/dvr/rules' }), 401, undefined, 'no token');
  });

  let acme = 0;
  t.test('an episode is recorded once, across channels and airings', async (t) => {
    const rule = await ok('POST', '/api/dvr/rules', { title: 'acme  mystery', airings: 'all', keep: { latest: 5 }, pre_padding: 60, post_padding: 120 });
    acme = rule.id;
    t.match(rule, {
      title: 'acme  mystery', series_id: null, keyword: null, regex: null, channel_id: null, days: [0, 1, 2, 3, 4, 5, 6],
      start_after: null, start_before: null, airings: 'all', keep: { latest: 5 }, pre_padding: 60, post_padding: 120, priority: 0,
    });
    const rows = await ofRule(acme);
    t.equal(rows.length, 7, 'seven episodes, seven recordings (of 21 airings)');
    t.strictSame(rows.map((r) => [r.channel_id, r.start, r.status, r.episode]), [0, 1, 2, 3, 4, 5, 6].map((d) => [channelId.get('c1'), iso(at(d, 20)), 'scheduled', d + 1]),
      'each on its first airing');
    t.equal(rule.next.length, 7, 'the rule lists its next airings');
    t.match(rule.next[0], { recording_id: rows[0].id, channel_id: channelId.get('c1'), start: iso(at(0, 20)), status: 'scheduled' });
    // A second rule for the same series wants the same episodes: they are scheduled already.
    const second = await ok('POST', '/api/dvr/rules', { keyword: 'MYSTERY', airings: 'new-or-unknown' });
    t.strictSame(second.next, [], 'nothing twice');
    t.equal((await ok('GET', '/recordings')).length, 7);
    await ok('DELETE', `/api/dvr/rules/${second.id}`);
  });

  t.test('re-evaluation is idempotent', async (t) => {
    const before = await ok('GET', '/recordings');
    await ok('PATCH', `/api/dvr/rules/${acme}`, {});
    await ok('PATCH', `/api/dvr/rules/${acme}`, { priority: 0 });
    t.strictSame(await ok('GET', '/recordings'), before, 'the same rows, ids and all');
    const tasks = await host.host.scheduler.list('dvr.start');
    t.equal(tasks.length, 7, 'one start task per scheduled recording');
  });

  t.test('new only: repeats and unmarked airings are left', async (t) => {
    const rows = await ofRule(acme);
    await ok('PATCH', `/api/dvr/rules/${acme}`, { airings: 'new', days: [weekday(1), weekday(2)] });
    const after = await ofRule(acme);
    t.strictSame(after.map((r) => r.start), [iso(at(1, 20)), iso(at(2, 20))], 'only the new airings on the rule\'s days');
    t.ok(after.every((r) => rows.some((o) => o.id === r.id)), 'the rows it keeps are the same rows');
    await ok('PATCH', `/api/dvr/rules/${acme}`, { airings: 'all', days: [0, 1, 2, 3, 4, 5, 6] });
    t.equal((await ofRule(acme)).length, 7);
  });

  t.test('a cancelled airing stays skipped after a re-import', async (t) => {
    const third = (await ofRule(acme))[2];
    await ok('DELETE', `/recordings/${third.id}`);
    const check = async (what: string) => {
      const rows = await ofRule(acme);
      t.equal(rows.find((r) => r.id === third.id)?.status, 'skipped', `${what}: skipped`);
      t.equal(rows.filter((r) => r.episode === 3).length, 1, `${what}: not scheduled on another airing`);
      t.equal(rows.filter((r) => r.status === 'scheduled').length, 6, `${what}: the others stay`);
    };
    await check('cancelled');
    const { rules } = await ok('GET', '/api/dvr/rules');
    t.notOk(rules[0].next.some((n: any) => n.recording_id === third.id), 'not among the next airings');
    // A re-import (the guide file written again, refreshed): the evaluation after it leaves it skipped.
    await writeFile(guideFile, weekGuide() + '\n');
    await refreshGuide(host);
    await check('after a re-import');
    await ok('PATCH', `/api/dvr/rules/${acme}`, { priority: 1 });
    await check('after the rule changed');
    // Deleting the skipped row: it stays, for its row is what keeps the rule from the episode.
    await ok('DELETE', `/recordings/${third.id}`);
    await check('deleted');
    await ok('PATCH', `/api/dvr/rules/${acme}`, { priority: 1 });
    await check('deleted, then evaluated');
  });

  t.test('a one-off outranks a rule, whose airing moves to another showing', async (t) => {
    const beta = await ok('POST', '/api/dvr/rules', { title: 'Beta', channel_id: channelId.get('s2'), days: [weekday(1)] });
    t.match(beta.next, [{ start: iso(at(1, 18)), status: 'scheduled' }], 'Tuesday 18:00');
    const guide = await ok('GET', `/programs?from=${iso(at(1, 0))}&to=${iso(at(2, 0))}`);
    const s1 = guide.channels.find((c: any) => c.id === channelId.get('s1'));
    const alpha = s1.programs.find((p: any) => p.title === 'Alpha');
    const oneOff = await ok('POST', '/recordings', { channel_id: s1.id, program_id: alpha.id });
    t.equal(oneOff.status, 'scheduled', 'the one-off takes the only stream');
    const moved = await ok('GET', `/api/dvr/rules/${beta.id}`);
    t.match(moved.next, [{ start: iso(at(1, 22)), status: 'scheduled' }], 'the rule records the 22:00 showing of the same episode');
    t.equal(moved.next[0].recording_id, beta.next[0].recording_id, 'the same recording, moved');
    await ok('DELETE', `/recordings/${oneOff.id}`);
    await ok('DELETE', `/api/dvr/rules/${beta.id}`);
  });

  t.test('priority decides a conflict; the loser says what is in the way', async (t) => {
    const gamma = await ok('POST', '/api/dvr/rules', { title: 'Gamma', days: [weekday(2)], priority: 5 });
    const delta = await ok('POST', '/api/dvr/rules', { title: 'Delta', days: [weekday(2)] });
    t.match(gamma.next, [{ start: iso(at(2, 15)), status: 'scheduled' }]);
    const [row] = await ofRule(delta.id);
    t.equal(row.status, 'conflict', 'one stream, two channels at once: the lower priority loses');
    t.match(row.reason, /Tuner limit reached for Single IPTV: its 1 stream is taken by "Gamma" on channel \d+/);
    t.match((await ok('GET', `/api/dvr/rules/${delta.id}`)).next, [{ status: 'conflict', reason: /Gamma/ }], 'the rule shows its conflict');
    t.equal((await host.host.scheduler.list('dvr.start')).filter((task: any) => task.payload.id === row.id).length, 0, 'a conflict has no start task');
    await ok('PATCH', `/api/dvr/rules/${delta.id}`, { priority: 10 });
    t.equal((await ofRule(delta.id))[0].status, 'scheduled', 'raised above: it wins');
    t.match((await ofRule(gamma.id))[0], { status: 'conflict', reason: /"Delta"/ });
    await ok('DELETE', `/api/dvr/rules/${delta.id}`);
    t.equal((await ofRule(gamma.id))[0].status, 'scheduled', 'the slot freed: it records again');
    t.strictSame(await ofRule(delta.id), [], 'a deleted rule\'s scheduled airings go');
    await ok('DELETE', `/api/dvr/rules/${gamma.id}`);
  });

  t.test('a one-off cancelled frees its slot: a rule in conflict takes it at once', async (t) => {
    const gamma = await ok('POST', '/api/dvr/rules', { title: 'Gamma', days: [weekday(4)] });
    t.match(gamma.next, [{ start: iso(at(4, 15)), status: 'scheduled' }]);
    const guide = await ok('GET', `/programs?from=${iso(at(4, 0))}&to=${iso(at(5, 0))}`);
    const s2 = guide.channels.find((c: any) => c.id === channelId.get('s2'));
    const delta = s2.programs.find((p: any) => p.title === 'Delta');
    const oneOff = await ok('POST', '/recordings', { channel_id: s2.id, program_id: delta.id });
    t.match((await ofRule(gamma.id))[0], { status: 'conflict', reason: /"Delta"/ }, 'the one-off outranks the rule, and Gamma airs nowhere else');
    await ok('DELETE', `/recordings/${oneOff.id}`);
    t.equal((await ofRule(gamma.id))[0].status, 'scheduled', 'cancelled: the rule takes the slot now, not at the next import');
    await ok('DELETE', `/api/dvr/rules/${gamma.id}`);
  });

  t.test('back-to-back recordings of one channel keep their padding on one slot', async (t) => {
    // Gamma at 15:00 and an Alpha-like show at 16:00 on s1 overlap by their paddings; one stream suffices.
    const gamma = await ok('POST', '/api/dvr/rules', { title: 'Gamma', days: [3], pre_padding: 300, post_padding: 600 });
    const alpha = await ok('POST', '/api/dvr/rules', { title: 'Alpha', days: [3], pre_padding: 10_000 }); // from 15:13, inside Gamma's window
    t.match(gamma.next, [{ status: 'scheduled' }]);
    t.match((await ok('GET', `/api/dvr/rules/${alpha.id}`)).next, [{ status: 'scheduled' }], 'same channel: no conflict');
    await ok('DELETE', `/api/dvr/rules/${gamma.id}`);
    await ok('DELETE', `/api/dvr/rules/${alpha.id}`);
  });

  t.test('only the creator or an admin changes a rule', async (t) => {
    await host.createUser('viewer', 'viewer-password-1');
    const viewer = await host.login('viewer', 'viewer-password-1');
    t.equal((await ok('GET', '/api/dvr/rules', undefined, viewer)).rules.length, 1, 'the household\'s rules are everyone\'s to see');
    expectError(t, await req('DELETE', `/api/dvr/rules/${acme}`, undefined, viewer), 403, /administrator or the user who made it/);
    expectError(t, await req('PATCH', `/api/dvr/rules/${acme}`, { priority: 3 }, viewer), 403);
    const own = await ok('POST', '/api/dvr/rules', { regex: '^Alph', days: [4] }, viewer);
    t.equal(own.created_by, (await ok('GET', '/me', undefined, viewer)).user.id);
    await ok('PATCH', `/api/dvr/rules/${own.id}`, { priority: 2 }, viewer);
    await ok('DELETE', `/api/dvr/rules/${own.id}`); // an admin may
    expectError(t, await req('DELETE', `/api/dvr/rules/${own.id}`), 404);
    expectError(t, await req('GET', '/api/dvr/rules/999'), 404);
  });

  t.test('keep: the limit deletes recordings with their files, watched first, then the oldest', async (t) => {
    const knex = host.host.knex;
    const made: number[] = [];
    for (let i = 0; i < 4; i++) {
      const start = at(-10 + i, 20);
      const [row] = await knex('dvr_recordings').insert({
        channel_id: channelId.get('c1'), program_id: 1000 + i, tuner_id: 'm3u:Main', title: 'Acme Mystery', start, stop: start + HOUR,
        status: 'completed', size_bytes: 10, duration: 3600, gaps: '[]', dir: '', created_by: 1, created_at: start, rule_id: acme,
        episode_key: `old-${i}`, watched_at: i === 3 ? start + DAY : null,
      }).returning('id');
      const id = Number(typeof row === 'object' ? row.id : row);
      const recDir = path.join(recordings, String(id));
      await mkdir(path.join(recDir, 'p0'), { recursive: true });
      await writeFile(path.join(recDir, 'p0', 'video-00001.mp4'), 'media');
      await knex('dvr_recordings').where({ id }).update({ dir: recDir });
      made.push(id);
    }
    // The oldest is being played: its media was just asked for.
    const segment = await req('GET', `/watch/recording/${made[0]}/s/0/video-00001.mp4`);
    t.equal(segment.statusCode, 200, 'a segment of the oldest is played');
    await ok('PATCH', `/api/dvr/rules/${acme}`, { keep: { latest: 2 } });
    const left = (await ofRule(acme)).filter((r) => r.status === 'completed').map((r) => r.id);
    t.strictSame(left, [made[0], made[2]], 'the watched one went first, then the oldest not being played');
    t.notOk(existsSync(path.join(recordings, String(made[1]))), 'its files are gone');
    t.notOk(existsSync(path.join(recordings, String(made[3]))));
    t.ok(existsSync(path.join(recordings, String(made[0]), 'p0', 'video-00001.mp4')), 'the kept ones keep theirs');
    now += 10 * 60_000; // no longer played: the limit takes it at the next evaluation
    await ok('PATCH', `/api/dvr/rules/${acme}`, { keep: { latest: 1 } });
    t.strictSame((await ofRule(acme)).filter((r) => r.status === 'completed').map((r) => r.id), [made[2]], 'then the oldest goes');
    await ok('PATCH', `/api/dvr/rules/${acme}`, { keep: { latest: 2 } });
    t.equal((await ofRule(acme)).filter((r) => r.status === 'scheduled').length, 6, 'scheduled ones do not count');
  });

  t.test('recordings browse as series, seasons and episodes', async (t) => {
    const knex = host.host.knex;
    const add = async (title: string, seriesKey: string | null, season: number | null, episode: number | null, day: number) => {
      const start = at(day, 21);
      const [row] = await knex('dvr_recordings').insert({
        channel_id: channelId.get('c2'), program_id: 5000 + day, tuner_id: 'm3u:Main', title, start, stop: start + HOUR, status: 'completed',
        size_bytes: 10, duration: 3600, gaps: '[]', dir: path.join(recordings, `x${day}`), created_by: 1, created_at: start,
        series_key: seriesKey, season, episode, episode_key: `browse-${day}`,
      }).returning('id');
      return `rec-${Number(typeof row === 'object' ? row.id : row)}`;
    };
    const s1e2 = await add('Show', 't:show', 1, 2, -20);
    const s1e1 = await add('Show', 't:show', 1, 1, -19); // recorded later, watched first
    const s2e1 = await add('Show', 't:show', 2, 1, -18);
    const film = await add('A Film', null, null, null, -17);
    const library = (await ok('GET', '/libraries')).libraries.find((l: any) => l.name === 'Recordings');
    const top = (await ok('GET', `/library/${library.id}`)).items;
    const series = top.find((i: any) => i.type === 'series' && i.title === 'Show');
    t.match(series, { child_count: 2, season_number: null }, 'a series with its two seasons');
    t.ok(top.some((i: any) => i.id === film && i.type === 'recording'), 'a recording of no series stays at the top');
    t.notOk(top.some((i: any) => [s1e1, s1e2, s2e1].includes(i.id)), 'episodes are inside their series');
    const seasons = (await ok('GET', `/item/${series.id}`)).children;
    t.strictSame(seasons.map((s: any) => [s.type, s.title, s.season_number, s.child_count]), [['season', 'Season 1', 1, 2], ['season', 'Season 2', 2, 1]]);
    const season1 = await ok('GET', `/item/${seasons[0].id}`);
    t.equal(season1.parent_id, series.id);
    t.strictSame(season1.children.map((e: any) => [e.id, e.episode_number]), [[s1e1, 1], [s1e2, 2]], 'episodes in order');
    expectError(t, await req('GET', `/item/${series.id.slice(0, -1)}x`), 404);
    await knex('dvr_recordings').where('episode_key', 'like', 'browse-%').delete();
  });

  t.test('rules and their schedule survive a restart', async (t) => {
    const before = await ok('GET', '/recordings');
    const rules = (await ok('GET', '/api/dvr/rules')).rules;
    await host.close();
    now += HOUR;
    host = await createTestHost({ dataDir, plugins, clock });
    t.strictSame((await ok('GET', '/api/dvr/rules')).rules, rules, 'the same rules and next airings');
    t.strictSame(await ok('GET', '/recordings'), before, 'the same recordings: nothing doubled at start');
    t.equal((await host.host.scheduler.list('dvr.start')).length, 6, 'their start tasks');
  });

  t.test('antenna dvr rules: each rule and its next airings', async (t) => {
    const command = host.host.findCommand(['dvr', 'rules'])?.entry;
    if (!command) throw new Error('no dvr rules command');
    const lines: string[] = [];
    await host.host.runCommand(command, [], { progress: { update() {}, done() {} }, out: (line) => lines.push(line) });
    t.match(lines[0], new RegExp(`^rule ${acme}: title "acme  mystery", all airings, any channel, keep latest 2, priority 1$`));
    t.equal(lines.length, 1 + 6, 'a line per scheduled airing');
    t.match(lines[1], /^ {2}2030-01-07 20:00Z {2}C1 \(\d+\) {2}"Acme Mystery" {2}scheduled \(recording \d+\)$/);
  });
});

/** `antenna guide refresh` in the host, then an evaluation after it (the DVR notices imports within seconds). */
async function refreshGuide(host: TestHost): Promise<void> {
  const command = host.host.findCommand(['guide', 'refresh'])?.entry;
  if (!command) throw new Error('no guide refresh command');
  await host.host.runCommand(command, [], { progress: { update() {}, done() {} }, out: () => {} });
  await new Promise((r) => setTimeout(r, 6000));
}
