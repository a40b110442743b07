/**
 * Language codes and the labels users pick tracks by. Files name languages
 * every which way (`eng` in Matroska tags, `en` or `fre` in sidecar names,
 * `pt-BR`); tracks carry one canonical BCP 47 form (`en`, `fr`, `pt-BR`) so
 * clients and HLS `LANGUAGE` attributes compare them reliably.
 */
import { languageName, normalizeLanguage } from 'antenna/sdk';

export { languageName, normalizeLanguage };

/**
 * "English", "English (Forced)", "Commentary (English, SDH)", "English (External)".
 * Labels of one listing are made unique ("English 2"): HLS requires distinct NAMEs in a group.
 */
export function labelsFor(tracks: { language: string | null; title?: string | null; forced?: boolean; hearingImpaired?: boolean; external: boolean }[]): string[] {
  const labels = tracks.map((t) => {
    const language = languageName(t.language);
    const title = t.title?.trim();
    const base = title || language || 'Unknown';
    const notes = [
      ...(title && language && !title.toLowerCase().includes(language.toLowerCase()) ? [language] : []),
      ...(t.forced ? ['Forced'] : []),
      ...(t.hearingImpaired ? ['SDH'] : []),
      ...(t.external ? ['External'] : []),
    ];
    return notes.length ? `${base} (${notes.join(', ')})` : base;
  });
  const seen = new Map<string, number>();
  return labels.map((l) => {
    const n = (seen.get(l) ?? 0) + 1;
    seen.set(l, n);
    return n === 1 ? l : `${l} ${n}`;
  });
}

let byName: Map<string, string> | undefined;

/** `English` → `en`, `french` → `fr` (sidecars named `Movie.English.srt`); null for anything else. */
export function languageFromName(word: string): string | null {
  if (!byName) {
    // Every two-letter code's English name, built once (a few ms).
    byName = new Map();
    const letters = 'abcdefghijklmnopqrstuvwxyz';
    for (const a of letters) {
      for (const b of letters) {
        const name = languageName(a + b);
        if (name && Intl.getCanonicalLocales(a + b)[0] === a + b) byName.set(name.toLowerCase(), a + b);
      }
    }
  }
  return byName.get(word.toLowerCase()) ?? null;
}
