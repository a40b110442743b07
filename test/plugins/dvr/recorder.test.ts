/**
 * The recorder against a fake live session that announces segments as the
 * real one does (LiveHold.onSegment: the kept ones first, then each new one),
 * with files written by hand, so the window edges, a new run becoming a new
 * part, the end of the window, a full disk and an unwritable folder are
 * checked in seconds, without ffmpeg. A recording resumed after a quick
 * restart is made of real segments (ffmpeg with the live session's segmenter
 * arguments) and played by a plain ffmpeg over HTTP.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pino from 'pino';
import type { LiveHold, LiveSegment, LiveTvAccess } from '../../../sdk/index.js';
import { JobManagerImpl } from '../../../core/jobs/job-manager.js';
import { dashPackager } from '../../../plugins/dash-packager/index.js';
import { segmentStart, shiftedSegment } from '../../../plugins/dvr/media-times.js';
import { hlsPackager } from '../../../plugins/hls-packager/index.js';
import { segmenterArgs, SegmenterOutput } from '../../../plugins/live-tv/live/segmenter.js';
import { Recorder } from '../../../plugins/dvr/recorder.js';
import { recordingPresentation } from '../../../plugins/dvr/manifests.js';
import { partEnd, readParts } from '../../../plugins/dvr/parts.js';
import type { Recording } from '../../../plugins/dvr/model.js';
import type { RecordingStore } from '../../../plugins/dvr/store.js';
import { validateDash, validateHls } from '../../helpers/manifest-validator.js';
import { decode, playerPids } from '../../helpers/player.js';
import { FFMPEG, killGroup } from '../../helpers/upstream.js';
import { box, u32, u64 } from './fixtures.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = pino({ level: 'silent' });

/** A CMAF-like media segment: an sidx and a moof with a tfdt (version 1) at media time `t`, then mdat. */
function segment(t: number, marker: string): Buffer {
  return Buffer.concat([
    box('sidx', u32(0x01000000), u32(1), u32(1000), u64(t), u64(0), u32(0)),
    box('moof', box('traf', box('tfdt', u32(0x01000000), u64(t)))),
    box('mdat', Buffer.from(marker)),
  ]);
}

const tfdtOf = (b: Buffer) => Number(b.readBigUInt64BE(b.indexOf('tfdt', 0, 'latin1') + 8));

/**
 * A run of the live session: segments `first..last` of `d` ms (timescale 1000) from media time t0,
 * written to `dir`, as the session announces them. The newest ends `endsAt` (wall clock).
 */
async function writeRun(dir: string, run: number, first: number, last: number, t0: number, endsAt: number, d = 2000): Promise<LiveSegment[]> {
  await mkdir(dir, { recursive: true });
  const initPath = path.join(dir, 'init-video.mp4');
  await writeFile(initPath, 'init');
  const out: LiveSegment[] = [];
  for (let n = first; n <= last; n++) {
    const file = path.join(dir, `video-${n}.m4s`);
    await writeFile(file, segment(t0 + (n - 1) * d, `seg ${n}`));
    out.push({
      run, initPath, path: file, sequence: 100 * run + n, start: t0 + (n - 1) * d, duration: d, targetDuration: d / 1000,
      wallClock: endsAt - (last - n + 1) * d,
      representation: { id: 'video', kind: 'video', codecs: 'avc1.42c00c', bandwidth: 500000, width: 320, height: 180, timescale: 1000 },
    });
  }
  return out;
}

