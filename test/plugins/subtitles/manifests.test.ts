/**
 * Transcoded manifests reference the subtitle tracks, so standard players
 * offer them: the HLS master lists SUBTITLES renditions (WebVTT media
 * playlists), the MPD lists text AdaptationSets; every URL in them works with
 * the signed key it carries, without the user's token.
 */
import t from 'tap';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import * as HLS from 'hls-parser';
import { clip, tempDir, vodHost } from '../vod/fixtures.js';
import { srtText } from './media.js';
import { parseVtt } from './vtt-reader.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const mpdParser: { parse(text: string, options: { manifestUri: string }): any } = require('mpd-parser');

t.test('HLS and DASH manifests list the subtitle tracks', async (t) => {
  const dir = await tempDir(t, 'antenna-subs-manifest-');
  const folder = path.join(dir, 'movies', 'Subbed (2020)');
  // AC-3 5.1 in MKV: transcoded (audio-only) for a browser.
  await clip(path.join(folder, 'Subbed (2020).mkv'), { seconds: 4, width: 320, height: 180, audio: 'ac3', channels: 6, subtitle: true });
  await writeFile(path.join(folder, 'Subbed (2020).fr.forced.srt'), srtText([{ start: 1500, end: 2500, lines: ['Forcé'] }]));
  const host = await vodHost([{ name: 'Movies', type: 'movies', paths: [path.join(dir, 'movies')] }], { listen: true, plugins: { subtitles: {} } });
  t.teardown(() => host.close());
  const id = (await host.inject({ method: 'GET', url: '/library/1', headers: host.authHeaders })).json().items[0].id as string;
  // What the listing's URLs serve: the manifests must hand out the same cues (the file's own times).
  const listed = (await host.inject({ method: 'GET', url: `/api/items/${id}/subtitle-tracks`, headers: host.authHeaders })).json().tracks as { label: string; url: string }[];
  const expectedCues: Record<string, unknown[]> = {};
  for (const track of listed) {
    const cues = parseVtt((await host.inject({ method: 'GET', url: track.url, headers: host.authHeaders })).body);
    expectedCues[track.label] = cues.map((c) => [c.start, c.end, c.text]);
  }
  t.equal((expectedCues.English?.[0] as unknown[] | undefined)?.[2], 'Line 1: the tone is 440 Hz', 'the embedded track');
  t.strictSame(expectedCues['French (Forced, External)'], [[1500, 2500, 'Forcé']], 'the sidecar');

  /** A URL handed out by a manifest, fetched as a player would: no Authorization header. */
  const fetchPlain = async (url: string) => {
    const res = await fetch(url);
    return { status: res.status, type: res.headers.get('content-type') ?? '', body: await res.text() };
  };

  await t.test('HLS', async (t) => {
    const masterUrl = `${host.url}/watch/vod/${id}/master.m3u8`;
    const res = await fetch(masterUrl, { headers: host.authHeaders });
    t.equal(res.status, 200);
    const master = HLS.parse(await res.text()) as HLS.types.MasterPlaylist;
    const subtitles = master.variants[0]?.subtitles ?? [];
    t.strictSame(subtitles.map((s) => [s.name, s.language, s.forced ?? false]), [['English', 'en', false], ['French (Forced, External)', 'fr', true]], 'a SUBTITLES rendition per track, named and tagged like the listing');
    for (const s of subtitles) {
      const mediaUrl = new URL(s.uri!, masterUrl).href;
      const media = await fetchPlain(mediaUrl);
      t.equal(media.status, 200, `${s.name}: media playlist`);
      const playlist = HLS.parse(media.body) as HLS.types.MediaPlaylist;
      t.equal(playlist.isMasterPlaylist, false);
      t.ok(playlist.endlist, `${s.name}: a complete (VOD) playlist`);
      const total = playlist.segments.reduce((sum, seg) => sum + seg.duration, 0);
      t.ok(Math.abs(total - 4) < 0.2, `${s.name}: it covers the title (${total} s)`);
      const vtt = await fetchPlain(new URL(playlist.segments[0]!.uri, mediaUrl).href);
      t.equal(vtt.status, 200, `${s.name}: the WebVTT file, with the key the manifest gave it`);
      t.match(vtt.type, /^text\/vtt/);
      // The transcode's fMP4 timestamps do not start at 0: without a timestamp map hls.js drops every cue.
      t.match(vtt.body, /^WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:\d+,LOCAL:00:00:00\.000\n/, `${s.name}: X-TIMESTAMP-MAP places the cues on the segments' timeline`);
      t.strictSame(parseVtt(vtt.body).map((c) => [c.start, c.end, c.text]), expectedCues[s.name!], `${s.name}: the track's cues`);
    }
  });

  await t.test('DASH', async (t) => {
    const mpdUrl = `${host.url}/watch/vod/${id}/master.mpd`;
    const res = await fetch(mpdUrl, { headers: host.authHeaders });
    t.equal(res.status, 200);
    const text = await res.text();
    t.match(text, /<AdaptationSet[^>]*contentType="text"[^>]*mimeType="text\/vtt"|<AdaptationSet[^>]*mimeType="text\/vtt"[^>]*contentType="text"/, 'a text AdaptationSet');
    const manifest = mpdParser.parse(text, { manifestUri: mpdUrl });
    const groups = Object.values(manifest.mediaGroups?.SUBTITLES ?? {}).flatMap((g: any) => Object.entries(g)) as [string, any][];
    t.strictSame(groups.map(([, g]) => g.language).sort(), ['en', 'fr'], 'one per track (mpd-parser)');
    for (const [label, g] of groups) {
      const vtt = await fetchPlain(g.playlists[0].resolvedUri);
      t.equal(vtt.status, 200, `${label}: the WebVTT file, with the key the MPD gave it`);
      t.match(vtt.type, /^text\/vtt/);
      // The MPD's presentationTimeOffset makes period time 0 the title's time 0: cue times as they are.
      t.strictSame(parseVtt(vtt.body).map((c) => [c.start, c.end, c.text]), expectedCues[label], `${label}: the track's cues`);
    }
  });
});
