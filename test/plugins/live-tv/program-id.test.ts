/** Programme ids: the first 13 hex digits of node:crypto's SHA-1, for every kind of id and start. */
import crypto from 'node:crypto';
import t from 'tap';
import { ProgramIds } from '../../../plugins/live-tv/program-id.js';

/** What programme ids were before they were computed in JavaScript: recordings keep them. */
const expected = (sourceId: string, guideId: string, start: number) =>
  Number.parseInt(crypto.createHash('sha1').update(`${sourceId}\n${guideId}\n${start}`).digest('hex').slice(0, 13), 16);

t.test('ids as node:crypto computes them', async (t) => {
  const cases: [string, string, number][] = [
    ['xmltv:bench', 'bbc1.uk', 1795419390000],
    ['xmltv:bench', 'bbc1.uk', 1795419390001], // the next millisecond: another id
    ['xmltv:guide', 'bbc1.uk', 1795419390000], // another source: another id
    ['xmltv:x', '', 0],
    ['xmltv:x', 'Das Erste', -86400000], // before 1970
    ['xmltv:x', 'Канал 1', 253402300799000], // year 9999
    ['xmltv:x', 'ＮＨＫ総合😀', 1],
    ['xmltv:x', 'lone \ud800 surrogate', 5], // encoded as U+FFFD, as node:crypto does
  ];
  for (const [source, guide, start] of cases) {
    t.equal(new ProgramIds(source).id(guide, start), expected(source, guide, start), JSON.stringify([source, guide, start]));
  }
  const a = new ProgramIds('s');
  t.not(a.id('g', 1), a.id('g', 2));
  t.ok(Number.isSafeInteger(a.id('g', 1)) && a.id('g', 1) >= 0);
});

t.test('messages of every length around the 64-byte blocks', async (t) => {
  // Padding changes at 55/56 bytes (the length no longer fits the block) and at each 64.
  let wrong = 0;
  for (let n = 0; n <= 200; n++) {
    const guide = 'g'.repeat(n);
    const ids = new ProgramIds('xmltv:len');
    for (const start of [0, 7, 1795419390000]) if (ids.id(guide, start) !== expected('xmltv:len', guide, start)) wrong++;
  }
  t.equal(wrong, 0);
});

t.test('random ids and starts, one hasher for all (per-channel prefixes cached)', async (t) => {
  const ids = new ProgramIds('xmltv:random');
  const alphabet = 'abcXYZ09._-@ éüß€Жあ😀';
  const chars = [...alphabet];
  const guides = Array.from({ length: 50 }, (_, i) =>
    Array.from({ length: (i * 7) % 90 }, (_, k) => chars[(i * 31 + k * 17) % chars.length]).join(''));
  let wrong = 0;
  for (let i = 0; i < 5000; i++) {
    const guide = guides[i % guides.length];
    const start = Math.floor((Math.sin(i) + 1) * 2e12) - 1e12;
    if (ids.id(guide, start) !== expected('xmltv:random', guide, start)) wrong++;
  }
  t.equal(wrong, 0);
});
