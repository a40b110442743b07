import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';

/** Bytes on disk under a directory, each file once (a live session's names and ffmpeg's are links of one file). */
export async function diskBytes(dir: string): Promise<number> {
  const seen = new Set<number>();
  let bytes = 0;
  const walk = async (d: string) => {
    for (const e of await readdir(d, { withFileTypes: true }).catch(() => [])) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else {
        const st = await stat(p).catch(() => undefined);
        if (st && !seen.has(st.ino)) { seen.add(st.ino); bytes += st.size; }
      }
    }
  };
  await walk(dir);
  return bytes;
}
