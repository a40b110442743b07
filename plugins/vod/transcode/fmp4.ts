/**
 * Just enough ISO BMFF (fragmented MP4) to turn ffmpeg's one muxed fMP4 stream
 * into per-track CMAF pieces: an init segment per track (ftyp + a moov with
 * that track only) and, per moof+mdat fragment, one moof+mdat per track.
 * DASH needs video and audio as separate adaptation sets (dash.js does not
 * play muxed representations) and HLS gets them as a video playlist and an
 * audio rendition, so each track's bytes must stand alone.
 *
 * Also reads the RFC 6381 codec strings (avc1.PPCCLL, hvc1…, mp4a.40.2, ac-3,
 * ec-3…) from the sample entries, so manifests name exactly what was written.
 */
import { hevcCodec, readBoxes, type Box } from 'antenna/sdk';

const child = (buf: Buffer, parent: Box, type: string): Box | undefined => readBoxes(buf, parent.body, parent.end).find((b) => b.type === type);
const path = (buf: Buffer, parent: Box, ...types: string[]): Box | undefined => {
  let box: Box | undefined = parent;
  for (const t of types) box = box && child(buf, box, t);
  return box;
};

/** A box from its type and content. */
export function box(type: string, ...content: Buffer[]): Buffer {
  const size = 8 + content.reduce((n, c) => n + c.length, 0);
  const header = Buffer.alloc(8);
  header.writeUInt32BE(size, 0);
  header.write(type, 4, 'latin1');
  return Buffer.concat([header, ...content], size);
}

const slice = (buf: Buffer, b: Box) => buf.subarray(b.start, b.end);

/* ---------------------------------------------------------------- init */

export interface TrackInfo {
  id: number;
  kind: 'video' | 'audio' | 'other';
  /** Media timescale (ticks per second). */
  timescale: number;
  /** RFC 6381 codec string, e.g. avc1.64001f, mp4a.40.2. */
  codec: string;
  width?: number;
  height?: number;
  channels?: number;
  /** E-AC-3 with Joint Object Coding (Dolby Atmos): `channels` is its bed. */
  joc?: boolean;
  sampleRate?: number;
}

interface TrexDefaults { duration: number; size: number; flags: number }

export interface InitInfo {
  tracks: TrackInfo[];
  /** Per track id: a standalone init segment (ftyp + moov holding only that track). */
  segments: Map<number, Buffer>;
  /** Per track id: trex defaults, for fragments that rely on them. */
  defaults: Map<number, TrexDefaults>;
}

/** Splits ffmpeg's ftyp + moov into one init segment per track and describes each track. */
export function splitInit(ftyp: Buffer, moov: Buffer): InitInfo {
  const root = readBoxes(moov)[0];
  if (!root || root.type !== 'moov') throw new Error('mp4: expected a moov box');
  const kids = readBoxes(moov, root.body, root.end);
  const mvhd = kids.find((b) => b.type === 'mvhd');
  const mvex = kids.find((b) => b.type === 'mvex');
  if (!mvhd || !mvex) throw new Error('mp4: the moov is not fragmented (no mvhd/mvex)');
  const mvexKids = readBoxes(moov, mvex.body, mvex.end);
  const trexOf = new Map<number, Box>();
  const defaults = new Map<number, TrexDefaults>();
  for (const t of mvexKids.filter((b) => b.type === 'trex')) {
    const id = moov.readUInt32BE(t.body + 4);
    trexOf.set(id, t);
    defaults.set(id, { duration: moov.readUInt32BE(t.body + 12), size: moov.readUInt32BE(t.body + 16), flags: moov.readUInt32BE(t.body + 20) });
  }
  const mehd = mvexKids.find((b) => b.type === 'mehd');
  const tracks: TrackInfo[] = [];
  const segments = new Map<number, Buffer>();
  for (const trak of kids.filter((b) => b.type === 'trak')) {
    const info = trackInfo(moov, trak);
    tracks.push(info);
    const trex = trexOf.get(info.id);
    if (!trex) throw new Error(`mp4: no trex for track ${info.id}`);
    const ownMvex = box('mvex', ...(mehd ? [slice(moov, mehd)] : []), slice(moov, trex));
    segments.set(info.id, Buffer.concat([ftyp, box('moov', slice(moov, mvhd), slice(moov, trak), ownMvex)]));
  }
  return { tracks, segments, defaults };
}

