/**
 * Subtitle files come in whatever encoding their author's editor used: UTF-8
 * today, Windows-1252 / Latin-1 for most older Western European files. Valid
 * UTF-8 is taken as UTF-8 (a Windows-1252 text with accents is almost never
 * valid UTF-8); a BOM decides UTF-16; anything else is Windows-1252.
 */

/**
 * Windows-1252's 0x80-0x9F (where it differs from Latin-1). Decoded by hand:
 * Node 20's TextDecoder('windows-1252') maps them to C1 controls, as Latin-1.
 * 0x81, 0x8D, 0x8F, 0x90 and 0x9D are undefined and kept as the control code.
 */
const CP1252_HIGH = [
  0x20ac, 0x81, 0x201a, 0x192, 0x201e, 0x2026, 0x2020, 0x2021, 0x2c6, 0x2030, 0x160, 0x2039, 0x152, 0x8d, 0x17d, 0x8f,
  0x90, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x2dc, 0x2122, 0x161, 0x203a, 0x153, 0x9d, 0x17e, 0x178,
];

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export function decodeWindows1252(bytes: Uint8Array): string {
  const chars = new Array<string>(bytes.length);
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    chars[i] = String.fromCharCode(b >= 0x80 && b < 0xa0 ? CP1252_HIGH[b - 0x80]! : b);
  }
  return chars.join('');
}

/** Subtitle bytes → text, without a BOM. */
export function decodeSubtitleText(bytes: Uint8Array): string {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return new TextDecoder('utf-8').decode(bytes.subarray(3));
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return new TextDecoder('utf-16le').decode(bytes.subarray(2));
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return new TextDecoder('utf-16be').decode(bytes.subarray(2));
  try {
    return utf8.decode(bytes);
  } catch {
    return decodeWindows1252(bytes);
  }
}
