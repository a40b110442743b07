/**
 * Shifting the media times of a CMAF (fragmented MP4) media segment: the
 * decode time of each fragment (`moof/traf/tfdt`) and the earliest
 * presentation time of its index (`sidx`). A recording's later parts are
 * shifted to continue where the previous part ended, so its timeline never
 * runs backwards (players that ignore discontinuities, ffmpeg among them,
 * would drop or stall on the jump).
 */

const CONTAINERS = new Set(['moof', 'traf']);

/** Adds `delta` (in the track's timescale) to every tfdt and sidx time in the segment, in place. */
export function shiftMediaTimes(segment: Buffer, delta: number): Buffer {
  if (delta) walk(segment, 0, segment.length, BigInt(delta));
  return segment;
}

function walk(b: Buffer, start: number, end: number, delta: bigint): void {
  let at = start;
  while (at + 8 <= end) {
    let size = b.readUInt32BE(at);
    const type = b.toString('latin1', at + 4, at + 8);
    let header = 8;
    if (size === 1) {
      if (at + 16 > end) return;
      size = Number(b.readBigUInt64BE(at + 8));
      header = 16;
    } else if (size === 0) {
      size = end - at;
    }
    if (size < header || at + size > end) throw new Error(`malformed MP4 box ${JSON.stringify(type)} at ${at}`);
    const body = at + header;
    if (CONTAINERS.has(type)) walk(b, body, at + size, delta);
    else if (type === 'tfdt') shiftField(b, body + 4, b[body] === 1, delta, 'tfdt');
    else if (type === 'sidx') shiftField(b, body + 12, b[body] === 1, delta, 'sidx'); // version+flags, reference_ID, timescale
    at += size;
  }
}

function shiftField(b: Buffer, offset: number, wide: boolean, delta: bigint, what: string): void {
  const value = (wide ? b.readBigUInt64BE(offset) : BigInt(b.readUInt32BE(offset))) + delta;
  if (value < 0n || (!wide && value > 0xffffffffn)) throw new Error(`${what} time out of range after shifting`);
  if (wide) b.writeBigUInt64BE(value, offset);
  else b.writeUInt32BE(Number(value), offset);
}
