/**
 * Generated XMLTV guides and matching playlists for the benchmarks, written to
 * disk as they are made (a 300 MB guide never sits in memory).
 */
import { createWriteStream, statSync } from 'node:fs';
import { once } from 'node:events';
import { mulberry32 } from './random.js';

export const WORDS = (
  'the night house river last world secret city game island police doctor family kitchen journey story ' +
  'summer winter murder garden news live road wild ocean planet legends street money dream heart station ' +
  'detective mountain brothers sisters fire golden empire hidden north south west east ancient modern ' +
  'motor sport football weather morning evening great british french market village valley café naïve'
).split(' ');
export const CATEGORIES = ['Drama', 'News', 'Sport', 'Documentary', 'Comedy', 'Film', 'Children', 'Entertainment', 'Music', 'Lifestyle'];
export const GROUPS = ['News', 'Sports', 'Movies', 'Kids', 'Music', 'Entertainment', 'Documentary', 'General'];
export const DURATIONS = [30, 45, 60, 60, 60, 90, 90];
export const pad = (n: number, w = 2): string => String(n).padStart(w, '0');
export const guideId = (c: number): string => `ch${pad(c, 5)}.bench.tv`;
export const channelName = (c: number): string => `Bench ${WORDS[c % WORDS.length]} ${c}`;

/** XMLTV local time at +0100 for a UTC ms value. */
export function xmltvTime(ms: number): string {
  const d = new Date(ms + 3600_000);
  return `${d.getUTCFullYear()}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}00 +0100`;
}

export async function writer(file: string): Promise<{ write: (s: string) => Promise<void>; end: () => Promise<void> }> {
  const out = createWriteStream(file);
  return {
    write: async (s) => { if (!out.write(s)) await once(out, 'drain'); },
    end: async () => { out.end(); await once(out, 'finish'); },
  };
}

/**
 * A guide of `channels` × `days` starting at `begin` (every programme is current or
 * future, so none is dropped as too old): titles, sub-titles, 2–3 sentence
 * descriptions, 1–2 categories, xmltv_ns and onscreen episode numbers, icons,
 * ratings, a few entities, +0100 offsets. Written channel by channel, 256 KB at a time.
 */
export async function generateGuide(file: string, channels: number, days: number, begin: number): Promise<{ programmes: number; bytes: number }> {
  const rnd = mulberry32(42);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)]!;
  const words = (min: number, max: number): string => {
    const n = min + Math.floor(rnd() * (max - min + 1));
    let s = pick(WORDS);
    for (let i = 1; i < n; i++) s += ' ' + pick(WORDS);
    return s;
  };
  const cap = (s: string): string => s[0]!.toUpperCase() + s.slice(1);
  const sentence = (): string => {
    let s = cap(words(3, 8));
    const r = rnd();
    if (r < 0.1) s += ' &amp; ' + words(2, 4);
    else if (r < 0.2) s = s.replace(' ', '&apos;s ');
    else if (r < 0.25) s += ' &quot;' + words(1, 3) + '&quot;';
    return s + '.';
  };
  const w = await writer(file);
  await w.write('<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE tv SYSTEM "xmltv.dtd">\n<tv generator-info-name="antenna-livetv-bench">\n');
  let chunk = '';
  for (let c = 0; c < channels; c++) {
    chunk += `  <channel id="${guideId(c)}">\n    <display-name lang="en">${channelName(c)}</display-name>\n    <display-name>${c + 1}</display-name>\n    <icon src="https://img.bench.tv/logos/${c}.png" />\n  </channel>\n`;
  }
  await w.write(chunk);
  let programmes = 0;
  const end = begin + days * 86400_000;
  for (let c = 0; c < channels; c++) {
    const id = guideId(c);
    let t = begin;
    let season = 1 + Math.floor(rnd() * 5);
    let episode = 1;
    chunk = '';
    while (t < end) {
      const stop = t + pick(DURATIONS) * 60_000;
      const title = rnd() < 0.05 ? `${cap(words(1, 2))} &amp; ${cap(words(1, 2))}` : cap(words(1, 4));
      chunk +=
        `  <programme start="${xmltvTime(t)}" stop="${xmltvTime(stop)}" channel="${id}">\n` +
        `    <title lang="en">${title}</title>\n` +
        (rnd() < 0.7 ? `    <sub-title lang="en">${cap(words(1, 4))}</sub-title>\n` : '') +
        `    <desc lang="en">${sentence()} ${sentence()}${rnd() < 0.3 ? ' ' + sentence() : ''}</desc>\n` +
        `    <category lang="en">${pick(CATEGORIES)}</category>\n` +
        (rnd() < 0.3 ? `    <category lang="en">${pick(CATEGORIES)}</category>\n` : '') +
        `    <episode-num system="xmltv_ns">${season - 1}.${episode - 1}.</episode-num>\n` +
        (rnd() < 0.5 ? `    <episode-num system="onscreen">S${pad(season)}E${pad(episode)}</episode-num>\n` : '') +
        `    <icon src="https://img.bench.tv/p/${Math.floor(rnd() * 1e6)}.jpg" />\n` +
        (rnd() < 0.15 ? `    <rating system="UK"><value>${pick(['U', 'PG', '12', '15'])}</value></rating>\n` : '') +
        `  </programme>\n`;
      programmes++;
      if (++episode > 20) { episode = 1; season++; }
      t = stop;
      if (chunk.length > 256 * 1024) { await w.write(chunk); chunk = ''; }
    }
    await w.write(chunk);
  }
  await w.write('</tv>\n');
  await w.end();
  return { programmes, bytes: statSync(file).size };
}

/** A playlist whose tvg-ids are the guide's channel ids. */
export async function generateGuidePlaylist(file: string, channels: number): Promise<void> {
  const w = await writer(file);
  let s = '#EXTM3U\n';
  for (let c = 0; c < channels; c++) {
    s += `#EXTINF:-1 tvg-id="${guideId(c)}" tvg-name="${channelName(c)}" tvg-chno="${c + 1}" tvg-logo="https://img.bench.tv/logos/${c}.png" group-title="${GROUPS[c % GROUPS.length]}",${channelName(c)}\n` +
      `https://cdn${c % 20}.stream.bench.tv/live/${c}/index.m3u8\n`;
    if (s.length > 256 * 1024) { await w.write(s); s = ''; }
  }
  await w.write(s);
  await w.end();
}