function trackInfo(buf: Buffer, trak: Box): TrackInfo {
  const tkhd = child(buf, trak, 'tkhd');
  const mdhd = path(buf, trak, 'mdia', 'mdhd');
  const hdlr = path(buf, trak, 'mdia', 'hdlr');
  const stsd = path(buf, trak, 'mdia', 'minf', 'stbl', 'stsd');
  if (!tkhd || !mdhd || !hdlr || !stsd) throw new Error('mp4: incomplete trak');
  const id = buf.readUInt32BE(tkhd.body + (buf[tkhd.body] === 1 ? 20 : 12));
  const timescale = buf.readUInt32BE(mdhd.body + (buf[mdhd.body] === 1 ? 20 : 12));
  const handler = buf.toString('latin1', hdlr.body + 8, hdlr.body + 12);
  const entry = readBoxes(buf, stsd.body + 8, stsd.end)[0];
  if (!entry) throw new Error(`mp4: track ${id} has no sample entry`);
  if (handler === 'vide') {
    const width = buf.readUInt16BE(entry.body + 24);
    const height = buf.readUInt16BE(entry.body + 26);
    const configs = readBoxes(buf, entry.body + 78, entry.end);
    return { id, kind: 'video', timescale, codec: videoCodec(buf, entry.type, configs), width, height };
  }
  if (handler === 'soun') {
    const sampleRate = buf.readUInt32BE(entry.body + 24) >>> 16;
    const configs = readBoxes(buf, entry.body + 28, entry.end);
    // AC-3 and E-AC-3 sample entries always say 2 channels: their dac3/dec3 box has the layout.
    const dolby = configs.find((b) => b.type === 'dac3' || b.type === 'dec3');
    const layout = dolby && (dolby.type === 'dac3' ? ac3Channels(buf.subarray(dolby.body, dolby.end)) : eac3Channels(buf.subarray(dolby.body, dolby.end)));
    const channels = layout?.channels ?? buf.readUInt16BE(entry.body + 16);
    return { id, kind: 'audio', timescale, codec: audioCodec(buf, entry.type, configs), channels, ...(layout?.joc ? { joc: true } : {}), sampleRate: sampleRate || timescale };
  }
  return { id, kind: 'other', timescale, codec: entry.type };
}

/** Full-bandwidth channels of each AC-3 acmod (ETSI TS 102 366 Table 4.3; 0 is 1+1, two mono channels). */
const ACMOD_CHANNELS = [2, 1, 2, 3, 3, 4, 4, 5];

/** dac3 (ETSI TS 102 366 F.4): fscod 2, bsid 5, bsmod 3, acmod 3, lfeon 1, … */
export function ac3Channels(dac3: Buffer): { channels: number; joc?: boolean } | undefined {
  if (dac3.length < 3) return undefined;
  const bits = dac3.readUIntBE(0, 3);
  return { channels: ACMOD_CHANNELS[(bits >> 11) & 7]! + ((bits >> 10) & 1) };
}

/** Channels that each chan_loc bit of a dependent substream adds (TS 102 366 Table F.6.1, most significant first). */
const CHAN_LOC_CHANNELS = [2, 2, 1, 1, 2, 2, 2, 1, 1];

/**
 * dec3 (ETSI TS 102 366 F.6): the first independent substream's layout plus its dependent
 * substreams' channels; after the substreams, TS 103 420's flag_ec3_extension_type_a marks JOC.
 */
export function eac3Channels(dec3: Buffer): { channels: number; joc: boolean } | undefined {
  if (dec3.length < 5) return undefined;
  let bit = 0;
  const read = (n: number): number => {
    let v = 0;
    for (let i = 0; i < n; i++, bit++) v = (v << 1) | (bit >> 3 < dec3.length ? (dec3[bit >> 3]! >> (7 - (bit & 7))) & 1 : 0);
    return v;
  };
  read(13); // data_rate
  const substreams = read(3) + 1;
  let channels: number | undefined;
  for (let i = 0; i < substreams; i++) {
    read(2 + 5 + 1 + 1 + 3); // fscod, bsid, reserved, asvc, bsmod
    const acmod = read(3);
    const lfe = read(1);
    read(3);
    const dependents = read(4);
    let extra = 0;
    if (dependents > 0) {
      const loc = read(9);
      CHAN_LOC_CHANNELS.forEach((n, b) => { if (loc & (1 << (8 - b))) extra += n; });
    } else read(1);
    channels ??= ACMOD_CHANNELS[acmod]! + lfe + extra;
  }
  const joc = bit + 16 <= dec3.length * 8 && (read(7), read(1) === 1);
  return channels === undefined ? undefined : { channels, joc };
}

