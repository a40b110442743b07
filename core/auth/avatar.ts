/**
 * Avatars are PNG, JPEG, GIF or WebP, told by their content, and only when their
 * structure holds together as that image: a file that merely starts like one
 * (a PNG signature followed by a script, a JPEG cut short) is refused.
 */
import * as zlib from 'node:zlib';

/** zlib.crc32 (Node 20.15 and later); older Nodes check PNGs without their CRCs. */
const crc32 = (zlib as { crc32?: (data: Buffer) => number }).crc32;

export type ImageType = 'image/png' | 'image/jpeg' | 'image/webp' | 'image/gif';

/** The image's type when it is a well-formed PNG, JPEG, GIF or WebP; undefined otherwise. */
export function imageType(data: Buffer): ImageType | undefined {
  try {
    if (data.subarray(0, 8).equals(PNG_SIGNATURE)) return validPng(data) ? 'image/png' : undefined;
    if (data[0] === 0xff && data[1] === 0xd8) return validJpeg(data) ? 'image/jpeg' : undefined;
    if (/^GIF8[79]a$/.test(data.toString('latin1', 0, 6))) return validGif(data) ? 'image/gif' : undefined;
    if (data.toString('latin1', 0, 4) === 'RIFF' && data.toString('latin1', 8, 12) === 'WEBP') return validWebp(data) ? 'image/webp' : undefined;
  } catch {
    // A length pointing past the end: reading throws RangeError.
  }
  return undefined;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Chunks with good lengths and CRCs from IHDR (valid dimensions and format) through IDAT to IEND, which ends the file. */
function validPng(data: Buffer): boolean {
  let at = 8;
  let first = true;
  let idat = false;
  while (at + 12 <= data.length) {
    const length = data.readUInt32BE(at);
    const type = data.toString('latin1', at + 4, at + 8);
    const end = at + 12 + length;
    if (!/^[A-Za-z]{4}$/.test(type) || end > data.length) return false;
    if (crc32 && crc32(data.subarray(at + 4, at + 8 + length)) !== data.readUInt32BE(at + 8 + length)) return false;
    const body = data.subarray(at + 8, at + 8 + length);
    if (first) {
      if (type !== 'IHDR' || length !== 13) return false;
      const [width, height] = [body.readUInt32BE(0), body.readUInt32BE(4)];
      const [depth, colour, compression, filter, interlace] = body.subarray(8);
      const depths: Record<number, number[]> = { 0: [1, 2, 4, 8, 16], 2: [8, 16], 3: [1, 2, 4, 8], 4: [8, 16], 6: [8, 16] };
      if (!width || !height || width > 0x7fffffff || height > 0x7fffffff) return false;
      if (!depths[colour!]?.includes(depth!) || compression !== 0 || filter !== 0 || interlace! > 1) return false;
      first = false;
    } else if (type === 'IDAT') {
      idat = true;
    } else if (type === 'IEND') {
      return idat && length === 0 && end === data.length;
    }
    at = end;
  }
  return false;
}

/** Marker segments with good lengths, a frame header, then at least one scan, up to EOI. */
function validJpeg(data: Buffer): boolean {
  let at = 2;
  let frame = false;
  let scan = false;
  while (at < data.length) {
    if (data[at] !== 0xff) return false;
    while (data[at] === 0xff) at++; // fill bytes
    const marker = data[at++]!;
    if (marker === 0xd9) return frame && scan; // EOI
    if (marker === 0xd8 || marker === 0x00 || (marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) return false;
    const length = data.readUInt16BE(at);
    if (length < 2 || at + length > data.length) return false;
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      // SOFn: precision, height, width, components.
      if (length < 8 || data.readUInt16BE(at + 5) === 0 || data[at + 7] === 0) return false;
      frame = true;
    }
    at += length;
    if (marker === 0xda) {
      if (!frame) return false;
      scan = true;
      // Entropy-coded data: up to the next marker that is not a stuffed 0xFF00 or a restart.
      while (at + 1 < data.length && !(data[at] === 0xff && data[at + 1] !== 0x00 && !(data[at + 1]! >= 0xd0 && data[at + 1]! <= 0xd7))) at++;
      if (at + 1 >= data.length) return false;
    }
  }
  return false;
}

/** Screen descriptor, colour tables and blocks (extensions, images with their data) up to the trailer. */
function validGif(data: Buffer): boolean {
  if (!data.readUInt16LE(6) || !data.readUInt16LE(8)) return false;
  let at = 13;
  if (data[10]! & 0x80) at += 3 << ((data[10]! & 0x07) + 1);
  let images = 0;
  const subBlocks = () => {
    for (;;) {
      const size = data[at++];
      if (size === undefined) throw new RangeError('truncated');
      if (size === 0) return;
      at += size;
    }
  };
  while (at < data.length) {
    const block = data[at++];
    if (block === 0x3b) return images > 0 && at <= data.length;
    if (block === 0x21) {
      at++; // label
      subBlocks();
    } else if (block === 0x2c) {
      if (at + 9 > data.length || !data.readUInt16LE(at + 4) || !data.readUInt16LE(at + 6)) return false;
      const flags = data[at + 8]!;
      at += 9;
      if (flags & 0x80) at += 3 << ((flags & 0x07) + 1);
      const codeSize = data[at++];
      if (codeSize === undefined || codeSize < 2 || codeSize > 11) return false;
      subBlocks();
      images++;
    } else {
      return false;
    }
  }
  return false;
}

/** The RIFF size matching the file, then chunks within it, with a VP8 / VP8L image (or VP8X with its frames). */
function validWebp(data: Buffer): boolean {
  const riffEnd = 8 + data.readUInt32LE(4);
  if (riffEnd > data.length || riffEnd < 20) return false;
  let at = 12;
  let image = false;
  const first = data.toString('latin1', 12, 16);
  while (at + 8 <= riffEnd) {
    const type = data.toString('latin1', at, at + 4);
    const size = data.readUInt32LE(at + 4);
    const body = at + 8;
    if (body + size > riffEnd) return false;
    if (type === 'VP8 ') {
      // Frame tag, then the start code 9d 01 2a and 14-bit width and height.
      if (size < 10 || data[body + 3] !== 0x9d || data[body + 4] !== 0x01 || data[body + 5] !== 0x2a) return false;
      if (!(data.readUInt16LE(body + 6) & 0x3fff) || !(data.readUInt16LE(body + 8) & 0x3fff)) return false;
      image = true;
    } else if (type === 'VP8L') {
      if (size < 5 || data[body] !== 0x2f) return false;
      image = true;
    } else if (type === 'ANMF') {
      image = true;
    }
    at = body + size + (size & 1);
  }
  return (first === 'VP8 ' || first === 'VP8L' || first === 'VP8X') && image && at === riffEnd;
}