async function setup(t: Tap, window: { from: number; to: number }, options: { minFreeBytes?: number; root?: string } = {}) {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-dvr-recorder-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const kept: LiveSegment[] = [];
  const listeners = new Set<(s: LiveSegment) => void>();
  const holds: string[] = [];
  const live = {
    async hold(_channel: number, label: string): Promise<LiveHold> {
      holds.push(label);
      return {
        onSegment(listener) {
          for (const s of kept) listener(s);
          listeners.add(listener);
          return () => { listeners.delete(listener); };
        },
        lastError: () => undefined, ended: new Promise<void>(() => {}), release() {},
      };
    },
  } as unknown as LiveTvAccess;
  const root = options.root ?? path.join(dir, 'recordings');
  let row: Recording = {
    id: 1, channelId: 5, programId: 9, tunerId: 'tuner', title: 'Show', start: window.from, stop: window.to, status: 'recording',
    error: null, sizeBytes: 0, duration: 0, gaps: [], dir: path.join(root, '1'), createdBy: 1, createdAt: window.from - 60_000,
    ruleId: null, episodeKey: null, seriesKey: null, season: null, episode: null, episodeTitle: null, prePadding: null, postPadding: null, watchedAt: null,
  };
  const store = {
    get: async () => row,
    update: async (_id: number, change: Partial<Recording>) => { row = { ...row, ...change }; },
  } as unknown as RecordingStore;
  const recorderOn = (jobs: JobManagerImpl) => new Recorder(jobs, live, store, log, () => Date.now(), { prePaddingMs: 0, postPaddingMs: 0, pollMs: 50, minFreeBytes: options.minFreeBytes ?? 0 });
  let jobs = new JobManagerImpl(log);
  t.teardown(() => jobs.stopAll());
  const recorder = recorderOn(jobs);
  /** The server stops (the row stays `recording`) and starts again: a new recorder, a new live session with nothing kept. */
  const restart = async (): Promise<Recorder> => {
    await jobs.stopAll();
    kept.length = 0;
    jobs = new JobManagerImpl(log);
    return recorderOn(jobs);
  };
  /** The session announces segments: kept for holds to come, told to the holds there are. */
  const announce = (segments: LiveSegment[]) => {
    for (const s of segments) {
      if (kept.some((k) => k.sequence === s.sequence && k.representation.id === s.representation.id)) continue;
      kept.push(s);
      for (const l of listeners) l(s);
    }
  };
  return { dir, recorder, row: () => row, announce, holds, restart };
}

interface Tap { teardown(fn: () => unknown): void }

t.test('recording from segment events: window edges, a new run as a new part, the end', async (t) => {
  const now = Date.now();
  // Segments 1-5 are kept when the recording holds the session (the newest just finished): 1 and 2 ended before the window.
  const s = await setup(t, { from: now - 5000, to: now + 5000 });
  const run0 = path.join(s.dir, 'live', '0');
  s.announce(await writeRun(run0, 0, 1, 5, 0, now));
  const job = s.recorder.start(s.row());
  await sleep(400);
  let parts = s.recorder.active(1)!.parts;
  t.strictSame(parts[0]?.segments.get('video')!.map((x) => x.t), [4000, 6000, 8000], 'from the first segment ending inside the window');
  // The session restarts: a new run, with its own media times (10 s segments from 100 s on).
  // Its segment 1 ended 10 s ago (before the window), segment 2 just now.
  const run1 = path.join(s.dir, 'live', '1');
  const later = Date.now();
  s.announce(await writeRun(run1, 1, 1, 2, 100_000, later, 10_000));
  await sleep(400);
  parts = s.recorder.active(1)!.parts;
  t.equal(parts.length, 2, 'a new part');
  t.strictSame(parts[1]?.segments.get('video')!.map((x) => x.t), [110_000], "its media times are the run's own (the part is a period of its own)");
  const file = await readFile(path.join(s.row().dir, 'p1', 'video-00001.mp4'));
  t.equal(tfdtOf(file), 110_000, 'the segment is the session\'s, unchanged');
  t.equal((await stat(path.join(s.row().dir, 'p1', 'video-00001.mp4'))).ino, (await stat(path.join(run1, 'video-2.m4s'))).ino, 'linked, not copied');
  t.match(file.toString('latin1'), /seg 2$/, 'the media itself is the same');
  // Segment 3 begins now, inside the window; segment 4 ten seconds later, after it: the end is recorded.
  s.announce((await writeRun(run1, 1, 1, 4, 100_000, later + 20_000, 10_000)).slice(2));
  t.equal(await Promise.race([job.done, sleep(8000).then(() => 'timeout')]), 'completed', 'the job completes once media past the end arrived');
  t.match(s.row(), { status: 'completed', error: null });
  t.equal(s.row().duration, 3 * 2 + 2 * 10, 'three 2 s and two 10 s segments');
  t.ok(s.row().sizeBytes > 0);
  const onDisk = await readParts(s.row().dir);
  t.strictSame(onDisk.map((p) => p.segments.get('video')!.map((x) => x.t)), [[4000, 6000, 8000], [110_000, 120_000]], 'the parts on disk are what was recorded');
  t.strictSame(onDisk.map((p) => p.targetDuration), [2, 10], "each part keeps its session's target duration");
  t.ok(existsSync(path.join(s.row().dir, 'p0', 'init-video.mp4')), 'with their init segments');
  t.strictSame(s.holds, ['recording 1'], 'one hold of the channel');
});