const hex2 = (n: number) => n.toString(16).padStart(2, '0');

function videoCodec(buf: Buffer, type: string, configs: Box[]): string {
  const config = (t: string) => configs.find((b) => b.type === t);
  if (type === 'avc1' || type === 'avc3') {
    const c = config('avcC');
    return c ? `${type}.${hex2(buf[c.body + 1]!)}${hex2(buf[c.body + 2]!)}${hex2(buf[c.body + 3]!)}` : type;
  }
  if (type === 'hvc1' || type === 'hev1') {
    const c = config('hvcC');
    return c ? `${type}.${hevcCodec(buf.subarray(c.body, c.end))}` : type;
  }
  if (type === 'vp09') {
    const c = config('vpcC');
    if (!c) return type;
    const p = c.body + 4; // full box
    return `vp09.${String(buf[p]).padStart(2, '0')}.${String(buf[p + 1]).padStart(2, '0')}.${String(buf[p + 2]! >> 4).padStart(2, '0')}`;
  }
  if (type === 'av01') {
    const c = config('av1C');
    if (!c) return type;
    const b1 = buf[c.body + 1]!;
    const b2 = buf[c.body + 2]!;
    const profile = b1 >> 5;
    const level = b1 & 0x1f;
    const tier = b2 & 0x80 ? 'H' : 'M';
    const depth = b2 & 0x40 ? (profile === 2 && b2 & 0x20 ? 12 : 10) : 8;
    return `av01.${profile}.${String(level).padStart(2, '0')}${tier}.${String(depth).padStart(2, '0')}`;
  }
  return type;
}

function audioCodec(buf: Buffer, type: string, configs: Box[]): string {
  switch (type) {
    case 'ac-3': return 'ac-3';
    case 'ec-3': return 'ec-3';
    case 'Opus': return 'opus';
    case 'fLaC': return 'flac';
    case 'alac': return 'alac';
    case 'mp4a': {
      const esds = configs.find((b) => b.type === 'esds');
      return esds ? esdsCodec(buf.subarray(esds.body + 4, esds.end)) : 'mp4a.40.2';
    }
    default: return type;
  }
}

/** mp4a.<objectTypeIndication>[.<audioObjectType>] from an ES_Descriptor. */
export function esdsCodec(d: Buffer): string {
  let p = 0;
  const descriptor = (): { tag: number; start: number; end: number } | undefined => {
    if (p >= d.length) return undefined;
    const tag = d[p++]!;
    let size = 0;
    for (let i = 0; i < 4 && p < d.length; i++) {
      const b = d[p++]!;
      size = (size << 7) | (b & 0x7f);
      if (!(b & 0x80)) break;
    }
    return { tag, start: p, end: Math.min(d.length, p + size) };
  };
  const es = descriptor();
  if (!es || es.tag !== 0x03) return 'mp4a.40.2';
  p = es.start + 2;
  const flags = d[p++]!;
  if (flags & 0x80) p += 2;
  if (flags & 0x40) p += 1 + d[p]!;
  if (flags & 0x20) p += 2;
  const dc = descriptor();
  if (!dc || dc.tag !== 0x04) return 'mp4a.40.2';
  const oti = d[dc.start]!;
  if (oti !== 0x40) return `mp4a.${hex2(oti).toUpperCase()}`;
  p = dc.start + 13;
  const dsi = descriptor();
  if (!dsi || dsi.tag !== 0x05 || dsi.end <= dsi.start) return 'mp4a.40.2';
  let aot = d[dsi.start]! >> 3;
  if (aot === 31 && dsi.end > dsi.start + 1) aot = 32 + (((d[dsi.start]! & 0x07) << 3) | (d[dsi.start + 1]! >> 5));
  return `mp4a.40.${aot}`;
}

/* ----------------------------------------------------------- fragments */

export interface TrackFragment {
  trackId: number;
  /** tfdt: decode time of the first sample (track timescale). */
  baseTime: number;
  /** Composition offset of the first sample (its pts − dts). */
  firstOffset: number;
  /** Sum of the sample durations (track timescale). */
  duration: number;
  samples: number;
  /** A standalone moof + mdat holding only this track. */
  bytes: Buffer;
  /** Its samples one by one (decode times in the track timescale), for regrouping them elsewhere. */
  list: Sample[];
}

export interface Sample {
  /** Decode time (track timescale). */
  time: number;
  duration: number;
  flags: number;
  /** Composition time offset (pts − dts). */
  offset: number;
  data: Buffer;
}

