/**
 * Live manifests as players need them (issue #24's live items), over a real
 * upstream and ffmpeg: the first answer to an idle channel is complete (the
 * validator over the HLS and the DASH of it: start rule, playlists that exist,
 * CODECS against the init segments, BANDWIDTH against the measured peak,
 * CHANNELS, FRAME-RATE, EXT-X-INDEPENDENT-SEGMENTS, an MPD GStreamer
 * recognises); reloads that never change the target duration, with audio and
 * video aligned; a copied source with long, irregular GOPs; a switch from
 * copying HEVC to transcoding when a viewer cannot decode it; and the segment
 * events a holder (the DVR) gets.
 */
import t from 'tap';
import { existsSync } from 'node:fs';
import { coreServices, definePlugin, liveTvService, type LiveSegment, type LiveTvAccess } from '../../../sdk/index.js';
import { createTestHost, type TestHost } from '../../../sdk/testing.js';
import { checkHlsMaster, checkHlsMedia, PlaylistHistory, validateDash, validateHls, type Fetcher, type MediaPlaylistInfo } from '../../helpers/manifest-validator.js';
import { killGroup, sourceArgs, startUpstream, type Upstream } from '../../helpers/upstream.js';
import { playerPids } from '../../helpers/player.js';
import { channels, m3u, tempDir, write } from './fixtures.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Keyframes 2 s then 4 s apart, over and over: copied, the segments are 2, 4, 2, 4 … s. */
const IRREGULAR = Array.from({ length: 200 }, (_, i) => Math.floor(i / 2) * 6 + (i % 2) * 2);

