/**
 * What a media file is, from its path alone (pure; no I/O): a movie (title,
 * year, version label) or an episode (show, season, episode). The scanner
 * turns these into items; their natural keys (folded titles and numbers)
 * become the items' stable ids.
 *
 * Conventions understood (the ones Plex, Jellyfin and release names use):
 *   movies: `Title (Year)/Title (Year).mkv`, loose `Title (Year).mkv`,
 *           `Title.Year.1080p.BluRay.x264.mkv`, no year at all;
 *           versions `Title (Year) - 1080p.mkv`, `Title (Year) - Director's Cut.mkv`
 *   shows:  `Show/Season 01/Show - S01E02.mkv`, `S01E02` / `s1e2` / `1x02`
 *           anywhere in the name, `Specials` = season 0, loose
 *           `Show.Name.S01E02.720p.mkv`; `S01E01-E02` maps to the first episode.
 */
import path from 'node:path';

export const MEDIA_EXTENSIONS: ReadonlySet<string> = new Set([
  'mkv', 'mp4', 'm4v', 'mov', 'avi', 'webm', 'ts', 'm2ts', 'wmv', 'flv', 'mpg', 'mpeg',
]);

export function isMediaFile(name: string): boolean {
  const dot = name.lastIndexOf('.');
  return dot > 0 && MEDIA_EXTENSIONS.has(name.slice(dot + 1).toLowerCase());
}

/**
 * Folders that hold a title's extras or samples, not titles: skipped whole
 * (a trailer must not become a second version of its movie).
 */
const EXTRA_FOLDERS = new Set([
  'extras', 'extra', 'featurettes', 'behind the scenes', 'deleted scenes', 'interviews', 'scenes', 'shorts',
  'trailers', 'trailer', 'sample', 'samples', 'other', 'others',
]);

export function isExtrasFolder(name: string): boolean {
  return EXTRA_FOLDERS.has(name.toLowerCase());
}

/** `Movie-trailer.mkv`, `sample.mkv`, `Movie.2010.sample.mkv` (Plex's suffixes): not titles either. */
export function isExtraFile(name: string): boolean {
  const base = stripExtension(name).toLowerCase();
  return base === 'sample' || /[._ ]sample$/.test(base) || /-(?:trailer|sample|featurette|behindthescenes|deleted|interview|scene|short|other)$/.test(base);
}

export interface MovieName {
  title: string;
  year: number | null;
  /** The version's label (`1080p`, `Director's Cut`), when the name gives one. */
  label: string | null;
}

export interface EpisodeName {
  show: string;
  /** A year in the show folder's name (`Doctor Who (2005)`) tells remakes apart. */
  showYear: number | null;
  season: number;
  episode: number;
  /** Last episode of a multi-episode file (S01E01-E02); the file maps to `episode`. */
  lastEpisode: number | null;
  /** The episode's own title when the name carries one after the marker. */
  title: string | null;
  label: string | null;
}

/**
 * Release tags: a dotted name is cut at the first of these (and everything after
 * it is dropped). Words that are also ordinary title words (`web`, `dvd`,
 * `extended`) are left out on purpose.
 */
const TAGS = new Set([
  '2160p', '1440p', '1080p', '1080i', '720p', '576p', '576i', '480p', '480i', '360p', '4k', 'uhd', '8k',
  'hdr', 'hdr10', 'hdr10+', 'dv', 'dovi', 'sdr', '10bit', '8bit', '12bit',
  'bluray', 'blu-ray', 'bdrip', 'brrip', 'bdremux', 'remux', 'webrip', 'web-dl', 'webdl', 'web-rip', 'hdtv', 'pdtv', 'dsr',
  'dvdrip', 'dvdscr', 'dvd5', 'dvd9', 'hdrip', 'hddvd', 'hd-dvd', 'cam', 'telesync', 'ts-rip', 'vhsrip', 'tvrip', 'satrip',
  'x264', 'x265', 'h264', 'h.264', 'h265', 'h.265', 'hevc', 'avc', 'xvid', 'divx', 'av1', 'vp9', 'mpeg2',
  'aac', 'aac2.0', 'ac3', 'eac3', 'dts', 'dts-hd', 'dtshd', 'truehd', 'atmos', 'flac', 'mp3', 'opus', 'dd5.1', 'ddp5.1', 'dd2.0', 'ddp2.0', '5.1', '7.1', '2.0',
  'proper', 'repack', 'rerip', 'internal', 'limited', 'unrated', 'uncut', 'remastered', 'multi', 'dubbed', 'subbed', 'nf', 'amzn', 'dsnp', 'hmax', 'atvp', 'hulu',
]);

const isTag = (token: string): boolean => TAGS.has(token.toLowerCase().replace(/^[[(]+|[\])]+$/g, ''));

