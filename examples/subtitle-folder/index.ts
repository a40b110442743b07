/**
 * A subtitle provider plugin as a third party would write it (it imports only
 * the SDK): subtitles kept in one folder of their own, away from the media,
 * named after the media file they belong to:
 *
 *   /media/movies/Heat (1995)/Heat (1995).mkv
 *   /srv/subtitles/Heat (1995).en.srt
 *   /srv/subtitles/Heat (1995).de.forced.ass
 *
 *   plugins:
 *     ./dist/examples/subtitle-folder: { path: /srv/subtitles }   # in this repository
 *     antenna-subtitle-folder: { path: /srv/subtitles }           # installed as a package
 *
 * Its tracks are listed after the built-in ones and served at
 * /api/items/{id}/subtitle/folder/<n>.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  coreServices, definePlugin, subtitlesExtensionPoint, Type,
  type SubtitleFormat, type SubtitleProvider, type SubtitleRegistry, type SubtitleTrack,
} from 'antenna/sdk';

const configSchema = Type.Object({
  /** The subtitles folder, absolute or relative to the config file. */
  path: Type.String({ minLength: 1 }),
}, { additionalProperties: false });

const FORMATS: Record<string, SubtitleFormat> = { srt: 'srt', vtt: 'vtt', ass: 'ass', ssa: 'ssa' };
const CODECS: Record<SubtitleFormat, string> = { srt: 'subrip', vtt: 'webvtt', ass: 'ass', ssa: 'ssa' };
const FLAGS = new Set(['forced', 'sdh', 'cc', 'default']);

interface FolderFile { file: string; format: SubtitleFormat; words: string[] }

/** `<media name>.<words…>.<ext>` files of the folder, sorted by name: a file's position is its track id. */
async function filesFor(folder: string, mediaPath: string): Promise<FolderFile[]> {
  const stem = `${path.basename(mediaPath, path.extname(mediaPath)).toLowerCase()}.`;
  const names = await readdir(folder).catch(() => [] as string[]);
  return names
    .filter((name) => name.toLowerCase().startsWith(stem) && FORMATS[path.extname(name).slice(1).toLowerCase()])
    .sort()
    .map((name) => ({
      file: path.join(folder, name),
      format: FORMATS[path.extname(name).slice(1).toLowerCase()]!,
      words: name.slice(stem.length, -path.extname(name).length).split('.').filter(Boolean),
    }));
}

function folderProvider(folder: string, subtitles: SubtitleRegistry): SubtitleProvider {
  return {
    id: 'folder',
    name: `Subtitles folder ${folder}`,
    async listTracks({ file }) {
      return (await filesFor(folder, file.path)).map((f, n): SubtitleTrack => {
        const words = f.words.map((w) => w.toLowerCase());
        return {
          id: String(n),
          // Antenna turns whatever code this is (en, eng, pt-BR) into its canonical form, or null.
          language: words.find((w) => !FLAGS.has(w) && /^[a-z]{2,3}(-[a-z]{2})?$/.test(w)) ?? null,
          codec: CODECS[f.format],
          forced: words.includes('forced'),
          hearingImpaired: words.includes('sdh') || words.includes('cc'),
          default: words.includes('default'),
          external: true,
        };
      });
    },
    async fetchTrack({ file, signal }, trackId) {
      const f = (await filesFor(folder, file.path))[Number(trackId)];
      if (!f || !/^\d+$/.test(trackId)) return undefined; // → 404
      // toWebVtt decodes the bytes (UTF-8, else Windows-1252) and converts SubRip/ASS to WebVTT.
      return subtitles.toWebVtt(await readFile(f.file, { signal }), f.format);
    },
  };
}

export default definePlugin({
  id: 'subtitle-folder',
  version: '1.0.0',
  host: '^1.1',
  description: 'Subtitles from a folder of their own, named after the media files',
  configSchema,
  dependsOn: ['subtitles'],
  register(env) {
    env.registerInit({
      deps: { config: coreServices.config, host: coreServices.host, subtitles: subtitlesExtensionPoint },
      async init({ config, host, subtitles }) {
        const folder = path.resolve(host.configDir, config.path);
        subtitles.addProvider(folderProvider(folder, subtitles));
      },
    });
  },
});
