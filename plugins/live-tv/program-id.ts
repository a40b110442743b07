/**
 * Programme ids: the first 52 bits (13 hex digits, so that they fit a JSON number) of the SHA-1
 * of `${sourceId}\n${guideId}\n${start}`, stable across refreshes: the same source, guide
 * channel and start give the same id, which recordings and clients keep.
 *
 * SHA-1 is computed here rather than by node:crypto: crypto.hash took 1.3-1.5 s of a 650,000-
 * programme import (each call into C++, the string encoded, a digest context, a hex string parsed
 * back); this takes 0.7-1.1 s, measured side by side. The messages are one 64-byte block, whose
 * source and guide channel part repeats from one programme to the next: it is encoded once per
 * guide channel.
 * The tests check it against node:crypto.
 */
export class ProgramIds {
  /** `${sourceId}\n${guideId}\n` in UTF-8, per guide channel. */
  private readonly prefixes = new Map<string, Uint8Array>();
  /** The last guide channel's (programmes come channel by channel in most guides). */
  private lastGuideId: string | undefined;
  private lastPrefix: Uint8Array = Buffer.alloc(0);
  /** The padded message; grows for a long guide channel id. */
  private message = new Uint8Array(128);
  private readonly words = new Int32Array(80);

  constructor(private readonly sourceId: string) {}

  id(guideId: string, start: number): number {
    let prefix = this.lastPrefix;
    if (guideId !== this.lastGuideId) {
      const known = this.prefixes.get(guideId);
      if (known) prefix = known;
      else this.prefixes.set(guideId, (prefix = Buffer.from(`${this.sourceId}\n${guideId}\n`)));
      this.lastGuideId = guideId;
      this.lastPrefix = prefix;
    }
    const digits = String(start); // ASCII
    const length = prefix.length + digits.length;
    // The message, 0x80, zeros, and its length in bits (64-bit big-endian), in 64-byte blocks.
    const padded = (((length + 8) >>> 6) + 1) << 6;
    if (this.message.length < padded) this.message = new Uint8Array(padded);
    const m = this.message;
    // Plain loops: TypedArray set() and fill() cost more than these few bytes.
    let o = 0;
    for (; o < prefix.length; o++) m[o] = prefix[o];
    for (let i = 0; i < digits.length; i++) m[o++] = digits.charCodeAt(i);
    m[o++] = 0x80;
    while (o < padded - 4) m[o++] = 0;
    const bits = length * 8; // < 2^32: the length's high word is among the zeros
    m[padded - 4] = bits >>> 24;
    m[padded - 3] = bits >>> 16;
    m[padded - 2] = bits >>> 8;
    m[padded - 1] = bits;
    return sha1High52(m, padded, this.words);
  }
}

// The round constants as int32, so that every sum below stays int32 arithmetic (each one is `| 0`).
const K1 = 0x5a827999 | 0;
const K2 = 0x6ed9eba1 | 0;
const K3 = 0x8f1bbcdc | 0;
const K4 = 0xca62c1d6 | 0;

/** The first 52 bits of SHA-1 (FIPS 180-4) over `padded` bytes of an already padded message, as a number. */
function sha1High52(m: Uint8Array, padded: number, w: Int32Array): number {
  let h0 = 0x67452301, h1 = 0xefcdab89 | 0, h2 = 0x98badcfe | 0, h3 = 0x10325476, h4 = 0xc3d2e1f0 | 0;
  for (let p = 0; p < padded; p += 64) {
    for (let t = 0; t < 16; t++) {
      const q = p + (t << 2);
      w[t] = (m[q] << 24) | (m[q + 1] << 16) | (m[q + 2] << 8) | m[q + 3];
    }
    for (let t = 16; t < 80; t++) {
      const x = w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16];
      w[t] = (x << 1) | (x >>> 31);
    }
    let a = h0, b = h1, c = h2, d = h3, e = h4;
    let t = 0;
    for (; t < 20; t++) {
      const x = (((a << 5) | (a >>> 27)) + ((((b & c) | (~b & d)) + (((e + K1) | 0) + w[t] | 0)) | 0)) | 0;
      e = d; d = c; c = (b << 30) | (b >>> 2); b = a; a = x;
    }
    for (; t < 40; t++) {
      const x = (((a << 5) | (a >>> 27)) + (((b ^ c ^ d) + (((e + K2) | 0) + w[t] | 0)) | 0)) | 0;
      e = d; d = c; c = (b << 30) | (b >>> 2); b = a; a = x;
    }
    for (; t < 60; t++) {
      const x = (((a << 5) | (a >>> 27)) + ((((b & c) | (b & d) | (c & d)) + (((e + K3) | 0) + w[t] | 0)) | 0)) | 0;
      e = d; d = c; c = (b << 30) | (b >>> 2); b = a; a = x;
    }
    for (; t < 80; t++) {
      const x = (((a << 5) | (a >>> 27)) + (((b ^ c ^ d) + (((e + K4) | 0) + w[t] | 0)) | 0)) | 0;
      e = d; d = c; c = (b << 30) | (b >>> 2); b = a; a = x;
    }
    h0 = (h0 + a) | 0; h1 = (h1 + b) | 0; h2 = (h2 + c) | 0; h3 = (h3 + d) | 0; h4 = (h4 + e) | 0;
  }
  return (h0 >>> 0) * 0x100000 + (h1 >>> 12);
}
