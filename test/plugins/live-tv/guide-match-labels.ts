/**
 * Hand labels for the guide matching measured on real data: every channel of the Greece,
 * France, Germany and UK groups of shared/realdata's Free-TV playlist, against the channels
 * of four real guides (chrisliatas' Greek guide, nice-shot's French kazer.org guide and EU
 * listings, jellyfin's UK guide). Each playlist name maps to the guide channel ids that are
 * the same channel (an HD/SD twin of the guide counts too), or to [] when no guide has it.
 * Judged by the names, the tvg-ids and what is known of the channels (D17 became CStar, NT1
 * became TFX, OPEN Beyond is Open TV, "KPHTH" is Crete in Greek capitals). Left out as
 * undecidable: ERT Sports 1-4 (the guide has one "ErtSportsHD"), "Euro" and "Epsilon".
 */
import { readFile } from 'node:fs/promises';
import { GuideMatcher, type GuideEntry } from '../../../plugins/live-tv/guide-match.js';
import { parseM3u } from '../../../plugins/m3u-tuner/m3u-parser.js';
import { parseXmltv } from '../../../plugins/xmltv-guide/xmltv-parser.js';
import { realM3u, realXmltv } from '../../helpers/realdata.js';

export const GUIDES = ['chrisliatas--xmltv_GREECE_el.xml', 'nice-shot--tvguide.xml', 'jellyfin--UK_Data.xml', 'nice-shot--eu_listings.xml'];
export const GROUPS = ['Greece', 'France', 'Germany', 'UK'];
export const UNDECIDED = new Set(['ERT Sports 1', 'ERT Sports 2', 'ERT Sports 3', 'ERT Sports 4', 'Euro', 'Epsilon']);

/** Playlist channel name → guide channel ids; names not listed here have no guide channel. */
export const LABELS: Record<string, string[]> = {
  // Greece
  'ERT 1 Ⓖ': ['1'], 'ERT 2 Ⓖ': ['2'], 'ERT 3 Ⓖ': ['3'], 'Vouli TV': ['5'], 'ANT1': ['21', '106'], 'Star': ['25', '110'],
  'AlphaTV': ['20', '105'], 'Skai TV': ['24', '109'], 'Open TV': ['22', '107'], 'Action24': ['75'], 'Alert': ['86'], 'ART': ['73'],
  'Blue Sky': ['77'], 'High TV': ['80'], 'Kontra': ['81'], 'Mad Ⓨ': ['82'], '4E': ['27'], 'DION': ['34'], 'Gnomi': ['37'],
  'TV 100': ['36'], 'Vergina': ['29'], 'Best TV': ['53'], 'Hlektra': ['54'], 'Ionian Channel': ['55'], 'Lepanto': ['56'],
  'Lychnos': ['57'], 'Mesogeios TV': ['58'], 'Astra': ['65'], 'Thessalia': ['66'], 'TRT': ['67'], 'ART TV': ['43'],
  'Corfu': ['46'], 'Epirus TV 1': ['47'], 'Start': ['49'], 'Center TV': ['7'], 'Delta Evros': ['8'], 'Thraki Net TV': ['16'],
  'Creta': ['88'], 'Kriti 1': ['90'], 'Kriti TV': ['89'], 'NEA': ['91'], 'Samiaki TV': ['98'], 'Syros TV1': ['100'],
  // France
  'Arte Ⓖ': ['ART1.kazer.org'], 'TF1': ['TF11.kazer.org'], 'France 3': ['FRA3.kazer.org'], 'France 4': ['FRA4.kazer.org'],
  'France 5': ['FRA5.kazer.org'], 'TMC': ['TMC1.kazer.org'], 'M6': ['M61.kazer.org'], 'W9': ['W91.kazer.org'],
  'CStar': ['EUR2.kazer.org'], 'TFX': ['NT11.kazer.org'],
  // Germany
  '3sat Ⓖ': ['3sat.de'], 'ARTE Ⓖ': ['ART1.kazer.org'],
  // UK
  'BBC One Ⓖ': ['UK_RT_2667'], 'BBC Two Ⓖ': ['UK_RT_105'], 'ITV 1': ['UK_RT_2118'], 'Channel 5 Ⓢ': ['UK_RT_134'],
};

export interface RealDataResult {
  labelled: number; withGuide: number; matched: number; right: number;
  /** Matches that are not the labelled guide channel. */
  wrong: string[];
  byMethod: Record<string, number>;
  precision: number; recall: number;
}

/** Matches the labelled channels against the four guides, and counts how well (test and bench). */
export async function matchRealData(): Promise<RealDataResult> {
  const entries: GuideEntry[] = [];
  for (const file of GUIDES) {
    const seen = new Map<string, string[]>();
    await parseXmltv((async function* () { yield await readFile(realXmltv(file)); })(), {
      channel: (c) => { if (!seen.has(c.id)) seen.set(c.id, [...c.displayNames]); }, programmes: async () => {}, warning: () => {}, progress: () => {},
    }, { maxAgeMs: 1e15 });
    for (const [guideId, names] of seen) entries.push({ sourceId: file, guideId, names });
  }
  const m = new GuideMatcher(entries);
  const r: RealDataResult = { labelled: 0, withGuide: 0, matched: 0, right: 0, wrong: [], byMethod: {}, precision: 0, recall: 0 };
  for (const e of parseM3u(await readFile(realM3u('Free-TV--playlist.m3u8'))).entries) {
    if (!e.groups.some((g) => GROUPS.includes(g)) || UNDECIDED.has(e.name)) continue;
    r.labelled++;
    const truth = LABELS[e.name] ?? [];
    if (truth.length) r.withGuide++;
    const found = m.match({ name: e.name, tvgId: e.tvgId ?? null, tvgName: e.tvgName ?? null });
    if (!found) continue;
    r.matched++;
    r.byMethod[found.method] = (r.byMethod[found.method] ?? 0) + 1;
    if (truth.includes(found.ref.guideId)) r.right++;
    else r.wrong.push(`${e.name} → ${found.ref.guideId} (${found.method})`);
  }
  r.precision = r.right / r.matched;
  r.recall = r.right / r.withGuide;
  return r;
}
