/**
 * The demo's VOD library (PRODUCT.md §1): a few short clips generated with
 * ffmpeg on first start, covering what the player side must handle — an MP4
 * that plays directly, an MKV with AC-3 5.1, an embedded subtitle and a
 * sidecar .srt, an HEVC file, and two episodes of a show.
 */
import { existsSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { FfmpegService, Logger } from 'antenna/sdk';
import { makeClip, writeSrt, type ClipSpec } from './sample-media.js';

export const DEMO_LIBRARIES = [
  { name: 'Demo Movies', type: 'movies' as const, folder: 'movies' },
  { name: 'Demo Shows', type: 'shows' as const, folder: 'shows' },
];

// Small enough to generate in seconds on a slow machine, big enough to show what each case does.
const CLIPS: [string, ClipSpec][] = [
  ['movies/Test Pattern (2024)/Test Pattern (2024).mp4', { seconds: 30, width: 854, height: 480 }],
  ['movies/Surround Sound (2023)/Surround Sound (2023).mkv', { seconds: 30, width: 854, height: 480, audio: 'ac3', channels: 6, subtitle: true, secondAudio: true }],
  ['movies/Deep Colour (2022)/Deep Colour (2022).mkv', { seconds: 10, width: 640, height: 360, video: 'hevc' }],
  ['shows/Test Show/Season 01/Test Show - S01E01.mp4', { seconds: 15, width: 640, height: 360 }],
  ['shows/Test Show/Season 01/Test Show - S01E02.mp4', { seconds: 15, width: 640, height: 360 }],
];
const SIDECAR = 'movies/Surround Sound (2023)/Surround Sound (2023).en.srt';
const DONE = '.antenna-demo-complete';

/** The demo folders under `dir`, generated once (a marker file records a finished run). */
export async function ensureDemoMedia(ffmpeg: FfmpegService, dir: string, logger: Logger): Promise<void> {
  if (existsSync(path.join(dir, DONE))) return;
  const started = Date.now();
  logger.info({ event: 'demo_media', dir }, 'generating the demo VOD library (first start)');
  for (const [rel, spec] of CLIPS) {
    const file = path.join(dir, rel);
    if (existsSync(file)) continue;
    // Written under a hidden name and renamed, so a scan never sees half a file.
    const partial = path.join(path.dirname(file), `.partial-${path.basename(file)}`);
    const t0 = Date.now();
    await makeClip((args) => ffmpeg.run(args, { label: 'demo-media' }), partial, spec);
    await rename(partial, file);
    logger.debug({ event: 'demo_clip', file: rel, ms: Date.now() - t0 }, 'demo clip generated');
  }
  await writeSrt(path.join(dir, SIDECAR), 30);
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, DONE), new Date().toISOString());
  logger.info({ event: 'demo_media_ready', dir, ms: Date.now() - started }, 'demo VOD library ready');
}
