/**
 * Finds the ffmpeg and ffprobe binaries Antenna runs.
 *
 * Order, for each binary independently:
 *   1. an explicit config path (anything but '' / 'auto'); it must exist and be
 *      executable, else we throw naming the config key and value (a typo in the
 *      config must never silently fall back to another binary);
 *   2. the system PATH (`process.env.PATH`);
 *   3. the static binary shipped by the optional npm packages
 *      `@ffmpeg-installer/ffmpeg` / `@ffprobe-installer/ffprobe`.
 */
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';

export type BinarySource = 'config' | 'path' | 'npm';

export interface BinaryConfig {
  /** Absolute path, or 'auto' (or empty) to search PATH and then the npm package. */
  ffmpegPath: string;
  ffprobePath: string;
}

export interface ResolvedBinaries {
  ffmpegPath: string;
  ffprobePath: string;
  source: { ffmpeg: BinarySource; ffprobe: BinarySource };
}

export interface ResolveOptions {
  /** Environment to read PATH from (default: process.env). */
  env?: NodeJS.ProcessEnv;
  /**
   * Loads the npm package's binary path (default: `require(pkg).path`, undefined
   * when the optional dependency is not installed). Replaceable in tests.
   */
  loadNpm?: (pkg: string) => string | undefined;
}

const NPM_PACKAGES = {
  ffmpeg: '@ffmpeg-installer/ffmpeg',
  ffprobe: '@ffprobe-installer/ffprobe',
} as const;

export function isExecutableFile(file: string): boolean {
  try {
    if (!statSync(file).isFile()) return false;
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** First executable `name` in a PATH-style string, or undefined. Empty entries (= cwd) are ignored. */
export function findOnPath(name: string, pathVar: string | undefined): string | undefined {
  if (!pathVar) return undefined;
  const exts = process.platform === 'win32' ? ['', '.exe'] : [''];
  for (const dir of pathVar.split(path.delimiter)) {
    if (!dir || !path.isAbsolute(dir)) continue;
    for (const ext of exts) {
      const candidate = path.join(dir, name + ext);
      if (isExecutableFile(candidate)) return candidate;
    }
  }
  return undefined;
}

function defaultLoadNpm(pkg: string): string | undefined {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const mod = require(pkg) as { path?: unknown };
    return typeof mod.path === 'string' ? mod.path : undefined;
  } catch {
    // Optional dependency missing, or no build for this platform.
    return undefined;
  }
}

function isAuto(value: string | undefined): boolean {
  return value === undefined || value.trim() === '' || value.trim().toLowerCase() === 'auto';
}

function resolveOne(
  name: 'ffmpeg' | 'ffprobe',
  configKey: 'ffmpegPath' | 'ffprobePath',
  configured: string | undefined,
  opts: Required<ResolveOptions>,
): { path: string; source: BinarySource } {
  if (!isAuto(configured)) {
    const value = configured as string;
    const abs = path.resolve(value);
    if (!isExecutableFile(abs)) {
      throw new Error(`ffmpeg.${configKey} is set to ${JSON.stringify(value)}, but that is not an executable file; fix it or set ffmpeg.${configKey} to 'auto'`);
    }
    return { path: abs, source: 'config' };
  }
  const onPath = findOnPath(name, opts.env.PATH);
  if (onPath) return { path: onPath, source: 'path' };
  const fromNpm = opts.loadNpm(NPM_PACKAGES[name]);
  if (fromNpm && isExecutableFile(fromNpm)) return { path: fromNpm, source: 'npm' };
  throw new Error(
    `${name} not found: ffmpeg.${configKey} is 'auto', there is no executable '${name}' on PATH, ` +
      `and the npm package ${NPM_PACKAGES[name]} is not installed for this platform. ` +
      `Install ${name}, or set ffmpeg.${configKey} to its absolute path.`,
  );
}

export function resolveBinaries(config: BinaryConfig, options: ResolveOptions = {}): ResolvedBinaries {
  const opts: Required<ResolveOptions> = { env: options.env ?? process.env, loadNpm: options.loadNpm ?? defaultLoadNpm };
  const ffmpeg = resolveOne('ffmpeg', 'ffmpegPath', config.ffmpegPath, opts);
  const ffprobe = resolveOne('ffprobe', 'ffprobePath', config.ffprobePath, opts);
  return { ffmpegPath: ffmpeg.path, ffprobePath: ffprobe.path, source: { ffmpeg: ffmpeg.source, ffprobe: ffprobe.source } };
}

export function describeSource(source: BinarySource): string {
  switch (source) {
    case 'config': return 'configured path';
    case 'path': return 'system PATH';
    case 'npm': return 'npm package';
  }
}
