import { randomBytes } from 'node:crypto';
import { readFile, writeFile, chmod, rename } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** The JWT signing secret: generated at first start, kept owner-only in the data dir. */
export async function loadOrCreateSecret(dataDir: string, attempt = 0): Promise<string> {
  const file = path.join(dataDir, 'jwt-secret');
  try {
    const existing = (await readFile(file, 'utf8')).trim();
    if (existing.length >= 32) {
      await chmod(file, 0o600);
      return existing;
    }
    // Too short: another process may be writing it right now ('wx' below), so look again
    // briefly; a file that stays short (emptied, hand-edited) is replaced, which signs out
    // every session, instead of retrying forever.
    if (attempt < 20) {
      await sleep(25);
      return loadOrCreateSecret(dataDir, attempt + 1);
    }
    const replacement = randomBytes(48).toString('base64url');
    const tmp = `${file}.${process.pid}.tmp`;
    await writeFile(tmp, replacement + '\n', { mode: 0o600 });
    await rename(tmp, file);
    return replacement;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const secret = randomBytes(48).toString('base64url');
  // 'wx' so two processes starting at once cannot overwrite each other's secret.
  try {
    await writeFile(file, secret + '\n', { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return loadOrCreateSecret(dataDir, attempt + 1);
    throw err;
  }
  return secret;
}
