/**
 * naming.ts: what a path says a file is (movie title/year/label, episode
 * show/season/episode), and the folding that makes item ids stable.
 */
import t from 'tap';
import {
  foldTitle, isExtraFile, isExtrasFolder, isMediaFile, parseEpisode, parseMovie, parseTitle, seasonOfFolder, sortTitle,
} from '../../../plugins/vod/naming.js';

t.test('movies: folder, loose, dotted release names, no year', async (t) => {
  const cases: [string, string, number | null, string | null][] = [
    ['The Matrix (1999)/The Matrix (1999).mkv', 'The Matrix', 1999, null],
    ['The Matrix (1999).mkv', 'The Matrix', 1999, null],
    ['Alien.1979.1080p.BluRay.x264-GRP.mkv', 'Alien', 1979, '1080p'],
    ['The.Dark.Knight.2008.720p.WEB-DL.DD5.1.H264.mp4', 'The Dark Knight', 2008, '720p'],
    ['Blade.Runner.2049.2017.2160p.UHD.BluRay.x265.mkv', 'Blade Runner 2049', 2017, '2160p'],
    ['2001.A.Space.Odyssey.1968.mkv', '2001 A Space Odyssey', 1968, null],
    ['1917.2019.mkv', '1917', 2019, null],
    ['1917.mkv', '1917', null, null],
    ['Nope.mp4', 'Nope', null, null],
    ['Some_Home_Movie.avi', 'Some Home Movie', null, null],
    ['Mr. Smith Goes to Washington (1939).mkv', 'Mr. Smith Goes to Washington', 1939, null],
    ['Amélie (2001) [1080p].mkv', 'Amélie', 2001, '1080p'],
    ['Charlotte\'s.Web.1973.mkv', 'Charlotte\'s Web', 1973, null],
    ['Heat 1995.mkv', 'Heat', 1995, null],
    ['Unknown.Movie.720p.x264.mkv', 'Unknown Movie', null, '720p'],
    ['Action/Heat (1995).mkv', 'Heat', 1995, null], // a genre folder is not a title
    ['Heat (1995)/heat.mkv', 'Heat', 1995, null], // the folder names the movie
    ['Heat (1995)/Heat.1995.1080p.BluRay.mkv', 'Heat', 1995, '1080p'],
    ['Heat (1995) 1080p BluRay.mkv', 'Heat', 1995, '1080p'],
  ];
  for (const [rel, title, year, label] of cases) {
    t.same(parseMovie(rel), { title, year, label }, rel);
  }
});

t.test('movies: versions are labelled after " - "', async (t) => {
  t.same(parseMovie('Heat (1995)/Heat (1995) - 1080p.mkv'), { title: 'Heat', year: 1995, label: '1080p' });
  t.same(parseMovie('Heat (1995) - Director\'s Cut.mkv'), { title: 'Heat', year: 1995, label: 'Director\'s Cut' });
  t.same(parseMovie('Heat (1995)/Heat - Extended Edition.mkv'), { title: 'Heat', year: 1995, label: 'Extended Edition' });
  t.same(parseMovie('Heat (1995) - [4K HDR].mkv'), { title: 'Heat', year: 1995, label: '4K HDR' });
  t.same(parseMovie('Heat/Heat - 1080p.mkv'), { title: 'Heat', year: null, label: '1080p' }, 'a yearless movie folder');
  t.same(parseMovie('Heat/Heat - Director\'s Cut.mkv'), { title: 'Heat', year: null, label: 'Director\'s Cut' });
  t.same(parseMovie('Action/Heat - Director\'s Cut.mkv'), { title: 'Heat - Director\'s Cut', year: null, label: null }, 'a folder the file does not repeat names nothing');
  t.same(parseMovie('Heat - 1080p.mkv'), { title: 'Heat', year: null, label: '1080p' }, 'a release tag is never part of a title');
  // Without a year, " - " is part of the title: no label invented.
  t.same(parseMovie('Mission - Impossible.mkv'), { title: 'Mission - Impossible', year: null, label: null });
  // A different movie in another movie's folder keeps its own name.
  t.same(parseMovie('Heat (1995)/Ronin (1998).mkv'), { title: 'Ronin', year: 1998, label: null });
  // The same key for every spelling of one movie: folding ignores case, accents, dots.
  const keys = ['The Matrix (1999).mkv', 'the.matrix.1999.720p.mkv', 'The Matrix (1999)/The Matrix (1999) - 4K.mkv']
    .map((p) => { const m = parseMovie(p); return `${foldTitle(m.title)}|${m.year}`; });
  t.same(new Set(keys).size, 1, keys.join(' / '));
});

