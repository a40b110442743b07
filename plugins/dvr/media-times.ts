/**
 * The times inside a CMAF media segment, and a copy of it with them moved on.
 * Players built on ffmpeg (ffmpeg, mpv) read a recording's parts as one
 * stream: they ignore EXT-X-DISCONTINUITY and every init segment after the
 * first (with its edit list), and take a sample's time from its fragment's
 * `tfdt` or the segment's `sidx`. Each run of a live session starts its `tfdt`
 * at 0 (ffmpeg 5's `sidx` too; 4.1's adds the run's wall-clock offset), so a
 * part after the first can only play there when its segments' own times go on
 * after the previous part's.
 */
import { readBoxes } from 'antenna/sdk';

/** Where the times are: each `tfdt` (track timescale) and the `sidx` (its own timescale), with their field widths. */
interface Fields {
  tfdt: { at: number; wide: boolean }[];
  sidx?: { at: number; wide: boolean; timescale: number };
}

/** The fields of a whole MP4 segment; none for anything else (there are no times to read or move). */
function fields(segment: Buffer): Fields {
  const found: Fields = { tfdt: [] };
  try {
    for (const box of readBoxes(segment)) {
      if (box.type === 'sidx' && !found.sidx && box.end - box.body >= (segment[box.body] === 1 ? 20 : 16)) {
        found.sidx = { at: box.body + 12, wide: segment[box.body] === 1, timescale: segment.readUInt32BE(box.body + 8) };
      } else if (box.type === 'moof') {
        for (const traf of readBoxes(segment, box.body, box.end).filter((b) => b.type === 'traf')) {
          const tfdt = readBoxes(segment, traf.body, traf.end).find((b) => b.type === 'tfdt');
          if (tfdt && tfdt.end - tfdt.body >= (segment[tfdt.body] === 1 ? 12 : 8)) found.tfdt.push({ at: tfdt.body + 4, wide: segment[tfdt.body] === 1 });
        }
      }
    }
  } catch {
    return { tfdt: [] };
  }
  return found;
}

const read = (buf: Buffer, f: { at: number; wide: boolean }) => (f.wide ? Number(buf.readBigUInt64BE(f.at)) : buf.readUInt32BE(f.at));

/** The segment's start by its first `tfdt` and by its `sidx`, in seconds (given the track's timescale); undefined where it has none. */
export function segmentStart(segment: Buffer, timescale: number): { tfdt?: number; sidx?: number } {
  const f = fields(segment);
  return {
    tfdt: f.tfdt.length ? read(segment, f.tfdt[0]) / timescale : undefined,
    sidx: f.sidx && f.sidx.timescale > 0 ? read(segment, f.sidx) / f.sidx.timescale : undefined,
  };
}

/**
 * A copy of the segment with every `tfdt` later by `tfdtSeconds` and its `sidx` by `sidxSeconds`
 * (whole seconds: whole units of any timescale), or undefined when a field is too narrow for it.
 */
export function shiftedSegment(segment: Buffer, timescale: number, by: { tfdt: number; sidx: number }): Buffer | undefined {
  const f = fields(segment);
  const out = Buffer.from(segment);
  const shift = (field: { at: number; wide: boolean }, units: number): boolean => {
    const value = read(out, field) + units;
    if (!field.wide && value > 0xffffffff) return false;
    if (field.wide) out.writeBigUInt64BE(BigInt(value), field.at);
    else out.writeUInt32BE(value, field.at);
    return true;
  };
  for (const tfdt of f.tfdt) if (by.tfdt && !shift(tfdt, by.tfdt * timescale)) return undefined;
  if (f.sidx && by.sidx && !shift(f.sidx, by.sidx * f.sidx.timescale)) return undefined;
  return out;
}
