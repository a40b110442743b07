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
