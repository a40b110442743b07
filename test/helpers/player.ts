/**
 * ffmpeg as a player: decodes a stream the way a client plays it and counts
 * what came out (from framemd5).
 */
import { spawn } from 'node:child_process';
import { FFMPEG, killGroup } from './upstream.js';

export interface Decoded {
  seconds: number;
  frames: number;
  /** Each frame's presentation time (seconds), in output order. */
  pts: number[];
  /** Whether every frame's timestamp was after the one before (framemd5 pts). */
  monotonic: boolean;
  code: number | null;
  stderr: string;
}

/** The process groups of the players still running (a test's teardown kills them, and checks none is left). */
export const playerPids = new Set<number>();

/**
 * Decodes the first video stream of `url` for at most `limit` seconds and
 * reports how many seconds of video it decoded (framemd5 durations) and each
 * frame's presentation time. As a plain ffmpeg (and mpv, and other players
 * built on it) plays: its HLS reader ignores EXT-X-DISCONTINUITY, and frames
 * whose timestamps go back are dropped.
 */
export function decode(url: string, limit: number, timeoutMs = 60_000): Promise<Decoded> {
  return new Promise((resolve) => {
    const child = spawn(FFMPEG, ['-hide_banner', '-nostdin', '-loglevel', 'error', '-i', url, '-map', '0:v:0', '-t', String(limit), '-f', 'framemd5', '-'], {
      detached: true, stdio: ['ignore', 'pipe', 'pipe'],
    });
    if (child.pid) playerPids.add(child.pid);
    let out = '';
    let err = '';
    child.stdout!.setEncoding('utf8').on('data', (s: string) => { out += s; });
    child.stderr!.setEncoding('utf8').on('data', (s: string) => { if (err.length < 8000) err += s; });
    const timer = setTimeout(() => killGroup(child.pid), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      if (child.pid) playerPids.delete(child.pid);
      const tb = /^#tb 0: (\d+)\/(\d+)/m.exec(out);
      const unit = tb ? Number(tb[1]) / Number(tb[2]) : 0;
      let seconds = 0;
      const pts: number[] = [];
      for (const line of out.split('\n')) {
        // stream, dts, pts, duration, size, hash
        const f = line.split(',').map((s) => s.trim());
        if (f[0] !== '0' || f.length < 6) continue;
        pts.push(Number(f[2]) * unit);
        seconds += Number(f[3]) * unit;
      }
      resolve({ seconds, frames: pts.length, pts, monotonic: pts.every((p, i) => i === 0 || p > pts[i - 1]!), code, stderr: err.replace(/(api_key|key)=[^&\s]*/g, '$1=***') });
    });
  });
}
