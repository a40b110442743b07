/**
 * hls-packager: HLS master and media playlists over the segmenter's fMP4
 * segments. Rewrites every URI (media playlists, EXT-X-MAP, segments) through
 * the caller's link(), so players only ever see URLs with a signed key.
 */
import { definePlugin, hlsPackagerService, type Packager } from 'antenna/sdk';

export const hlsPackager: Packager = {
  format: 'hls',
  contentType: 'application/vnd.apple.mpegurl',
  entry: 'master.m3u8',
  rewrite(manifest, link) {
    return manifest.split(/\r?\n/).map((line) => {
      if (!line) return line;
      if (line.startsWith('#')) return line.replace(/URI="([^"]+)"/g, (_, uri: string) => `URI="${link(uri)}"`);
      return link(line.trim());
    }).join('\n');
  },
};

export default definePlugin({
  id: 'hls-packager',
  version: '1.0.0',
  host: '^1.1',
  description: 'HLS (fMP4) manifests for live, VOD and recordings',
  register(env) {
    env.registerInit({ deps: {}, provides: { packager: hlsPackagerService }, init: () => ({ packager: hlsPackager }) });
  },
});
