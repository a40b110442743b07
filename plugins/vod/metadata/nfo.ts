/**
 * Kodi's NFO files (`movie.nfo`, `tvshow.nfo`, `season.nfo`, an episode's
 * `<file name>.nfo`): the XML Kodi, Jellyfin, Emby and tinyMediaManager write.
 * Pure: text in, ItemMetadata out. An NFO that is not XML (some hold only a
 * link to an online database) gives nothing; text after the root element
 * (Kodi allows a link there) is ignored. Picture links inside NFOs point at
 * online databases and are not followed: the local provider uses the images
 * beside the media.
 */
import { SaxesParser } from 'saxes';
import type { CastMember, ItemMetadata } from 'antenna/sdk';

/** An element with its text and children (NFOs are small: the whole tree is kept). */
interface Node {
  name: string;
  attributes: Record<string, string>;
  text: string;
  children: Node[];
}

export const NFO_ROOTS = ['movie', 'tvshow', 'season', 'episodedetails'] as const;
export type NfoRoot = (typeof NFO_ROOTS)[number];

const MAX_DEPTH = 8;
const MAX_NODES = 5_000;
const MAX_TEXT = 8_000;

function parseTree(xml: string): Node | undefined {
  const parser = new SaxesParser();
  const stack: Node[] = [];
  let root: Node | undefined;
  let nodes = 0;
  parser.on('opentag', (tag) => {
    const node: Node = { name: tag.name.toLowerCase(), attributes: tag.attributes as Record<string, string>, text: '', children: [] };
    // Past the limits an element is read and dropped, so the stack stays in step.
    if (root && stack.length === 0) { stack.push(node); return; }
    if (stack.length < MAX_DEPTH && ++nodes <= MAX_NODES) {
      if (stack.length) stack[stack.length - 1].children.push(node);
      else root = node;
    }
    stack.push(node);
  });
  const onText = (text: string) => {
    const node = stack[stack.length - 1];
    if (node && node.text.length < MAX_TEXT) node.text += text;
  };
  parser.on('text', onText);
  parser.on('cdata', onText);
  parser.on('closetag', () => { stack.pop(); });
  // Not well-formed (an HTML entity, a link after the root, which Kodi allows): read on, keep what is there.
  parser.on('error', () => {});
  try {
    parser.write(xml.replace(/^\uFEFF/, '')).close();
  } catch {
    return undefined;
  }
  return root;
}

const clean = (text: string | undefined): string | undefined => {
  const t = text?.replace(/\r\n?/g, '\n').trim();
  return t ? t.slice(0, MAX_TEXT) : undefined;
};

const child = (node: Node, name: string) => node.children.find((c) => c.name === name);
const texts = (node: Node, name: string) => [...new Set(node.children.filter((c) => c.name === name).map((c) => clean(c.text)).filter((t): t is string => !!t))];

function number(text: string | undefined): number | undefined {
  const n = Number(text?.trim().replace(',', '.'));
  return text?.trim() && Number.isFinite(n) ? n : undefined;
}

/** `<rating>7.5</rating>`, or `<ratings><rating default="true"><value>7.5</value>` (the default one, else the first); 0-10. */
function rating(root: Node): number | undefined {
  const ratings = child(root, 'ratings')?.children.filter((c) => c.name === 'rating') ?? [];
  const chosen = ratings.find((r) => r.attributes.default === 'true') ?? ratings[0];
  const max = number(chosen?.attributes.max) ?? 10;
  const value = chosen ? number(child(chosen, 'value')?.text) : number(child(root, 'rating')?.text);
  if (value === undefined || value <= 0 || max <= 0) return undefined;
  return Math.round(Math.min(10, (value * 10) / max) * 10) / 10;
}

/** `Action / Comedy` in one <genre> is two genres, as Kodi reads it. */
function genres(root: Node): string[] | undefined {
  const list = [...new Set(texts(root, 'genre').flatMap((g) => g.split(/\s*[/|;]\s*/)).map((g) => g.trim()).filter(Boolean))];
  return list.length ? list.slice(0, 20) : undefined;
}

function cast(root: Node): CastMember[] | undefined {
  const actors = root.children.filter((c) => c.name === 'actor').map((a, i) => ({
    name: clean(child(a, 'name')?.text), role: clean(child(a, 'role')?.text), order: number(child(a, 'order')?.text) ?? 1000 + i,
  })).filter((a): a is { name: string; role: string | undefined; order: number } => !!a.name);
  if (!actors.length) return undefined;
  return actors.sort((a, b) => a.order - b.order).slice(0, 50).map((a) => (a.role ? { name: a.name, role: a.role } : { name: a.name }));
}

/** YYYY-MM-DD from `premiered` or `aired`; a year alone is kept as the year. */
function date(root: Node): string | undefined {
  const value = clean(child(root, 'premiered')?.text) ?? clean(child(root, 'aired')?.text) ?? clean(child(root, 'releasedate')?.text);
  return value && /^\d{4}-\d{2}-\d{2}/.test(value) ? value.slice(0, 10) : undefined;
}

/** What an NFO says, or undefined when it is not an NFO of this kind (or not XML at all). */
export function parseNfo(text: string, expected: NfoRoot): ItemMetadata | undefined {
  const root = parseTree(text);
  if (!root || root.name !== expected) return undefined;
  const get = (name: string) => clean(child(root, name)?.text);
  const out: ItemMetadata = {};
  const title = get('title');
  if (title) out.title = title;
  const original = get('originaltitle');
  if (original && original !== title) out.originalTitle = original;
  const sortTitle = get('sorttitle');
  if (sortTitle) out.sortTitle = sortTitle;
  const premiered = date(root);
  const year = number(get('year')) ?? (premiered ? Number(premiered.slice(0, 4)) : undefined);
  if (year && year >= 1800 && year <= 2200) out.year = Math.trunc(year);
  const plot = get('plot') ?? get('outline');
  if (plot) out.plot = plot;
  const tagline = get('tagline');
  if (tagline) out.tagline = tagline;
  const g = genres(root);
  if (g) out.genres = g;
  const c = cast(root);
  if (c) out.cast = c;
  const directors = texts(root, 'director');
  if (directors.length) out.directors = directors.slice(0, 20);
  const studios = texts(root, 'studio');
  if (studios.length) out.studios = studios.slice(0, 20);
  const r = rating(root);
  if (r !== undefined) out.rating = r;
  const mpaa = get('mpaa') ?? get('certification');
  if (mpaa) out.contentRating = mpaa.replace(/^Rated\s+/i, '');
  // Kodi writes minutes.
  const runtime = number(get('runtime'));
  if (runtime && runtime > 0) out.runtime = Math.round(runtime * 60);
  if (premiered) out.premiered = premiered;
  return out;
}
