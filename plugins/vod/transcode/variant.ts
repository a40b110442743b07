/**
 * What one transcode job makes, and the token that names it in segment URLs.
 * The token carries everything needed to recreate the job after it idled
 * away (players keep a manifest for hours): version, method, height, video
 * bitrate, audio track and a fingerprint of the file, so a file replaced since
 * the manifest was written is refused instead of served with wrong timings.
 *
 *   0-t-720-3500-1-9f3a1c2e   version 0, transcode to 720p at 3500 kb/s, audio track 1
 *   0-r-0-0-0-9f3a1c2e        version 0, remux, audio track 0
 *   2-a-0-0-n-9f3a1c2e        version 2, video copied + AAC audio, no audio stream
 *
 * URLs carry it signed (VariantTokens: the token, `-`, a MAC over the item and
 * the token), so a URL names only a variant this server offered: play-info's
 * manifest URL carries its decision, and a made-up token is refused before any
 * job exists.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { MediaFile } from '../model.js';
import { LADDER, type PlayDecision } from '../play-decision.js';

export type OutputMethod = 'remux' | 'audio-only' | 'transcode';

export interface Variant {
  version: number;
  method: OutputMethod;
  /** Output height (transcode), else 0. */
  height: number;
  /** Output video bitrate in kb/s (transcode), else 0. */
  videoKbps: number;
  /** Position of the audio stream among the file's audio streams, or null for none. */
  audio: number | null;
  /** Fingerprint of the file (id, size, mtime). */
  fingerprint: string;
}

const METHOD_CODES: Record<OutputMethod, string> = { remux: 'r', 'audio-only': 'a', transcode: 't' };
const CODE_METHODS: Record<string, OutputMethod> = { r: 'remux', a: 'audio-only', t: 'transcode' };
const TOKEN = /^(\d{1,3})-([rat])-(\d{1,5})-(\d{1,6})-(\d{1,3}|n)-([0-9a-f]{8})$/;

export function fingerprint(file: MediaFile): string {
  return createHash('sha256').update(`${file.id}\n${file.size}\n${file.mtimeMs}`).digest('hex').slice(0, 8);
}

/** The variant a play decision asks for. A manifest is never `direct`: that is a remux. */
export function variantOf(file: MediaFile, version: number, decision: PlayDecision): Variant {
  const audio = decision.audio ? file.info!.audio.indexOf(decision.audio) : -1;
  const method: OutputMethod = decision.method === 'direct' ? 'remux' : decision.method;
  const transcode = method === 'transcode' && file.info!.video;
  return {
    version,
    method,
    height: transcode ? decision.height ?? file.info!.video!.height : 0,
    videoKbps: transcode ? Math.round((decision.videoBitrate ?? 0) / 1000) : 0,
    audio: audio >= 0 ? audio : null,
    fingerprint: fingerprint(file),
  };
}

export function tokenOf(v: Variant): string {
  return [v.version, METHOD_CODES[v.method], v.height, v.videoKbps, v.audio ?? 'n', v.fingerprint].join('-');
}

/** The variant a token names, or undefined when it is malformed. Checked against the file by checkVariant(). */
export function parseToken(token: string): Variant | undefined {
  const m = TOKEN.exec(token);
  if (!m) return undefined;
  return {
    version: Number(m[1]), method: CODE_METHODS[m[2]!]!, height: Number(m[3]), videoKbps: Number(m[4]),
    audio: m[5] === 'n' ? null : Number(m[5]), fingerprint: m[6]!,
  };
}

/** Why a token's variant cannot be made from this file (tokens come from URLs: anyone can edit one), or undefined. */
export function checkVariant(v: Variant, file: MediaFile): string | undefined {
  const info = file.info;
  if (!info) return 'the file is unreadable';
  if (v.fingerprint !== fingerprint(file)) return 'the file changed since the manifest was made';
  if (v.audio !== null && v.audio >= info.audio.length) return `no audio track ${v.audio}`;
  if (v.audio === null && info.audio.length && !info.video) return 'nothing to play';
  if (v.method === 'transcode') {
    if (!info.video) return 'no video to transcode';
    if (v.height < 16 || v.height % 2 || v.height > Math.max(info.video.height, 16)) return `bad height ${v.height}`;
    const source = info.video.height - (info.video.height % 2);
    const onLadder = LADDER.some((r) => r.kbps === v.videoKbps && (r.height === v.height || (v.height === source && source < r.height)));
    if (!onLadder) return `${v.height}p at ${v.videoKbps} kb/s is not on the ladder`;
  } else if (v.height || v.videoKbps) {
    return 'height and bitrate are for transcodes only';
  }
  return undefined;
}

const SIGNED = /^(.+)-([0-9a-f]{16})$/;

/** Signs and checks variant tokens with a key of the server's own. */
export class VariantTokens {
  constructor(private readonly key: Buffer) {}

  /** The key kept in `dir` (made on first use), base64: signed URLs stay valid across restarts. */
  static async ownKey(dir: string): Promise<string> {
    const file = path.join(dir, 'variant-key');
    let key = await readFile(file).catch(() => undefined);
    if (!key || key.length < 32) {
      key = randomBytes(32);
      await writeFile(file, key, { mode: 0o600 });
    }
    return key.toString('base64');
  }

  sign(itemId: string, v: Variant): string {
    const token = tokenOf(v);
    return `${token}-${this.mac(itemId, token)}`;
  }

  /** The variant a signed token names for this item, or undefined when it is malformed or was not signed here. */
  verify(itemId: string, signed: string): Variant | undefined {
    const m = SIGNED.exec(signed);
    if (!m) return undefined;
    const expected = Buffer.from(this.mac(itemId, m[1]!));
    const given = Buffer.from(m[2]!);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined;
    return parseToken(m[1]!);
  }

  private mac(itemId: string, token: string): string {
    return createHmac('sha256', this.key).update(itemId).update('\n').update(token).digest('hex').slice(0, 16);
  }
}
