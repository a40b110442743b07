/**
 * RFC 6381 codec strings from MP4 configuration boxes (sdk/codec-strings.ts),
 * shared by VOD's fMP4 writer and live TV's segmenter: HEVC from an hvcC box's
 * body and from a whole init segment, and nothing from a truncated one.
 */
import t from 'tap';
import { hevcCodec, hevcCodecOfInit } from '../../sdk/index.js';

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
