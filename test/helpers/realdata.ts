import { existsSync } from 'node:fs';
import path from 'node:path';

/**
 * The real-world playlists and guides in shared/realdata (never copied into
 * the repo). CI clones the repo with shared/ beside it; ANTENNA_REALDATA
 * points elsewhere when needed.
 */
function locate(): string {
  const candidates = [
    process.env.ANTENNA_REALDATA,
    path.resolve(process.cwd(), '../shared/realdata'),
    path.resolve(__dirname, '../../../../shared/realdata'),
    path.resolve(__dirname, '../../../shared/realdata'),
    '/work/shared/realdata',
  ].filter((p): p is string => !!p);
  const found = candidates.find((p) => existsSync(path.join(p, 'SOURCES.md')));
  if (!found) throw new Error(`shared/realdata not found (looked in ${candidates.join(', ')}); set ANTENNA_REALDATA`);
  return found;
}

export const REALDATA = locate();
export const realM3u = (name: string) => path.join(REALDATA, 'm3u', name);
export const realXmltv = (name: string) => path.join(REALDATA, 'xmltv', name);
