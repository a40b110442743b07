/**
 * Shared by the web app's browser tests (test/e2e/web-*.test.ts): a real
 * Antenna with the `web` plugin, test-pattern live channels with a guide, a
 * movie library of generated clips (one with an embedded subtitle track and a
 * second audio track, one episode pair), the DVR, subtitles and continue
 * watching; Debian's Chromium on the app's own URL; page errors collected;
 * screenshots written to the test's temp dir.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createTestHost, type TestHost } from '../../sdk/testing.js';
import { clip } from '../plugins/vod/fixtures.js';
import { artifactDir, launchChromium, redact, tally, type TestLike } from './browser.js';
import { REPO_ROOT } from './repo.js';

export { skipWithoutChromium } from './browser.js';

// The functions given to page.evaluate()/waitForFunction() run in the page; the project compiles without the DOM lib.
declare const document: any;

export interface WebAppOptions {
  /** Live channels of the test-pattern tuner (default 3). */
  channels?: number;
  /** Simultaneous streams the tuner allows (default 4). */
  maxStreams?: number;
  /** Generate the movie and show library (takes a few seconds of ffmpeg). */
  media?: boolean;
  /** Phone-sized viewport instead of a desktop one. */
  phone?: boolean;
  /** More plugins, as in the config's `plugins:` block (an m3u-tuner with a dead channel…). */
  plugins?: Record<string, unknown>;
  /**
   * Run from a YAML config file with this text instead of the default plugins (settings the
   * admin changes are written to it): given the test's dir, where `movies/` and `shows/` are.
   */
  configYaml?: (dir: string) => string;
  /** Adds to the media before the first scan (NFO files, pictures), given the test's dir. */
  beforeScan?: (dir: string) => Promise<void>;
}

export interface WebApp {
  host: TestHost;
  browser: Browser;
  context: BrowserContext;
  page: Page;
  /** The test's temp dir: media, recordings, screenshots. */
  dir: string;
  /** Uncaught page errors and console errors, as they happened (tokens redacted). */
  pageErrors: string[];
  /** Signs in through the form and waits for the home page. */
  signIn(username?: string, password?: string): Promise<void>;
  /** Opens a route of the app (`/guide`) and waits for the view to settle. */
  open(route: string): Promise<void>;
  /** A full-page PNG under <dir>/screenshots/<name>.png; returns its path. */
  screenshot(name: string): Promise<string>;
}

/** Titles of the generated library, for the tests to find. */
export const MEDIA = {
  movie: 'Test Pattern Movie',
  movieFile: 'Test Pattern Movie (2024).mkv',
  movieSeconds: 60,
  show: 'Pattern Show',
};

/**
 * Starts everything and registers the teardown: the temp dir is removed when
 * the test passed (kept, and its path printed, when it failed or with
 * KEEP_E2E_ARTIFACTS=1).
 */
export async function startWebApp(t: TestLike, options: WebAppOptions = {}): Promise<WebApp> {
  let host: TestHost | undefined;
  let browser: Browser | undefined;
  const dir = await artifactDir(t, 'antenna-web-', async () => {
    await browser?.close().catch(() => {});
    await host?.close();
  });

  const movies = path.join(dir, 'movies');
  const shows = path.join(dir, 'shows', 'Pattern Show', 'Season 01');
  await mkdir(movies, { recursive: true });
  await mkdir(shows, { recursive: true });
  if (options.media !== false) {
    await Promise.all([
      clip(path.join(movies, MEDIA.movieFile), { seconds: MEDIA.movieSeconds, width: 640, height: 360, fps: 25, gopSeconds: 2, subtitle: true, secondAudio: true }),
      clip(path.join(movies, 'Direct Clip (2020).mp4'), { seconds: 20, width: 640, height: 360, fps: 25 }),
      clip(path.join(shows, 'Pattern Show S01E01.mp4'), { seconds: 15, width: 320, height: 180, fps: 25 }),
      clip(path.join(shows, 'Pattern Show S01E02.mp4'), { seconds: 15, width: 320, height: 180, fps: 25 }),
    ]);
  }

  await options.beforeScan?.(dir);
  const configFile = options.configYaml && path.join(dir, 'antenna.yaml');
  if (configFile) await writeFile(configFile, options.configYaml!(dir));
  const [h, b] = await Promise.all([
    configFile ? createTestHost({ listen: true, configFile, plugins: options.plugins }) : createTestHost({
      listen: true,
      plugins: {
        web: {},
        vod: {
          libraries: [{ name: 'Movies', type: 'movies', paths: [movies] }, { name: 'Shows', type: 'shows', paths: [path.join(dir, 'shows')] }],
          initialScan: 'await', preset: 'ultrafast',
        },
        dvr: { path: path.join(dir, 'recordings'), prePadding: '0s', postPadding: '0s' },
        [path.join(REPO_ROOT, 'dist/examples/tuner-test-pattern')]: {
          channels: options.channels ?? 3, maxStreams: options.maxStreams ?? 4, size: '320x180', rate: 25,
        },
        ...options.plugins,
      },
    }),
    launchChromium(),
  ]);
  host = h;
  browser = b;

  const context = await browser.newContext(options.phone
    ? { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true }
    : { viewport: { width: 1366, height: 850 } });
  const page = await context.newPage();
  const pageErrors: string[] = [];
  page.on('pageerror', (err) => pageErrors.push(redact(`page error: ${err.message}`)));
  // Chromium logs every HTTP error status as a console error; the app shows those itself, so only script errors count.
  page.on('console', (msg) => {
    if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource')) pageErrors.push(redact(`console error: ${msg.text()}`));
  });
  // Nothing may come from anywhere but Antenna.
  await context.route((url) => !url.href.startsWith(host!.url) && !url.protocol.startsWith('blob') && !url.protocol.startsWith('data'), (route) => {
    pageErrors.push(`request left Antenna: ${redact(route.request().url())}`);
    return route.abort();
  });
  t.teardown(() => {
    if (pageErrors.length) t.comment(`page errors:\n${tally(pageErrors).join('\n')}`);
  });

  const shots = path.join(dir, 'screenshots');
  await mkdir(shots, { recursive: true });
  const app: WebApp = {
    host, browser, context, page, dir, pageErrors,
    async signIn(username = 'admin', password = host!.adminPassword) {
      await page.goto(`${host!.url}/`);
      await page.getByLabel('Username').fill(username);
      await page.getByLabel('Password').fill(password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForSelector('header.topbar', { timeout: 15_000 });
    },
    async open(route: string) {
      await page.evaluate((r: string) => { document.location.hash = r; }, route);
      await page.waitForLoadState('networkidle', { timeout: 10_000 }).catch(() => {});
    },
    async screenshot(name: string) {
      const file = path.join(shots, `${name}.png`);
      await page.screenshot({ path: file, fullPage: true });
      return file;
    },
  };
  return app;
}
