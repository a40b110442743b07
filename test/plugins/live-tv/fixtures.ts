/**
 * Helpers for the live-tv end-to-end tests: playlists and guides written by
 * hand, a local HTTP server to serve them, the `guide refresh` command, and
 * small HTTP shortcuts over a test host.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createTestHost, type TestHost } from '../../../sdk/testing.js';

/** The part of a tap Test used here. */
interface Tap {
  teardown(fn: () => unknown): void;
}

export async function tempDir(t: Tap, prefix = 'antenna-livetv-'): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

export interface PlaylistEntry {
  name: string;
  url: string;
  tvgId?: string;
  tvgName?: string;
  chno?: string;
  group?: string;
  logo?: string;
}

/** An M3U playlist (LF line endings unless told otherwise). */
export function m3u(entries: PlaylistEntry[], eol = '\n'): string {
  const lines = ['#EXTM3U'];
  for (const e of entries) {
    const attrs: string[] = [];
    if (e.tvgId !== undefined) attrs.push(`tvg-id="${e.tvgId}"`);
    if (e.tvgName !== undefined) attrs.push(`tvg-name="${e.tvgName}"`);
    if (e.chno !== undefined) attrs.push(`tvg-chno="${e.chno}"`);
    if (e.logo !== undefined) attrs.push(`tvg-logo="${e.logo}"`);
    if (e.group !== undefined) attrs.push(`group-title="${e.group}"`);
    lines.push(`#EXTINF:-1 ${attrs.join(' ')},${e.name}`, e.url);
  }
  return lines.join(eol) + eol;
}

export interface GuideChannelDef { id: string; names: string[]; icon?: string }
export interface GuideProgrammeDef {
  channel: string;
  start: string;
  stop?: string;
  /** Raw XML of the title element(s); a plain string becomes one <title>. */
  title?: string;
  titlesXml?: string;
}

/** An XMLTV document; `title` is inserted as is (so entities can be tested). */
export function xmltv(channels: GuideChannelDef[], programmes: GuideProgrammeDef[], prolog = '<?xml version="1.0" encoding="UTF-8"?>\n'): string {
  const out = [prolog + '<tv generator-info-name="antenna-tests">'];
  for (const c of channels) {
    const icon = c.icon === undefined ? '' : `<icon src="${c.icon}"/>`;
    out.push(`  <channel id="${c.id}">${c.names.map((n) => `<display-name>${n}</display-name>`).join('')}${icon}</channel>`);
  }
  for (const p of programmes) {
    const stop = p.stop === undefined ? '' : ` stop="${p.stop}"`;
    const titles = p.titlesXml ?? `<title>${p.title ?? ''}</title>`;
    out.push(`  <programme start="${p.start}"${stop} channel="${p.channel}">${titles}</programme>`);
  }
  out.push('</tv>');
  return out.join('\n') + '\n';
}

/** XMLTV time for a UTC ISO date, written in the given offset (e.g. '-0430'). */
export function xt(iso: string, offset = '+0000'): string {
  const sign = offset[0] === '-' ? -1 : 1;
  const minutes = sign * (Number(offset.slice(1, 3)) * 60 + Number(offset.slice(3, 5)));
  const local = new Date(Date.parse(iso) + minutes * 60_000);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${local.getUTCFullYear()}${p(local.getUTCMonth() + 1)}${p(local.getUTCDate())}${p(local.getUTCHours())}${p(local.getUTCMinutes())}${p(local.getUTCSeconds())} ${offset}`;
}

export type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/** A real HTTP server on 127.0.0.1 whose routes the test changes as it goes; unknown paths are 404. */
export async function serve(t: Tap): Promise<{ base: string; port: number; routes: Map<string, Handler | { body: Buffer | string; type?: string }>; close(): Promise<void>; hits: Map<string, number> }> {
  const routes = new Map<string, Handler | { body: Buffer | string; type?: string }>();
  const hits = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const url = (req.url ?? '/').split('?')[0]!;
    hits.set(url, (hits.get(url) ?? 0) + 1);
    const route = routes.get(url);
    if (!route) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    if (typeof route === 'function') return route(req, res);
    const body = Buffer.isBuffer(route.body) ? route.body : Buffer.from(route.body);
    res.writeHead(200, { 'content-type': route.type ?? 'application/octet-stream', 'content-length': body.length }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  t.teardown(close);
  return { base: `http://127.0.0.1:${port}`, port, routes, close, hits };
}

