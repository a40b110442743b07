/**
 * The session's subtitle choice, by label and language so that it carries
 * from one title to the next: made on an item page before Play or in the
 * player, and applied to each title's tracks (same label, else same
 * language, else off).
 */
import { useEffect, useState } from 'preact/hooks';
import type { SubtitleTrack } from '../types.js';
import type { Engine, SubtitleChoice } from './engine.js';

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

/**
 * A player's subtitles: the title's choices (hls.js plays the manifest's renditions, cues aligned
 * through X-TIMESTAMP-MAP; a file gets the WebVTT files), the one shown (the viewer's, else the
 * session's), shown on the engine as it changes, and a chooser that the session remembers.
 */
export function useSubtitleChoice(
  engineRef: { current?: Engine }, mode: 'pending' | 'hls' | 'file', hlsTracks: SubtitleChoice[], apiTracks: SubtitleTrack[],
  onError: (err: Error) => void,
): { choices: SubtitleChoice[]; selected: string; choose(key: string): void } {
  const [subtitle, setSubtitle] = useState<string>();
  const choices: SubtitleChoice[] = mode === 'hls'
    ? hlsTracks.map((c, i) => ({ ...c, label: hlsTracks.length === apiTracks.length ? apiTracks[i].label : c.label }))
    : mode === 'file'
      ? apiTracks.map((t, i) => ({ key: `vtt-${i}`, label: t.label, language: t.language, vttUrl: t.url }))
      : [];
  const choicesKey = choices.map((c) => c.key).join();
  const selected = subtitle ?? preferredSubtitle(choices);

  useEffect(() => {
    const engine = engineRef.current;
    if (!engine || !choices.length) return;
    const controller = new AbortController();
    engine.showSubtitles(choices.find((c) => c.key === selected), controller.signal).catch((err: Error) => {
      if (err.name !== 'AbortError') onError(err);
    });
    return () => controller.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [selected, choicesKey]);

  const choose = (key: string) => {
    setSubtitle(key);
    const choice = choices.find((c) => c.key === key);
    rememberSubtitles(choice ? { label: choice.label, language: choice.language } : 'off');
  };
  return { choices, selected, choose };
}