const RESOLUTION = /(?:^|[^a-z0-9])(2160p|1440p|1080[pi]|720p|576[pi]|480[pi]|4k)(?=$|[^a-z0-9])/i;

export function stripExtension(name: string): string {
  const ext = path.extname(name);
  return ext && MEDIA_EXTENSIONS.has(ext.slice(1).toLowerCase()) ? name.slice(0, -ext.length) : name;
}

/**
 * `The.Matrix.1999` → `The Matrix 1999`: a name without spaces uses dots or
 * underscores as separators. Names with spaces keep their dots (`Mr. Smith`).
 */
function spaced(name: string): string {
  let s = name.replace(/_/g, ' ');
  if (!s.includes(' ')) s = s.replace(/\./g, ' ');
  return s.replace(/\s+/g, ' ').trim();
}

/** Cut at the first release tag (never the first word: `4K` alone is a title). */
function cutAtTags(s: string): { head: string; tags: string } {
  const words = s.split(' ');
  for (let i = 1; i < words.length; i++) {
    if (isTag(words[i])) return { head: words.slice(0, i).join(' '), tags: words.slice(i).join(' ') };
  }
  return { head: s, tags: '' };
}

const tidy = (s: string): string => s.replace(/[\s\-–—:,;]+$/, '').replace(/^[\s\-–—:,;]+/, '').replace(/\s+/g, ' ').trim();

const YEAR_IN_BRACKETS = /^(.*?)\s*[([]((?:18|19|20)\d{2})[)\]]\s*(.*)$/;
const BARE_YEAR = /(?:^|\s)((?:18|19|20)\d{2})(?=\s|$)/g;

/** What follows the year: ` - Director's Cut` or `[1080p]` is a version label; release tags give their resolution. */
function labelOf(rest: string): string | null {
  const r = rest.trim();
  if (!r) return null;
  const dash = /^[-–—]\s*(.+)$/.exec(r);
  if (dash) return tidy(dash[1].replace(/^\[(.*)\]$/, '$1')) || null;
  const bracket = /^\[([^\]]+)\]/.exec(r);
  if (bracket) return tidy(bracket[1]) || null;
  return null;
}

/** Title, year and version label of a movie-like name (a file's base name or a folder's name). */
export function parseTitle(raw: string): MovieName {
  const s = spaced(stripExtension(raw));
  const bracketed = YEAR_IN_BRACKETS.exec(s);
  if (bracketed && tidy(bracketed[1])) {
    return { title: tidy(bracketed[1]), year: Number(bracketed[2]), label: labelOf(bracketed[3]) ?? resolutionLabel(bracketed[3]) };
  }
  const { head, tags } = cutAtTags(s);
  // The last bare year that is not the first word: `2001 A Space Odyssey 1968`, `1917 2019`.
  let year: { at: number; end: number; value: number } | undefined;
  for (const m of head.matchAll(BARE_YEAR)) {
    const at = m.index! + m[0].indexOf(m[1]);
    if (at > 0) year = { at, end: at + 4, value: Number(m[1]) };
  }
  if (year) {
    const title = tidy(head.slice(0, year.at));
    if (title) return { title, year: year.value, label: labelOf(head.slice(year.end)) ?? resolutionLabel(tags) };
  }
  return { title: tidy(head) || tidy(s) || raw, year: null, label: resolutionLabel(tags) };
}

/** Dotted release names carry their version in tags: `1080p` tells two copies apart. */
function resolutionLabel(tags: string): string | null {
  const m = RESOLUTION.exec(tags);
  return m ? m[1].toLowerCase() : null;
}

/**
 * A movie from its path relative to the library folder. The folder a file sits
 * in names the movie when it reads `Title (Year)` (so `Title (2010)/movie.mkv`
 * and `Title (2010)/Title - 1080p.mkv` are both that movie); otherwise the
 * file's own name does.
 */
export function parseMovie(relPath: string): MovieName {
  const parts = relPath.split(/[\\/]/).filter(Boolean);
  const file = parts[parts.length - 1];
  const own = parseTitle(file);
  if (parts.length < 2) return own;
  const folder = parseTitle(parts[parts.length - 2]);
  // `Title (2010)/Title - Director's Cut.mkv`, `Heat/Heat - 1080p.mkv`: the label follows the folder's title.
  const base = spaced(stripExtension(file));
  const dash = base.search(/\s[-–—]\s/);
  const dashLabel = dash > 0 && foldTitle(base.slice(0, dash)) === foldTitle(folder.title) ? labelOf(base.slice(dash + 1)) : null;
  if (folder.year === null) {
    // A folder without a year may be a genre or a collection: it names the movie only when the file repeats it.
    return own.year === null && dashLabel !== null ? { title: folder.title, year: null, label: dashLabel } : own;
  }
  if (own.year !== null && (own.year !== folder.year || foldTitle(own.title) !== foldTitle(folder.title))) return own;
  const label = (own.year !== null ? own.label : null) ?? dashLabel ?? own.label;
  return { title: folder.title, year: folder.year, label };
}

