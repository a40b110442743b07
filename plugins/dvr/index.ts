/**
 * dvr: recordings of guide programmes. POST /recordings schedules one (or
 * starts it when the programme is on air); it records on the channel's live
 * session (shared with viewers: one upstream, one tuner slot) into segmented
 * fMP4 under `path`, playable while it records; it survives restarts and
 * crashes (a new part, the gap noted) and follows guide changes before it
 * starts. Playback: /watch/recording/{id} (HLS, or DASH for DASH-only devices).
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import {
  coreServices, dashPackagerService, definePlugin, Duration, hlsPackagerService, liveTvService, parseDuration, Type, vodCatalogService, vodExtensionPoint, type AuthUser,
} from 'antenna/sdk';
import { RecordingItems, toCatalogItem } from './catalog-items.js';
import { Dvr, START_TASK_KIND } from './dvr.js';
import { migrations } from './migrations.js';
import { Recorder } from './recorder.js';
import { recordingRoutes } from './routes.js';
import { ruleRoutes } from './rule-routes.js';
import { describeRules, RuleStore } from './rules.js';
import { RecordingStore } from './store.js';
import { watchRoutes } from './watch-routes.js';

const configSchema = Type.Object({
  /** Where recordings are written (one folder per recording); relative to the config file. Default: <dataDir>/recordings. */
  path: Type.Optional(Type.String({ minLength: 1 })),
  /** Recording starts this long before the programme… */
  prePadding: Duration({ default: '60s' }),
  /** …and ends this long after it. */
  postPadding: Duration({ default: '120s' }),
}, { additionalProperties: false });

const POLL_MS = 1000;
const GUIDE_CHECK_MS = 5000;
const MIN_FREE_BYTES = 64 * 2 ** 20;

export default definePlugin({
  id: 'dvr',
  version: '1.0.0',
  host: '^1.1',
  description: 'Recordings of guide programmes, playable while they record',
  configSchema,
  migrations,
  // vod: recordings are the items of its "Recordings" library (play-info, continue watching).
  dependsOn: ['live-tv', 'vod'],
  register(env) {
    env.registerInit({
      deps: {
        config: coreServices.config, http: coreServices.http, db: coreServices.database, auth: coreServices.auth,
        jobs: coreServices.jobs, scheduler: coreServices.scheduler, lifecycle: coreServices.lifecycle,
        logger: coreServices.logger, clock: coreServices.clock, host: coreServices.host, cluster: coreServices.cluster,
        live: liveTvService, catalog: vodCatalogService, vod: vodExtensionPoint, hls: hlsPackagerService, dash: dashPackagerService,
      },
      async init({ config: cfg, http, db, auth, jobs, scheduler, lifecycle, logger, clock, host, cluster, live, catalog, vod, hls, dash }) {
        const root = cfg.path ? path.resolve(host.configDir, cfg.path) : path.join(host.dataDir, 'recordings');
        const now = () => clock.now();
        const store = new RecordingStore(db);
        const recorder = new Recorder(jobs, live, store, logger, now, {
          prePaddingMs: parseDuration(cfg.prePadding), postPaddingMs: parseDuration(cfg.postPadding), pollMs: POLL_MS, minFreeBytes: MIN_FREE_BYTES,
        }, cluster);
        const dvr = new Dvr(store, new RuleStore(db), recorder, live, scheduler, logger, now, {
          root, guideCheckMs: GUIDE_CHECK_MS, takeOverMs: cluster.enabled ? Math.max(500, Math.floor(cluster.leaseMs / 3)) : 0, cluster, prePadding: parseDuration(cfg.prePadding) / 1000, postPadding: parseDuration(cfg.postPadding) / 1000,
        });
        recorder.onFinished((id) => {
          void (async () => {
            const rec = await store.get(id);
            if (rec?.ruleId != null) await dvr.applyKeep(rec.ruleId);
          })().catch((err) => logger.warn({ err, recording: id }, 'dvr: applying a keep limit failed'));
        });
        const items = new RecordingItems(dvr, auth);
        items.libraryId = await vod.addLibrary({ name: 'Recordings', source: items });
        dvr.onPlay((user, rec) => catalog.reportPlay(user, toCatalogItem(rec, items.libraryId)));
        // Recordings are the items of the Recordings library: its grant decides who may use them.
        const mayUse = (user: AuthUser) => auth.canAccessLibrary(user, items.libraryId);
        recordingRoutes(http, { auth, dvr, mayUse });
        ruleRoutes(http, { auth, dvr, mayUse });
        watchRoutes(http, { auth, dvr, recorder, hls, dash, host, now, mayUse });
        scheduler.handle(START_TASK_KIND, (task) => dvr.startDue(Number((task.payload as { id: unknown }).id)));

        lifecycle.onStart(async () => {
          // An unwritable root does not stop the server: each recording fails with the reason.
          await mkdir(root, { recursive: true, mode: 0o700 }).catch((err) => logger.error({ err, root }, 'dvr: cannot create the recordings folder'));
          await dvr.resume();
          await dvr.followGuide();
          dvr.startFollowingGuide();
          dvr.startTakingOver();
        });
        lifecycle.onShutdown(() => dvr.stop());
      },
    });

    env.registerCommand({
      path: ['dvr', 'rules'],
      description: 'List the series rules and their next airings',
      deps: { db: coreServices.database, live: liveTvService },
      async run(_args, io, { db, live }) {
        const rules = await new RuleStore(db).all();
        const upcoming = (await new RecordingStore(db).all()).filter((r) => r.ruleId !== null && ['scheduled', 'recording', 'conflict'].includes(r.status));
        if (!rules.length) io.out('no series rules');
        for (const line of await describeRules(rules, upcoming, async (id) => (await live.channel(id))?.name)) io.out(line);
      },
    });
  },
});
