/**
 * A channel's logo, shared by the channel list and the guide. Logos are remote
 * URLs from the playlist; when there is none, or it fails to load, the
 * channel's initials stand in, on a colour derived from its name.
 */
import { useState } from 'preact/hooks';
import { titleColours } from '../ui.js';

/** URLs that failed once: rows scrolled back into view do not try them again. */
const failed = new Set<string>();

export function initials(name: string): string {
  const words = name.replace(/[^\p{L}\p{N} ]/gu, ' ').split(/\s+/).filter(Boolean);
  if (!words.length) return '?';
  if (words.length === 1) return words[0].slice(0, 2).toUpperCase();
  return (words[0][0] + words[1][0]).toUpperCase();
}

export function ChannelLogo({ name, logo, class: className = '' }: { name: string; logo?: string | null; class?: string }) {
  const [broken, setBroken] = useState(false);
  if (logo && !broken && !failed.has(logo)) {
    return (
      <img class={`channel-logo ${className}`} src={logo} alt="" loading="lazy" decoding="async" referrerpolicy="no-referrer"
        onError={() => { failed.add(logo); setBroken(true); }} />
    );
  }
  const [a, b] = titleColours(name);
  return <span class={`channel-logo fallback ${className}`} aria-hidden="true" style={{ background: `linear-gradient(135deg, ${a}, ${b})` }}>{initials(name)}</span>;
}
