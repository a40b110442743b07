/**
 * Shared setup for the browser (e2e) tests: Debian's Chromium driven by
 * playwright-core, the hls.js and dash.js scripts, and the test's own little
 * web server that serves the player page from another origin than Antenna.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
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

/** Repeated messages once, with a count. */
export const tally = (list: string[]) => [...new Map(list.map((m) => [m, list.filter((x) => x === m).length]))].map(([m, n]) => (n > 1 ? `${m} (x${n})` : m));
/** Hides api keys in URLs and messages. */
export const redact = (s: string) => s.replace(/((?:api_)?key(?:=|%3D))[^&\s"']*/gi, '$1***');

/**
 * A script for a player page: window.__frame() samples the picture of the
 * page's <video> (null before the first frame). A test pattern has many
 * colours and a wide spread of brightness; a black or blank frame has one or two.
 */
export const FRAME_SCRIPT = `<script>
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
