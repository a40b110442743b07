import { deviceCaps } from 'antenna/sdk';

/** The video codecs a client decodes, from Device-Codecs (spec §5); without it, a browser's. */
export interface ClientCaps {
  video: Set<string>;
}

/** Device-Codecs (spec §5) as the SDK reads it for every kind of playback. */
export function clientCaps(headers: Record<string, string | string[] | undefined>): ClientCaps {
  return { video: deviceCaps(headers).video };
}

/**
 * Whether the input's video can be copied to this client as it is. Audio is not
 * asked: live audio is always encoded to AAC, which every client decodes.
 */
export function canCopy(caps: ClientCaps, input: { video?: string }): boolean {
  return !input.video || caps.video.has(input.video);
}

/** `Stream #0:0[0x100]: Video: h264 (High) …` → ['video', 'h264'] */
export function parseInputStreamLine(line: string): ['video' | 'audio', string] | undefined {
  const m = /^\s*Stream #0:\d+.*?: (Video|Audio): ([a-z0-9_]+)/i.exec(line);
  return m ? [m[1].toLowerCase() as 'video' | 'audio', m[2].toLowerCase()] : undefined;
}

/**
 * The frame rate of an input video stream line ("25 fps", else "25 tbr" when a short probe did not
 * average one), as DASH writes it: an integer or an NTSC fraction ("30000/1001").
 */
export function parseInputFrameRate(line: string): string | undefined {
  if (!/^\s*Stream #0:\d+.*?: Video: /.test(line)) return undefined;
  const m = /, (\d+(?:\.\d+)?) fps/.exec(line) ?? /, (\d+(?:\.\d+)?) tbr/.exec(line);
  const fps = m ? Number(m[1]) : NaN;
  if (!(fps > 0 && fps <= 240)) return undefined;
  const ntsc = Math.round(fps * 1.001);
  if (Math.abs(fps - ntsc / 1.001) < 0.01 && Math.abs(fps - Math.round(fps)) > 0.01) return `${ntsc * 1000}/1001`;
  return Math.abs(fps - Math.round(fps)) < 0.01 ? String(Math.round(fps)) : undefined;
}
