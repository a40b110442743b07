/**
 * Items' pictures. The server hands out picture URLs with a key that changes
 * every few minutes; the first URL seen for a picture is kept for the session
 * (for an hour, well within the key's life), so the browser's cache serves it
 * again wherever the picture shows up. Widths are asked in device pixels.
 */
import { useState } from 'preact/hooks';

const KEEP_MS = 3600_000;
const seen = new Map<string, { url: string; at: number }>();

/** The URL of a picture at a width (CSS pixels), or undefined when there is none. */
export function pictureUrl(url: string | null | undefined, width?: number): string | undefined {
  if (!url) return undefined;
  const picture = url.replace(/[?&]key=[^&]*/, '');
  let kept = seen.get(picture);
  if (!kept || Date.now() - kept.at > KEEP_MS) seen.set(picture, (kept = { url, at: Date.now() }));
  if (!width) return kept.url;
  const pixels = Math.min(1920, Math.ceil((width * Math.min(2, window.devicePixelRatio || 1)) / 20) * 20);
  return `${kept.url}${kept.url.includes('?') ? '&' : '?'}width=${pixels}`;
}

/** An <img> of a picture that removes itself when the picture cannot be loaded (what is under it shows). */
export function Picture({ url, width, className, eager }: { url: string | null | undefined; width?: number; className?: string; eager?: boolean }) {
  const src = pictureUrl(url, width);
  const [failed, setFailed] = useState<string>();
  if (!src || failed === src) return null;
  return <img class={className} src={src} alt="" loading={eager ? 'eager' : 'lazy'} decoding="async" onError={() => setFailed(src)} />;
}
