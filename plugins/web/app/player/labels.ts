/** Human names for languages, codecs and channel layouts of tracks. */
import type { AudioStream } from '../types.js';
import { formatRuntime } from '../ui.js';

let names: Intl.DisplayNames | undefined;

/** "French" for fr / fre / fra; the code itself when the browser does not know it. */
export function languageName(code: string | null | undefined): string | undefined {
  if (!code || code === 'und') return undefined;
  try {
    names ??= new Intl.DisplayNames([navigator.language, 'en'], { type: 'language' });
    return names.of(code) ?? code;
  } catch {
    return code;
  }
}

export function channelLayout(channels: number): string {
  if (channels === 1) return 'mono';
  if (channels === 2) return 'stereo';
  if (channels === 6) return '5.1';
  if (channels === 8) return '7.1';
  return `${channels} ch`;
}

const CODECS: Record<string, string> = { aac: 'AAC', ac3: 'Dolby Digital', eac3: 'Dolby Digital+', dts: 'DTS', truehd: 'Dolby TrueHD', mp3: 'MP3', opus: 'Opus', flac: 'FLAC', vorbis: 'Vorbis' };

export function codecName(codec: string): string {
  return CODECS[codec] ?? codec.toUpperCase();
}

/** "English (AAC stereo)", or "Commentary — English (AC3 5.1)". */
export function audioLabel(a: AudioStream): string {
  const language = languageName(a.language);
  const name = a.title && language && !a.title.includes(language) ? `${a.title} — ${language}` : a.title ?? language ?? `Track ${a.track + 1}`;
  return `${name} (${codecName(a.codec)} ${channelLayout(a.channels)})`;
}

/** 2160p, 1080p, 720p… from the picture height (or width, for cropped scope pictures). */
export function resolutionName(width: number, height: number): string {
  if (width >= 3800 || height >= 2100) return '4K';
  if (width >= 1900 || height >= 1060) return '1080p';
  if (width >= 1260 || height >= 700) return '720p';
  return `${height}p`;
}

/** A title's length: "1 h 45 min", "12 min", or "20 s" for clips (where minutes would round to 0). */
export function lengthLabel(seconds: number): string {
  return seconds < 60 ? `${Math.round(seconds)} s` : formatRuntime(seconds);
}
