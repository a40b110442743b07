import { constants } from 'node:fs';
import { access, chmod, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { isMap, isScalar, isSeq, parseDocument, type Document } from 'yaml';
import { errors } from '../../sdk/errors.js';

export type YamlPath = (string | number)[];

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
/** Holds a mapping or a list inside: such a value reads better in block style than on one line. */
const nested = (v: unknown) => Object.values(v as object).some((x) => x !== null && typeof x === 'object' && Object.keys(x).length > 0);

/**
 * Makes the node at `at` hold `value`, changing only what differs: a key left
 * alone keeps its comment and its place, a changed scalar keeps the comment
 * beside it, and a new key goes at the end of its mapping. `undefined` removes it.
 */
export function assignYaml(doc: Document, at: YamlPath, value: unknown): void {
  const current = doc.getIn(at, true);
  if (value === undefined) {
    if (current !== undefined) doc.deleteIn(at);
    return;
  }
  if ((isMap(current) || isSeq(current)) && current.flow && value !== null && typeof value === 'object' && nested(value) && !isDeepStrictEqual(current.toJSON(), value)) {
    current.flow = false;
  }
  if (isRecord(value) && isMap(current)) {
    for (const item of [...current.items]) {
      const key = isScalar(item.key) ? item.key.value : item.key;
      if (typeof key === 'string' && !(key in value)) doc.deleteIn([...at, key]);
    }
    for (const [key, v] of Object.entries(value)) assignYaml(doc, [...at, key], v);
    return;
  }
  if (Array.isArray(value) && isSeq(current)) {
    value.forEach((v, i) => assignYaml(doc, [...at, i], v));
    for (let i = current.items.length - 1; i >= value.length; i--) doc.deleteIn([...at, i]);
    return;
  }
  if (isScalar(current) && (value === null || typeof value !== 'object')) {
    if (current.value !== value) current.value = value;
    return;
  }
  // A new key, or a value of another shape (a mapping where `web:` held nothing).
  doc.setIn(at, doc.createNode(value));
}

/**
 * The config file as the place where settings live: read as a YAML document,
 * changed node by node (comments and order kept) and written back whole, one
 * change at a time. Without a file (the demo) or without permission to write
 * it, nothing can be changed, and every attempt says why (409).
 */
export class ConfigFile {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(readonly file: string | undefined) {}

  /** Whether changes can be written, checked now (permissions may change while the server runs). */
  async status(): Promise<{ editable: boolean; reason?: string }> {
    if (!this.file) {
      return { editable: false, reason: 'There is no config file: the server runs the built-in demo settings. Start it with --config FILE (or ANTENNA_CONFIG) to change settings here.' };
    }
    try {
      await access(this.file, constants.R_OK | constants.W_OK);
      return { editable: true };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const why = code === 'EACCES' || code === 'EPERM' || code === 'EROFS' ? 'this server may not write it' : code === 'ENOENT' ? 'it no longer exists' : `it cannot be opened (${code})`;
      return { editable: false, reason: `The config file ${this.file} is read-only: ${why}. Change it by hand, or give the server write access to it.` };
    }
  }

  /** The file's content as plain data (what was written, no defaults). */
  async read(): Promise<Record<string, unknown>> {
    if (!this.file) return {};
    const value = (await this.document()).toJS();
    return isRecord(value) ? value : {};
  }

  /**
   * Reads the file, lets `change` edit its data, checks the result with
   * `validate` (which throws an AppError) and writes the nodes that changed.
   * Changes run one after another; each reads the file afresh, so edits made
   * by hand meanwhile are kept.
   */
  update<T>(change: (data: Record<string, unknown>) => T, validate: (data: Record<string, unknown>) => void): Promise<{ before: Record<string, unknown>; after: Record<string, unknown>; result: T }> {
    const run = this.queue.then(async () => {
      const status = await this.status();
      if (!status.editable) throw errors.conflict(status.reason!);
      const doc = await this.document();
      const before = doc.toJS() ?? {};
      if (!isRecord(before)) throw errors.conflict(`The config file ${this.file} does not hold a mapping at the top level; fix it by hand`);
      const after = structuredClone(before);
      const result = change(after);
      validate(after);
      for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) assignYaml(doc, [key], after[key]);
      await this.write(String(doc));
      return { before, after, result };
    });
    this.queue = run.catch(() => {});
    return run;
  }

  private async document(): Promise<Document> {
    const text = await readFile(this.file!, 'utf8').catch((err: Error) => { throw errors.conflict(`The config file ${this.file} cannot be read: ${err.message}`); });
    const doc = parseDocument(text);
    if (doc.errors.length) throw errors.conflict(`The config file ${this.file} is not valid YAML (${doc.errors[0]!.message.split('\n')[0]}); fix it by hand`);
    return doc;
  }

  /** Through a temporary file and a rename, so a crash never leaves half a file; in place when the folder is not writable. */
  private async write(text: string): Promise<void> {
    const file = this.file!;
    const { mode } = await stat(file);
    const temp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
    try {
      await writeFile(temp, text, { mode: mode & 0o777, flag: 'wx' });
      await chmod(temp, mode & 0o777);
      await rename(temp, file);
    } catch (err) {
      await unlink(temp).catch(() => {});
      const code = (err as NodeJS.ErrnoException).code;
      // A folder we may not write in (/etc), or a file mounted on its own (a container's bind mount).
      if (code !== 'EACCES' && code !== 'EPERM' && code !== 'EROFS' && code !== 'EBUSY' && code !== 'EXDEV') throw err;
      await writeFile(file, text);
    }
  }
}
