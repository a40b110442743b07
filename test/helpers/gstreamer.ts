/**
 * GStreamer's `playbin` (and `playbin3`) as a header-less player: gst-launch-1.0
 * playing a URL into fake sinks that keep the pipeline clock (sync=true), so a
 * frame is reported when it would be shown. Debian packages: gstreamer1.0-tools,
 * -plugins-good, -plugins-bad, -libav (.ci/run installs them when apt is there).
 */
import { spawn, execFileSync } from 'node:child_process';
import { killGroup } from './upstream.js';

/** tap's `skip` option: false, or why the test is skipped when gst-launch-1.0 is not installed. */
export const skipWithoutGstreamer: false | string = (() => {
  try {
    execFileSync('gst-launch-1.0', ['--version'], { stdio: 'ignore' });
    return false;
  } catch {
    return 'gst-launch-1.0 not installed (apt-get install gstreamer1.0-tools gstreamer1.0-plugins-good gstreamer1.0-plugins-bad gstreamer1.0-libav)';
  }
})();

export interface Playback {
  /** From spawn to the first video frame at the sink, or null when none came. */
  firstFrameMs: number | null;
  /** Video frames shown within the time allowed. */
  frames: number;
  /** Presentation times (seconds) of the first and last frame shown. */
  firstPts: number | null;
  lastPts: number | null;
  /** gst-launch's last error lines, with keys hidden. */
  errors: string;
}

const pts = (text: string) => text.split(':').reduce((sum, part) => sum * 60 + Number(part), 0);

/** Plays `url` with `element` for `seconds` and reports what reached the video sink. */
export function playWithGstreamer(url: string, seconds: number, element: 'playbin' | 'playbin3' = 'playbin'): Promise<Playback> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const child = spawn('gst-launch-1.0', ['-v', element, `uri=${url}`, 'video-sink=fakesink sync=true silent=false', 'audio-sink=fakesink sync=true'], {
      detached: true, stdio: ['ignore', 'pipe', 'pipe'],
    });
    const result: Playback = { firstFrameMs: null, frames: 0, firstPts: null, lastPts: null, errors: '' };
    let buffer = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      buffer += chunk;
      const lines = buffer.split('\n');
      buffer = lines.pop()!;
      for (const line of lines) {
        const m = /chain .*\(fakesink\d*:sink\) \(\d+ bytes, dts: [^,]*, pts: ([\d:.]+)/.exec(line);
        if (!m) continue;
        result.frames++;
        result.lastPts = pts(m[1]);
        if (result.firstFrameMs === null) {
          result.firstFrameMs = Math.round(performance.now() - t0);
          result.firstPts = result.lastPts;
        }
      }
    });
    child.stderr!.setEncoding('utf8').on('data', (s: string) => { if (result.errors.length < 4000) result.errors += s; });
    child.stdout!.on('data', () => {});
    const timer = setTimeout(() => killGroup(child.pid, 'SIGKILL'), seconds * 1000);
    child.on('close', () => {
      clearTimeout(timer);
      result.errors = result.errors.replace(/(api_key|key)=[^&\s"]*/g, '$1=***').trim().split('\n').slice(-6).join('\n');
      resolve(result);
    });
  });
}
