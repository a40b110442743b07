import { createHash } from 'node:crypto';

/**
 * A programme's id: the first 52 bits (13 hex digits, so that it fits a JSON number) of the SHA-1
 * of `${sourceId}\n${guideId}\n${start}`. The same source, guide channel and start give the same
 * id at every refresh, which recordings and clients rely on.
 */
export function programId(sourceId: string, guideId: string, start: number): number {
  return Number.parseInt(createHash('sha1').update(`${sourceId}\n${guideId}\n${start}`).digest('hex').slice(0, 13), 16);
}
