/**
 * xmltv-guide: XMLTV guides (files or http(s) URLs, .xml.gz too) as a live-tv guide source,
 * parsed as a stream so a 300 MB guide never sits in memory.
 *
 *   xmltv-guide: { sources: [ { url: ./guide.xml.gz, refresh: 6h } ], maxAge: 24h, preferredLanguage: en, maxBytes: 1073741824 }
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import {
  coreServices, definePlugin, Duration, guidesExtensionPoint, parseDuration, Type,
  type GuideSource, type SourceReader, type Static,
} from 'antenna/sdk';
import { parseXmltv } from './xmltv-parser.js';
import { guideSourceRoutes } from './admin-routes.js';

const SourceSchema = Type.Object({
  url: Type.String({ minLength: 1, description: 'A path (relative to the config file), a file:// or an http(s) URL' }),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  refresh: Duration({ default: '6h' }),
  preferredLanguage: Type.Optional(Type.String({ minLength: 1, maxLength: 35 })),
}, { additionalProperties: false });

const configSchema = Type.Object({
  sources: Type.Array(SourceSchema, { default: [] }),
  /** Titles in this language when the guide has several. */
  preferredLanguage: Type.Optional(Type.String({ minLength: 1, maxLength: 35 })),
  /** Programmes that ended longer ago than this are not stored. */
  maxAge: Duration({ default: '24h' }),
  /**
   * A guide larger than this once decompressed fails its import (the previous guide stays): a gzip
   * bomb (8 MB inflating to 4 GiB) otherwise kept a core busy for minutes.
   */
  maxBytes: Type.Integer({ minimum: 1024, default: 1024 * 1024 * 1024 }),
}, { additionalProperties: false });

type Config = Static<typeof configSchema>;

const guideId = (source: { url: string; name?: string }) =>
  `xmltv:${source.name ? source.name.replace(/[^\w.:@-]/g, '_') : createHash('sha1').update(source.url).digest('hex').slice(0, 12)}`;

function guideFor(source: Static<typeof SourceSchema>, config: Config, sources: SourceReader, clock: { now(): number }): GuideSource {
  // Unnamed: the file name, from the URL without its credentials (http://user:pass@host has no path).
  const shown = sources.redact(source.url);
  const name = source.name ?? (path.basename(shown.split('?')[0]!) || shown);
  return {
    id: guideId(source),
    name,
    refreshMs: parseDuration(source.refresh),
    async load({ signal, sink }) {
      // Real guides run to hundreds of megabytes, parsed as they arrive: the limit is for bombs.
      const opened = await sources.open(source.url, { signal, maxBytes: config.maxBytes });
      return parseXmltv(opened.chunks, sink, {
        signal, totalBytes: opened.size, bytesRead: opened.bytesRead, now: clock.now(), maxAgeMs: parseDuration(config.maxAge),
        preferredLanguage: source.preferredLanguage ?? config.preferredLanguage,
      });
    },
  };
}

export default definePlugin({
  id: 'xmltv-guide',
  version: '1.0.0',
  host: '^1.1',
  description: 'XMLTV program guides',
  configSchema,
  dependsOn: ['live-tv'],
  register(env) {
    env.registerInit({
      deps: {
        config: coreServices.config, guides: guidesExtensionPoint, sources: coreServices.sources, clock: coreServices.clock,
        settings: coreServices.settings, http: coreServices.http,
      },
      async init({ config, guides, sources, clock, settings, http }) {
        for (const source of config.sources) guides.addGuideSource(guideFor(source, config, sources, clock));
        // Only the guides that changed are swapped (and so imported again); all of them when a
        // setting every guide uses changed.
        settings.onChange(['sources', 'maxAge', 'preferredLanguage'], (next, previous) => {
          const all = next.maxAge !== previous.maxAge || next.preferredLanguage !== previous.preferredLanguage;
          const before = new Map(previous.sources.map((s) => [guideId(s), s]));
          const after = new Map(next.sources.map((s) => [guideId(s), s]));
          for (const [id, source] of before) if (all || !isDeepStrictEqual(source, after.get(id))) guides.removeGuideSource(id);
          for (const [id, source] of after) if (all || !isDeepStrictEqual(source, before.get(id))) guides.addGuideSource(guideFor(source, next, sources, clock));
        });
        guideSourceRoutes(http, { schema: SourceSchema, settings, sources, guideId });
      },
    });
  },
});
