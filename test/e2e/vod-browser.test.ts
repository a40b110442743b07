/**
 * VOD in a real browser: Debian's Chromium (driven by playwright-core) plays
 * a transcoded title (and a remuxed one) with hls.js and with dash.js, seeks
 * to a later position (a segment ffmpeg has not made: the server restarts it
 * there) and keeps playing, with the title's subtitle track (listed in the
 * manifests by the subtitles plugin) showing the right cue. The player page is served by this test on its own
 * port, so every manifest and segment is fetched cross-origin, straight from
 * Antenna's URLs with ?api_key=.
 *
 * Skipped (with the reason) when Chromium is not installed; CHROMIUM_PATH
 * overrides /usr/bin/chromium. Screenshots go to the test's temp dir, kept
 * when a test failed or KEEP_E2E_ARTIFACTS=1.
 */
import t from 'tap';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { ConsoleMessage, Page } from 'playwright-core';
import { PLAYER_PAGE, PlayerRig, artifactDir, redact, skipWithoutChromium, tally } from '../helpers/browser.js';
import { clip, vodHost } from '../plugins/vod/fixtures.js';

// The functions given to page.evaluate()/waitForFunction() run in the page; the project compiles without the DOM lib.
declare const document: any;
declare const window: any;

const TITLE_SECONDS = 40;
/** Where the test seeks to: well past what ffmpeg has made by then. */
const SEEK_TO = 28;
const PLAYED_SECONDS = 2;
const DEADLINE_MS = 45_000;


interface Snapshot {
  currentTime: number; duration: number; played: number; errors: string[]; notes: string[]; events: string[];
  frame: { width: number; height: number; colours: number; spread: number } | null;
}

t.setTimeout(300_000);

const skip = skipWithoutChromium;

