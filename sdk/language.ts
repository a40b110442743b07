/**
 * Language codes as clients compare them. Files name languages every which way
 * (`eng` in Matroska tags, `en` or `fre` in sidecar names, `pt-BR`); what
 * Antenna hands out is one canonical BCP 47 form (`en`, `fr`, `pt-BR`) with
 * an English display name, in manifests and listings alike.
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

/** "English", "Brazilian Portuguese": the display name of a code, or null. */
export function languageName(code: string | null): string | null {
  if (!code) return null;
  try { return names.of(code) ?? null; } catch { return null; }
}
