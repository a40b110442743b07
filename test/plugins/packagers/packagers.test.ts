/**
 * The HLS and DASH packagers on presentations written by hand (live with two
 * periods, a complete one, audio only), checked by the manifest validator,
 * and the validator itself on manifests that break a rule players rely on.
 */
import t from 'tap';
import type { Presentation, PresentationRepresentation } from '../../../sdk/index.js';
import { hlsPackager } from '../../../plugins/hls-packager/index.js';
import { dashPackager } from '../../../plugins/dash-packager/index.js';
import { checkHlsMaster, checkHlsMedia, checkMpd, checkMpdSchema, PlaylistHistory } from '../../helpers/manifest-validator.js';

const AST = Date.UTC(2026, 0, 1, 12, 0, 0);

/** n segments of `seconds` each from media time t0 (seconds), numbered from `first`. */
function rep(kind: 'video' | 'audio', run: number, first: number, n: number, t0: number, bandwidth: number, seconds = 2): PresentationRepresentation {
  const timescale = kind === 'video' ? 12800 : 48000;
  return {
    id: kind, kind, codecs: kind === 'video' ? 'avc1.64001f' : 'mp4a.40.2', bandwidth, timescale,
    ...(kind === 'video' ? { width: 1280, height: 720, frameRate: '25/1' } : { sampleRate: 48000, channels: 2 }),
    init: `/s/${run}/init-${kind}.mp4?key=k&x=1`, media: `/s/${run}/${kind}-$Number%05d$.m4s?key=k&x=1`,
    segments: Array.from({ length: n }, (_, i) => ({ number: first + i, start: Math.round((t0 + i * seconds) * timescale), duration: seconds * timescale })),
  };
}

const live: Presentation = {
  type: 'live', targetDuration: 2, availabilityStart: AST, now: AST + 60_000, windowSeconds: 30, mediaSequence: 5,
  periods: [
    { id: '2', sequence: 3, start: 20, mediaStart: 10, representations: [rep('video', 2, 5, 3, 10, 900_000), rep('audio', 2, 5, 3, 10, 140_000)] },
    { id: '3', sequence: 4, start: 30, mediaStart: 0, representations: [rep('video', 3, 8, 2, 0, 1_100_000), rep('audio', 3, 8, 2, 0, 130_000)] },
  ],
};