t.test('VOD plays and seeks in Chromium with hls.js and dash.js', { skip }, async (t) => {
  const rig = new PlayerRig();
  const dir = await artifactDir(t, 'antenna-vod-browser-', () => rig.close());

  const movies = path.join(dir, 'movies');
  await mkdir(movies);
  // H.264 640x360 in Matroska with a SubRip track (a cue every 2 s: "Line n: …"): a browser gets it
  // remuxed; with maxBitrate=300000 it is transcoded (at the ladder's 180p rung).
  await clip(path.join(movies, 'Seekable (2021).mkv'), { seconds: TITLE_SECONDS, width: 640, height: 360, fps: 25, gopSeconds: 2, subtitle: true });
  const { host, pages, browser } = await rig.start(vodHost([{ name: 'Movies', type: 'movies', paths: [movies] }], { listen: true, plugins: { subtitles: {} }, vod: { preset: 'ultrafast' } }), PLAYER_PAGE);
  t.comment(`Antenna ${host.url}, page server ${pages.url}, ${browser.version()}`);

  const page1 = (await host.inject({ method: 'GET', url: '/library/1?limit=10', headers: host.authHeaders })).json();
  const itemId = page1.items[0].id as string;
  const key = `api_key=${encodeURIComponent(host.adminToken)}`;

  async function play(player: 'hls' | 'dash', src: string, screenshot: string) {
    const context = await browser.newContext({ viewport: { width: 640, height: 360 } });
    const external: string[] = [];
    const allowed = new Set([new URL(pages.url).origin, new URL(host.url).origin]);
    await context.route(() => true, (route) => {
      const url = route.request().url();
      if (allowed.has(new URL(url).origin) || url.startsWith('data:') || url.startsWith('blob:')) return route.continue();
      external.push(redact(url));
      return route.abort('blockedbyclient');
    });
    try {
      const page: Page = await context.newPage();
      const pageErrors: string[] = [];
      const failedRequests: string[] = [];
      page.on('pageerror', (e) => pageErrors.push(redact(`${e.name}: ${e.message}`)));
      page.on('console', (m: ConsoleMessage) => { if (m.type() === 'error') failedRequests.push(redact(`console: ${m.text()}`)); });
      page.on('response', (r) => { if (r.status() >= 400) failedRequests.push(redact(`${r.request().method()} ${r.url()}: HTTP ${r.status()}`)); });
      await page.goto(`${pages.url}/player.html?player=${player}&src=${encodeURIComponent(src)}`, { waitUntil: 'load' });
      const snapshot = (): Promise<Snapshot> => page.evaluate(() => {
        const v = document.querySelector('video');
        const s = window.__state;
        let played = 0;
        for (let i = 0; i < v.played.length; i++) played += v.played.end(i) - v.played.start(i);
        // The picture itself: the test pattern has many colours, a black or blank frame has one or two.
        const frame = window.__frame();
        return { currentTime: v.currentTime, duration: v.duration, played, errors: s.errors, notes: s.notes, events: s.events, frame };
      });
      const until = (fn: (a: { target: number }) => boolean, target: number) => page.waitForFunction(fn, { target }, { timeout: DEADLINE_MS, polling: 200 }).catch(() => {});
      // Plays from the start…
      const t0 = Date.now();
      await until(({ target }) => window.__state.fatal || document.querySelector('video').currentTime > target, PLAYED_SECONDS);
      const start = await snapshot();
      const msToPlay = Date.now() - t0;
      // …then seeks far ahead and must play on from there.
      await page.evaluate((to: number) => { document.querySelector('video').currentTime = to; }, SEEK_TO);
      const t1 = Date.now();
      await until(({ target }) => window.__state.fatal || document.querySelector('video').currentTime > target, SEEK_TO + PLAYED_SECONDS);
      const after = await snapshot();
      const msAfterSeek = Date.now() - t1;
      // The subtitle cue on screen now, with the time it was read at (cues last 1 s of every 2).
      await page.waitForFunction(() => [...document.querySelector('video').textTracks].some((tt: any) => tt.activeCues && tt.activeCues.length), undefined, { timeout: 10_000, polling: 100 }).catch(() => {});
      const cue = await page.evaluate(() => {
        const v = document.querySelector('video');
        const tracks = [...v.textTracks].map((tt: any) => ({ kind: tt.kind, label: tt.label, mode: tt.mode, cues: tt.activeCues ? [...tt.activeCues].map((c: any) => c.text) : [] }));
        return { at: v.currentTime as number, tracks };
      });
      await page.locator('video').screenshot({ path: screenshot });
      return { start, after, msToPlay, msAfterSeek, cue, pageErrors, failedRequests, external };
    } finally {
      await context.close();
    }
  }

  const cases = [
    { player: 'hls' as const, what: 'transcoded', src: `${host.url}/watch/vod/${itemId}/master.m3u8?${key}&maxBitrate=300000` },
    { player: 'dash' as const, what: 'transcoded', src: `${host.url}/watch/vod/${itemId}/master.mpd?${key}&maxBitrate=300000` },
    { player: 'hls' as const, what: 'remuxed', src: `${host.url}/watch/vod/${itemId}/master.m3u8?${key}` },
    { player: 'dash' as const, what: 'remuxed', src: `${host.url}/watch/vod/${itemId}/master.mpd?${key}` },
  ];
  for (const c of cases) {
    await t.test(`${c.player === 'hls' ? 'hls.js' : 'dash.js'} plays a ${c.what} title, seeks to ${SEEK_TO} s and plays on`, async (t) => {
      // A fresh job per case: the idle jobs of earlier cases would hold segments already made.
      for (const j of host.host.jobs.list()) if (j.kind === 'vod-transcode' && j.state === 'running') await host.host.jobs.get(j.key)?.stop('next case');
      const shot = path.join(dir, `vod-${c.player}-${c.what}.png`);
      const r = await play(c.player, c.src, shot);
      t.comment(`${c.player} ${c.what}: ${PLAYED_SECONDS} s played after ${r.msToPlay} ms; after the seek, at ${r.after.currentTime.toFixed(2)} s after ${r.msAfterSeek} ms`);
      for (const n of tally([...r.start.notes, ...r.after.notes])) t.comment(`note: ${n}`);
      for (const f of tally(r.failedRequests)) t.comment(`failed request: ${f}`);
      const errors = [...new Set([...r.start.errors, ...r.after.errors])];
      t.strictSame(errors, [], 'no player errors');
      t.strictSame(r.pageErrors, [], 'no page errors');
      t.strictSame(r.external, [], 'no request outside Antenna and the page server');
      t.ok(Math.abs(r.start.duration - TITLE_SECONDS) < 0.5, `the player knows the whole duration from the start (${r.start.duration})`);
      t.ok(r.start.currentTime > PLAYED_SECONDS, `played from the start (${r.start.currentTime.toFixed(2)} s)`);
      const ok = r.after.currentTime > SEEK_TO + PLAYED_SECONDS;
      if (!ok) t.comment(`media events: ${r.after.events.join(', ')}`);
      t.ok(ok, `after seeking to ${SEEK_TO} s it plays on (${r.after.currentTime.toFixed(2)} s)`);
      // A remux is the source's 640x360; maxBitrate=300000 transcodes at the ladder's 180p rung (200 kb/s).
      const [width, height] = c.what === 'remuxed' ? [640, 360] : [320, 180];
      t.ok(r.after.frame && r.after.frame.width === width && r.after.frame.height === height, `a ${width}x${height} picture (${JSON.stringify(r.after.frame)})`);
      t.ok(r.after.frame && r.after.frame.colours > 8 && r.after.frame.spread > 64, 'the frame shows the test pattern, not a blank picture');
      const texts = r.cue.tracks.flatMap((tt) => tt.cues);
      const line = Math.floor((r.cue.at - 0.021) / 2) + 1;
      t.ok(r.cue.tracks.some((tt) => tt.kind === 'subtitles' || tt.kind === 'captions'), `a subtitle track (${JSON.stringify(r.cue.tracks.map((tt) => `${tt.kind}:${tt.label}:${tt.mode}`))})`);
      t.ok(texts.some((x) => x.startsWith(`Line ${line}:`)), `at ${r.cue.at.toFixed(2)} s the cue of that time shows (${JSON.stringify(texts)}, expected Line ${line})`);
      t.comment(`screenshot: ${shot}`);
    });
  }
});
