/** The video codecs a client decodes, from Device-Codecs (spec §5); without it, a browser's. */
export interface ClientCaps {
  video: Set<string>;
}

const BROWSER: ClientCaps = { video: new Set(['h264']) };

const ALIASES: Record<string, string> = { avc: 'h264', avc1: 'h264', 'h.264': 'h264', hevc: 'hevc', h265: 'hevc', 'h.265': 'hevc', hvc1: 'hevc', mpeg2: 'mpeg2video', 'mp4a': 'aac', 'ac-3': 'ac3', 'e-ac-3': 'eac3', 'ec-3': 'eac3' };

function list(header: string | string[] | undefined): Set<string> | undefined {
  const text = Array.isArray(header) ? header.join(',') : header;
  if (!text || !text.trim()) return undefined;
  return new Set(text.split(',').map((c) => c.trim().toLowerCase()).filter(Boolean).map((c) => ALIASES[c] ?? c));
}

export function clientCaps(headers: Record<string, string | string[] | undefined>): ClientCaps {
  return { video: list(headers['device-codecs']) ?? BROWSER.video };
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
