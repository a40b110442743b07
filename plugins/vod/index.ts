/**
 * vod: movie and show libraries. Scans folders with ffprobe, reads metadata
 * and artwork (NFO files, images beside the media, tags and cover art inside
 * it, and what metadata-provider plugins add), serves browsing (/libraries,
 * /library/{id}, /item/{id}) and pictures, decides how each client plays a
 * file (/watch/vod/{id}/play-info), serves the file itself with ranges, and
 * transcodes or remuxes on demand into full-length, seekable HLS and DASH.
 */
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import {
  coreServices, createServiceRef, definePlugin, Duration, parseDuration, Type, vodCatalogService, vodExtensionPoint, vodMetadataExtensionPoint,
  type MetadataProvider, type Static,
} from 'antenna/sdk';
import { Artwork } from './artwork.js';
import { artworkRoutes } from './artwork-routes.js';
import { MetadataRefresher } from './metadata/refresh.js';
import { Catalog } from './catalog.js';
import { migrations } from './migrations.js';
import { DEMO_LIBRARIES, ensureDemoMedia } from './demo-library.js';
import { VodStore } from './store.js';
import { LibraryScanner } from './scanner.js';
import { browseRoutes } from './browse-routes.js';
import { playRoutes } from './play-routes.js';
import { Transcoder } from './transcode/transcoder.js';
import { transcodeRoutes } from './transcode/routes.js';
import { VariantTokens } from './transcode/variant.js';
import { adminLibraryRoutes } from './admin-routes.js';

const LibraryConfig = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 255 }),
  type: Type.Union([Type.Literal('movies'), Type.Literal('shows')]),
  /** Folders, absolute or relative to the config file. */
  paths: Type.Array(Type.String({ minLength: 1 }), { minItems: 1 }),
}, { additionalProperties: false });

export const configSchema = Type.Object({
  libraries: Type.Array(LibraryConfig, { default: [] }),
  /** At start: scan in the background (default), wait for the scan before listening, or skip it. */
  initialScan: Type.Union([Type.Literal('background'), Type.Literal('await'), Type.Literal('skip')], { default: 'background' }),
  /** Rescan every library this often (`0s` turns it off). */
  scanInterval: Duration({ default: '6h' }),
  /** ffprobe processes run at once while scanning. */
  scanConcurrency: Type.Integer({ minimum: 1, maximum: 16, default: 2 }),
  /** Length of transcoded segments (seconds); copied video is cut at its keyframes near this length. */
  segmentSeconds: Type.Integer({ minimum: 2, maximum: 10, default: 4 }),
  /** A transcode nobody has requested a segment of for this long stops and its files are removed. */
  idleTimeout: Duration({ default: '60s' }),
  /** x264 preset for transcodes (faster presets start sooner and use less CPU, at some quality cost). */
  /** The demo: generate a small library of clips in <dataDir>/demo-media on first start and add it as "Demo Movies" and "Demo Shows". */
  demo: Type.Boolean({ default: false }),
  preset: Type.Union(['ultrafast', 'superfast', 'veryfast', 'faster', 'fast', 'medium'].map((p) => Type.Literal(p)), { default: 'veryfast' }),
}, { additionalProperties: false });

export type VodConfig = Static<typeof configSchema>;

const SCAN_KIND = 'vod.scan';

/** The plugin's own store and scanner, for its CLI command. */
const scanningService = createServiceRef<{ store: VodStore; scanner: LibraryScanner }>({ id: 'vod.scanning', owner: 'vod' });

