/**
 * GStreamer as a header-less player of live TV (it cannot send a token
 * header: the URL carries `api_key`, the manifests keyed URLs): the classic
 * `playbin` (hlsdemux, dashdemux) and `playbin3` (hlsdemux2) reach their
 * first frame on a channel and keep showing new ones. Each player tunes its
 * own channel, as a viewer switching on a channel nobody watches. Skipped
 * when gst-launch-1.0 is not installed.
 */
import t from 'tap';
import { createTestHost } from '../../sdk/testing.js';
import { playWithGstreamer, skipWithoutGstreamer } from '../helpers/gstreamer.js';
import { startUpstream } from '../helpers/upstream.js';
import { channels, m3u, tempDir, write } from '../plugins/live-tv/fixtures.js';

/** How long each player runs: the cold start (three segments) and several seconds of pictures. */
const PLAY_SECONDS = 20;

t.test('GStreamer plays live TV without headers', { skip: skipWithoutGstreamer }, async (t) => {
  const upstream = await startUpstream();
  t.teardown(() => upstream.close());
  const dir = await tempDir(t, 'antenna-gst-');
  const names = ['Hls', 'Hls3', 'Dash'];
  const list = await write(dir, 'tv.m3u', m3u(names.map((name, i) => ({ name, tvgId: name.toLowerCase(), chno: String(i + 1), url: `${upstream.base}/live/${name.toLowerCase()}.ts` }))));
  const host = await createTestHost({
    listen: true,
    plugins: {
      'live-tv': { initialImport: 'await', idleTimeout: '10s', readyTimeout: '30s' },
      'm3u-tuner': { sources: [{ name: 'Main', url: list, maxStreams: 3 }] },
    },
  });
  t.teardown(() => host.close());
  const all = await channels(host);
  const id = (name: string) => all.find((c) => c.name === name)!.id;
  const token = encodeURIComponent(host.adminToken);
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
});
