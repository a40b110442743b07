/**
 * The config file as settings are written to it: a value changed in place
 * keeps its comment, new keys go at the end of their mapping, removed ones go
 * with their lines, one-line mappings stay one line until they get a list of
 * mappings, and the file is replaced whole (a temp file and a rename) keeping
 * its permissions.
 */
import t from 'tap';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseDocument } from 'yaml';
import { assignYaml, ConfigFile } from '../../core/config/file.js';
import { tmpDir } from '../helpers/http.js';

const edit = (text: string, at: (string | number)[], value: unknown) => {
  const doc = parseDocument(text);
  assignYaml(doc, at, value);
  return String(doc);
};

t.test('assignYaml changes only what differs', async (t) => {
  // (Written as the yaml library writes a one-line list, with spaces inside the brackets.)
  const text = `# top
a: 1 # one
b:
  # about c
  c: [ x, y ]
  d: { e: 1 }
list:
  - name: first # the first
    n: 1
  - name: second
`;
  t.equal(edit(text, ['a'], 2), text.replace('a: 1 # one', 'a: 2 # one'), 'a scalar keeps its comment');
  t.equal(edit(text, ['b', 'd', 'f'], 'new'), text.replace('d: { e: 1 }', 'd: { e: 1, f: new }'), 'a one-line mapping stays one line');
  t.equal(edit(text, ['b', 'c'], ['x', 'y', 'z']), text.replace('c: [ x, y ]', 'c: [ x, y, z ]'), 'so does a list of scalars');
  t.equal(edit(text, ['b', 'd'], { e: 1, f: [{ g: 1 }] }), text.replace('  d: { e: 1 }\n', '  d:\n    e: 1\n    f:\n      - g: 1\n'), 'a one-line mapping given a list of mappings is written in blocks');
  t.equal(edit(text, ['list'], [{ name: 'first', n: 1 }]), text.replace('  - name: second\n', ''), 'a removed item goes, the others stay as they were');
  t.equal(edit(text, ['list', 1, 'n'], 2), text.replace('  - name: second\n', '  - name: second\n    n: 2\n'), 'a new key goes at the end of its mapping');
  t.equal(edit(text, ['b'], undefined), text.replace(/b:\n[\s\S]*?(?=list:)/, ''), 'undefined removes the key with its lines');
  t.equal(edit('web:\n', ['web'], { x: 1 }), 'web:\n  x: 1\n', 'a key holding nothing gets a mapping');
  t.equal(edit('', ['plugins', 'dvr', 'path'], '/r'), 'plugins:\n  dvr:\n    path: /r\n', 'an empty file gets the keys');
});

t.test('ConfigFile writes through a temp file, keeps the mode, one change at a time', async (t) => {
  const dir = await tmpDir(t, 'antenna-config-file-');
  const file = path.join(dir, 'antenna.yaml');
  await writeFile(file, 'n: 0 # counter\n', { mode: 0o640 });
  const config = new ConfigFile(file);
  t.same(await config.status(), { editable: true });
  // Twenty changes at once, each reading what the one before wrote.
  await Promise.all(Array.from({ length: 20 }, () => config.update((data) => { data.n = Number(data.n) + 1; }, () => {})));
  t.equal(await readFile(file, 'utf8'), 'n: 20 # counter\n', 'none was lost');
  t.equal((await stat(file)).mode & 0o777, 0o640, 'the permissions stayed');
  t.same((await readdir(dir)).sort(), ['antenna.yaml'], 'no temp file left');

  await t.rejects(config.update((data) => { data.n = 'x'; }, () => { throw new Error('n must be a number'); }), /n must be a number/);
  t.equal(await readFile(file, 'utf8'), 'n: 20 # counter\n', 'a change that does not validate is not written');

  t.match(await new ConfigFile(undefined).status(), { editable: false, reason: /no config file/ });
  t.match(await new ConfigFile(path.join(dir, 'gone.yaml')).status(), { editable: false, reason: /read-only: it no longer exists/ });
});
