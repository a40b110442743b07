/**
 * subtitles: the subtitle tracks of VOD items, served as WebVTT. Built-in
 * providers read text streams embedded in the media file (extracted with
 * ffmpeg, cached) and sidecar files next to it; other plugins add providers
 * through `subtitlesExtensionPoint`. The tracks are listed by
 * GET /api/items/{id}/subtitle-tracks and in the vod plugin's HLS and DASH
 * manifests.
 */
import path from 'node:path';
import {
  coreServices, definePlugin, Duration, parseDuration, subtitlesExtensionPoint, Type, vodCatalogService, vodExtensionPoint,
} from 'antenna/sdk';
import { EmbeddedExtractor, embeddedProvider } from './embedded.js';
import { Providers } from './registry.js';
import { subtitleRoutes } from './routes.js';
import { SubtitleService } from './service.js';
import { sidecarProvider } from './sidecar.js';

export const configSchema = Type.Object({
  /** Text streams inside media files (extracted with ffmpeg on first request, then cached). */
  embedded: Type.Boolean({ default: true }),
  /** Sidecar files next to the media (`Movie.en.srt`…). */
  external: Type.Boolean({ default: true }),
  /** A provider that has not listed an item's tracks within this time is left out of that listing. */
  listTimeout: Duration({ default: '10s' }),
}, { additionalProperties: false });

export default definePlugin({
  id: 'subtitles',
  version: '1.0.0',
  host: '^1.1',
  description: 'Subtitle tracks of VOD items as WebVTT: embedded text streams, sidecar files and provider plugins',
  configSchema,
  dependsOn: ['vod'],
  register(env) {
    const providers = new Providers();
    env.registerExtensionPoint(subtitlesExtensionPoint, providers);

    env.registerInit({
      deps: {
        config: coreServices.config, http: coreServices.http, auth: coreServices.auth, jobs: coreServices.jobs,
        ffmpeg: coreServices.ffmpeg, logger: coreServices.logger, paths: coreServices.paths, lifecycle: coreServices.lifecycle,
        catalog: vodCatalogService, vod: vodExtensionPoint,
      },
      async init({ config: cfg, http, auth, jobs, ffmpeg, logger, paths, lifecycle, catalog, vod }) {
        const extractor = new EmbeddedExtractor(ffmpeg, jobs, logger, path.join(await paths.pluginDir(), 'embedded'));
        // Built-ins first: their tracks lead every listing. Other plugins' providers follow in load order.
        if (cfg.embedded) providers.addProvider(embeddedProvider(extractor));
        if (cfg.external) providers.addProvider(sidecarProvider());
        const service = new SubtitleService(providers, catalog, logger, parseDuration(cfg.listTimeout));
        subtitleRoutes(http, { auth, service });

        vod.addManifestSubtitles(async (user, item, file) => {
          const version = (await catalog.files(user, item.id)).findIndex((f) => f.path === file.path);
          if (version < 0) return [];
          const tracks = await service.list(user, { item, file, version }, new AbortController().signal);
          return tracks.map((t) => ({ label: t.label, language: t.language, url: t.url, default: t.default, forced: t.forced }));
        });

        lifecycle.onStart(async () => {
          providers.freeze();
          await extractor.cleanPartial();
        });
      },
    });
  },
});
