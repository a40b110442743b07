/**
 * Shared by the continue-watching tests: a movies library (Alpha, Bravo,
 * Charlie) and a shows library (Show One: S01E01, S01E02, S02E01), each file a
 * copy of one tiny generated clip, served by vod + continue-watching.
 */
import { copyFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { TestHost, TestHostOptions } from '../../../sdk/testing.js';
import { clip, tempDir, vodHost } from '../vod/fixtures.js';

export interface Media { dir: string; movies: string; shows: string }

const FILES = [
  'movies/Alpha (2001)/Alpha (2001).mp4',
  'movies/Bravo (2002)/Bravo (2002).mp4',
  'movies/Charlie (2003)/Charlie (2003).mp4',
  'shows/Show One/Season 01/Show One - S01E01.mp4',
  'shows/Show One/Season 01/Show One - S01E02.mp4',
  'shows/Show One/Season 02/Show One - S02E01.mp4',
];

export async function makeMedia(t: { teardown(fn: () => unknown): void }): Promise<Media> {
  const dir = await tempDir(t, 'antenna-cw-');
  const base = path.join(dir, 'base.mp4');
  await clip(base, { seconds: 2, width: 320, height: 180 });
  for (const rel of FILES) {
    await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
    await copyFile(base, path.join(dir, rel));
  }
  return { dir, movies: path.join(dir, 'movies'), shows: path.join(dir, 'shows') };
}

export function cwHost(media: Media, options: TestHostOptions & { cw?: Record<string, unknown> } = {}): Promise<TestHost> {
  const { cw, ...rest } = options;
  return vodHost([
    { name: 'Movies', type: 'movies', paths: [media.movies] },
    { name: 'Shows', type: 'shows', paths: [media.shows] },
  ], { ...rest, plugins: { 'continue-watching': cw ?? {}, ...(rest.plugins ?? {}) } });
}

export interface Ids {
  moviesLib: number; showsLib: number;
  alpha: string; bravo: string; charlie: string;
  series: string; s1e1: string; s1e2: string; s2e1: string;
}

/** The ids of the library above, found by browsing as admin. */
export async function ids(host: TestHost): Promise<Ids> {
  const get = async (url: string) => {
    const res = await host.inject({ method: 'GET', url, headers: host.authHeaders });
    if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
    return res.json();
  };
  const libs = (await get('/libraries')).libraries as { id: number; name: string }[];
  const moviesLib = libs.find((l) => l.name === 'Movies')!.id;
  const showsLib = libs.find((l) => l.name === 'Shows')!.id;
  const movies = (await get(`/library/${moviesLib}`)).items as { id: string; title: string }[];
  const movie = (title: string) => movies.find((m) => m.title === title)!.id;
  const series = (await get(`/library/${showsLib}`)).items[0].id as string;
  const seasons = (await get(`/item/${series}`)).children as { id: string }[];
  const s1 = (await get(`/item/${seasons[0]!.id}`)).children as { id: string }[];
  const s2 = (await get(`/item/${seasons[1]!.id}`)).children as { id: string }[];
  return {
    moviesLib, showsLib, alpha: movie('Alpha'), bravo: movie('Bravo'), charlie: movie('Charlie'),
    series, s1e1: s1[0]!.id, s1e2: s1[1]!.id, s2e1: s2[0]!.id,
  };
}

/** A client of the continue-watching routes for one token. */
export function client(host: TestHost, token: string) {
  const headers = { authorization: `Bearer ${token}` };
  const base = '/api/continue-watching';
  return {
    headers,
    list: (query = '') => host.inject({ method: 'GET', url: `${base}${query}`, headers }),
    state: (id: string) => host.inject({ method: 'GET', url: `${base}/${id}`, headers }),
    progress: (id: string, payload: unknown) => host.inject({ method: 'POST', url: `${base}/${id}/progress`, headers, payload: payload as object }),
    watched: (id: string) => host.inject({ method: 'PATCH', url: `${base}/${id}/watched`, headers }),
    unwatched: (id: string) => host.inject({ method: 'PATCH', url: `${base}/${id}/unwatched`, headers }),
    remove: (id: string) => host.inject({ method: 'DELETE', url: `${base}/${id}`, headers }),
    /** videoIds of the list, in order. */
    async listed(query = ''): Promise<string[]> {
      const res = await this.list(query);
      if (res.statusCode !== 200) throw new Error(`list: ${res.statusCode} ${res.body}`);
      return (res.json().items as { videoId: string }[]).map((i) => i.videoId);
    },
  };
}
