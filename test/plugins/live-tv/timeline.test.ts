/**
 * A live session's time-shift window without ffmpeg: segments as ffmpeg's
 * segmenter reports them (real files of known sizes, a clock the test moves),
 * taken into the timeline. The window keeps `timeshiftSeconds` of them, no
 * more than `maxBytes`, never less than live playback needs; segments that
 * leave it leave the playlist, the MPD and the disk; a restart of ffmpeg is a
 * new period inside the window.
 */
import t from 'tap';
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { LiveTimeline, type TimelineOptions } from '../../../plugins/live-tv/live/timeline.js';
import type { SegmenterSegment } from '../../../plugins/live-tv/live/segmenter.js';
import { hlsPackager } from '../../../plugins/hls-packager/index.js';
import { dashPackager } from '../../../plugins/dash-packager/index.js';
import { checkHlsMedia, checkMpd } from '../../helpers/manifest-validator.js';

const VIDEO = { id: '0', kind: 'video' as const, codecs: 'avc1.64001e', width: 640, height: 360, frameRate: '25/1', timescale: 12800 };
const AUDIO = { id: '1', kind: 'audio' as const, codecs: 'mp4a.40.2', sampleRate: 48000, channels: 2, timescale: 48000 };
const LINKS = { init: (run: number, rep: string) => `/s/${run}/init-${rep}.mp4`, media: (run: number, rep: string) => `/s/${run}/${rep}-$Number$.m4s` };