t.test('a full disk fails the recording with the reason, keeping nothing half-written', async (t) => {
  const now = Date.now();
  const s = await setup(t, { from: now - 5000, to: now + 60_000 }, { minFreeBytes: Number.MAX_SAFE_INTEGER });
  s.announce(await writeRun(path.join(s.dir, 'live', '0'), 0, 1, 5, 0, now));
  const job = s.recorder.start(s.row());
  t.equal(await Promise.race([job.done, sleep(5000).then(() => 'timeout')]), 'completed', 'the job ends');
  t.equal(s.row().status, 'failed');
  t.match(s.row().error, /^disk full: \d+ MiB left at /, `the reason: ${s.row().error}`);
});

t.test('an unwritable folder fails the recording with the reason', async (t) => {
  const now = Date.now();
  const blocker = path.join(os.tmpdir(), `antenna-dvr-not-a-dir-${process.pid}`);
  await writeFile(blocker, 'a file where the recordings folder should be');
  t.teardown(() => rm(blocker, { force: true }));
  const s = await setup(t, { from: now - 5000, to: now + 60_000 }, { root: path.join(blocker, 'recordings') });
  const job = s.recorder.start(s.row());
  t.equal(await Promise.race([job.done, sleep(5000).then(() => 'timeout')]), 'completed');
  t.equal(s.row().status, 'failed');
  t.match(s.row().error, /^cannot write: .*\(ENOTDIR\)$/, `the reason: ${s.row().error}`);
});

t.test('nothing arriving until the end: failed, saying why', async (t) => {
  const now = Date.now();
  const s = await setup(t, { from: now - 1000, to: now + 500 });
  const job = s.recorder.start(s.row());
  t.equal(await Promise.race([job.done, sleep(5000).then(() => 'timeout')]), 'completed');
  t.match(s.row(), { status: 'failed', error: /nothing was recorded/ });
});

/**
 * A run of the live session from real media: `seconds` (at most 12) of H.264 (a keyframe every 2 s)
 * + AAC cut as the session cuts it (copied, timestamps from `offset` s); dated from 0 (add when).
 */
