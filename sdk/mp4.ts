/**
 * MP4 (ISO BMFF) helpers for plugins that read media segments: walking boxes,
 * and the RFC 6381 codec strings read from configuration boxes, for the CODECS
 * and codecs attributes players check before fetching a byte (ffmpeg's dash
 * muxer says a bare `hvc1`, which tells a player nothing of the profile, tier
 * and level it must decode).
 */

export interface Box {
  type: string;
  /** Offset of the box header in the buffer. */
  start: number;
  /** Offset of the box content (after the header). */
  body: number;
  /** Offset just past the box. */
  end: number;
}

/** The boxes laid end to end in buf[start, end). Throws on a box running past the end. */
export function readBoxes(buf: Buffer, start = 0, end = buf.length): Box[] {
  const out: Box[] = [];
  let p = start;
  while (p + 8 <= end) {
    let size = buf.readUInt32BE(p);
    const type = buf.toString('latin1', p + 4, p + 8);
    let header = 8;
    if (size === 1) {
      if (p + 16 > end) throw new Error(`mp4: box ${JSON.stringify(type)} at ${p} overruns its parent`);
      size = Number(buf.readBigUInt64BE(p + 8));
      header = 16;
    } else if (size === 0) {
      size = end - p;
    }
    if (size < header || p + size > end) throw new Error(`mp4: box ${JSON.stringify(type)} at ${p} overruns its parent`);
    out.push({ type, start: p, body: p + header, end: p + size });
    p += size;
  }
  return out;
}

/** ISO/IEC 14496-15 Annex E, from an hvcC box's body: `<space><profile>.<compat, bit-reversed>.<tier><level>.<constraint bytes>`. */
export function hevcCodec(c: Buffer): string {
  const space = ['', 'A', 'B', 'C'][c[1]! >> 6];
  const tier = c[1]! & 0x20 ? 'H' : 'L';
  const profile = c[1]! & 0x1f;
  let compat = c.readUInt32BE(2);
  let reversed = 0;
  for (let i = 0; i < 32; i++) {
    reversed = (reversed << 1) | (compat & 1);
    compat >>>= 1;
  }
  const constraints = [...c.subarray(6, 12)];
  while (constraints.length && constraints[constraints.length - 1] === 0) constraints.pop();
  return [`${space}${profile}`, (reversed >>> 0).toString(16).toUpperCase(), `${tier}${c[12]}`, ...constraints.map((b) => b.toString(16).toUpperCase())].join('.');
}

/** `<entry>.` and the hvcC string of an init segment (`entry`: its sample entry, hvc1 or hev1), or undefined without a whole hvcC box. */
export function hevcCodecOfInit(init: Buffer, entry: string): string | undefined {
  // An init segment holds one sample entry: its configuration box is found by its type, as ffmpeg writes it once.
  const at = init.indexOf('hvcC', 0, 'latin1');
  if (at < 4) return undefined;
  const size = init.readUInt32BE(at - 4);
  if (size < 8 + 13 || at - 4 + size > init.length) return undefined;
  return `${entry}.${hevcCodec(init.subarray(at + 4, at - 4 + size))}`;
}
