/**
 * The DVR's own formats, without a server: the parts on disk (crash-safe
 * index), gaps, and the manifests the packagers write from parts (hls-parser
 * strict, mpd-parser, the manifest validator).
 */
import t from 'tap';
import { appendFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as HLS from 'hls-parser';
import { createPart, nextPartIndex, partDir, readParts, recordedSeconds, type Part, type RepInfo } from '../../../plugins/dvr/parts.js';
import { recordingPresentation } from '../../../plugins/dvr/manifests.js';
import { gapsOf } from '../../../plugins/dvr/recorder.js';
import { hlsPackager } from '../../../plugins/hls-packager/index.js';
import { dashPackager } from '../../../plugins/dash-packager/index.js';
import { checkHlsMaster, checkHlsMedia, checkMpd } from '../../helpers/manifest-validator.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const mpdParser: { parse(text: string, options: { manifestUri: string; NOW?: number }): any } = require('mpd-parser');
HLS.setOptions({ strictMode: true, silent: true });

const VIDEO: RepInfo = { id: '0', contentType: 'video', mimeType: 'video/mp4', codecs: 'avc1.42c00c', bandwidth: 629952, width: 320, height: 180, frameRate: '25/1', timescale: 12800 };
const AUDIO: RepInfo = { id: '1', contentType: 'audio', mimeType: 'audio/mp4', codecs: 'mp4a.40.2', bandwidth: 128000, sampleRate: 48000, channels: 2, timescale: 48000 };

/** A part of n two-second segments (video and audio) starting at media time t0 (in the video's timescale, a multiple of 4). */
function part(index: number, startedAt: number, n: number, t0 = 0): Part {
  const video = Array.from({ length: n }, (_, i) => ({ index: i + 1, t: t0 + i * 25600, d: 25600, bytes: 1000 }));
  const audio = Array.from({ length: n }, (_, i) => ({ index: i + 1, t: (t0 / 12800) * 48000 + i * 96000, d: 96000, bytes: 100 }));
  return { index, startedAt, reps: [VIDEO, AUDIO], segments: new Map([['0', video], ['1', audio]]), bytes: n * 1100 };
}

t.test('parts on disk: written, read back, a line cut short by a crash ignored, never renumbered', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-dvr-parts-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  t.equal(await nextPartIndex(dir), 0);
  const writer = await createPart(dir, 0, 1_000_000, [VIDEO, AUDIO], async (at) => {
    await writeFile(path.join(at, 'init-0.mp4'), 'xx');
    return 2;
  });
  await writer.add('0', { index: 1, t: 273, d: 25600, bytes: 500 });
  await writer.add('1', { index: 1, t: 0, d: 96000, bytes: 50 });
  await writer.add('0', { index: 2, t: 25873, d: 25600, bytes: 400 });
  await writer.close();
  await appendFile(path.join(partDir(dir, 0), 'segments.tsv'), '0\t3\t514'); // the crash
  const second = await createPart(dir, 2, 2_000_000, [VIDEO], async () => 0);
  await second.add('0', { index: 1, t: 0, d: 12800, bytes: 10 });
  await second.close();
  await createPart(dir, 3, 3_000_000, [VIDEO], async () => 0).then((w) => w.close()); // no segment: not a part
  await writeFile(path.join(dir, 'p5'), 'not a dir');

  const parts = await readParts(dir);
  t.strictSame(parts.map((p) => p.index), [0, 2], 'parts with segments, in order');
  t.equal(parts[0].bytes, 2 + 500 + 50 + 400, 'bytes count the init segments');
  t.strictSame(parts[0].segments.get('0')!.map((s) => s.index), [1, 2], 'the cut line is not a segment');
  t.equal(parts[0].startedAt, 1_000_000);
  t.equal(recordedSeconds(parts), 4 + 1, 'seconds of the video representation');
  t.equal(await nextPartIndex(dir), 6, 'a new part never reuses a number');
});

t.test('gaps: between parts, and a late first or early last part', async (t) => {
  const a = part(0, 100_000, 10); // 20 s
  const b = part(1, 130_000, 10); // starts 10 s after a ended
  t.strictSame(gapsOf([a, b], 100_000, 150_000, true), [{ start: 120_000, stop: 130_000 }]);
  t.strictSame(gapsOf([a], 100_000, 125_000, true), [], 'ending 5 s early is not a gap');
  t.strictSame(gapsOf([a], 100_000, 200_000, true), [{ start: 120_000, stop: 200_000 }], 'a recording cut short');
  t.strictSame(gapsOf([a], 100_000, 200_000, false), [], 'not while it records');
  t.strictSame(gapsOf([a], 60_000, 200_000, false), [{ start: 60_000, stop: 100_000 }], 'a late start');
  t.strictSame(gapsOf([], 0, 1, true), []);
});

