/**
 * GStreamer as a header-less player of live TV (it cannot send a token
 * header: the URL carries `api_key`, the manifests keyed URLs): the classic
 * `playbin` (hlsdemux, dashdemux) and `playbin3` (hlsdemux2) reach their
 * first frame on a channel and keep showing new ones. Each player tunes its
 * own channel, as a viewer switching on a channel nobody watches; then the
 * classic `playbin` joins a channel that has been running for more than 30 s
 * (its media times far from 0: issue 24 item 7 saw a frozen picture there).
 * `playbin3` on the DASH MPD plays alongside: GStreamer 1.22.0's dashdemux2
 * buffers 30 s of media before its first frame (it never sets a recommended
 * buffering threshold, and the zero it is initialised with selects
 * max-buffering-time; fixed in 1.22.1), so it gets DASH3_SECONDS.
 * Skipped when gst-launch-1.0 is not installed.
 */
import t from 'tap';
import { createTestHost } from '../../sdk/testing.js';
import { playWithGstreamer, skipWithoutGstreamer } from '../helpers/gstreamer.js';
import { startUpstream } from '../helpers/upstream.js';
import { channels, m3u, tempDir, write } from '../plugins/live-tv/fixtures.js';

/** How long each player runs: the cold start (three segments) and several seconds of pictures. */
const PLAY_SECONDS = 20;
/** How long playbin plays a running channel: a first frame promptly, then pictures at the clock's pace. */
const WARM_SECONDS = 12;
/** How long playbin3 plays the DASH MPD: the cold start, 1.22.0's 30 s of buffering, and several seconds of pictures. */
const DASH3_SECONDS = 50;

t.test('GStreamer plays live TV without headers', { skip: skipWithoutGstreamer }, async (t) => {
  const upstream = await startUpstream();
  t.teardown(() => upstream.close());
  const dir = await tempDir(t, 'antenna-gst-');
  const names = ['Hls', 'Hls3', 'Dash', 'Dash3', 'Warm'];
  const list = await write(dir, 'tv.m3u', m3u(names.map((name, i) => ({ name, tvgId: name.toLowerCase(), chno: String(i + 1), url: `${upstream.base}/live/${name.toLowerCase()}.ts` }))));
  const host = await createTestHost({
    listen: true,
    plugins: {
      'live-tv': { initialImport: 'await', idleTimeout: '10s', readyTimeout: '30s' },
      'm3u-tuner': { sources: [{ name: 'Main', url: list, maxStreams: 5 }] },
    },
  });
  t.teardown(() => host.close());
  const all = await channels(host);
  const id = (name: string) => all.find((c) => c.name === name)!.id;
  const token = encodeURIComponent(host.adminToken);
  // Warm runs while the others play: a viewer tunes it now and keeps loading its playlist.
  const warm = `${host.url}/watch/live/${id('Warm')}?api_key=${token}`;
  const tunedAt = Date.now();
  const master = await (await fetch(warm)).text();
  const playlist = new URL(master.split('\n').find((l) => l.startsWith('/'))!, host.url).href;
  const viewer = setInterval(() => { fetch(playlist).then((r) => r.arrayBuffer(), () => {}); }, 2000);
  t.teardown(() => clearInterval(viewer));
  const dash3 = playWithGstreamer(`${host.url}/watch/live/${id('Dash3')}/master.mpd?api_key=${token}`, DASH3_SECONDS, 'playbin3');
  const cases: { name: string; element: 'playbin' | 'playbin3'; url: string }[] = [
    { name: 'Hls', element: 'playbin', url: `${host.url}/watch/live/${id('Hls')}?api_key=${token}` },
    { name: 'Hls3', element: 'playbin3', url: `${host.url}/watch/live/${id('Hls3')}?api_key=${token}` },
    { name: 'Dash', element: 'playbin', url: `${host.url}/watch/live/${id('Dash')}/master.mpd?api_key=${token}` },
  ];
  for (const c of cases) {
    const kind = `${c.element} on ${c.name === 'Dash' ? 'the DASH MPD' : 'the HLS master'}`;
    const p = await playWithGstreamer(c.url, PLAY_SECONDS, c.element);
    t.ok(p.firstFrameMs !== null, `${kind}: a first frame${p.firstFrameMs === null ? `; gst-launch: ${p.errors}` : ` after ${p.firstFrameMs} ms (cold start included)`}`);
    const shown = p.lastPts !== null && p.firstPts !== null ? p.lastPts - p.firstPts : 0;
    const after = p.firstFrameMs === null ? 0 : PLAY_SECONDS - p.firstFrameMs / 1000;
    // Frames keep coming at the clock's pace: no frozen picture behind a timeline that starts late.
    t.ok(shown >= after - 4 && p.frames >= (after - 4) * 25, `${kind}: ${shown.toFixed(1)} s of pictures (${p.frames} frames) in the ${after.toFixed(1)} s after the first`);
  }

  // Joining a running channel: its first frame within a few seconds (gst-launch is stopped after WARM_SECONDS),
  // not once the pipeline clock has caught up with media times that count from the session's start.
  for (; Date.now() - tunedAt < 32_000;) await new Promise((r) => setTimeout(r, 1000));
  const running = (Date.now() - tunedAt) / 1000;
  clearInterval(viewer);
  const p = await playWithGstreamer(warm, WARM_SECONDS, 'playbin');
  const listed = await (await fetch(playlist)).text();
  t.comment(`running channel's playlist: ${(listed.match(/#EXT-X-DISCONTINUITY\n/g) ?? []).length} discontinuities, ${listed.split('\n').filter((l) => l.startsWith('#EXT-X-MEDIA-SEQUENCE') || l.startsWith('#EXT-X-DISCONTINUITY-SEQUENCE')).join(' ')}`);
  t.ok(p.firstFrameMs !== null && p.firstPts !== null && p.firstPts > 20, `playbin joining a channel running for ${running.toFixed(0)} s: a first frame within ${WARM_SECONDS} s, at media time ${p.firstPts ?? '-'} s${p.firstFrameMs === null ? `; gst-launch: ${p.errors}` : ` after ${p.firstFrameMs} ms`}`);
  const shown = p.lastPts !== null && p.firstPts !== null ? p.lastPts - p.firstPts : 0;
  const after = p.firstFrameMs === null ? 0 : WARM_SECONDS - p.firstFrameMs / 1000;
  t.ok(shown >= after - 3 && p.frames >= (after - 3) * 25, `playbin on the running channel: ${shown.toFixed(1)} s of pictures (${p.frames} frames) in the ${after.toFixed(1)} s after the first`);

  // Its audio starts at media time 0: with a Period starting later, dashdemux2 put it before the Period
  // (a negative running time), its buffering level stayed at 0 and no frame ever came.
  const d = await dash3;
  t.ok(d.firstFrameMs !== null, `playbin3 on the DASH MPD: a first frame${d.firstFrameMs === null ? `; gst-launch: ${d.errors}` : ` after ${d.firstFrameMs} ms (cold start and 30 s of buffering included)`}`);
  const dashShown = d.lastPts !== null && d.firstPts !== null ? d.lastPts - d.firstPts : 0;
  const dashAfter = d.firstFrameMs === null ? 0 : DASH3_SECONDS - d.firstFrameMs / 1000;
  t.ok(dashShown >= dashAfter - 4 && d.frames >= (dashAfter - 4) * 25, `playbin3 on the DASH MPD: ${dashShown.toFixed(1)} s of pictures (${d.frames} frames) in the ${dashAfter.toFixed(1)} s after the first`);
});