t.test('live manifests', async (t) => {
  const upstream: Upstream = await startUpstream();
  t.teardown(async () => {
    await upstream.close();
    for (const pid of playerPids) killGroup(pid);
  });
  upstream.encode('/live/gops.ts', sourceArgs({ keyframes: IRREGULAR }));
  upstream.encode('/live/hevc.ts', sourceArgs({ hevc: true }));
  const dir = await tempDir(t);
  const list = await write(dir, 'tv.m3u', m3u([
    { name: 'One', tvgId: 'one', chno: '1', url: `${upstream.base}/live/one.ts` },
    { name: 'Gops', tvgId: 'gops', chno: '2', url: `${upstream.base}/live/gops.ts` },
    { name: 'Held', tvgId: 'held', chno: '3', url: `${upstream.base}/live/held.ts` },
    { name: 'Hevc', tvgId: 'hevc', chno: '4', url: `${upstream.base}/live/hevc.ts` },
  ]));
  let access: LiveTvAccess | undefined;
  const holder = definePlugin({
    id: 'segment-holder', version: '1.0.0', host: '^1.1',
    register(env) {
      env.registerInit({ deps: { live: liveTvService, logger: coreServices.logger }, init({ live }) { access = live; } });
    },
  });
  const host: TestHost = await createTestHost({
    listen: true,
    definitions: [holder],
    plugins: {
      'live-tv': { initialImport: 'await', idleTimeout: '5s', readyTimeout: '30s' },
      'm3u-tuner': { sources: [{ name: 'Main', url: list, maxStreams: 5 }] },
    },
  });
  t.teardown(() => host.close());
  const all = await channels(host);
  const id = (name: string) => all.find((c) => c.name === name)!.id;
  const token = encodeURIComponent(host.adminToken);
  const master = (cid: number) => `${host.url}/watch/live/${cid}?api_key=${token}`;
  const mpd = (cid: number) => `${host.url}/watch/live/${cid}/master.mpd?api_key=${token}`;

  t.test('cold start: the first answer is complete, in HLS and in DASH', async (t) => {
    const cid = id('One');
    const hls = await validateHls(master(cid));
    t.strictSame(hls.problems, [], 'the HLS presentation passes the validator');
    const variant = hls.master.variants[0];
    t.match(variant, { codecs: /^avc1\.[0-9a-f]{6},mp4a\.40\.2$/, resolution: '640x360', frameRate: '25.000', audio: 'audio' }, 'CODECS, RESOLUTION, FRAME-RATE');
    t.equal(hls.master.renditions[0]?.channels, '2', 'CHANNELS on the audio rendition');
    const playlists = [...hls.playlists.values()];
    t.equal(playlists.length, 2, 'a video and an audio playlist');
    for (const p of playlists) {
      const seconds = p.segments.reduce((n, s) => n + s.duration, 0);
      t.ok(seconds >= 3 * p.targetDuration - 0.05, `a playlist of ${seconds.toFixed(2)} s: three target durations (${p.targetDuration} s) from the first answer`);
    }
    const dash = await validateDash(mpd(cid));
    for (const note of dash.notes) t.comment(note);
    t.strictSame(dash.problems, [], 'the DASH presentation passes the validator (required attributes, non-empty timelines, bandwidth, codecs)');
    t.equal(dash.type, 'dynamic');
  });

  t.test('reloads: the target duration never changes, sequences go on, audio and video stay aligned, BANDWIDTH follows the peak', async (t) => {
    const cid = id('One');
    const { master: m } = await validateHls(master(cid), { segments: false });
    const uris = [m.variants[0].uri, m.renditions[0].uri!];
    const history = uris.map(() => new PlaylistHistory());
    let last: MediaPlaylistInfo[] = [];
    for (let i = 0; i < 8; i++) {
      last = [];
      for (const [n, uri] of uris.entries()) {
        const text = await (await fetch(new URL(uri, host.url))).text();
        const checked = checkHlsMedia(text);
        t.strictSame(checked.problems, [], `reload ${i}, ${uri.split('?')[0]}: valid`);
        history[n].add(checked.playlist!);
        last.push(checked.playlist!);
      }
      const [video, audio] = last;
      t.equal(video.mediaSequence, audio.mediaSequence, `reload ${i}: the same EXT-X-MEDIA-SEQUENCE`);
      t.equal(video.segments.length, audio.segments.length, 'the same number of segments');
      t.ok(video.segments.every((s, k) => Math.abs(s.duration - audio.segments[k].duration) < 0.1), 'cut at the same points');
      await sleep(1500);
    }
    for (const h of history) t.strictSame(h.problems, [], 'across reloads: target duration constant, sequences never back');
    const again = await validateHls(master(cid));
    t.strictSame(again.problems, [], 'BANDWIDTH still at least the measured peak, 12 s later');
  });

  t.test('a copied source with 2 s and 4 s GOPs: a target duration chosen up front that never changes', async (t) => {
    const cid = id('Gops');
    const first = await validateHls(master(cid));
    t.strictSame(first.problems, [], 'the first answer passes the validator');
    const video = [...first.playlists.values()][0];
    t.equal(video.targetDuration, 4, 'EXT-X-TARGETDURATION 4: the longest GOP');
    t.ok(video.segments.some((s) => Math.round(s.duration) === 2) && video.segments.some((s) => Math.round(s.duration) === 4), `segments at the source's keyframes (${video.segments.map((s) => s.duration.toFixed(2)).join(', ')})`);
    const uris = [first.master.variants[0].uri, first.master.renditions[0].uri!];
    const history = uris.map(() => new PlaylistHistory());
    for (let i = 0; i < 6; i++) {
      const loaded = await Promise.all(uris.map(async (uri) => checkHlsMedia(await (await fetch(new URL(uri, host.url))).text())));
      loaded.forEach((l, n) => {
        t.strictSame(l.problems, [], `reload ${i}: valid`);
        history[n].add(l.playlist!);
      });
      t.equal(loaded[0].playlist!.mediaSequence, loaded[1].playlist!.mediaSequence, 'audio and video: the same sequence');
      await sleep(2000);
    }
    for (const h of history) t.strictSame(h.problems, [], 'target duration constant across reloads');
    const dash = await validateDash(mpd(cid));
    t.strictSame(dash.problems, [], 'its MPD passes the validator');
  });

  t.test('copying HEVC, then a viewer who cannot decode it: transcoding, and no playlist ever shrinks', async (t) => {
    const cid = id('Hevc');
    // A player that decodes HEVC: copy mode.
    const hevcPlayer: Fetcher = async (url) => {
      const res = await fetch(url, { headers: { 'Device-Codecs': 'hevc,h264' } });
      return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
    };
    const first = await validateHls(master(cid), { fetch: hevcPlayer });
    t.strictSame(first.problems, [], 'copied HEVC passes the validator (CODECS profile and level against the init segment)');
    t.match(first.master.variants[0].codecs, /^hvc1\.1\.6\.L\d+\.[0-9A-F.]+,mp4a\.40\.2$/, 'CODECS: the full hvc1 string from the hvcC box (ffmpeg says a bare hvc1)');
    const videoUri = first.master.variants[0].uri;
    // That player keeps reloading its video playlist while another viewer arrives.
    const history = new PlaylistHistory();
    const problems: string[] = [];
    let polling = true;
    const poller = (async () => {
      while (polling) {
        const checked = checkHlsMedia(await (await fetch(new URL(videoUri, host.url))).text());
        problems.push(...checked.problems);
        if (checked.playlist) history.add(checked.playlist);
        await sleep(500);
      }
    })();
    // A browser: H.264 only. Its first answer comes once the transcoded stream can start.
    const second = await validateHls(master(cid));
    polling = false;
    await poller;
    t.strictSame(second.problems, [], "the H.264 viewer's presentation passes the validator");
    t.match(second.master.variants[0].codecs, /^avc1\.[0-9a-f]{6},mp4a\.40\.2$/, 'CODECS avc1 (transcoded)');
    t.ok([...second.playlists.values()].every((p) => p.discontinuitySequence >= 1), 'only the transcoded periods are listed for it');
    t.strictSame(problems, [], "the HEVC player's playlist stayed valid throughout (never below three target durations)");
    t.strictSame(history.problems, [], 'its target duration never changed');
  });

  t.test('a holder gets each finished segment: kept ones first, then new ones, every representation per number', async (t) => {
    const cid = id('Held');
    const hold = await access!.hold(cid, 'test holder');
    const seen: LiveSegment[] = [];
    const stop = hold.onSegment((s) => seen.push(s));
    for (const deadline = Date.now() + 30_000; seen.length < 8 && Date.now() < deadline;) await sleep(200);
    const late: LiveSegment[] = [];
    const stopLate = hold.onSegment((s) => late.push(s));
    t.ok(late.length >= 8 && late.slice(0, 8).every((s, i) => s.path === seen[i].path), 'a later subscriber is told the kept segments first, oldest first');
    stop();
    stopLate();
    const count = seen.length;
    await sleep(2500);
    t.equal(seen.length, count, 'no calls after stop()');
    const bySequence = new Map<number, LiveSegment[]>();
    for (const s of seen) bySequence.set(s.sequence, [...(bySequence.get(s.sequence) ?? []), s]);
    const numbers = [...bySequence.keys()];
    t.strictSame(numbers, numbers.map((_, i) => numbers[0] + i), 'consecutive sequence numbers');
    t.ok([...bySequence.values()].every((g) => g.map((s) => s.representation.kind).sort().join() === 'audio,video'), 'a video and an audio segment for each');
    const video = seen.filter((s) => s.representation.kind === 'video');
    t.ok(video.every((s, i) => i === 0 || s.start === video[i - 1].start + video[i - 1].duration), 'back to back in media time');
    t.ok(video.every((s, i) => i === 0 || s.wallClock > video[i - 1].wallClock), 'wall-clock times grow');
    t.ok(seen.every((s) => existsSync(s.path) && existsSync(s.initPath)), 'the files are there to link');
    t.match(video[0], { run: 0, targetDuration: 2, representation: { id: 'video', codecs: /^avc1\./, width: 640, height: 360, timescale: Number } });
    t.ok(video[0].representation.bandwidth > 100_000, `with a measured bandwidth (${video[0].representation.bandwidth})`);
    hold.release();
  });

  t.test('the HLS master never names a playlist that does not exist, the MPD says what GStreamer needs', async (t) => {
    const text = await (await fetch(master(id('One')))).text();
    const m = checkHlsMaster(text);
    for (const uri of [...m.variants.map((v) => v.uri), ...m.renditions.map((r) => r.uri!)]) {
      t.equal((await fetch(new URL(uri, host.url))).status, 200, `${uri.split('?')[0]}: 200`);
    }
    const body = await (await fetch(mpd(id('One')))).text();
    t.match(body, /^<\?xml version="1\.0" encoding="UTF-8"\?>\n<MPD xmlns="urn:mpeg:dash:schema:mpd:2011"/, 'the namespace GStreamer sniffs, first thing');
    t.notMatch(body, /schemaLocation/, 'no schemaLocation');
  });
});
