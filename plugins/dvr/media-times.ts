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

interface Box { type: string; body: number; end: number }

function children(buf: Buffer, start: number, end: number): Box[] {
  const out: Box[] = [];
  for (let p = start; p + 8 <= end;) {
    let size = buf.readUInt32BE(p);
    let header = 8;
    if (size === 1) {
      if (p + 16 > end) break;
      size = Number(buf.readBigUInt64BE(p + 8));
      header = 16;
    } else if (size === 0) {
      size = end - p;
    }
    if (size < header || p + size > end) break;
    out.push({ type: buf.toString('latin1', p + 4, p + 8), body: p + header, end: p + size });
    p += size;
  }
  return out;
}

/** Where the times are: each `tfdt` (track timescale) and the `sidx` (its own timescale), with their field widths. */
interface Fields {
  tfdt: { at: number; wide: boolean }[];
  sidx?: { at: number; wide: boolean; timescale: number };
}

function fields(segment: Buffer): Fields {
  const found: Fields = { tfdt: [] };
  for (const top of children(segment, 0, segment.length)) {
    if (top.type === 'sidx' && !found.sidx && top.end - top.body >= (segment[top.body] === 1 ? 20 : 16)) {
      found.sidx = { at: top.body + 12, wide: segment[top.body] === 1, timescale: segment.readUInt32BE(top.body + 8) };
    } else if (top.type === 'moof') {
      for (const traf of children(segment, top.body, top.end).filter((b) => b.type === 'traf')) {
        const tfdt = children(segment, traf.body, traf.end).find((b) => b.type === 'tfdt');
        if (tfdt && tfdt.end - tfdt.body >= (segment[tfdt.body] === 1 ? 12 : 8)) found.tfdt.push({ at: tfdt.body + 4, wide: segment[tfdt.body] === 1 });
      }
    }
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