t.test('episodes: season folders, markers anywhere, specials, loose files', async (t) => {
  const cases: [string, Partial<ReturnType<typeof parseEpisode>>][] = [
    ['Show/Season 01/Show - S01E02.mkv', { show: 'Show', season: 1, episode: 2, title: null }],
    ['Show/Season 1/s1e2.mkv', { show: 'Show', season: 1, episode: 2 }],
    ['Show/Season 03/Show 3x07 - The Title.mkv', { show: 'Show', season: 3, episode: 7, title: 'The Title' }],
    ['Show/Specials/Show - S00E01.mkv', { show: 'Show', season: 0, episode: 1 }],
    ['Show/Specials/Making of E03.mkv', { show: 'Show', season: 0, episode: 3 }],
    ['Show/Season 02/Episode 5.mkv', { show: 'Show', season: 2, episode: 5 }],
    ['Show/Season 02/05 - Pilot.mkv', { show: 'Show', season: 2, episode: 5, title: 'Pilot' }],
    ['Doctor Who (2005)/Season 01/Doctor Who - S01E01 - Rose.mkv', { show: 'Doctor Who', showYear: 2005, season: 1, episode: 1, title: 'Rose' }],
    ['The.Office.US.S02E03.720p.HDTV.x264.mkv', { show: 'The Office US', season: 2, episode: 3, title: null, label: '720p' }],
    ['Some Show - S01E01-E02 - Double.mkv', { show: 'Some Show', season: 1, episode: 1, lastEpisode: 2, title: 'Double' }],
    ['Some Show/S01E01E02.mkv', { show: 'Some Show', season: 1, episode: 1, lastEpisode: 2 }],
    ['Some Show/some.show.s01.e04.mkv', { show: 'Some Show', season: 1, episode: 4 }],
    ['TV/Drama/Show/Season 01/Show - S01E02.mkv', { show: 'Show', season: 1, episode: 2 }],
    ['Show/Season 01/Show - S01E02 - Pilot [1080p].mkv', { show: 'Show', season: 1, episode: 2, title: 'Pilot', label: '1080p' }],
  ];
  for (const [rel, want] of cases) {
    const got = parseEpisode(rel);
    t.ok(got, rel);
    t.match(got, want, rel);
  }
  // No marker and no season folder: not an episode. A resolution is not a 1x02 marker.
  t.equal(parseEpisode('Show/Something.mkv'), null);
  t.equal(parseEpisode('Loose.Video.1920x1080.mkv'), null);
  // A loose file needs a show name before its marker.
  t.equal(parseEpisode('S01E02.mkv'), null);
  t.match(parseEpisode('Show/S01E02.mkv'), { show: 'Show', season: 1, episode: 2 });
});

t.test('folders and files that are not titles', async (t) => {
  t.equal(seasonOfFolder('Season 01'), 1);
  t.equal(seasonOfFolder('season.12'), 12);
  t.equal(seasonOfFolder('S3'), 3);
  t.equal(seasonOfFolder('Specials'), 0);
  t.equal(seasonOfFolder('Show'), null);
  t.ok(isExtrasFolder('Extras'));
  t.ok(isExtrasFolder('Featurettes'));
  t.notOk(isExtrasFolder('Season 01'));
  t.ok(isExtraFile('Heat (1995)-trailer.mkv'));
  t.ok(isExtraFile('sample.mkv'));
  t.ok(isExtraFile('Heat.1995.1080p.sample.mkv'));
  t.notOk(isExtraFile('The.Other.mkv'));
  for (const ext of ['mkv', 'mp4', 'm4v', 'mov', 'avi', 'webm', 'ts', 'm2ts', 'wmv', 'flv', 'mpg', 'mpeg', 'MKV']) t.ok(isMediaFile(`a.${ext}`), ext);
  for (const name of ['a.srt', 'a.nfo', 'a.jpg', 'mkv', '.mkv', 'a.mkv.part']) t.notOk(isMediaFile(name), name);
});

t.test('folding and sorting', async (t) => {
  t.equal(foldTitle('Amélie'), foldTitle('AMELIE'));
  t.equal(foldTitle('Law & Order'), foldTitle('Law and Order'));
  t.equal(foldTitle('Schindler’s List'), foldTitle("Schindler's List"));
  t.not(foldTitle('Heat'), foldTitle('Heath'));
  t.equal(sortTitle('The Matrix'), 'matrix');
  t.equal(sortTitle('A Quiet Place'), 'quiet place');
  t.equal(sortTitle('The'), 'the');
  t.same(parseTitle('Heat'), { title: 'Heat', year: null, label: null });
});