export { unusedPort as closedPort } from '../../helpers/env.js';

export async function write(dir: string, name: string, data: string | Buffer): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, data);
  return file;
}

export interface Playlist { name: string; url: string; maxStreams?: number }
export interface GuideConf { url: string; name?: string; preferredLanguage?: string }

export async function startHost(t: Tap, options: {
  playlists: Playlist[]; guides?: GuideConf[]; preferredLanguage?: string; dataDir?: string;
  /** More of live-tv's config; a clock the test moves. */
  liveTv?: Record<string, unknown>; clock?: { now(): number };
  /** Listen on a port (host.url), for tests that need real HTTP. */
  listen?: boolean;
}): Promise<TestHost> {
  const xmltvConf: Record<string, unknown> = { sources: options.guides ?? [], maxAge: '100000d' };
  if (options.preferredLanguage) xmltvConf.preferredLanguage = options.preferredLanguage;
  const host = await createTestHost({
    dataDir: options.dataDir,
    clock: options.clock,
    listen: options.listen,
    plugins: {
      'live-tv': { initialImport: 'await', ...options.liveTv },
      'm3u-tuner': { sources: options.playlists },
      ...(options.guides ? { 'xmltv-guide': xmltvConf } : {}),
    },
  });
  t.teardown(() => host.close());
  return host;
}

/** Runs `antenna guide refresh` in the host: resolves with its output lines, or rejects (with the lines on the error). */
export async function refresh(host: TestHost): Promise<string[]> {
  const command = host.host.findCommand(['guide', 'refresh'])?.entry;
  if (!command) throw new Error('no guide refresh command');
  const lines: string[] = [];
  try {
    await host.host.runCommand(command, [], { progress: { update() {}, done() {} }, out: (line) => lines.push(line) });
  } catch (err) {
    (err as Error & { lines?: string[] }).lines = lines;
    throw err;
  }
  return lines;
}

/** The refresh that must fail: returns the error's message and the output lines. */
export async function failingRefresh(host: TestHost): Promise<{ error: string | undefined; lines: string[] }> {
  try {
    const lines = await refresh(host);
    return { error: undefined, lines };
  } catch (err) {
    return { error: (err as Error).message, lines: (err as Error & { lines?: string[] }).lines ?? [] };
  }
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

export async function getJson(host: TestHost, url: string, token = host.adminToken): Promise<{ status: number; body: any }> {
  const res = await host.inject({ method: 'GET', url, headers: bearer(token) });
  let body: any;
  try { body = res.json(); } catch { body = res.body; }
  return { status: res.statusCode, body };
}

export interface ChannelView { id: number; name: string; tvg_chno: string; favorited: boolean; logo: string | null; category: string | null; tvg_id: string | null; source: string }
export interface ProgramView { id: number; title: string; start: string; stop: string }
export interface GuideEntry { id: number; name: string; tvg_chno: string; logo: string | null; programs: ProgramView[] }

export async function channels(host: TestHost, query = '', token?: string): Promise<ChannelView[]> {
  const { status, body } = await getJson(host, `/channels${query}`, token);
  if (status !== 200) throw new Error(`GET /channels${query}: ${status} ${JSON.stringify(body)}`);
  return body.channels;
}

export async function guide(host: TestHost, query = '', token?: string): Promise<{ total_channels: number; offset: number; channels: GuideEntry[] }> {
  const { status, body } = await getJson(host, `/programs${query}`, token);
  if (status !== 200) throw new Error(`GET /programs${query}: ${status} ${JSON.stringify(body)}`);
  return body;
}

/** Programmes per channel name, as [title, start, stop] triples. */
export async function programmesByName(host: TestHost, query = ''): Promise<Record<string, string[][]>> {
  const out: Record<string, string[][]> = {};
  for (const c of (await guide(host, query)).channels) out[c.name] = c.programs.map((p) => [p.title, p.start, p.stop]);
  return out;
}

export const ISO_Z = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/;