/**
 * Splits one moof + mdat (`buf` holds both, moof first, as ffmpeg wrote them
 * with default-base-is-moof) into a moof + mdat per track, with the sample
 * data moved and the trun data offsets rewritten.
 */
export function splitFragment(buf: Buffer, defaults: Map<number, TrexDefaults>): TrackFragment[] {
  const [moof] = readBoxes(buf, 0, buf.length);
  if (!moof || moof.type !== 'moof') throw new Error('mp4: expected a moof box');
  const kids = readBoxes(buf, moof.body, moof.end);
  const mfhd = kids.find((b) => b.type === 'mfhd');
  if (!mfhd) throw new Error('mp4: moof without mfhd');
  const out: TrackFragment[] = [];
  for (const traf of kids.filter((b) => b.type === 'traf')) {
    const parts = readBoxes(buf, traf.body, traf.end);
    const tfhd = parts.find((b) => b.type === 'tfhd');
    const tfdt = parts.find((b) => b.type === 'tfdt');
    if (!tfhd || !tfdt) throw new Error('mp4: traf without tfhd/tfdt');
    const tfhdFlags = buf.readUInt32BE(tfhd.body) & 0xffffff;
    if (tfhdFlags & 0x01) throw new Error('mp4: explicit base data offsets are not supported');
    if (!(tfhdFlags & 0x020000)) throw new Error('mp4: fragments must use default-base-is-moof');
    const trackId = buf.readUInt32BE(tfhd.body + 4);
    let q = tfhd.body + 8;
    if (tfhdFlags & 0x02) q += 4;
    const trex = defaults.get(trackId) ?? { duration: 0, size: 0, flags: 0 };
    const defaultDuration = tfhdFlags & 0x08 ? buf.readUInt32BE(q) : trex.duration;
    if (tfhdFlags & 0x08) q += 4;
    const defaultSize = tfhdFlags & 0x10 ? buf.readUInt32BE(q) : trex.size;
    if (tfhdFlags & 0x10) q += 4;
    const defaultFlags = tfhdFlags & 0x20 ? buf.readUInt32BE(q) : trex.flags;
    const baseTime = buf[tfdt.body] === 1 ? Number(buf.readBigUInt64BE(tfdt.body + 4)) : buf.readUInt32BE(tfdt.body + 4);

    let duration = 0;
    let samples = 0;
    let firstOffset: number | undefined;
    const list: Sample[] = [];
    const runs: { box: Box; dataOffset: number; size: number }[] = [];
    for (const trun of parts.filter((b) => b.type === 'trun')) {
      const version = buf[trun.body]!;
      const flags = buf.readUInt32BE(trun.body) & 0xffffff;
      if (!(flags & 0x01)) throw new Error('mp4: trun without a data offset');
      const count = buf.readUInt32BE(trun.body + 4);
      const dataOffset = buf.readInt32BE(trun.body + 8);
      const firstFlags = flags & 0x04 ? buf.readUInt32BE(trun.body + 12) : undefined;
      let r = trun.body + 12 + (flags & 0x04 ? 4 : 0);
      let size = 0;
      for (let i = 0; i < count; i++) {
        const sample = { time: baseTime + duration, duration: defaultDuration, size: defaultSize, flags: i === 0 && firstFlags !== undefined ? firstFlags : defaultFlags, offset: 0 };
        if (flags & 0x100) { sample.duration = buf.readUInt32BE(r); r += 4; }
        if (flags & 0x200) { sample.size = buf.readUInt32BE(r); r += 4; }
        if (flags & 0x400) { sample.flags = buf.readUInt32BE(r); r += 4; }
        if (flags & 0x800) {
          sample.offset = version === 1 ? buf.readInt32BE(r) : buf.readUInt32BE(r);
          firstOffset ??= sample.offset;
          r += 4;
        }
        const from = moof.start + dataOffset + size;
        if (from + sample.size > buf.length) throw new Error('mp4: sample data outside the fragment');
        list.push({ time: sample.time, duration: sample.duration, flags: sample.flags, offset: sample.offset, data: buf.subarray(from, from + sample.size) });
        duration += sample.duration;
        size += sample.size;
      }
      if (firstOffset === undefined && count > 0) firstOffset = 0;
      samples += count;
      runs.push({ box: trun, dataOffset, size });
    }

    // Rebuild: moof(mfhd, traf(every box, truns patched)) + mdat(this track's runs, in order).
    const data = runs.map((r) => {
      const from = moof.start + r.dataOffset;
      if (from < moof.end || from + r.size > buf.length) throw new Error('mp4: sample data outside the fragment');
      return buf.subarray(from, from + r.size);
    });
    const trafParts = parts.map((b) => Buffer.from(slice(buf, b)));
    const newMoofSize = 8 + (mfhd.end - mfhd.start) + 8 + trafParts.reduce((n, p) => n + p.length, 0);
    let offset = newMoofSize + 8;
    parts.forEach((b, i) => {
      if (b.type !== 'trun') return;
      const run = runs.find((r) => r.box === b)!;
      trafParts[i]!.writeInt32BE(offset, 16); // after size, type, version/flags and sample_count
      offset += run.size;
    });
    const moofOut = box('moof', slice(buf, mfhd), box('traf', ...trafParts));
    out.push({ trackId, baseTime, firstOffset: firstOffset ?? 0, duration, samples, bytes: Buffer.concat([moofOut, box('mdat', ...data)]), list });
  }
  return out;
}