async function realRun(dir: string, run: number, seconds: number, offset: number): Promise<LiveSegment[]> {
  await mkdir(dir, { recursive: true });
  const source = path.join(dir, 'source.ts');
  const ffmpeg = (args: string[]) => promisify(execFile)(FFMPEG, ['-hide_banner', '-nostdin', '-loglevel', 'error', ...args]);
  await ffmpeg(['-f', 'lavfi', '-i', 'testsrc2=size=320x180:rate=25', '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000', '-t', String(seconds),
    '-c:v', 'libx264', '-preset', 'ultrafast', '-g', '50', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-f', 'mpegts', source]);
  await ffmpeg(['-i', source, '-map', '0:v', '-map', '0:a', '-c:v', 'copy', '-tag:v', 'avc1', '-c:a', 'aac', ...segmenterArgs({ dir, segmentSeconds: 2, offsetSeconds: offset })]);
  const slots = await new SegmenterOutput(dir, offset).next();
  return slots.flatMap((slot, k) => slot.map((x) => ({
    run, initPath: x.init, path: x.file, sequence: 100 * run + x.number, start: x.start, duration: x.duration, wallClock: k * 2000, targetDuration: 2,
    representation: { ...x.rep, id: x.rep.kind, bandwidth: 1_000_000 },
  })));
}

t.test('resumed after a quick restart: the new part\'s media times go on after the first part\'s, ffmpeg plays both', async (t) => {
  t.teardown(() => { for (const pid of playerPids) killGroup(pid); });
  // Each run's tfdt starts at 0; ffmpeg 4.1's sidx at its offset, here the first session's ran 15 s ahead of the wall clock.
  const x = Math.floor(Date.now() / 1000) + 7;
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-dvr-runs-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const ahead = await realRun(path.join(dir, '0'), 0, 8, x);
  const behind = await realRun(path.join(dir, '1'), 1, 8, x + 3);
  const dated = (segments: LiveSegment[], from: number) => segments.map((seg) => ({ ...seg, wallClock: from + seg.wallClock }));
  const now = Date.now();
  const s = await setup(t, { from: now - 20_000, to: now + 4000 });
  // The first session's 8 s are dated as ending 5 s ago.
  s.announce(dated(ahead, now - 13_000));
  s.recorder.start(s.row());
  for (const deadline = Date.now() + 5000; (s.recorder.active(1)?.parts[0]?.segments.get('video')?.length ?? 0) < 4 && Date.now() < deadline;) await sleep(50);
  // A quick restart; the new session began 2 s ago (its timestamps at x + 3), its 4th segment begins after the window.
  const recorder = await s.restart();
  const job = recorder.start(s.row());
  s.announce(dated(behind, now - 2000));
  t.equal(await Promise.race([job.done, sleep(15_000).then(() => 'timeout')]), 'completed', 'the resumed job completes');
  t.match(s.row(), { status: 'completed', duration: 14 }, 'completed: 8 s and 6 s');
  t.equal(s.row().gaps.length, 1, `the gap between the parts is noted (${JSON.stringify(s.row().gaps)})`);

  const parts = await readParts(s.row().dir);
  t.equal(parts.length, 2, 'two parts');
  const end = await partEnd(s.row().dir, parts[0]);
  t.ok(end.tfdt >= 8 && end.sidx! >= x + 8, `the first part ends at tfdt ${end.tfdt.toFixed(3)} s, sidx x + ${(end.sidx! - x).toFixed(3)} s`);
  for (const rep of parts[1].reps) {
    const first = parts[1].segments.get(rep.id)![0];
    const start = segmentStart(await readFile(path.join(s.row().dir, 'p1', `${rep.id}-00001.mp4`)), rep.timescale);
    t.ok(start.tfdt! >= end.tfdt && start.sidx! >= end.sidx!, `the second part's ${rep.id} goes on after it: tfdt ${start.tfdt!.toFixed(3)} s, sidx x + ${(start.sidx! - x).toFixed(3)} s`);
    t.ok(Math.abs(first.t / rep.timescale - start.tfdt!) < 0.1, 'its recorded media times moved with them');
  }
  const linked = (await stat(path.join(s.row().dir, 'p0', 'video-00001.mp4'))).ino === (await stat(ahead.find((seg) => seg.representation.kind === 'video')!.path)).ino;
  t.ok(linked, "the first part's segments are the session's, linked");

  // Played as the watch routes serve it: the packagers' playlists and MPD, the part files.
  const server = http.createServer((req, res) => {
    const url = (req.url ?? '').split('?')[0];
    const complete = { complete: true, now: Date.now() };
    const file = /^\/s\/(\d+)\/([\w-]+\.mp4)$/.exec(url);
    if (url === '/master.m3u8' || url === '/video.m3u8' || url === '/audio.m3u8') {
      const presentation = recordingPresentation(parts, { ...complete, link: (f) => `/${f}` });
      res.end(url === '/master.m3u8' ? hlsPackager.master(presentation, (rep) => `/${rep}.m3u8`) : hlsPackager.media(presentation, url.slice(1, -5)));
    } else if (url === '/master.mpd') {
      res.end(dashPackager.mpd(recordingPresentation(parts, { ...complete, link: (f) => f })));
    } else if (file) {
      readFile(path.join(s.row().dir, `p${file[1]}`, file[2])).then((b) => res.end(b), () => res.writeHead(404).end());
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => server.close(resolve)));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const played = await decode(`${base}/master.m3u8`, 60);
  const recorded = s.row().duration;
  t.ok(played.seconds >= recorded - 0.5 && played.monotonic, `a plain ffmpeg plays both parts in order: ${played.seconds.toFixed(2)} s of ${recorded}, in order: ${played.monotonic} ${played.stderr}`);
  t.strictSame((await validateHls(`${base}/master.m3u8`)).problems, [], 'the manifest validator passes its HLS');
  const dash = await validateDash(`${base}/master.mpd`);
  t.strictSame(dash.problems, [], 'and its static MPD');
  t.equal(dash.type, 'static');
});

t.test("a segment's times moved on: every tfdt and the sidx, never past a 32-bit field", async (t) => {
  const wide = segment(2000, 'media');
  const moved = shiftedSegment(wide, 1000, { tfdt: 8, sidx: 5 })!;
  t.strictSame(segmentStart(moved, 1000), { tfdt: 10, sidx: 7 }, 'tfdt 2 s + 8 s, sidx 2 s + 5 s');
  t.equal(moved.subarray(-5).toString(), 'media', 'the media untouched');
  t.strictSame(segmentStart(wide, 1000), { tfdt: 2, sidx: 2 }, 'the original unchanged');
  const narrow = Buffer.concat([box('moof', box('traf', box('tfdt', u32(0), u32(0xfffff000)))), box('mdat', Buffer.from('x'))]);
  t.equal(shiftedSegment(narrow, 1000, { tfdt: 8, sidx: 0 }), undefined, 'a version 0 tfdt that would overflow: no copy');
  t.strictSame(segmentStart(Buffer.from('not an mp4'), 1000), { tfdt: undefined, sidx: undefined });
});
