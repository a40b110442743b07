/**
 * The session's subtitle choice, by label and language so that it carries
 * from one title to the next: made on an item page before Play or in the
 * player, and applied to each title's tracks (same label, else same
 * language, else off).
 */
import type { SubtitleChoice } from './engine.js';

const KEY = 'antenna.player.subtitles';

export type Remembered = { label: string; language: string } | 'off';

export function rememberedSubtitles(): Remembered | undefined {
  try {
    const raw = sessionStorage.getItem(KEY);
    return raw ? JSON.parse(raw) as Remembered : undefined;
  } catch { return undefined; }
}

export function rememberSubtitles(choice: Remembered): void {
  sessionStorage.setItem(KEY, JSON.stringify(choice));
}

/** The key of the choice among a title's that matches the session's, or 'off'. */
export function preferredSubtitle(choices: Pick<SubtitleChoice, 'key' | 'label' | 'language'>[]): string {
  const wanted = rememberedSubtitles();
  if (!wanted || wanted === 'off') return 'off';
  return (choices.find((c) => c.label === wanted.label) ?? choices.find((c) => c.language === wanted.language))?.key ?? 'off';
}

/** The label of the matching track among an item's (for a chooser whose values are labels), or '' for off. */
export function rememberedSubtitleLabel(tracks: { label: string; language: string }[]): string {
  const key = preferredSubtitle(tracks.map((t) => ({ key: t.label, label: t.label, language: t.language })));
  return key === 'off' ? '' : key;
}
