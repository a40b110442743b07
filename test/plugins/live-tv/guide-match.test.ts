/**
 * Guide matching (guide-match.ts): each step on hand-made hard cases (diacritics, HD/SD
 * twins, +1 channels, country prefixes, near names), and precision and recall on real
 * playlists and guides against hand labels (guide-match-labels.ts).
 */
import t from 'tap';
import { GuideMatcher, normaliseName, type GuideEntry } from '../../../plugins/live-tv/guide-match.js';
import { matchRealData } from './guide-match-labels.js';

const guide = (...channels: [string, ...string[]][]): GuideEntry[] => channels.map(([guideId, ...names]) => ({ sourceId: 'g', guideId, names }));
const ch = (name: string, tvgId: string | null = null, tvgName: string | null = null) => ({ name, tvgId, tvgName });

t.test('names normalised: diacritics, case, punctuation, quality and region tags; timeshift kept', async (t) => {
  const cases: [string, string][] = [
    ['Télé-Québec', 'tele quebec'], ['US: CNN HD', 'cnn'], ['UK | BBC One FHD', 'bbc 1'], ['|FR| TF1', 'tf1'], ['CNN [US]', 'cnn'],
    ['Sky Sports (UK) 4K', 'sky sports'], ['BBC One +1', 'bbc 1 plus1'], ['ITV (+1)', 'itv plus1'], ['Film4 +24h', 'film4 plus24'],
    ['Arte Ⓖ', 'arte'], ['AT&T SportsNet', 'at and t sportsnet'], ['ZDF ᴴᴰ', 'zdf'], ['Das Erste (SD)', 'das erste'], ['  ', ''],
  ];
  for (const [name, normalised] of cases) t.equal(normaliseName(name), normalised, name);
});

t.test('each step, in order', async (t) => {
  const m = new GuideMatcher(guide(
    ['bbc1.uk', 'BBC One'], ['BBCOneHD.uk', 'BBC One HD'], ['bbc1plus1.uk', 'BBC One +1'], ['tf1.fr', 'TF1'], ['tele.ca', 'Télé Québec'],
    ['cn.us', 'Cartoon Network'], ['ch4.uk', 'Channel 4'], ['ngw1', 'Nat Geo Wild'], ['ngw2', 'Nat Geo Wilds'], ['skai', 'SKAI'], ['skaihd', 'SKAI HD'],
  ));
  const method = (c: ReturnType<typeof ch>) => { const r = m.match(c); return r && [r.ref.guideId, r.method, r.score]; };
  t.same(method(ch('Anything', 'tf1.fr')), ['tf1.fr', 'tvg_id', 1], 'the exact tvg-id first, whatever the name');
  t.same(method(ch('BBC One', 'BBC1.UK ')), ['bbc1.uk', 'tvg_id_folded', 1], 'then the tvg-id ignoring case and spacing');
  t.same(method(ch('Tele-Quebec', 'nope')), ['tele.ca', 'name', 1], 'then normalised names: diacritics and punctuation');
  t.same(method(ch('UK: BBC One SD')), ['bbc1.uk', 'name', 1], 'region prefix and quality stripped; the first twin of the guide');
  t.same(method(ch('x', null, 'BBC ONE')), ['bbc1.uk', 'name', 1], 'the tvg-name counts too');
  t.same(method(ch('BBC One +1')), ['bbc1plus1.uk', 'name', 1], '+1 goes to the +1 channel');
  t.same(method(ch('BBC One+1 HD')), ['bbc1plus1.uk', 'name', 1]);
  t.equal(method(ch('TF1 +1')), undefined, 'and never to the original when the guide has no +1 channel');
  const fuzzy = m.match(ch('Cartoon Netwrk'))!;
  t.match(fuzzy, { ref: { guideId: 'cn.us' }, method: 'fuzzy' }, 'a typo: fuzzy');
  t.ok(fuzzy.score >= 0.75 && fuzzy.score < 1, `with its score (${fuzzy.score})`);
  t.equal(method(ch('Channel 5')), undefined, 'a fuzzy match never crosses a number');
  t.equal(method(ch('Nat Geo Wyld')), undefined, 'nor is taken without a margin over the runner-up');
  t.same(method(ch('Skai TV')), ['skai', 'fuzzy', 1], 'HD/SD twins of the guide are not each other\'s runner-up; generic words weigh nothing');
  t.equal(method(ch('Totally Different')), undefined);
  t.same(m.candidates(ch('Nat Geo Wyld')).map((c) => c.ref.guideId).slice(0, 2).sort(), ['ngw1', 'ngw2'], 'candidates: the closest first');
  t.ok(m.candidates(ch('BBC')).length <= 5, 'five at most');
  const cands = m.candidates(ch('BBC One +1'), 5);
  t.same(cands.map((c) => c.score), [...cands.map((c) => c.score)].sort((a, b) => b - a), 'best first');
  t.equal(cands[0].name, 'BBC One +1', 'with the guide name that scored');
});

t.test('the first guide source wins a tie', async (t) => {
  const m = new GuideMatcher([{ sourceId: 'a', guideId: 'x', names: ['News'] }, { sourceId: 'b', guideId: 'x', names: ['News'] }, { sourceId: 'b', guideId: 'y', names: ['Sport'] }]);
  t.match(m.match(ch('News', 'x')), { ref: { sourceId: 'a', guideId: 'x' } });
  t.match(m.match(ch('News')), { ref: { sourceId: 'a' } });
  t.match(m.match(ch('Sport')), { ref: { sourceId: 'b', guideId: 'y' } });
});

t.test('precision and recall on real playlists and guides (hand-labelled)', async (t) => {
  const r = await matchRealData();
  t.comment(`${r.labelled} channels labelled, ${r.withGuide} with a guide channel: ${r.matched} matched, ${r.right} rightly; precision ${r.precision.toFixed(3)}, recall ${r.recall.toFixed(3)}`);
  t.ok(r.labelled >= 180, `the sample is the four groups (${r.labelled})`);
  t.same(r.wrong, [], 'no wrong match');
  t.ok(r.recall >= 0.8, `recall ${r.recall.toFixed(3)} at least 0.8`);
});
