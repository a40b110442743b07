/** The number sort key: a number as parseFloat reads it, and everything else after numbers. */
import t from 'tap';
import { numberSortKey } from '../../../plugins/live-tv/text.js';

const NOT_A_NUMBER = Number.MAX_SAFE_INTEGER - 1;
const NONE = Number.MAX_SAFE_INTEGER;

t.test('numbers as the numbers they are written as', async (t) => {
  const cases: [string | null | undefined, number][] = [
    ['7', 7], ['007', 7], ['0', 0], ['22.1', 22.1], ['22.10', 22.1], ['101a', 101], ['5 HD', 5], [' 12', 12],
    ['123456789012345', 123456789012345], ['1234567890123456789', 1234567890123456789], ['1e3', 1000],
    ['BS101', NOT_A_NUMBER], ['-5', NOT_A_NUMBER], ['.5', NOT_A_NUMBER], ['+1', NOT_A_NUMBER], ['A1', NOT_A_NUMBER],
    ['1e999', NOT_A_NUMBER], ['', NONE], [null, NONE], [undefined, NONE],
  ];
  for (const [number, key] of cases) t.equal(numberSortKey(number), key, JSON.stringify(number));
});

t.test('every run of digits gives what parseFloat gives', async (t) => {
  let wrong = 0;
  for (let len = 1; len <= 20; len++) {
    for (let k = 0; k < 200; k++) {
      let s = '';
      for (let i = 0; i < len; i++) s += String(Math.floor(Math.random() * 10));
      if (numberSortKey(s) !== Number.parseFloat(s)) wrong++;
    }
  }
  t.equal(wrong, 0);
});
