/**
 * continue-watching: per-user watch progress over the VOD catalog (movies,
 * episodes and, once the dvr plugin adds them, recordings). Play-info and
 * manifest requests start an entry (the catalog's onPlay), players report
 * progress, finished episodes bring the next one in, and play-info carries
 * `resume_position`.
 */
import { coreServices, definePlugin, Duration, parseDuration, Type, vodCatalogService, vodExtensionPoint } from 'antenna/sdk';
import { ContinueWatching } from './entries.js';
import { migrations } from './migrations.js';
import { continueWatchingRoutes } from './routes.js';
import { EntryStore } from './store.js';

const configSchema = Type.Object({
  /** Progress reports are written in one batch this often (and at shutdown); reads never wait for it. */
  flushInterval: Duration({ default: '1s' }),
}, { additionalProperties: false });

export default definePlugin({
  id: 'continue-watching',
  version: '1.0.0',
  host: '^1.2', // the catalog's posterUrls
  description: 'Continue watching: progress, watched state, resume positions and up next',
  configSchema,
  migrations,
  dependsOn: ['vod'],
  register(env) {
    env.registerInit({
      deps: {
        config: coreServices.config, http: coreServices.http, db: coreServices.database, auth: coreServices.auth,
        lifecycle: coreServices.lifecycle, logger: coreServices.logger, clock: coreServices.clock, events: coreServices.events,
        catalog: vodCatalogService, vod: vodExtensionPoint,
      },
      async init({ config: { flushInterval }, http, db, auth, lifecycle, logger, clock, events, catalog, vod }) {
        const entries = new ContinueWatching(new EntryStore(db, logger), catalog, auth, logger, () => clock.now(), parseDuration(flushInterval));
        vod.onPlay((user, item) => entries.played(user, item));
        vod.addPlayInfoField('resume_position', (user, item) => entries.resumePosition(user, item));
        vod.setWatchState((user, ids) => entries.states(user, ids));
        continueWatchingRoutes(http, { auth, entries, catalog });
        // The database dropped a removed user's rows; what is kept for them here goes too.
        events.on('user.deleted', (payload) => entries.forget((payload as { id: number }).id));
        lifecycle.onShutdown(() => entries.close());
      },
    });
  },
});