// S01E02, s1e2, S01.E02, S01E01-E02, S01E01E02 / 1x02, 01x02-03.
const SXXEYY = /(?:^|[^a-z0-9])s(\d{1,3})[\s._-]*e(\d{1,4})(?:(?:[\s._-]*-?[\s._-]*e|-)(\d{1,4}))?(?=$|[^0-9])/i;
const NXMM = /(?:^|[^a-z0-9])(\d{1,2})x(\d{2,3})(?:-(?:\d{1,2}x)?(\d{2,3}))?(?=$|[^0-9a-z])/i;
const SEASON_FOLDER = /^(?:season|series|staffel|saison|temporada|stagione)[\s._-]*(\d{1,4})$|^s(\d{1,3})$/i;
const SPECIALS_FOLDER = /^specials?$/i;
// In a season folder, a file named by its episode only: `E05`, `Ep 5`, `Episode 05 - Title`, `05 - Title`.
const EPISODE_ONLY = /^(?:(?:.*?[\s._-])?(?:e|ep|episode)[\s._-]*(\d{1,4})|(\d{1,3}))(?=$|[^0-9])/i;

/** The season of a folder named `Season 01` / `S01` / `Specials`, else null. */
export function seasonOfFolder(name: string): number | null {
  if (SPECIALS_FOLDER.test(name.trim())) return 0;
  const m = SEASON_FOLDER.exec(name.trim());
  return m ? Number(m[1] ?? m[2]) : null;
}

/**
 * An episode from its path relative to the library folder, or null when the
 * name says no season/episode. The show is the folder above `Season NN`, else
 * the folder the file is in, else the file name before the marker.
 */
export function parseEpisode(relPath: string): EpisodeName | null {
  const parts = relPath.split(/[\\/]/).filter(Boolean);
  const file = parts[parts.length - 1];
  const base = stripExtension(file);
  const parent = parts.length >= 2 ? parts[parts.length - 2] : null;
  const folderSeason = parent === null ? null : seasonOfFolder(parent);

  let season: number;
  let episode: number;
  let lastEpisode: number | null = null;
  let before: string;
  let after: string;
  const m = SXXEYY.exec(base) ?? NXMM.exec(base);
  if (m) {
    season = Number(m[1]);
    episode = Number(m[2]);
    if (m[3] !== undefined && Number(m[3]) > episode) lastEpisode = Number(m[3]);
    const start = m.index + (/^[a-z0-9]/i.test(m[0]) ? 0 : 1);
    before = base.slice(0, start);
    after = base.slice(m.index + m[0].length);
  } else {
    const e = folderSeason === null ? null : EPISODE_ONLY.exec(spaced(base));
    if (!e) return null;
    season = folderSeason!;
    episode = Number(e[1] ?? e[2]);
    before = '';
    after = spaced(base).slice(e[0].length);
  }

  let showFolder: string | null = null;
  if (folderSeason !== null) showFolder = parts.length >= 3 ? parts[parts.length - 3] : null;
  else if (parent !== null && !isExtrasFolder(parent)) showFolder = parent;
  const fromFolder = showFolder === null ? null : parseTitle(showFolder);
  const fromFile = parseTitle(spaced(before));
  const show = fromFolder ?? (tidy(spaced(before)) ? fromFile : null);
  if (!show) return null;

  const rest = spaced(after.replace(/^[\s._-]+/, ''));
  const { head, tags } = cutAtTags(rest);
  const bracket = /\[([^\]]+)\]/.exec(head);
  const title = tidy(head.replace(/\[[^\]]*\]/g, '')) || null;
  return {
    show: show.title, showYear: show.year, season, episode, lastEpisode,
    title: title && !isTag(title) ? title : null,
    label: (bracket ? tidy(bracket[1]) : null) || resolutionLabel(tags) || resolutionLabel(head),
  };
}

/**
 * Folded for matching and ids: case, accents, punctuation and `&`/`and` do not
 * tell two titles apart (`Amélie` = `Amelie`, `Law & Order` = `Law and Order`).
 */
export function foldTitle(title: string): string {
  return title.normalize('NFKD').replace(/[\u0300-\u036f]/g, '').toLowerCase()
    .replace(/&/g, ' and ').replace(/['’`]/g, '').replace(/[^\p{L}\p{N}]+/gu, ' ').trim();
}

/** For ordering: folded, a leading article dropped (`The Matrix` sorts under M). */
export function sortTitle(title: string): string {
  return foldTitle(title).replace(/^(?:the|a|an) (?=.)/, '');
}
