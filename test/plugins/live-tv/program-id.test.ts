/**
 * Programme ids keep their values: recordings and clients hold them. The expected ids are those
 * the earlier, hand-written SHA-1 gave for these inputs (the first 13 hex digits of the digest).
 */
import t from 'tap';
import { programId } from '../../../plugins/live-tv/program-id.js';

t.test('ids as they have always been', async (t) => {
  const cases: [string, string, number, number][] = [
    ['xmltv:bench', 'bbc1.uk', 1795419390000, 2479797173971087],
    ['xmltv:bench', 'bbc1.uk', 1795419390001, 415581031808847], // the next millisecond: another id
    ['xmltv:guide', 'bbc1.uk', 1795419390000, 4424231296540704], // another source: another id
    ['xmltv:x', '', 0, 1661674083738020],
    ['xmltv:x', 'Das Erste', -86400000, 2147571402519373], // before 1970
    ['xmltv:x', 'Канал 1', 253402300799000, 3534825380936811], // year 9999
    ['xmltv:x', 'ＮＨＫ総合😀', 1, 1306936027266176],
    ['xmltv:x', 'lone \ud800 surrogate', 5, 2212045792634744], // encoded as U+FFFD
    ['xmltv:len', 'g'.repeat(41), 1795419390000, 3985558096997459], // past one 64-byte block
    ['xmltv:len', 'g'.repeat(200), 7, 4364160845283114], // several blocks
  ];
  for (const [source, guide, start, id] of cases) t.equal(programId(source, guide, start), id, JSON.stringify([source, guide, start]));
  t.ok(Number.isSafeInteger(programId('s', 'g', 1)) && programId('s', 'g', 1) >= 0);
});