t.test('HLS: live master and media playlists over two periods', async (t) => {
  const master = hlsPackager.master(live, (id) => `/p/${id}.m3u8`);
  const m = checkHlsMaster(master);
  t.strictSame(m.problems, [], 'the validator finds nothing wrong with the master');
  t.match(m.variants[0], { bandwidth: 1_100_000 + 140_000, codecs: 'avc1.64001f,mp4a.40.2', resolution: '1280x720', frameRate: '25.000', uri: '/p/video.m3u8' }, 'BANDWIDTH: the highest of each rendition over the periods');
  t.match(m.renditions[0], { type: 'AUDIO', channels: '2', uri: '/p/audio.m3u8' });
  const media = hlsPackager.media(live, 'video');
  const checked = checkHlsMedia(media);
  t.strictSame(checked.problems, [], 'the validator finds nothing wrong with the media playlist');
  t.match(checked.playlist, { targetDuration: 2, mediaSequence: 5, discontinuitySequence: 3, endlist: false, playlistType: undefined });
  t.strictSame(checked.playlist!.segments.map((s) => [s.uri, s.discontinuity]), [
    ['/s/2/video-00005.m4s?key=k&x=1', false], ['/s/2/video-00006.m4s?key=k&x=1', false], ['/s/2/video-00007.m4s?key=k&x=1', false],
    ['/s/3/video-00008.m4s?key=k&x=1', true], ['/s/3/video-00009.m4s?key=k&x=1', false],
  ], 'numbers in the template, a discontinuity where the second period starts');
  t.strictSame([...new Set(checked.playlist!.segments.map((s) => s.map))], ['/s/2/init-video.mp4?key=k&x=1', '/s/3/init-video.mp4?key=k&x=1'], 'each period its init segment');
  t.strictSame([...media.matchAll(/#EXT-X-PROGRAM-DATE-TIME:(.*)/g)].map((x) => x[1]), ['2026-01-01T12:00:20.000Z', '2026-01-01T12:00:30.000Z'], "a date on each period's first segment");
  const radio: Presentation = { ...live, periods: live.periods.map((p) => ({ ...p, representations: p.representations.filter((r) => r.kind === 'audio') })) };
  const r = checkHlsMaster(hlsPackager.master(radio, (id) => `/p/${id}.m3u8`));
  t.strictSame(r.variants.map((v) => [v.uri, v.codecs]), [['/p/audio.m3u8', 'mp4a.40.2']], 'audio only: the audio playlist is the variant');
});

t.test('DASH: a dynamic MPD with two Periods; a static one once complete', async (t) => {
  const text = dashPackager.mpd(live);
  const checked = checkMpd(text);
  t.strictSame(checked.problems, [], 'the validator finds nothing wrong');
  const schema = await checkMpdSchema(text);
  for (const note of schema.notes) t.comment(note);
  t.strictSame(schema.problems, [], 'nor the schema, when it is at hand');
  t.match(text, /availabilityStartTime="2026-01-01T12:00:00\.000Z" publishTime="2026-01-01T12:01:00\.000Z" minimumUpdatePeriod="PT2\.000S" suggestedPresentationDelay="PT5\.000S" timeShiftBufferDepth="PT30\.000S"/);
  t.match(text, /<Period id="2" start="PT20\.000S" duration="PT10\.000S">/, 'a Period ends where the next begins');
  t.match(text, /<Period id="3" start="PT30\.000S">/, 'the last one is open');
  t.match(text, /timescale="12800" presentationTimeOffset="128000"/, 'presentationTimeOffset: the media time the Period starts at');
  t.match(text, /<S t="128000" d="25600" r="2"\/>/, 'equal back-to-back segments folded into r');
  t.match(text, /media="\/s\/2\/video-\$Number%05d\$\.m4s\?key=k&amp;x=1"/, 'URLs escaped for XML');
  t.match(text, /<UTCTiming schemeIdUri="urn:mpeg:dash:utc:direct:2014" value="2026-01-01T12:01:00\.000Z"\/>/);
  const vod = dashPackager.mpd({ type: 'vod', targetDuration: 2, periods: [{ ...live.periods[0], start: 0 }, { ...live.periods[1], start: 6 }] });
  t.strictSame(checkMpd(vod).problems, []);
  t.match(vod, /type="static" mediaPresentationDuration="PT10\.000S"/);
  t.notMatch(vod, /UTCTiming|availabilityStartTime/);
  const hlsVod = checkHlsMedia(hlsPackager.media({ type: 'vod', targetDuration: 2, periods: live.periods }, 'audio'));
  t.strictSame(hlsVod.problems, []);
  t.match(hlsVod.playlist, { playlistType: 'VOD', endlist: true, mediaSequence: 0 });
});

t.test('start over: EXT-X-START back to the time asked for, a DASH delay that reaches it, updates from Location', async (t) => {
  const at = (seconds: number) => ({ ...live, startAt: AST + seconds * 1000 });
  // The playlist covers 20–26 s and 30–34 s of presentation time.
  const start = (p: Presentation) => /#EXT-X-START:(.*)/.exec(hlsPackager.media(p, 'video'))?.[1];
  t.equal(start(at(22)), 'TIME-OFFSET=-12.000,PRECISE=YES', 'back from the end of the last segment to the time asked for');
  t.equal(start(at(5)), 'TIME-OFFSET=-14.000,PRECISE=YES', 'a time before the window: its start');
  t.equal(start(at(30)), undefined, 'within three target durations of the end: where players start anyway');
  t.equal(start(live), undefined, 'none without startAt');
  t.strictSame(checkHlsMedia(hlsPackager.media(at(22), 'audio')).problems, [], 'still a valid playlist');
  const mpd = dashPackager.mpd({ ...at(22), location: 'master.mpd?key=k&refresh=1' });
  t.match(mpd, /suggestedPresentationDelay="PT38\.000S"/, 'suggestedPresentationDelay: from publishTime back to the time asked for');
  t.match(mpd, /<MPD [^>]*>\n {2}<Location>master\.mpd\?key=k&amp;refresh=1<\/Location>\n {2}<Period /, 'Location before the Periods (the schema\'s order)');
  t.strictSame(checkMpd(mpd).problems, []);
  const schema = await checkMpdSchema(mpd);
  t.strictSame(schema.problems, [], 'schema, when at hand');
  t.match(dashPackager.mpd(live), /suggestedPresentationDelay="PT5\.000S"/, 'without startAt: three target durations less a second');
});

t.test('DASH: a first Period younger than the usual delay: the delay stays inside it (GStreamer starts there)', async (t) => {
  // Three segments that came in a burst: the Period starts 2.5 s before publishTime, not 6 s.
  const young: Presentation = { ...live, now: AST + 10_000, periods: [{ ...live.periods[1]!, start: 7.5 }] };
  const text = dashPackager.mpd(young);
  t.match(text, /suggestedPresentationDelay="PT2\.250S"/, 'what the Period holds, less a quarter second');
  t.strictSame(checkMpd(text).problems, [], 'the validator finds a Period suggestedPresentationDelay behind publishTime');
  const before = checkMpd(text.replace('suggestedPresentationDelay="PT2.250S"', 'suggestedPresentationDelay="PT5.000S"'));
  t.match(before.problems, [/publishTime − suggestedPresentationDelay is 5\.000 s into the presentation, before its first Period \(7\.500 s\)/], 'the usual 5 s would reach back before it');
});

t.test('the validator catches what players trip over', async (t) => {
  const media = (head: string[], body: string[]) => ['#EXTM3U', ...head, ...body].join('\n');
  const seg = (d: string, uri = 's.m4s') => [`#EXTINF:${d},`, uri];
  const base = ['#EXT-X-VERSION:6', '#EXT-X-TARGETDURATION:2', '#EXT-X-MAP:URI="i.mp4"'];
  t.strictSame(checkHlsMedia(media(base, [...seg('2.0'), ...seg('2.0'), ...seg('2.0')])).problems, [], 'a good one passes');
  t.match(checkHlsMedia(media(base, [...seg('2.0'), ...seg('2.6'), ...seg('2.0')])).problems, [/rounded above EXT-X-TARGETDURATION 2/]);
  t.match(checkHlsMedia(media(base, seg('2.0'))).problems, [/below three target durations/], 'the start rule');
  t.match(checkHlsMedia(media(['#EXT-X-VERSION:3', ...base.slice(1)], [...seg('2.0'), ...seg('2.0'), ...seg('2.0')])).problems, [/EXT-X-VERSION 3 but EXT-X-MAP/]);
  t.match(checkHlsMedia(media([...base, '#EXT-X-PLAYLIST-TYPE:VOD'], seg('2.0'))).problems, [/VOD playlist without EXT-X-ENDLIST/]);
  const history = new PlaylistHistory();
  history.add(checkHlsMedia(media(base, [...seg('2.0'), ...seg('2.0'), ...seg('2.0')])).playlist!);
  history.add(checkHlsMedia(media(['#EXT-X-VERSION:6', '#EXT-X-TARGETDURATION:4', '#EXT-X-MAP:URI="i.mp4"'], [...seg('4.0'), ...seg('4.0'), ...seg('4.0')])).playlist!);
  t.match(history.problems, [/TARGETDURATION changed from 2 to 4/]);
  t.match(checkHlsMaster('#EXTM3U\n#EXT-X-INDEPENDENT-SEGMENTS\n#EXT-X-STREAM-INF:CODECS="avc1.64001f",AUDIO="a"\nv.m3u8').problems, [/without a BANDWIDTH/, /AUDIO="a" names no EXT-X-MEDIA group/]);
  const mpd = (attrs: string, timeline: string) => `<?xml version="1.0"?><MPD ${attrs} profiles="p" minBufferTime="PT4S" type="dynamic" availabilityStartTime="2026-01-01T00:00:00Z" publishTime="2026-01-01T00:00:01Z" minimumUpdatePeriod="PT0S"><Period id="0" start="PT0S"><AdaptationSet mimeType="video/mp4"><Representation id="v" codecs="avc1.64001f"><SegmentTemplate timescale="1" media="$Number$" initialization="i"><SegmentTimeline>${timeline}</SegmentTimeline></SegmentTemplate></Representation></AdaptationSet></Period></MPD>`;
  t.match(checkMpd(mpd('xmlns="urn:mpeg:dash:schema:mpd:2011" xmlns:xsi="x" xsi:schemaLocation="urn:mpeg:DASH:schema:MPD:2011 DASH-MPD.xsd"', '')).problems,
    [/wrong-case namespace/, /minimumUpdatePeriod PT0S is not a positive duration/, /no bandwidth/, /empty SegmentTimeline/]);
  t.match(checkMpd(mpd('xmlns="urn:mpeg:dash:schema:mpd:2011"', '<S t="0" d="2"/><S t="1" d="2"/>')).problems, [/minimumUpdatePeriod/, /no bandwidth/, /overlaps the previous segment/]);
});
