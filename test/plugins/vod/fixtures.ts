/**
 * Shared by the VOD tests: generated media (ffmpeg test sources, in a temp dir)
 * and a test host with the vod plugin and libraries over those folders.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createTestHost, type TestHost, type TestHostOptions } from '../../../sdk/testing.js';
import { makeClip, type ClipSpec } from '../../../plugins/vod/sample-media.js';
import { FFMPEG } from '../../helpers/upstream.js';

export { FFMPEG };
// eslint-disable-next-line @typescript-eslint/no-require-imports
export const FFPROBE: string = require('@ffprobe-installer/ffprobe').path;

/** ffmpeg to completion; rejects with its stderr. */
export const runFfmpeg = (args: string[]): Promise<void> => new Promise((resolve, reject) => {
  execFile(FFMPEG, args, { maxBuffer: 16 * 2 ** 20 }, (err, _out, stderr) => (err ? reject(new Error(`ffmpeg ${args.join(' ')}: ${stderr}`)) : resolve()));
});

export const clip = (file: string, spec: ClipSpec): Promise<void> => makeClip(runFfmpeg, file, spec);

/** A temp dir removed when the test ends. */
export async function tempDir(t: { teardown(fn: () => unknown): void }, prefix = 'antenna-vod-'): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

export interface VodLibrary { name: string; type: 'movies' | 'shows'; paths: string[] }

/** A test host with `vod` over these libraries, scanned before it answers (initialScan: await). */
export async function vodHost(libraries: VodLibrary[], options: TestHostOptions & { vod?: Record<string, unknown> } = {}): Promise<TestHost> {
  const { vod, ...rest } = options;
  return createTestHost({ ...rest, plugins: { vod: { libraries, initialScan: 'await', ...vod }, ...(rest.plugins ?? {}) } });
}

/**
 * What the host's scan found, as the admin sees it: the libraries, every
 * title's item id (`ids`), and `id(title)`, which throws on a title not found.
 */
export async function catalog(host: TestHost): Promise<{ libs: { id: number; name: string }[]; ids: Map<string, string>; id(title: string): string }> {
  const bearer = host.authHeaders;
  const libs = (await host.inject({ method: 'GET', url: '/libraries', headers: bearer })).json().libraries as { id: number; name: string }[];
  const ids = new Map<string, string>();
  for (const lib of libs) {
    const page = (await host.inject({ method: 'GET', url: `/library/${lib.id}?limit=100`, headers: bearer })).json();
    for (const item of page.items as { id: string; title: string }[]) ids.set(item.title, item.id);
  }
  const id = (title: string) => {
    const v = ids.get(title);
    if (!v) throw new Error(`no item ${title} (have ${[...ids.keys()].join(', ')})`);
    return v;
  };
  return { libs, ids, id };
}