/** The manifests of a recording as the watch routes make them, with file names left as they are. */
const presentation = (parts: Part[], complete: boolean, now = 0) => recordingPresentation(parts, { complete, now, link: (file) => file });
const hlsMaster = (parts: Part[]) => hlsPackager.master(presentation(parts, false), (rep) => `hls/${rep}.m3u8`);
const hlsMedia = (parts: Part[], kind: string, complete: boolean) => hlsPackager.media(presentation(parts, complete), kind);
const dashMpd = (parts: Part[], options: { complete: boolean; now: number }) => dashPackager.mpd(presentation(parts, options.complete, options.now));

t.test('HLS: master, EVENT playlist while recording, VOD playlist joining parts with discontinuities', async (t) => {
  const parts = [part(0, 0, 3, 256), part(1, 60_000, 2)];
  const master = HLS.parse(hlsMaster(parts)) as HLS.types.MasterPlaylist;
  t.equal(master.isMasterPlaylist, true);
  t.equal(master.variants.length, 1);
  t.equal(master.variants[0].uri, 'hls/video.m3u8');
  t.equal(master.variants[0].codecs, 'avc1.42c00c,mp4a.40.2');
  t.strictSame(master.variants[0].resolution, { width: 320, height: 180 });
  t.equal(master.variants[0].audio[0]?.uri, 'hls/audio.m3u8');

  const event = HLS.parse(hlsMedia(parts, 'video', false)) as HLS.types.MediaPlaylist;
  t.equal(event.playlistType, 'EVENT');
  t.equal(event.endlist, false);
  const vod = HLS.parse(hlsMedia(parts, 'video', true)) as HLS.types.MediaPlaylist;
  t.equal(vod.playlistType, 'VOD');
  t.equal(vod.endlist, true);
  t.equal(vod.segments.length, 5);
  t.strictSame(vod.segments.map((s) => s.uri), ['s/0/0-00001.mp4', 's/0/0-00002.mp4', 's/0/0-00003.mp4', 's/1/0-00001.mp4', 's/1/0-00002.mp4']);
  t.strictSame(vod.segments.map((s) => !!s.discontinuity), [false, false, false, true, false], 'the second part starts with a discontinuity');
  t.strictSame([...new Set(vod.segments.map((s) => s.map?.uri))], ['s/0/init-0.mp4', 's/1/init-0.mp4'], 'each part has its init segment');
  t.equal(vod.segments.reduce((n, s) => n + s.duration, 0), 10);
  t.strictSame(checkHlsMaster(hlsMaster(parts)).problems, [], 'the manifest validator passes the master');
  t.strictSame(checkHlsMedia(hlsMedia(parts, 'video', true)).problems, [], 'and the VOD playlist');
  const audio = HLS.parse(hlsMedia(parts, 'audio', true)) as HLS.types.MediaPlaylist;
  t.equal(audio.segments.length, 5);
  t.equal(audio.segments[0].uri, 's/0/1-00001.mp4');

  const audioOnly: Part = { ...part(0, 0, 2), reps: [AUDIO], segments: new Map([['1', part(0, 0, 2).segments.get('1')!]]) };
  const radio = HLS.parse(hlsMaster([audioOnly])) as HLS.types.MasterPlaylist;
  t.equal(radio.variants[0].uri, 'hls/audio.m3u8', 'a radio recording: the audio playlist is the variant');
});

