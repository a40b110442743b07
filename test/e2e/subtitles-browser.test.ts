/**
 * Subtitles in a real browser: Debian's Chromium (driven by playwright-core)
 * plays a transcoded title's HLS master playlist with hls.js, from another
 * origin, with ?api_key=. The playlist's SUBTITLES rendition must become a
 * text track of the <video> whose cues are the file's embedded SubRip cues,
 * at their times on the video's timeline.
 *
 * Skipped (with the reason) when Chromium is not installed; CHROMIUM_PATH
 * overrides /usr/bin/chromium.
 */
import t from 'tap';
import path from 'node:path';
import { PlayerRig, skipWithoutChromium } from '../helpers/browser.js';
import { clip, tempDir, vodHost } from '../plugins/vod/fixtures.js';

// The functions given to page.evaluate()/waitForFunction() run in the page; the project compiles without the DOM lib.
declare const document: any;
declare const window: any;

const DEADLINE_MS = 45_000;

const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>Antenna subtitles</title><link rel="icon" href="data:,"></head><body>
<video id="v" muted autoplay playsinline width="320" height="180"></video>
<script src="/hls.min.js"></script>
<script>
(() => {
  const src = new URLSearchParams(location.search).get('src');
  const v = document.getElementById('v');
  const state = window.__state = { errors: [], notes: [] };
  const redact = (s) => String(s).replace(/((?:api_)?key=)[^&\\s"]*/g, '$1***');
  const hls = new Hls();
  hls.on(Hls.Events.ERROR, (_e, d) => (d.fatal ? state.errors : state.notes).push(redact('hls.js ' + d.type + '/' + d.details + (d.url ? ' ' + d.url : ''))));
  hls.on(Hls.Events.MANIFEST_PARSED, () => v.play().catch((e) => state.notes.push('play(): ' + e.message)));
  hls.on(Hls.Events.SUBTITLE_TRACKS_UPDATED, () => { if (hls.subtitleTracks.length) hls.subtitleTrack = 0; });
  hls.loadSource(src);
  hls.attachMedia(v);
  window.__hls = hls;
})();
</script></body></html>`;

t.setTimeout(120_000);
const skip = skipWithoutChromium;

t.test('hls.js in Chromium shows the subtitle track of a transcoded title', { skip }, async (t) => {
  const dir = await tempDir(t, 'antenna-subs-browser-');
  // AC-3 5.1 in MKV: a browser gets it transcoded (audio-only), so it plays through master.m3u8.
  await clip(path.join(dir, 'movies', 'Subbed (2020)', 'Subbed (2020).mkv'), { seconds: 10, width: 320, height: 180, audio: 'ac3', channels: 6, subtitle: true });
  const rig = new PlayerRig();
  t.teardown(() => rig.close());
  const { host, pages, browser } = await rig.start(vodHost([{ name: 'Movies', type: 'movies', paths: [path.join(dir, 'movies')] }], { listen: true, plugins: { subtitles: {} } }), PAGE);
  const id = (await host.inject({ method: 'GET', url: '/library/1', headers: host.authHeaders })).json().items[0].id as string;
  const master = `${host.url}/watch/vod/${id}/master.m3u8?api_key=${encodeURIComponent(host.adminToken)}`;
  const text = await (await fetch(master)).text();
  t.match(text, /#EXT-X-MEDIA:TYPE=SUBTITLES/, 'the master playlist lists a SUBTITLES rendition');

  const page = await browser.newPage();
  await page.goto(`${pages.url}/player.html?src=${encodeURIComponent(master)}`);
  // Playing, a text track, and its first cues loaded.
  await page.waitForFunction(() => {
    const v = document.getElementById('v');
    const s = window.__state;
    if (s.errors.length) return true;
    const track = v.textTracks[0];
    return v.currentTime > 1 && track && track.cues && track.cues.length >= 3;
  }, null, { timeout: DEADLINE_MS, polling: 200 }).catch(() => {});
  const r = await page.evaluate(() => {
    const v = document.getElementById('v');
    const tracks = Array.from(v.textTracks as ArrayLike<any>).map((tt: any) => ({
      kind: tt.kind, label: tt.label, language: tt.language, mode: tt.mode,
      cues: tt.cues ? Array.from(tt.cues as ArrayLike<any>).map((c: any) => [c.startTime, c.endTime, c.text]) : [],
    }));
    return { currentTime: v.currentTime, hlsSubtitleTracks: window.__hls.subtitleTracks.length, tracks, errors: window.__state.errors, notes: window.__state.notes };
  });
  for (const n of r.notes) t.comment(`hls.js note: ${n}`);
  t.strictSame(r.errors, [], 'no fatal hls.js errors');
  t.ok(r.currentTime > 1, `the video plays (currentTime ${r.currentTime.toFixed(2)})`);
  t.ok(r.hlsSubtitleTracks > 0, 'hls.js found the subtitle rendition');
  t.ok(r.tracks.length > 0, 'video.textTracks is not empty');
  const track = r.tracks[0];
  t.match(track, { kind: 'subtitles', label: 'English', language: 'en' }, 'labelled like the listing');
  const cues = (track?.cues ?? []) as [number, number, string][];
  t.ok(cues.length >= 3, `cues loaded (${cues.length})`);
  const first = cues.find((c) => c[2] === 'Line 1: the tone is 440 Hz');
  t.ok(first, 'the first SubRip cue');
  t.ok(first && Math.abs(first[0] - 0) < 0.05 && Math.abs(first[1] - 1) < 0.05, `on the video's timeline, 0 → 1 s (${first?.slice(0, 2).map((x) => Number(x).toFixed(3)).join(' → ')})`);
  const second = cues.find((c) => c[2] === 'Line 2: the tone is 441 Hz');
  t.ok(second && Math.abs(second[0] - 2) < 0.05, 'the second cue at 2 s');
});