export default definePlugin({
  id: 'vod',
  version: '1.0.0',
  host: '^1.1',
  description: 'Movie and show libraries: scanning, browsing, direct play and on-demand HLS/DASH transcoding',
  configSchema,
  migrations,
  register(env) {
    const providers: MetadataProvider[] = [];
    env.registerExtensionPoint(vodMetadataExtensionPoint, {
      addProvider(provider) {
        if (!/^[a-z0-9-]{1,32}$/.test(provider.id)) throw new Error(`metadata provider id ${JSON.stringify(provider.id)} must be 1-32 of a-z, 0-9 and -`);
        if (provider.id === 'local' || providers.some((p) => p.id === provider.id)) throw new Error(`a metadata provider ${provider.id} is added already`);
        providers.push(provider);
      },
    });

    env.registerInit({
      deps: {
        config: coreServices.config, http: coreServices.http, db: coreServices.database, auth: coreServices.auth,
        jobs: coreServices.jobs, scheduler: coreServices.scheduler, lifecycle: coreServices.lifecycle,
        logger: coreServices.logger, clock: coreServices.clock, ffmpeg: coreServices.ffmpeg, host: coreServices.host,
        paths: coreServices.paths, transcodes: coreServices.transcodes, settings: coreServices.settings, sources: coreServices.sources,
        cluster: coreServices.cluster,
      },
      provides: { catalog: vodCatalogService, extensions: vodExtensionPoint, scanning: scanningService },
      async init({ config: cfg, http, db, auth, jobs, scheduler, lifecycle, logger, clock, ffmpeg, host, paths, transcodes, settings, sources, cluster }) {
        const store = new VodStore(db);
        const demoDir = path.join(host.dataDir, 'demo-media');
        const demoLibraries = cfg.demo ? DEMO_LIBRARIES.map((l) => ({ name: l.name, type: l.type, paths: [path.join(demoDir, l.folder)] })) : [];
        const libraries = (c: VodConfig) => [
          ...c.libraries.map((l) => ({ ...l, paths: l.paths.map((p) => path.resolve(host.configDir, p)) })),
          ...demoLibraries,
        ];
        await store.syncLibraries(libraries(cfg));
        const catalog = new Catalog(store, auth, logger);
        const metadata = new MetadataRefresher(store, () => providers, logger, () => clock.now());
        const scanner = new LibraryScanner(db, store, ffmpeg, jobs, logger, () => clock.now(), { concurrency: cfg.scanConcurrency }, metadata);

        const pluginDir = await paths.pluginDir();
        const artwork = new Artwork(ffmpeg, sources, path.join(pluginDir, 'images'), logger);
        const workDir = path.join(pluginDir, 'transcode');
        // Every node of a cluster signs variant URLs with one key: a URL one node wrote verifies on all.
        const tokens = new VariantTokens(Buffer.from(await cluster.secret('vod:variant', () => VariantTokens.ownKey(pluginDir)), 'base64'));
        // Whatever a crash left there is stale; only a server cleans (a CLI command runs beside one).
        lifecycle.onStart(async () => {
          await rm(workDir, { recursive: true, force: true });
          await mkdir(workDir, { recursive: true, mode: 0o700 });
        });
        const transcoder = new Transcoder(jobs, transcodes, ffmpeg, store, logger, {
          workDir, segmentSeconds: cfg.segmentSeconds, idleTimeoutMs: parseDuration(cfg.idleTimeout), preset: cfg.preset,
        }, cluster);
        browseRoutes(http, { auth, store, catalog });
        artworkRoutes(http, { auth, store, artwork });
        playRoutes(http, { auth, store, host, tokens, logger, catalog });
        transcodeRoutes(http, { auth, store, host, transcoder, tokens, catalog });

        /** Every library, then the pictures no item uses any more leave the cache. */
        const scanAll = async () => {
          const summaries = await scanner.scanAll();
          const removed = await artwork.sweep(await store.artworkTags());
          if (removed) logger.debug({ removed }, 'pictures no item uses were removed from the cache');
          return summaries;
        };
        scheduler.handle(SCAN_KIND, async () => { await scanAll(); });
        const scheduleScans = async (interval: string) => {
          const everyMs = parseDuration(interval);
          if (everyMs > 0) await scheduler.schedule({ id: 'vod:scan', kind: SCAN_KIND, at: clock.now() + everyMs, everyMs });
          else await scheduler.cancel('vod:scan');
        };

        // Libraries, the scan schedule and its concurrency change without a restart: a library that is
        // new, or whose folders or type changed, is scanned at once; the transcoder's settings need one.
        settings.onChange(['libraries', 'scanInterval', 'scanConcurrency'], async (next, previous) => {
          if (!isDeepStrictEqual(next.libraries, previous.libraries)) {
            const before = new Map(store.libraries().map((l) => [l.id, JSON.stringify([l.type, l.paths])]));
            await store.syncLibraries(libraries(next), { keepProvided: true });
            for (const lib of store.libraries()) {
              if (lib.type === 'recordings' || before.get(lib.id) === JSON.stringify([lib.type, lib.paths])) continue;
              await jobs.get(`vod:scan:${lib.id}`)?.stop('library changed');
              void scanner.scan(lib).catch(() => {}); // logged by the scanner, kept in lastScans
            }
          }
          if (next.scanInterval !== previous.scanInterval) await scheduleScans(next.scanInterval);
          scanner.options.concurrency = next.scanConcurrency;
        });
        adminLibraryRoutes(http, { store, scanner, jobs, settings, configDir: host.configDir, demoNames: new Set(demoLibraries.map((l) => l.name)) });

        lifecycle.onShutdown(() => scanner.stop());
        lifecycle.onStart(async () => {
          await scheduleScans(cfg.scanInterval);
          if (cfg.initialScan === 'skip' || !store.libraries().length) return;
          // Nodes of a cluster starting together scan once (the items are in the database they share).
          const fingerprint = JSON.stringify(store.libraries().map((l) => [l.id, l.type, l.paths]));
          const scanOnce = () => cluster.once('vod:startup-scan', { fingerprint, withinMs: parseDuration(cfg.scanInterval), wait: cfg.initialScan === 'await' }, async () => {
            await scanAll(); // the scanner logs one summary line per library
            return true;
          });
          const scanning = (cfg.demo ? ensureDemoMedia(ffmpeg, demoDir, logger) : Promise.resolve()).then(scanOnce);
          if (cfg.initialScan === 'await') await scanning;
          else scanning.catch((err) => logger.error({ err }, 'initial scan failed'));
        });
        return { catalog, extensions: catalog, scanning: { store, scanner } };
      },
    });

    env.registerCommand({
      path: ['library', 'scan'],
      usage: 'library scan [ID]',
      description: 'Scan every library now, or the one with this id',
      deps: { scanning: scanningService },
      async run(args, io, { scanning: { store, scanner } }) {
        const libs = store.libraries().filter((l) => l.type !== 'recordings');
        const wanted = args[0] === undefined ? libs : libs.filter((l) => String(l.id) === args[0]);
        if (args[0] !== undefined && !wanted.length) throw new Error(`no library ${args[0]} (libraries: ${libs.map((l) => `${l.id} ${l.name}`).join(', ') || 'none'})`);
        for (const lib of wanted) {
          const s = await scanner.scan(lib, (fraction, message) => io.progress.update(lib.name, fraction, message));
          io.progress.done(lib.name);
          io.out(`library ${lib.id} ${lib.name}: ${s.files} files, ${s.added} new, ${s.changed} changed, ${s.removed} removed, ${s.unreadable} unreadable, ${s.items} items`);
        }
      },
    });

    env.registerCommand({
      path: ['library', 'list'],
      description: 'List the libraries with the ids that `user add/set --library` and `library scan` take',
      deps: { scanning: scanningService },
      async run(_args, io, { scanning: { store } }) {
        const counts = await store.topLevelCounts();
        io.out(['ID', 'NAME', 'TYPE', 'ITEMS', 'FOLDERS'].join('\t'));
        for (const l of store.libraries()) io.out([l.id, l.name, l.type, counts.get(l.id) ?? 0, l.paths.join(', ') || '-'].join('\t'));
      },
    });
  },
});
