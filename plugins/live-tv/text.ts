/** Case- and accent-insensitive form for search and name matching: "Télé 5 HD" → "tele 5 hd". */
export function fold(text: string): string {
  // ASCII has nothing to decompose (most names): NFKD and the marks' regex are skipped.
  const plain = /^[\x00-\x7f]*$/.test(text) ? text : text.normalize('NFKD').replace(/\p{M}/gu, '');
  return plain.toLowerCase().replace(/\s+/g, ' ').trim();
}

/** Sort key for channel numbers: "22.1" → 22.1, "7" → 7, anything else after all numbers. */
export function numberSortKey(number: string | null | undefined): number {
  if (!number) return Number.MAX_SAFE_INTEGER;
  const n = Number.parseFloat(number);
  return Number.isFinite(n) && /^\s*\d/.test(number) ? n : Number.MAX_SAFE_INTEGER - 1;
}