/**
 * One track's moof + mdat from samples (back to back from the first one's decode time): lets a
 * segment hold exactly the samples that start within its bounds, wherever ffmpeg cut its fragments.
 */
export function buildFragment(trackId: number, sequence: number, samples: readonly Sample[]): Buffer {
  const full = (type: string, version: number, flags: number, ...content: Buffer[]) => {
    const head = Buffer.alloc(4);
    head.writeUInt32BE(((version << 24) | flags) >>> 0);
    return box(type, head, ...content);
  };
  const u32 = (...values: number[]) => {
    const b = Buffer.alloc(4 * values.length);
    values.forEach((v, i) => b.writeUInt32BE(v >>> 0, 4 * i));
    return b;
  };
  const signed = samples.some((x) => x.offset !== 0);
  const tfdt = Buffer.alloc(8);
  tfdt.writeBigUInt64BE(BigInt(samples[0]?.time ?? 0));
  const table = Buffer.alloc(samples.length * (signed ? 16 : 12));
  samples.forEach((x, i) => {
    const at = i * (signed ? 16 : 12);
    table.writeUInt32BE(x.duration, at);
    table.writeUInt32BE(x.data.length, at + 4);
    table.writeUInt32BE(x.flags >>> 0, at + 8);
    if (signed) table.writeInt32BE(x.offset, at + 12);
  });
  // data-offset, duration, size, flags (and composition offsets, signed: trun version 1).
  const trunFlags = 0x001 | 0x100 | 0x200 | 0x400 | (signed ? 0x800 : 0);
  const build = (dataOffset: number) => box('moof',
    full('mfhd', 0, 0, u32(sequence)),
    box('traf', full('tfhd', 0, 0x020000, u32(trackId)), full('tfdt', 1, 0, tfdt), full('trun', signed ? 1 : 0, trunFlags, u32(samples.length), u32(dataOffset), table)));
  const moofSize = build(0).length;
  return Buffer.concat([build(moofSize + 8), box('mdat', ...samples.map((x) => x.data))]);
}

/* -------------------------------------------------------------- stream */

/**
 * Cuts a byte stream (ffmpeg's stdout) into whole top-level boxes. Chunks are
 * kept as they come and joined only when a box is complete.
 */
export class BoxReader {
  private chunks: Buffer[] = [];
  private length = 0;

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.length += chunk.length;
  }

  /** The next complete box (type and bytes), or undefined until more data arrives. */
  next(): { type: string; bytes: Buffer } | undefined {
    if (this.length < 8) return undefined;
    const head = this.peek(16);
    let size = head.readUInt32BE(0);
    const type = head.toString('latin1', 4, 8);
    if (size === 1) {
      if (head.length < 16) return undefined;
      size = Number(head.readBigUInt64BE(8));
    }
    if (size < 8) throw new Error(`mp4: box ${JSON.stringify(type)} with size ${size} in the stream`);
    if (this.length < size) return undefined;
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.length);
    const bytes = all.subarray(0, size);
    const rest = all.subarray(size);
    this.chunks = rest.length ? [rest] : [];
    this.length = rest.length;
    return { type, bytes };
  }

  /** Bytes received that do not make a whole box yet. */
  get pending(): number {
    return this.length;
  }

  private peek(n: number): Buffer {
    if (this.chunks[0]!.length >= n || this.chunks.length === 1) return this.chunks[0]!.subarray(0, n);
    const joined = Buffer.concat(this.chunks, this.length);
    this.chunks = [joined];
    return joined.subarray(0, n);
  }
}