t.test('DASH: a static MPD with one Period per part, a dynamic one while recording', async (t) => {
  const parts = [part(0, 1_700_000_000_000, 3, 256), part(1, 1_700_000_060_000, 2)];
  const text = dashMpd(parts, { complete: true, now: 1_700_000_100_000 });
  t.match(text, /type="static"/);
  t.strictSame(checkMpd(text).problems, [], 'the manifest validator passes it');
  t.match(text, /mediaPresentationDuration="PT10\.000S"/, 'the parts joined: 6 s + 4 s');
  t.equal((text.match(/<Period /g) ?? []).length, 2);
  t.match(text, /presentationTimeOffset="256"/, 'each Period starts at its first media time');
  const manifest = mpdParser.parse(text, { manifestUri: 'http://h/watch/recording/1/master.mpd' });
  const video = manifest.playlists[0];
  t.equal(video.segments.length, 5, 'mpd-parser: every segment of both parts');
  t.equal(video.segments[0].resolvedUri, 'http://h/watch/recording/1/s/0/0-00001.mp4');
  t.equal(video.segments[3].resolvedUri, 'http://h/watch/recording/1/s/1/0-00001.mp4');
  t.equal(video.segments[3].discontinuity, true, 'the second Period is a discontinuity');
  t.equal(video.segments[3].map.resolvedUri, 'http://h/watch/recording/1/s/1/init-0.mp4');
  t.equal(Math.round(video.segments.reduce((n: number, s: any) => n + s.duration, 0)), 10);

  const live = dashMpd(parts, { complete: false, now: 1_700_000_100_000 });
  t.match(live, /type="dynamic"/);
  t.strictSame(checkMpd(live).problems, [], 'the manifest validator passes the dynamic one');
  t.match(live, /availabilityStartTime="2023-11-14T22:13:20.000Z"/, 'available from the first part on');
  t.notMatch(live, /timeShiftBufferDepth/, 'the whole recording stays available');
  t.match(live, /<Period id="1" start="PT60\.000S">/, 'a later part starts when it began, open-ended');
  const parsed = mpdParser.parse(live, { manifestUri: 'http://h/m.mpd', NOW: 1_700_000_100_000 });
  t.ok(parsed.playlists[0].segments.length >= 1, 'mpd-parser reads it');
});

t.test('catalog items: ids, playable recordings only, play-info by the Device-OS rule', async (t) => {
  const { itemIdOf, recordingIdOf, playable, toCatalogItem, RecordingItems } = await import('../../../plugins/dvr/catalog-items.js');
  t.equal(itemIdOf(12), 'rec-12');
  t.equal(recordingIdOf('rec-12'), 12);
  for (const bad of ['12', 'rec-', 'rec-0', 'rec-1.5', 'rec-12x', 'REC-1', 'rec-99999999999']) t.equal(recordingIdOf(bad), undefined, bad);
  const rec = { id: 3, channelId: 1, programId: 9, tunerId: 'm3u:Main', title: 'News', start: 2000, stop: 3000, status: 'completed' as const, error: null, sizeBytes: 10, duration: 59.6, gaps: [], dir: '/x/3', createdBy: 1, createdAt: 1,
    ruleId: null, episodeKey: null, seriesKey: null, season: null, episode: null, episodeTitle: null, prePadding: null, postPadding: null, watchedAt: null };
  t.strictSame(toCatalogItem(rec, 7), { id: 'rec-3', libraryId: 7, contentType: 'recording', title: 'News', duration: 60, seriesId: null, seasonNumber: null, episodeNumber: null, addedAt: 2000 });
  t.ok(playable(rec));
  t.notOk(playable({ ...rec, status: 'scheduled', duration: 0 }), 'a scheduled recording is no item');
  t.notOk(playable({ ...rec, status: 'failed', duration: 0 }), 'nor one with nothing recorded');
  const older = { ...rec, id: 2, start: 1000 };
  const scheduled = { ...rec, id: 4, status: 'scheduled' as const, duration: 0 };
  const dvr = { list: async () => [older, rec, scheduled], get: async (id: number) => [older, rec, scheduled].find((r) => r.id === id) } as any;
  const auth = { signMediaKey: (user: { id: number }, scope: string) => `signed-${user.id}-${scope}` } as any;
  const items = new RecordingItems(dvr, auth);
  items.libraryId = 7;
  const user = { id: 5 } as any;
  t.ok(items.owns('rec-3'));
  t.notOk(items.owns('abcdefABCDEF0123'), 'a vod id is not a recording');
  t.strictSame((await items.list()).map((i) => i.id), ['rec-3', 'rec-2'], 'newest first, playable only');
  t.equal((await items.item('rec-2'))?.title, 'News');
  t.equal(await items.item('rec-4'), undefined);
  t.equal(await items.item('movie-1'), undefined);
  t.strictSame(await items.playInfo(user, 'rec-3', false), { method: 'remux', url: '/watch/recording/3?key=signed-5-recording:3', format: 'hls' });
  t.strictSame(await items.playInfo(user, 'rec-3', true), { method: 'remux', url: '/watch/recording/3/master.mpd?key=signed-5-recording:3', format: 'dash' });
  t.equal(await items.playInfo(user, 'rec-4', false), undefined, 'a scheduled recording has nothing to play');
});