/** A timeline fed by a fake segmenter: `segment()` writes one 2 s segment number (video and audio files) and adds it. */
async function rig(t: Tap, options: Partial<TimelineOptions>) {
  const root = await mkdtemp(path.join(os.tmpdir(), 'antenna-timeline-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  let now = Date.UTC(2026, 0, 1, 12);
  const dir = path.join(root, 'session');
  const timeline = new LiveTimeline(dir, {
    segmentSeconds: 2, timeshiftSeconds: 60, maxBytes: 2 ** 40, now: () => now, log: pino({ level: 'silent' }), channelId: 1, ...options,
  });
  let run = -1;
  let number = 0;
  let out = '';
  const newRun = async () => {
    run++;
    number = 0;
    out = path.join(dir, String(run), 'ffmpeg');
    await mkdir(out, { recursive: true });
    await writeFile(path.join(out, 'init-0.mp4'), Buffer.alloc(800));
    await writeFile(path.join(out, 'init-1.mp4'), Buffer.alloc(600));
  };
  await newRun();
  const segment = async (videoBytes = 50_000, audioBytes = 10_000) => {
    number++;
    now += 2000;
    const slot: SegmenterSegment[] = [];
    for (const [rep, bytes] of [[VIDEO, videoBytes], [AUDIO, audioBytes]] as const) {
      const file = path.join(out, `chunk-${rep.id}-${number}.m4s`);
      await writeFile(file, Buffer.alloc(bytes));
      slot.push({ rep, number, start: (number - 1) * 2 * rep.timescale, duration: 2 * rep.timescale, file, init: path.join(out, `init-${rep.id}.mp4`) });
    }
    await timeline.add(run, slot);
  };
  /** The session's own files (ffmpeg's output dirs left out): names and bytes. */
  const onDisk = async () => {
    const files: string[] = [];
    let bytes = 0;
    for (const r of await readdir(dir)) {
      for (const name of await readdir(path.join(dir, r))) {
        if (name === 'ffmpeg') continue;
        files.push(`${r}/${name}`);
        bytes += (await stat(path.join(dir, r, name))).size;
      }
    }
    return { files, bytes };
  };
  return { timeline, segment, newRun, onDisk, advance: (ms: number) => { now += ms; } };
}

t.test('the window keeps timeshiftSeconds of segments: older ones leave the playlist, the MPD and the disk', async (t) => {
  const { timeline, segment, onDisk } = await rig(t, { timeshiftSeconds: 60 });
  for (let i = 0; i < 100; i++) await segment();
  const p = timeline.presentation(LINKS);
  const video = checkHlsMedia(hlsPackager.media(p, 'video'));
  t.strictSame(video.problems, [], 'a valid media playlist');
  t.equal(video.playlist!.segments.length, 30, '60 s of 2 s segments listed');
  t.equal(video.playlist!.mediaSequence, 71, 'from segment 71 to 100');
  t.equal(timeline.windowSeconds(), 60);
  t.equal(timeline.firstSequence, 71);
  t.equal(timeline.windowStart(), timeline.availabilityStart + 140_000, 'the window starts at the wall-clock time of segment 71');
  const mpd = dashPackager.mpd(p);
  t.strictSame(checkMpd(mpd).problems, []);
  t.match(mpd, /timeShiftBufferDepth="PT62\.000S"/, 'timeShiftBufferDepth: the window (and one target duration the clock runs ahead of it)');
  t.match(mpd, /startNumber="71"/);
  // Nobody holds the session: files go as their segments leave the window.
  const { files } = await onDisk();
  const numbers = files.filter((f) => /video-\d+\.m4s$/.test(f)).map((f) => Number(/(\d+)\.m4s$/.exec(f)![1])).sort((a, b) => a - b);
  t.equal(numbers[0], 71, `the oldest video segment on disk is the window's first (${numbers[0]})`);
  t.equal(numbers.length, 30, 'and no more than the window');
  t.equal(timeline.file(0, 'video-70.m4s'), undefined, 'a segment that left the window is not served');
  t.ok(timeline.file(0, 'video-71.m4s'), "the window's first is");
});

t.test('maxBytes caps the window, and the disk stays under it at steady state', async (t) => {
  const cap = 3_000_000;
  const { timeline, segment, onDisk } = await rig(t, { timeshiftSeconds: 7200, maxBytes: cap });
  let peak = 0;
  for (let i = 0; i < 150; i++) {
    await segment(40_000 + (i % 7) * 5000, 10_000);
    peak = Math.max(peak, (await onDisk()).bytes);
  }
  const listed = timeline.windowBytes();
  t.ok(listed <= cap, `the window's segments hold ${listed} bytes, under the cap of ${cap}`);
  t.ok(listed > cap - 80_000, 'and fill it to within a segment');
  const disk = await onDisk();
  t.ok(disk.bytes <= cap + 1400, `on disk: ${disk.bytes} bytes (segments and init segments), within the cap`);
  t.ok(peak <= cap + 1400 + 80_000, `at most a segment over it at any moment (peak ${peak})`);
  t.ok(timeline.windowSeconds() < 7200 && timeline.windowSeconds() > 60, `the window is shorter than asked (${timeline.windowSeconds()} s)`);
});

t.test('while a holder listens, files stay a minute after they were announced; without one they go with the window', async (t) => {
  const videoFiles = (files: string[]) => files.filter((f) => /video-\d+\.m4s$/.test(f)).map((f) => Number(/(\d+)\.m4s$/.exec(f)![1])).sort((a, b) => a - b);
  for (const held of [true, false]) {
    const { timeline, segment, onDisk } = await rig(t, { timeshiftSeconds: 0 });
    let heard = 0;
    const stop = held ? timeline.subscribe(() => { heard++; }) : () => {};
    for (let i = 0; i < 40; i++) await segment(); // one every 2 s: 80 s
    stop();
    t.equal(timeline.firstSequence, 26, `${held ? 'held' : 'not held'}: the window is the 30 s live playback needs (segments 26 to 40)`);
    const numbers = videoFiles((await onDisk()).files);
    if (held) {
      t.equal(heard, 80, 'the holder heard every segment, video and audio');
      t.strictSame([numbers[0], numbers.length], [11, 30], 'segments announced less than a minute ago stay on disk (11 to 40)');
    } else {
      t.strictSame([numbers[0], numbers.length], [26, 15], 'only the window is on disk');
    }
  }
});

t.test('never less than live playback needs, whatever the cap or timeshift 0', async (t) => {
  for (const options of [{ timeshiftSeconds: 0 }, { timeshiftSeconds: 7200, maxBytes: 100_000 }]) {
    const { timeline, segment } = await rig(t, options);
    for (let i = 0; i < 40; i++) await segment();
    t.equal(timeline.windowSeconds(), 30, `${JSON.stringify(options)}: 30 s listed`);
  }
});

t.test('the first period starts at presentation time 0 however long the tune took, and its media times keep their wall-clock dates', async (t) => {
  const { timeline, segment, advance } = await rig(t, { timeshiftSeconds: 60 });
  const tunedAt = Date.UTC(2026, 0, 1, 12);
  advance(3500); // ffmpeg probing the upstream: the first segment is finished 5.5 s after the session began
  for (let i = 0; i < 3; i++) await segment();
  const p = timeline.presentation(LINKS);
  // GStreamer's DASH demuxers read <S t="0"> as no t and put that segment at 0 whatever the Period's start.
  t.equal(p.periods[0].start, 0, 'the Period starts at 0, where a segment at media time 0 is');
  t.equal(p.availabilityStart, tunedAt + 3500, 'availabilityStartTime: the wall-clock time of media time 0 (the first segment, finished 2 s later)');
  t.equal(timeline.windowStart(), tunedAt + 3500, 'the window starts there too');
  t.match(dashPackager.mpd(p), /<Period id="0" start="PT0\.000S">/);
});

t.test('a restart of ffmpeg is a new period in the same window, with a discontinuity', async (t) => {
  const { timeline, segment, newRun, advance } = await rig(t, { timeshiftSeconds: 60 });
  for (let i = 0; i < 10; i++) await segment();
  advance(5000); // the upstream dropped for a moment
  await newRun();
  for (let i = 0; i < 10; i++) await segment();
  const p = timeline.presentation(LINKS);
  t.equal(p.periods.length, 2, 'two periods');
  const text = hlsPackager.media(p, 'video');
  const checked = checkHlsMedia(text);
  t.strictSame(checked.problems, []);
  t.equal(checked.playlist!.segments.length, 20, 'both runs listed');
  t.equal(checked.playlist!.segments.filter((s) => s.discontinuity).length, 1, 'one EXT-X-DISCONTINUITY where the upstream restarted');
  const dates = [...text.matchAll(/#EXT-X-PROGRAM-DATE-TIME:(.*)/g)].map((m) => Date.parse(m[1]));
  t.equal(dates.length, 2, 'a date at the start of each period');
  t.ok(dates[1] - dates[0] >= 20_000, `the second period is dated after the first ended (${(dates[1] - dates[0]) / 1000} s later)`);
  for (let i = 0; i < 30; i++) await segment();
  t.equal(timeline.presentation(LINKS).periods.length, 1, 'once the window has slid past it, the first run is gone');
});

interface Tap { teardown(fn: () => unknown): void }
