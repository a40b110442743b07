/**
 * Time to first frame in GStreamer (gst-launch-1.0 playbin and playbin3, a
 * header-less player: the URL carries the key), from spawning the player to
 * the first video frame at its sink (sync=true, so a timeline that starts late
 * is waited for, as on a screen), for every kind of stream, in one run:
 *
 *  - live, a channel nobody watches (its session starts: tune, three segments),
 *  - live, the same channel while it runs (a second viewer),
 *  - live DASH (the MPD), cold and warm likewise, on channels of their own:
 *    GStreamer 1.22.0's playbin3 (dashdemux2) buffers 30 s of media first
 *    (fixed in 1.22.1), so it gets DASH3_ALLOWANCE_S more,
 *  - VOD: a remux and a transcode (720p, what play-info hands a device that
 *    cannot decode the file's HEVC) of a 30 s 720p H.264 file, each run a new
 *    job (another device),
 *  - a completed recording (VOD playlist of two parts' worth of segments),
 *
 * beside ffmpeg's own HLS output served by a plain static server: for live and
 * the recording, of the same source (test/helpers/upstream.ts: H.264/AAC
 * realtime MPEG-TS; `-c copy -f hls -hls_time 2`, live with its playlist
 * running, and VOD of 30 s then ENDLIST); for VOD, of the same file in fMP4
 * (copied, and encoded with the same x264 settings). Every case also says
 * whether pictures kept coming after the first (`flowing`: ≥ half the seconds
 * in the next PLAYERS_BENCH_WATCH seconds). Runs alternate which case goes
 * first. A sample without a frame keeps gst-launch's last error lines
 * (`noFrame`), so a failed run says why.
 *
 *   node dist/test/bench/run.js players
 *   PLAYERS_BENCH_RUNS=3 PLAYERS_BENCH_WATCH=8 node dist/test/bench/run.js players
 */
import { execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createTestHost } from '../../sdk/testing.js';
import { makeClip } from '../../plugins/vod/sample-media.js';
import { playWithGstreamer, skipWithoutGstreamer } from '../helpers/gstreamer.js';
import { FFMPEG, killGroup, startUpstream } from '../helpers/upstream.js';
import { m3u } from '../plugins/live-tv/fixtures.js';
import { guideByName, MINUTE, slotAt, slotGuide, programmeAt } from '../plugins/dvr/fixtures.js';
import { load1, median, sleep } from './stats.js';

const RUNS = Number(process.env.PLAYERS_BENCH_RUNS ?? 3);
const WATCH_S = Number(process.env.PLAYERS_BENCH_WATCH ?? 8);
const ELEMENTS = ['playbin', 'playbin3'] as const;
/** playbin3 on live DASH: GStreamer 1.22.0's dashdemux2 holds the first frame until 30 s of media are buffered. */
const DASH3_ALLOWANCE_S = 35;

interface Sample { firstFrameMs: number | null; flowing: boolean; loadavg: number; errors?: string }

async function measure(url: string, element: typeof ELEMENTS[number], coldSeconds = 0): Promise<Sample> {
  const loadavg = load1();
  const p = await playWithGstreamer(url, coldSeconds + WATCH_S + 2, element);
  const after = p.firstFrameMs === null ? 0 : coldSeconds + WATCH_S + 2 - p.firstFrameMs / 1000;
  const shown = p.firstPts !== null && p.lastPts !== null ? p.lastPts - p.firstPts : 0;
  return { firstFrameMs: p.firstFrameMs, flowing: p.firstFrameMs !== null && shown >= after / 2, loadavg, ...(p.firstFrameMs === null ? { errors: p.errors } : {}) };
}

function summary(samples: Sample[]) {
  const ok = samples.filter((s) => s.firstFrameMs !== null).map((s) => s.firstFrameMs!);
  return {
    medianFirstFrameMs: ok.length ? Math.round(median(ok)) : null,
    firstFrameMs: samples.map((s) => s.firstFrameMs),
    flowing: samples.map((s) => s.flowing),
    loadavg: samples.map((s) => s.loadavg),
    ...(samples.some((s) => s.errors !== undefined) ? { noFrame: samples.map((s) => s.errors ?? null) } : {}),
  };
}

