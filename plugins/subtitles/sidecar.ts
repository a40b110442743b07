/**
 * The `external` provider: subtitle files next to the media file, named after
 * it (`Movie (2020).mkv` → `Movie (2020).srt`, `Movie (2020).en.srt`,
 * `Movie (2020).fr.forced.srt`, `Movie (2020).eng.sdh.srt`). The words
 * between the media's name and the extension give the language (a code or an
 * English name), the flags (`forced`/`foreign`, `sdh`/`cc`/`hi`, `default`)
 * and, for anything else, a title. A version (`Movie (2020) - 1080p.mkv`)
 * also gets the subtitles named after the title alone.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { SubtitleFormat, SubtitleProvider, SubtitleTrack } from 'antenna/sdk';
import { languageFromName, normalizeLanguage } from './language.js';
import { toWebVtt } from './vtt.js';

export const SIDECAR_FORMATS: Readonly<Record<string, SubtitleFormat>> = { '.srt': 'srt', '.vtt': 'vtt', '.ass': 'ass', '.ssa': 'ssa' };
const CODEC: Record<SubtitleFormat, string> = { srt: 'subrip', vtt: 'webvtt', ass: 'ass', ssa: 'ssa' };
/** Larger files are not subtitles (a 3-hour film's SRT is ~150 KB). */
const MAX_BYTES = 16 * 2 ** 20;
/** Converted files kept in memory (path + size + mtime), most recent last. */
const CACHE_ENTRIES = 64;

export interface Sidecar {
  path: string;
  format: SubtitleFormat;
  language: string | null;
  title: string | null;
  forced: boolean;
  default: boolean;
  hearingImpaired: boolean;
}

/** What a sidecar's name says, given the words between the media's name and the extension. */
export function parseSidecarWords(words: string[]): Omit<Sidecar, 'path' | 'format'> {
  const out = { language: null as string | null, title: null as string | null, forced: false, default: false, hearingImpaired: false };
  const rest: string[] = [];
  for (const word of words) {
    const w = word.trim().toLowerCase();
    if (!w) continue;
    if (w === 'forced' || w === 'foreign') out.forced = true;
    else if (w === 'sdh' || w === 'cc' || (w === 'hi' && out.language)) out.hearingImpaired = true; // `hi` alone is Hindi
    else if (w === 'default') out.default = true;
    else if (!out.language && (normalizeLanguage(w) ?? languageFromName(w))) out.language = normalizeLanguage(w) ?? languageFromName(w);
    else rest.push(word.trim());
  }
  out.title = rest.join(' ') || null;
  return out;
}

/** The sidecars of a media file, sorted by name (their position is their track id). */
export async function findSidecars(mediaPath: string): Promise<Sidecar[]> {
  const dir = path.dirname(mediaPath);
  const stem = path.basename(mediaPath, path.extname(mediaPath));
  const stems = [stem.toLowerCase()];
  const versioned = / - [^.]+$/.exec(stem);
  if (versioned) stems.push(stem.slice(0, versioned.index).toLowerCase());
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return []; // the folder is gone: no sidecars (the item itself answers 404 elsewhere)
  }
  const found: Sidecar[] = [];
  for (const entry of entries) {
    if (!entry.isFile() && !entry.isSymbolicLink()) continue;
    const ext = path.extname(entry.name).toLowerCase();
    const format = SIDECAR_FORMATS[ext];
    if (!format) continue;
    const name = entry.name.slice(0, -ext.length);
    const lower = name.toLowerCase();
    for (const s of stems) {
      if (lower !== s && !lower.startsWith(`${s}.`)) continue;
      const words = lower === s ? [] : name.slice(s.length + 1).split('.');
      found.push({ path: path.join(dir, entry.name), format, ...parseSidecarWords(words) });
      break;
    }
  }
  return found.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

export function sidecarProvider(): SubtitleProvider {
  const converted = new Map<string, string>();

  async function webVtt(file: Sidecar): Promise<string | undefined> {
    const st = await stat(file.path).catch(() => undefined);
    if (!st?.isFile() || st.size > MAX_BYTES) return undefined;
    const key = `${file.path}\0${st.size}\0${st.mtimeMs}`;
    const hit = converted.get(key);
    if (hit !== undefined) {
      converted.delete(key);
      converted.set(key, hit);
      return hit;
    }
    const vtt = toWebVtt(await readFile(file.path), file.format);
    converted.set(key, vtt);
    if (converted.size > CACHE_ENTRIES) converted.delete(converted.keys().next().value!);
    return vtt;
  }

  return {
    id: 'external',
    name: 'Subtitle files next to the media',
    async listTracks({ file }) {
      return (await findSidecars(file.path)).map((s, n): SubtitleTrack => ({
        id: String(n), language: s.language, title: s.title, codec: CODEC[s.format],
        forced: s.forced, default: s.default, hearingImpaired: s.hearingImpaired, external: true,
      }));
    },
    async fetchTrack({ file }, trackId) {
      if (!/^(0|[1-9]\d{0,3})$/.test(trackId)) return undefined;
      const sidecar = (await findSidecars(file.path))[Number(trackId)];
      return sidecar && webVtt(sidecar);
    },
  };
}
