/**
 * A test plugin with misbehaving subtitle providers (loaded by path by
 * providers.test.ts): one that never answers, one that throws, one whose
 * fetch fails, one with an invalid track id beside a good track.
 */
import { coreServices, definePlugin, subtitlesExtensionPoint, Type, type Static } from 'antenna/sdk';

const configSchema = Type.Object({ duplicate: Type.Boolean({ default: false }) });

export default definePlugin({
  id: 'subtitle-test-providers',
  version: '1.0.0',
  host: '^1',
  configSchema,
  dependsOn: ['subtitles'],
  register(env) {
    env.registerInit({
      deps: { subtitles: subtitlesExtensionPoint, config: coreServices.config },
      async init({ subtitles, config }) {
        if ((config as Static<typeof configSchema>).duplicate) {
          subtitles.addProvider({ id: 'embedded', name: 'again', listTracks: async () => [], fetchTrack: async () => undefined });
        }
        subtitles.addProvider({
          id: 'silent', name: 'never answers',
          // Honours the signal: rejects when the listing gives up on it.
          listTracks: ({ signal }) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')))),
          fetchTrack: async () => undefined,
        });
        subtitles.addProvider({
          id: 'broken', name: 'throws',
          listTracks: async () => { throw new Error('provider database unreachable'); },
          fetchTrack: async () => { throw new Error('provider database unreachable'); },
        });
        subtitles.addProvider({
          id: 'good', name: 'one good track, one bad id',
          listTracks: async ({ item }) => [
            { id: 'bad id!', language: 'en', codec: 'subrip', external: true },
            { id: 'ok.1', language: 'spa', title: `${item.title} commentary`, codec: 'webvtt', external: true, hearingImpaired: true },
          ],
          fetchTrack: async (_request, id) => (id === 'ok.1' ? subtitles.toWebVtt('1\n00:00:00,250 --> 00:00:01,000\nHola\n', 'srt') : undefined),
        });
      },
    });
  },
});
