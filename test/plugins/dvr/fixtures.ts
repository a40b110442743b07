/**
 * DVR test helpers: a guide of 1-minute programmes (XMLTV) around now,
 * programme lookups by channel and minute, a server in its own process (to be
 * killed), and ffmpeg as a player.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync, readFileSync } from 'node:fs';
import { CLI } from '../../helpers/repo.js';
import { cleanEnv } from '../../helpers/env.js';
import { decode as decodeVideo, type Decoded } from '../../helpers/player.js';
import { xmltv, xt, type GuideProgrammeDef } from '../live-tv/fixtures.js';

/** An MP4 box: size, type, body. */
export const box = (type: string, ...body: Buffer[]): Buffer => {
  const content = Buffer.concat(body);
  const head = Buffer.alloc(8);
  head.writeUInt32BE(8 + content.length);
  head.write(type, 4, 'latin1');
  return Buffer.concat([head, content]);
};
export const u32 = (n: number): Buffer => { const b = Buffer.alloc(4); b.writeUInt32BE(n); return b; };
export const u64 = (n: number | bigint): Buffer => { const b = Buffer.alloc(8); b.writeBigUInt64BE(BigInt(n)); return b; };

export const MINUTE = 60_000;

/** The start of the slot (`slot` ms, a minute unless told) `offset` slots from the one containing `now`. */
export const slotAt = (now: number, offset: number, slot = MINUTE) => Math.floor(now / slot) * slot + offset * slot;

const hhmmss = (ms: number) => new Date(ms).toISOString().slice(11, 19);

/** The title of a channel's programme starting at `start`: unique per channel and start. */
export const titleOf = (channel: string, start: number) => `${channel} at ${hhmmss(start)}`;

/**
 * An XMLTV guide: for each guide channel id, programmes of one slot (a minute unless told) from
 * `from` to `to` (slots relative to now); `override` replaces or drops (null) the programme of a slot.
 */
export function slotGuide(channels: string[], now: number, from: number, to: number,
  override: (channel: string, start: number) => { start: number; stop: number } | null | undefined = () => undefined, slot = MINUTE): string {
  const programmes: GuideProgrammeDef[] = [];
  for (const channel of channels) {
    for (let m = from; m < to; m++) {
      const start = slotAt(now, m, slot);
      const o = override(channel, start);
      if (o === null) continue;
      const times = o ?? { start, stop: start + slot };
      programmes.push({ channel, start: xt(new Date(times.start).toISOString()), stop: xt(new Date(times.stop).toISOString()), title: titleOf(channel, start) });
    }
  }
  return xmltv(channels.map((id) => ({ id, names: [id] })), programmes);
}

export interface Programme { id: number; title: string; start: string; stop: string }

/** GET /programs as { channel name → { id, programmes } }. */
export async function guideByName(get: (url: string) => Promise<any>): Promise<Map<string, { id: number; programs: Programme[] }>> {
  const body = await get('/programs');
  return new Map(body.channels.map((c: any) => [c.name, { id: c.id, programs: c.programs }]));
}

/** The programme of a channel that starts at `start` (ms). */
export function programmeAt(guide: Map<string, { id: number; programs: Programme[] }>, channel: string, start: number): { channelId: number; programme: Programme } {
  const c = guide.get(channel);
  const programme = c?.programs.find((p) => Date.parse(p.start) === start);
  if (!c || !programme) throw new Error(`no programme of ${channel} at ${new Date(start).toISOString()}`);
  return { channelId: c.id, programme };
}

/* ---------------------------------------------------------------- a server process */


export const ADMIN_PASSWORD = 'dvr-test-admin-password';

/** `antenna serve` as its own process (so a test can SIGKILL it), logging to `logFile`. */
export interface Server {
  proc: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function startServer(dir: string, configFile: string, logFile: string): Server {
  const fd = openSync(logFile, 'a');
  const proc = spawn(process.execPath, [CLI, 'serve', '--config', configFile], {
    cwd: dir, stdio: ['ignore', fd, fd], env: cleanEnv({ ANTENNA_ADMIN_PASSWORD: ADMIN_PASSWORD }),
  });
  closeSync(fd);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  return { proc, exited };
}

/** Resolves once the server answers, or throws after timeoutMs (or when it exits). */
export async function waitListening(base: string, server: Server, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let gone = false;
  void server.exited.then(() => { gone = true; });
  while (Date.now() < deadline && !gone) {
    try {
      if ((await fetch(`${base}/api/version`)).ok) return;
    } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(gone ? 'the server exited' : `the server did not listen within ${timeoutMs} ms`);
}

/** The last lines of a log file, with tokens and keys hidden. */
export function logTail(file: string, lines = 40): string {
  let text = '';
  try { text = readFileSync(file, 'utf8'); } catch { return ''; }
  return text.split('\n').slice(-lines).join('\n').replace(/(api_key|key)=[^&"\s]*/g, '$1=***').replace(/Bearer [\w.-]+/g, 'Bearer ***');
}

/* ---------------------------------------------------------------- ffmpeg as a player */

export { playerPids, type Decoded } from '../../helpers/player.js';

/** The shared player (test/helpers/player.ts), with a longer default deadline. */
export const decode = (url: string, limit: number, timeoutMs = 120_000): Promise<Decoded> => decodeVideo(url, limit, timeoutMs);
