import type { LiveChannelListing } from 'antenna/sdk';

const NUMERIC = /^(\d{1,9})(?:\.(\d{1,6}))?$/;

/**
 * Each channel's GuideNumber, in number order: its number as written without a
 * `.0` (`5.0` → `5`, `07` → `7`), unique. A number another channel has already,
 * or one that is not a number at all, becomes the next free sub-number of it
 * (`5.1`, `5.2`…) or, for names, a number above every other.
 */
export function guideNumbers(channels: readonly LiveChannelListing[]): Map<string, LiveChannelListing> {
  const out = new Map<string, LiveChannelListing>();
  const later: LiveChannelListing[] = [];
  let top = 0;
  for (const c of channels) {
    const m = NUMERIC.exec(c.number.trim());
    if (!m) { later.push(c); continue; }
    const major = String(Number(m[1]));
    const minor = m[2] && Number(m[2]) !== 0 ? `.${m[2].replace(/0+$/, '')}` : '';
    top = Math.max(top, Number(m[1]));
    let number = major + minor;
    for (let sub = 1; out.has(number); sub++) number = `${major}.${sub}`;
    out.set(number, c);
  }
  for (const c of later) {
    while (out.has(String(++top)));
    out.set(String(top), c);
  }
  return out;
}
