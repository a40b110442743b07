/**
 * dash-packager: DASH MPDs over the segmenter's fMP4 segments. Rewrites the
 * SegmentTemplate's initialization and media templates through the caller's
 * link() (the $RepresentationID$/$Number$ placeholders stay in the path, the
 * signed key goes in the query), and keeps the MPD dynamic while live.
 */
import { definePlugin, dashPackagerService, type Packager } from 'antenna/sdk';

export const dashPackager: Packager = {
  format: 'dash',
  contentType: 'application/dash+xml',
  entry: 'manifest.mpd',
  rewrite(manifest, link) {
    let out = manifest.replace(/\b(initialization|media)="([^"]+)"/g, (_, attr: string, template: string) => `${attr}="${escapeXml(link(template))}"`);
    if (/type="dynamic"/.test(out)) {
      // ffmpeg sets the delay to one segment, which makes dash.js stall at the live edge; three segments don't.
      out = out.replace(/suggestedPresentationDelay="PT([\d.]+)S"/, (_, s: string) => `suggestedPresentationDelay="PT${(Number(s) * 3).toFixed(1)}S"`);
      // The server's clock, in the MPD itself: without it dash.js asks a public time server.
      if (!/<UTCTiming/.test(out)) out = out.replace(/<\/MPD>\s*$/, `\t<UTCTiming schemeIdUri="urn:mpeg:dash:utc:direct:2014" value="${new Date().toISOString()}"/>\n</MPD>\n`);
    }
    return out;
  },
};

function escapeXml(text: string): string {
  return text.replace(/&(?!amp;)/g, '&amp;');
}

export default definePlugin({
  id: 'dash-packager',
  version: '1.0.0',
  host: '^1.1',
  description: 'DASH (fMP4) manifests for live, VOD and recordings',
  register(env) {
    env.registerInit({ deps: {}, provides: { packager: dashPackagerService }, init: () => ({ packager: dashPackager }) });
  },
});
