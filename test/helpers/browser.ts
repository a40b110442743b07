/**
 * Shared setup for the browser (e2e) tests: Debian's Chromium driven by
 * playwright-core, the hls.js and dash.js scripts, and the test's own little
 * web server that serves the player page from another origin than Antenna.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import type { TestHost } from '../../sdk/testing.js';
import { REPO_ROOT } from './repo.js';

export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--headless=new', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--autoplay-policy=no-user-gesture-required',
];

/** The players' scripts, by the route the page loads them from. */
export const SCRIPTS: Record<string, string> = {
  '/hls.min.js': path.join(REPO_ROOT, 'node_modules/hls.js/dist/hls.min.js'),
  '/dash.all.min.js': path.join(REPO_ROOT, 'node_modules/dashjs/dist/modern/umd/dash.all.min.js'),
};

/** tap's `skip` option: false, or why the test is skipped when Chromium is not installed. */
export const skipWithoutChromium: false | string = existsSync(CHROMIUM) ? false : `Debian chromium not installed at ${CHROMIUM} (apt-get install chromium)`;

/** The parts of a tap test the browser helpers use. */
export interface TestLike { teardown(fn: () => unknown): void; passing(): boolean; comment(...args: unknown[]): void }

/**
 * A temp dir for a browser test's media and screenshots. At teardown `close`
 * runs first (browser, servers), then the dir is removed when the test passed,
 * or kept and its path printed when it failed or with KEEP_E2E_ARTIFACTS=1.
 */
export async function artifactDir(t: TestLike, prefix: string, close: () => Promise<unknown>): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  t.teardown(async () => {
    await close();
    if (t.passing() && !process.env.KEEP_E2E_ARTIFACTS) await rm(dir, { recursive: true, force: true });
    else t.comment(`kept ${dir}`);
  });
  return dir;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, timeout: 30_000 });
}

