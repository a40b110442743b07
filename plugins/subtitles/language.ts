/**
 * Language codes and the labels users pick tracks by. Files name languages
 * every which way (`eng` in Matroska tags, `en` or `fre` in sidecar names,
 * `pt-BR`); tracks carry one canonical BCP 47 form (`en`, `fr`, `pt-BR`) so
 * clients and HLS `LANGUAGE` attributes compare them reliably.
 */
const names = new Intl.DisplayNames(['en'], { type: 'language', fallback: 'none' });

/** A known language code in canonical BCP 47 form (ISO 639-2 B/T codes become their 639-1 code), else null. */
export function normalizeLanguage(code: string | null | undefined): string | null {
  if (!code || !/^[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})*$/.test(code)) return null;
  try {
    const [canonical] = Intl.getCanonicalLocales(code.replace(/_/g, '-'));
    if (!canonical || canonical === 'und' || !names.of(canonical)) return null;
    return canonical;
  } catch {
    return null;
  }
}

export function languageName(code: string | null): string | null {
  if (!code) return null;
  try { return names.of(code) ?? null; } catch { return null; }
}

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
        const name = names.of(a + b);
        if (name && Intl.getCanonicalLocales(a + b)[0] === a + b) byName.set(name.toLowerCase(), a + b);
      }
    }
  }
  return byName.get(word.toLowerCase()) ?? null;
}