const TYPES: Record<string, string> = { '.m3u8': 'application/vnd.apple.mpegurl', '.ts': 'video/mp2t', '.mp4': 'video/mp4', '.m4s': 'video/iso.segment' };

/**
 * A plain static file server for ffmpeg's own HLS output (files under `dir`). ffmpeg 4.1 rewrites a live
 * index.m3u8 in place (it renames only for its file: protocol, which it does not recognise here), so a
 * read can find it empty: GStreamer then fails to typefind the stream ("Stream doesn't contain enough data")
 * and shows no frame. A playlist is read again until it has content, as behind a writer that renames.
 */
async function staticServer(dir: string): Promise<{ base: string; close(): Promise<void> }> {
  const read = async (file: string): Promise<Buffer> => {
    for (let tries = 0; ; tries++) {
      const body = await readFile(file);
      if (body.length || !file.endsWith('.m3u8') || tries >= 50) return body;
      await sleep(10);
    }
  };
  const server = http.createServer((req, res) => {
    const file = path.join(dir, path.normalize(decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname)));
    if (!file.startsWith(dir + path.sep)) return void res.writeHead(404).end();
    read(file).then((body) => {
      res.writeHead(200, { 'content-length': body.length, 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-cache' }).end(body);
    }, () => res.writeHead(404).end());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((r) => server.close(() => r())) };
}

/** ffmpeg copying the upstream into its own HLS (TS segments); resolves once the playlist lists three. */
async function ffmpegHls(input: string, dir: string, vodSeconds?: number) {
  const args = ['-hide_banner', '-loglevel', 'error', '-i', input, '-map', '0:v:0', '-map', '0:a:0', '-c', 'copy', '-f', 'hls', '-hls_time', '2',
    ...(vodSeconds ? ['-t', String(vodSeconds), '-hls_playlist_type', 'vod'] : ['-hls_list_size', '10', '-hls_flags', 'delete_segments']),
    path.join(dir, 'index.m3u8')];
  const child = spawn(FFMPEG, args, { detached: true, stdio: 'ignore' });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  for (const deadline = Date.now() + 60_000; Date.now() < deadline;) {
    const text = await readFile(path.join(dir, 'index.m3u8'), 'utf8').catch(() => '');
    if (vodSeconds ? text.includes('#EXT-X-ENDLIST') : (text.match(/^index\d+\.ts$/gm) ?? []).length >= 3) break;
    await sleep(200);
  }
  return { stop: async () => { killGroup(child.pid); await exited; }, exited };
}

const exec = (args: string[]) => new Promise<void>((resolve, reject) => {
  execFile(FFMPEG, ['-hide_banner', '-loglevel', 'error', ...args], { maxBuffer: 16 * 2 ** 20 }, (err, _o, stderr) => (err ? reject(new Error(`ffmpeg: ${stderr}`)) : resolve()));
});

/** The VOD file (30 s, 720p H.264, 2 s GOPs) and ffmpeg's fMP4 HLS of it: copied, and encoded as Antenna transcodes. */
async function vodFiles(dir: string): Promise<{ movies: string; copy: string; x264: string }> {
  const movies = path.join(dir, 'movies');
  const plain = path.join(dir, 'ref-vod-fmp4');
  await mkdir(movies);
  await mkdir(path.join(plain, 'copy'), { recursive: true });
  await mkdir(path.join(plain, 'x264'), { recursive: true });
  const source = path.join(movies, 'Feature (2020).mkv');
  await makeClip(exec, source, { width: 1280, height: 720, fps: 25, seconds: 30, gopSeconds: 2 });
  const hls = ['-f', 'hls', '-hls_time', '4', '-hls_playlist_type', 'vod', '-hls_segment_type', 'fmp4'];
  await exec(['-i', source, '-c', 'copy', ...hls, path.join(plain, 'copy', 'index.m3u8')]);
  await exec(['-i', source, '-vf', 'scale=-2:720', '-c:v', 'libx264', '-preset', 'veryfast', '-b:v', '3500k', '-maxrate', '3500k', '-bufsize', '3500k',
    '-force_key_frames', 'expr:gte(t,n_forced*4)', '-c:a', 'aac', '-b:a', '160k', '-ac', '2', ...hls, path.join(plain, 'x264', 'index.m3u8')]);
  return { movies, copy: 'ref-vod-fmp4/copy/index.m3u8', x264: 'ref-vod-fmp4/x264/index.m3u8' };
}

export async function run(): Promise<unknown> {
  if (skipWithoutGstreamer) return { skipped: skipWithoutGstreamer };
  const dir = await mkdtemp(path.join(os.tmpdir(), 'antenna-players-bench-'));
  const vod = await vodFiles(dir);
  const upstream = await startUpstream();
  const channelNames = Array.from({ length: 2 * RUNS * ELEMENTS.length }, (_, i) => `Cold${i}`);
  await writeFile(path.join(dir, 'tv.m3u'), m3u([...channelNames, 'Rec'].map((name, i) => ({ name, tvgId: name.toLowerCase(), chno: String(i + 1), url: `${upstream.base}/live/${name.toLowerCase()}.ts` }))));
  const now = Date.now();
  await writeFile(path.join(dir, 'guide.xml'), slotGuide(['rec'], now, -5, 10));
  const host = await createTestHost({
    listen: true,
    plugins: {
      'live-tv': { initialImport: 'await', idleTimeout: '60s', readyTimeout: '30s' },
      'm3u-tuner': { sources: [{ name: 'Main', url: path.join(dir, 'tv.m3u'), maxStreams: 50 }] },
      'xmltv-guide': { sources: [{ url: path.join(dir, 'guide.xml') }], maxAge: '100000d' },
      dvr: { path: path.join(dir, 'recordings'), prePadding: '0s', postPadding: '0s' },
      vod: { libraries: [{ name: 'Movies', type: 'movies', paths: [vod.movies] }], initialScan: 'await' },
    },
  });
  const files = await staticServer(dir);
  const refLiveDir = await mkdtemp(path.join(dir, 'ref-live-'));
  const refVodDir = await mkdtemp(path.join(dir, 'ref-vod-'));
  const refLive = await staticServer(refLiveDir);
  const refVod = await staticServer(refVodDir);
  const stops: (() => Promise<void>)[] = [];
  try {
    const token = encodeURIComponent(host.adminToken);
    const api = async (url: string, init?: RequestInit) => (await fetch(host.url + url, { ...init, headers: { authorization: `Bearer ${host.adminToken}`, 'content-type': 'application/json' } })).json() as Promise<any>;
    const channels: { id: number; name: string }[] = (await api('/channels')).channels;
    const idOf = (name: string) => channels.find((c) => c.name === name)!.id;

    // The recording: next minute's programme on Rec (a whole minute), recorded while live is measured.
    const guide = await guideByName((u) => api(u));
    const next = programmeAt(guide, 'Rec', slotAt(Date.now(), 1));
    const created = await api('/recordings', { method: 'POST', body: JSON.stringify({ channel_id: next.channelId, program_id: next.programme.id }) });
    const vodRef = ffmpegHls(`${upstream.base}/live/refvod.ts`, refVodDir, 30);
    const liveRef = await ffmpegHls(`${upstream.base}/live/reflive.ts`, refLiveDir);
    stops.push(liveRef.stop);

    // A channel's session is stopped once measured: sessions idling out would load the machine under the next cases.
    const stopChannel = async (id: number) => { await host.host.jobs.get(`live:${id}`)?.stop('bench'); };
    const live: Record<string, Sample[]> = {};
    const add = (key: string, s: Sample) => { (live[key] ??= []).push(s); };
    let cold = 0;
    for (let runIndex = 0; runIndex < RUNS; runIndex++) {
      for (const element of runIndex % 2 ? [...ELEMENTS].reverse() : ELEMENTS) {
        const channel = idOf(channelNames[cold++]);
        const url = `${host.url}/watch/live/${channel}?api_key=${token}`;
        const ref = `${refLive.base}/index.m3u8`;
        if (runIndex % 2) add(`ffmpeg-hls-live/${element}`, await measure(ref, element));
        add(`antenna-live-cold/${element}`, await measure(url, element, 10));
        add(`antenna-live-warm/${element}`, await measure(url, element));
        if (!(runIndex % 2)) add(`ffmpeg-hls-live/${element}`, await measure(ref, element));
        await stopChannel(channel);
        const dashChannel = idOf(channelNames[cold++]);
        const mpd = `${host.url}/watch/live/${dashChannel}/master.mpd?api_key=${token}`;
        const extra = element === 'playbin3' ? DASH3_ALLOWANCE_S : 0;
        add(`antenna-live-dash-cold/${element}`, await measure(mpd, element, 10 + extra));
        add(`antenna-live-dash-warm/${element}`, await measure(mpd, element, extra));
        await stopChannel(dashChannel);
      }
    }

    // VOD: what play-info hands a player that cannot send headers; each run is another device, so a new job.
    const libs: { id: number }[] = (await api('/libraries')).libraries;
    const itemId: string = (await api(`/library/${libs[0]!.id}`)).items[0].id;
    const onDemand: Record<string, Sample[]> = {};
    const addVod = (key: string, s: Sample) => { (onDemand[key] ??= []).push(s); };
    for (let runIndex = 0; runIndex < RUNS; runIndex++) {
      for (const element of ELEMENTS) {
        const device = await host.login('admin', host.adminPassword, { 'device-id': `bench-${runIndex}-${element}` });
        const info = async (headers: Record<string, string>) => (await (await fetch(`${host.url}/watch/vod/${itemId}/play-info`, { headers: { authorization: `Bearer ${device}`, ...headers } })).json() as { url: string }).url;
        const remux = await info({});
        const transcode = await info({ 'device-max-height': '720', 'device-codecs': 'hevc' });
        const cases: [string, string][] = [
          ['antenna-vod-remux', `${host.url}${remux}`], ['ffmpeg-hls-fmp4-copy', `${files.base}/${vod.copy}`],
          ['antenna-vod-transcode', `${host.url}${transcode}`], ['ffmpeg-hls-fmp4-x264', `${files.base}/${vod.x264}`],
        ];
        // A transcode's first segment is encoded before anything plays: it gets the cold start's allowance.
        for (const [key, url] of runIndex % 2 ? cases.reverse() : cases) addVod(`${key}/${element}`, await measure(url, element, key === 'antenna-vod-transcode' ? 20 : 0));
        for (const j of host.host.jobs.list().filter((x) => x.kind === 'vod-transcode')) await host.host.jobs.get(j.key)?.stop('bench');
      }
    }

    await (await vodRef).exited;
    let rec = await api(`/recordings/${created.id}`);
    for (const deadline = Date.parse(next.programme.stop) + MINUTE; Date.now() < deadline && ['scheduled', 'recording'].includes(rec.status); await sleep(1000)) {
      rec = await api(`/recordings/${created.id}`);
    }
    const recorded: Record<string, Sample[]> = {};
    const addRec = (key: string, s: Sample) => { (recorded[key] ??= []).push(s); };
    for (let runIndex = 0; runIndex < RUNS; runIndex++) {
      for (const element of ELEMENTS) {
        const ours = `${host.url}/watch/recording/${created.id}?api_key=${token}`;
        const ref = `${refVod.base}/index.m3u8`;
        if (runIndex % 2) addRec(`ffmpeg-hls-vod/${element}`, await measure(ref, element));
        addRec(`antenna-recording/${element}`, await measure(ours, element));
        if (!(runIndex % 2)) addRec(`ffmpeg-hls-vod/${element}`, await measure(ref, element));
      }
    }
    return {
      live: Object.fromEntries(Object.entries(live).map(([k, v]) => [k, summary(v)])),
      vod: Object.fromEntries(Object.entries(onDemand).map(([k, v]) => [k, summary(v)])),
      recording: { status: rec.status, seconds: rec.duration, ...Object.fromEntries(Object.entries(recorded).map(([k, v]) => [k, summary(v)])) },
    };
  } finally {
    for (const stop of stops) await stop();
    await host.close();
    await refLive.close();
    await refVod.close();
    await files.close();
    await upstream.close();
    await rm(dir, { recursive: true, force: true });
  }
}