/** The test's own web server (another origin than Antenna): `page` at /player.html and the players' scripts. */
export async function startPageServer(page: string): Promise<{ url: string; close(): Promise<void> }> {
  const files = new Map<string, Buffer>();
  for (const [route, file] of Object.entries(SCRIPTS)) files.set(route, await readFile(file));
  const server = http.createServer((req, res) => {
    const route = new URL(req.url ?? '/', 'http://x').pathname;
    if (route === '/player.html') res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(page);
    else if (files.has(route)) res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(files.get(route));
    else res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

export type PageServer = Awaited<ReturnType<typeof startPageServer>>;

/**
 * What a player test runs: Antenna, the test's page server and Chromium, started
 * in parallel. Each is kept as soon as it is up, so close() (call it from the
 * test's teardown) closes it even when another one failed to start.
 */
export class PlayerRig {
  private host?: TestHost;
  private pages?: PageServer;
  private browser?: Browser;

  async start(host: Promise<TestHost>, page: string): Promise<{ host: TestHost; pages: PageServer; browser: Browser }> {
    await Promise.all([
      host.then((h) => { this.host = h; }),
      startPageServer(page).then((p) => { this.pages = p; }),
      launchChromium().then((b) => { this.browser = b; }),
    ]);
    return { host: this.host!, pages: this.pages!, browser: this.browser! };
  }

  async close(): Promise<void> {
    await this.browser?.close().catch(() => {});
    await this.pages?.close();
    await this.host?.close();
  }
}

/** Repeated messages once, with a count. */
export const tally = (list: string[]) => [...new Map(list.map((m) => [m, list.filter((x) => x === m).length]))].map(([m, n]) => (n > 1 ? `${m} (x${n})` : m));
/** Hides api keys in URLs and messages. */
export const redact = (s: string) => s.replace(/((?:api_)?key(?:=|%3D))[^&\s"']*/gi, '$1***');

/**
 * A script for a player page: window.__frame() samples the picture of the
 * page's <video> (null before the first frame). A test pattern has many
 * colours and a wide spread of brightness; a black or blank frame has one or two.
 */
const FRAME_SCRIPT = `<script>
window.__frame = () => {
  const v = document.querySelector('video');
  if (!(v.videoWidth > 0)) return null;
  const c = document.createElement('canvas');
  c.width = v.videoWidth; c.height = v.videoHeight;
  const g = c.getContext('2d');
  g.drawImage(v, 0, 0);
  const px = g.getImageData(0, 0, c.width, c.height).data;
  const colours = new Set();
  let min = 255; let max = 0;
  for (let i = 0; i < px.length; i += 4 * 97) {
    colours.add(((px[i] >> 4) << 8) | ((px[i + 1] >> 4) << 4) | (px[i + 2] >> 4));
    const y = (px[i] + px[i + 1] + px[i + 2]) / 3;
    min = Math.min(min, y); max = Math.max(max, y);
  }
  return { width: v.videoWidth, height: v.videoHeight, colours: colours.size, spread: max - min };
};
</script>`;

/**
 * A player page for the live and VOD browser tests: ?player=hls|dash&src=<manifest URL>.
 * State for the test goes to window.__state (errors, notes, element events, when playback
 * began and where), the player to window.__player; window.__frame() samples the picture.
 * The first subtitle track (if any) is shown.
 */
export const PLAYER_PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>Antenna player</title>
<link rel="icon" href="data:,">
<style>html,body{margin:0;background:#000}video{display:block;width:640px;height:360px}</style>
</head><body>
<video id="v" muted autoplay playsinline width="640" height="360"></video>
<script src="/hls.min.js"></script>
<script src="/dash.all.min.js"></script>
${FRAME_SCRIPT}
<script>
(() => {
  const q = new URLSearchParams(location.search);
  const kind = q.get('player');
  const src = q.get('src');
  const v = document.getElementById('v');
  const state = window.__state = { errors: [], notes: [], events: [], fatal: false, playingAt: null, firstTime: null };
  const t0 = performance.now();
  for (const name of ['loadedmetadata', 'canplay', 'playing', 'waiting', 'stalled', 'seeking', 'seeked', 'pause', 'ended']) {
    v.addEventListener(name, () => { if (state.events.length < 300) state.events.push(Math.round(performance.now() - t0) + 'ms ' + name + ' @' + v.currentTime.toFixed(2)); });
  }
  const redact = (s) => String(s).replace(/((?:api_)?key=)[^&\\s"]*/g, '$1***');
  v.addEventListener('playing', () => {
    if (state.playingAt === null) { state.playingAt = performance.now(); state.firstTime = v.currentTime; }
  });
  v.addEventListener('error', () => { state.fatal = true; state.errors.push('<video> error ' + (v.error ? v.error.code + ' ' + v.error.message : '')); });
  if (kind === 'hls') {
    if (!Hls.isSupported()) { state.fatal = true; state.errors.push('hls.js: Media Source Extensions not supported'); }
    const hls = new Hls();
    hls.on(Hls.Events.ERROR, (_e, d) => {
      const msg = 'hls.js ' + (d.fatal ? 'fatal ' : '') + d.type + '/' + d.details
        + (d.response && d.response.code !== undefined ? ' HTTP ' + d.response.code : '')
        + (d.url ? ' ' + d.url : '') + (d.error ? ': ' + d.error.message : '') + (d.reason ? ' (' + d.reason + ')' : '');
      if (d.fatal) state.fatal = true;
      (d.fatal ? state.errors : state.notes).push(redact(msg));
    });
    hls.on(Hls.Events.MANIFEST_PARSED, () => {
      if (hls.subtitleTracks.length) { hls.subtitleTrack = 0; hls.subtitleDisplay = true; }
      v.play().catch((e) => state.notes.push('play(): ' + e.message));
    });
    hls.loadSource(src);
    hls.attachMedia(v);
    window.__player = hls;
  } else if (kind === 'dash') {
    const p = dashjs.MediaPlayer().create();
    p.updateSettings({ debug: { logLevel: dashjs.Debug.LOG_LEVEL_WARNING }, streaming: { text: { defaultEnabled: true } } });
    p.on(dashjs.MediaPlayer.events.ERROR, (e) => {
      const err = e.error || e;
      state.errors.push(redact('dash.js error ' + (err.code !== undefined ? err.code + ' ' : '') + (err.message || JSON.stringify(err))));
    });
    p.on(dashjs.MediaPlayer.events.PLAYBACK_ERROR, (e) => state.errors.push(redact('dash.js playback error: ' + JSON.stringify(e.error || e))));
    // dash.js starts playback itself (autoplay argument); an early v.play() of our own leaves
    // dash.js 5 stalled after its first segment (it misses the element's play event).
    p.initialize(v, src, true);
    window.__player = p;
  } else {
    state.errors.push('unknown player ' + kind);
  }
})();
</script>
</body></html>`;
