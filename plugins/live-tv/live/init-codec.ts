/**
 * The full RFC 6381 codec string of an HEVC init segment, read from its
 * hvcC box: ffmpeg's dash muxer (4.1) says a bare `hvc1`, which tells a player
 * nothing of the profile, tier and level it must decode.
 */

/** `hvc1.<space><profile>.<compat, bit-reversed>.<tier><level>.<constraint bytes>` (ISO/IEC 14496-15 Annex E), or undefined without an hvcC box. */
export function hevcCodecOfInit(init: Buffer, entry: string): string | undefined {
  // An init segment holds one sample entry: its configuration box is found by its type, as ffmpeg writes it once.
  const at = init.indexOf('hvcC', 0, 'latin1');
  if (at < 4) return undefined;
  const size = init.readUInt32BE(at - 4);
  const c = init.subarray(at + 4, at - 4 + size);
  if (size < 8 + 13 || at - 4 + size > init.length) return undefined;
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
  return [entry, `${space}${profile}`, (reversed >>> 0).toString(16).toUpperCase(), `${tier}${c[12]}`, ...constraints.map((b) => b.toString(16).toUpperCase())].join('.');
}
