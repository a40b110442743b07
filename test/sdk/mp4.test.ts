/**
 * The SDK's MP4 helpers (sdk/mp4.ts), shared by VOD's fMP4 writer, live TV's
 * segmenter and the DVR: boxes walked (nested, 64-bit sizes, a box running past
 * its parent refused), and RFC 6381 codec strings: HEVC from an hvcC box's body
 * and from a whole init segment, and nothing from a truncated one.
 */
import t from 'tap';
import { hevcCodec, hevcCodecOfInit, readBoxes } from '../../sdk/index.js';

// hvcC of HEVC Main, level 3.1: version 1, profile_space 0, tier 0, profile 1, compatibility flags 0x60000000, constraints 0xB0.
const MAIN = Buffer.from([1, 0x01, 0x60, 0, 0, 0, 0xb0, 0, 0, 0, 0, 0, 93, 0xf0, 0, 0xfc, 0xfd, 0xf8, 0xf8, 0, 0, 0x0f, 0]);
// Main 10, High tier, level 5.1: profile 2, tier bit 0x20, compatibility 0x20000000 (profile 2), constraints 0x90.
const MAIN10_HIGH = Buffer.from([1, 0x22, 0x20, 0, 0, 0, 0x90, 0, 0, 0, 0, 0, 153, 0xf0, 0, 0xfc, 0xfd, 0xfa, 0xfa, 0, 0, 0x0f, 0]);

/** An MP4 box: 32-bit size, type, body. */
function sized(type: string, body: Buffer): Buffer {
  const header = Buffer.alloc(8);
  header.writeUInt32BE(8 + body.length, 0);
  header.write(type, 4, 'latin1');
  return Buffer.concat([header, body]);
}

t.test('hevcCodec: profile space, profile, bit-reversed compatibility flags, tier and level, constraint bytes', async (t) => {
  t.equal(hevcCodec(MAIN), '1.6.L93.B0', 'HEVC Main 3.1');
  t.equal(hevcCodec(MAIN10_HIGH), '2.4.H153.90', 'HEVC Main 10, High tier 5.1');
});

t.test('hevcCodecOfInit: the sample entry and the string of the init segment\'s hvcC box', async (t) => {
  // ftyp, then a moov whose sample entry holds the hvcC box (the bytes around it are opaque to the reader).
  const init = Buffer.concat([sized('ftyp', Buffer.from('iso6\0\0\0\0', 'latin1')), sized('moov', Buffer.concat([Buffer.alloc(40, 7), sized('hvcC', MAIN), Buffer.alloc(16, 3)]))]);
  t.equal(hevcCodecOfInit(init, 'hvc1'), 'hvc1.1.6.L93.B0');
  t.equal(hevcCodecOfInit(init, 'hev1'), 'hev1.1.6.L93.B0', 'the entry the caller read is kept');
  t.equal(hevcCodecOfInit(init.subarray(0, init.length - 30), 'hvc1'), undefined, 'a cut-off hvcC box: no string');
  t.equal(hevcCodecOfInit(sized('moov', Buffer.alloc(64)), 'hvc1'), undefined, 'no hvcC box: no string');
});

t.test('boxes: laid end to end, nested, with 64-bit sizes; one running past its parent is refused', async (t) => {
  const plain = (type: string, body: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, 8 + body.length]), Buffer.from(type, 'latin1'), body]);
  const large = (type: string, body: Buffer) => {
    const head = Buffer.alloc(16);
    head.writeUInt32BE(1, 0);
    head.write(type, 4, 'latin1');
    head.writeBigUInt64BE(BigInt(16 + body.length), 8);
    return Buffer.concat([head, body]);
  };
  const moof = plain('moof', Buffer.concat([plain('mfhd', Buffer.alloc(8)), plain('traf', plain('tfdt', Buffer.alloc(12)))]));
  const segment = Buffer.concat([large('sidx', Buffer.alloc(24)), moof, plain('mdat', Buffer.alloc(5))]);
  const top = readBoxes(segment);
  t.strictSame(top.map((b) => [b.type, b.start, b.body, b.end]), [['sidx', 0, 16, 40], ['moof', 40, 48, 92], ['mdat', 92, 100, 105]]);
  const traf = readBoxes(segment, top[1]!.body, top[1]!.end).find((b) => b.type === 'traf')!;
  t.strictSame(readBoxes(segment, traf.body, traf.end).map((b) => b.type), ['tfdt']);
  t.throws(() => readBoxes(segment.subarray(0, 103)), /mdat.*overruns/, 'a box cut off by the end of the data');
  t.strictSame(readBoxes(Buffer.alloc(0)), [], 'no data, no boxes');
});
