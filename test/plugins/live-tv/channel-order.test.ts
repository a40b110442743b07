/**
 * The snapshot's channel order: sortChannels (native sort of packed keys, ties and odd numbers by
 * the comparator) gives exactly the order of the plain comparator sort, whatever the numbers.
 */
import 'reflect-metadata';
import t from 'tap';
import { sortChannels, type Channel } from '../../../plugins/live-tv/channel-store.js';
import { numberSortKey } from '../../../plugins/live-tv/text.js';
import { mulberry32 } from '../../bench/random.js';

function reference(channels: Channel[]): Channel[] {
  return channels.map((c) => ({ c, k: numberSortKey(c.number) }))
    .sort((a, b) => a.k - b.k || a.c.number.localeCompare(b.c.number) || a.c.name.localeCompare(b.c.name) || a.c.id - b.c.id)
    .map((x) => x.c);
}

const channel = (id: number, number: string, name: string): Channel => ({ id, number, name } as Channel);

function randomChannels(n: number, random: () => number, numbers: (i: number) => string): Channel[] {
  const channels: Channel[] = [];
  for (let i = 0; i < n; i++) channels.push(channel(1 + Math.floor(random() * n * 4), numbers(i), `Ch ${Math.floor(random() * 50)}`));
  return channels;
}

t.test('the same order as the comparator', async (t) => {
  const random = mulberry32(7);
  const pick = <T>(xs: T[]): T => xs[Math.floor(random() * xs.length)]!;
  const odd = ['22.1', '22.10', '7', '07', '007', 'BS101', '', '5 HD', '1e3', String(2 ** 40), '123456789012345', '1234567890123456789', '-5', 'A1', '0'];
  const kinds: [string, (i: number) => string][] = [
    ['assigned, all different', (i) => String(i + 1)],
    ['shuffled whole numbers, many repeated', () => String(Math.floor(random() * 300))],
    ['whole numbers among odd ones', (i) => (random() < 0.2 ? pick(odd) : String(Math.floor(random() * 1000) + (i % 3)))],
    ['odd ones only', () => pick(odd)],
    ['huge whole numbers', () => String(Math.floor(random() * 2 ** 50))],
  ];
  for (const n of [0, 1, 2, 3, 17, 1000, 70_000]) {
    for (const [kind, numbers] of kinds) {
      const channels = randomChannels(n, random, numbers);
      const expected = reference(channels.slice());
      const got = sortChannels(channels.slice());
      t.equal(got.length, n);
      const first = got.findIndex((c, i) => c !== expected[i]);
      t.equal(first, -1, `${kind}, ${n} channels${first >= 0 ? `: at ${first}, ${got[first]?.number} for ${expected[first]?.number}` : ''}`);
    }
  }
});

t.test('sorts in place and returns the array', async (t) => {
  const channels = [channel(3, '9', 'c'), channel(1, '2', 'a'), channel(2, '22.1', 'b'), channel(4, '', 'd')];
  const same = sortChannels(channels);
  t.equal(same, channels);
  t.same(channels.map((c) => c.id), [1, 3, 2, 4]);
});
