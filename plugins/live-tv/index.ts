/**
 * live-tv: channels, categories, the guide, favorites and live sessions. Owns the
 * `tuners` and `guides` extension points (tuner plugins such as m3u-tuner add
 * channels, guide plugins such as xmltv-guide add programmes) and offers
 * `liveTvService` to the plugins that build on live TV (the DVR).
 */
import { rm, mkdir } from 'node:fs/promises';
import path from 'node:path';
import {
  coreServices, createServiceRef, dashPackagerService, definePlugin, Duration, errors, guidesExtensionPoint, hlsPackagerService,
  liveTvService, parseDuration, tunersExtensionPoint, Type, type AccessGrant, type FfmpegService, type LiveTvAccess, type Logger,
} from 'antenna/sdk';
import { openMpegTs } from './live/mpegts.js';
import { proxyMpegTs } from './live/ts-proxy.js';
import { migrations } from './migrations.js';
import { LiveTvRegistry } from './registry.js';
import { LiveTvService, type RefreshSummary } from './service.js';
import { Favorites } from './favorites.js';
import { liveTvRoutes, searchChannels } from './routes.js';
import { fold } from './text.js';
import { importOnce } from './startup-import.js';
import { HeldElsewhere, LiveSessions } from './live/sessions.js';
import { watchRoutes } from './live/routes.js';
import { adminSourceRoutes } from './admin-routes.js';
import { adminChannelRoutes } from './admin-channel-routes.js';

const configSchema = Type.Object({
  /** At start: import in the background (default), wait for the import before listening, or skip it. */
  initialImport: Type.Union([Type.Literal('background'), Type.Literal('await'), Type.Literal('skip')], { default: 'background' }),
  /** A channel nobody has requested for this long stops, freeing its tuner slot. */
  idleTimeout: Duration({ default: '60s' }),
  /** Length of live segments (seconds). */
  segmentSeconds: Type.Integer({ minimum: 1, maximum: 10, default: 2 }),
  /** How long a first request waits for a channel to start (or, once it produces, for its next segment) before answering 503. */
  readyTimeout: Duration({ default: '20s' }),
  /** A playing stream that brings no new segment for this long (beyond the segment's own length) has failed, as has one without a first segment within readyTimeout: the channel moves to its next stream. */
  stallTimeout: Duration({ default: '10s' }),
  /** How long a failed stream of a channel of several is passed over. */
  failoverCooldown: Duration({ default: '5m' }),
  /** How much of each channel a viewer can pause or seek back through: the time-shift window (0 or 0s: off). */
  timeshift: Type.Union([Duration(), Type.Literal(0)], { default: '2h' }),
  /** The most disk a channel's time-shift window uses (bytes); past it, the window is shorter. */
  timeshiftMaxBytes: Type.Integer({ minimum: 2 ** 20, maximum: 2 ** 50, default: 4 * 2 ** 30 }),
  /** A channel its playlist no longer lists gets its id and favorites back if it returns within this time (a favorited one, whenever it does). */
  keepHiddenChannels: Duration({ default: '30d' }),
  /**
   * A tuner listing more channels fails its import (its previous channels stay): a hostile or broken
   * playlist of tiny entries would otherwise hold millions of channels in memory (a million took
   * ~600 MB while importing) and stop the server.
   */
  maxChannelsPerTuner: Type.Integer({ minimum: 1, maximum: 10_000_000, default: 1_000_000 }),
  /** `tvg-id`: entries of several playlists sharing a tvg-id are one channel, their streams in the playlists' order. */
  merge: Type.Union([Type.Literal('off'), Type.Literal('tvg-id')], { default: 'off' }),
}, { additionalProperties: false });

const REFRESH_KIND = 'livetv.refresh';
/** Cluster mode: a node committed a new channel version. */
const CHANNELS_TOPIC = 'livetv:channels';

/** The plugin's own imports, for its CLI command. */
const importsService = createServiceRef<{ service: LiveTvService; registry: LiveTvRegistry }>({ id: 'live-tv.imports', owner: 'live-tv' });

export default definePlugin({
  id: 'live-tv',
  version: '1.0.0',
  host: '^1.1',
  description: 'Live TV channels, program guide and favorites',
  configSchema,
  migrations,
  dependsOn: ['hls-packager', 'dash-packager'],
  register(env) {
    const registry = new LiveTvRegistry();
    env.registerExtensionPoint(tunersExtensionPoint, registry.tunerPoint);
    env.registerExtensionPoint(guidesExtensionPoint, registry.guidePoint);

    env.registerInit({
      deps: {
        config: coreServices.config, http: coreServices.http, db: coreServices.database, auth: coreServices.auth,
        jobs: coreServices.jobs, scheduler: coreServices.scheduler, lifecycle: coreServices.lifecycle,
        logger: coreServices.logger, clock: coreServices.clock, ffmpeg: coreServices.ffmpeg, host: coreServices.host,
        paths: coreServices.paths, transcodes: coreServices.transcodes, hls: hlsPackagerService, dash: dashPackagerService,
        sources: coreServices.sources, cluster: coreServices.cluster,
      },
      provides: { access: liveTvService, imports: importsService },
      async init({ config, http, db, auth, jobs, scheduler, lifecycle, logger, clock, ffmpeg, host, paths, transcodes, hls, dash, sources, cluster }) {
        const {
          initialImport, idleTimeout, segmentSeconds, readyTimeout, keepHiddenChannels, maxChannelsPerTuner, merge, timeshift, timeshiftMaxBytes, stallTimeout, failoverCooldown,
        } = config;
        const live = new LiveTvService(db, logger, jobs, registry, () => clock.now(), {
          keepHiddenMs: parseDuration(keepHiddenChannels), maxChannelsPerTuner, merge,
        });
        if (cluster.enabled) {
          // An edit or import on one node: the others read the channels again at once, not
          // after their next version check (which stays, for messages lost to a reconnection).
          live.channels.onChanged = () => cluster.publish(CHANNELS_TOPIC, '');
          cluster.subscribe(CHANNELS_TOPIC, () => live.channels.recheck());
        }
        const favorites = new Favorites(db);
        await favorites.load();
        auth.addProfileField('favorites', async (user) => {
          const { byId } = await live.channels.current();
          return [...favorites.of(user.id)].filter((id) => byId.has(id)).sort((a, b) => a - b);
        });
        liveTvRoutes(http, { auth, service: live, favorites, registry });

        const workDir = path.join(await paths.pluginDir(), 'live');
        await mkdir(workDir, { recursive: true, mode: 0o700 });
        // Whatever a crash left there is stale; only a server cleans (a CLI command runs beside one).
        lifecycle.onStart(async () => {
          await rm(workDir, { recursive: true, force: true });
          await mkdir(workDir, { recursive: true, mode: 0o700 });
        });
        const timeshiftSeconds = timeshift === 0 ? 0 : Math.floor(parseDuration(timeshift) / 1000);
        const sessions = new LiveSessions(jobs, ffmpeg, registry, transcodes, logger, {
          workDir, segmentSeconds, idleTimeoutMs: parseDuration(idleTimeout), readyTimeoutMs: parseDuration(readyTimeout),
          timeshiftSeconds, timeshiftMaxBytes, stallTimeoutMs: parseDuration(stallTimeout), failoverCooldownMs: parseDuration(failoverCooldown),
        }, cluster);
        const readyTimeoutMs = parseDuration(readyTimeout);
        watchRoutes(http, {
          auth, sessions, channels: live.channels, guide: live.guide, hls, dash, host, timeshiftSeconds,
          mpegTs: async (channel, label, signal) => openMpegTs(await sessions.hold(channel, label, { viewer: true }), { ffmpeg, log: logger, label, readyTimeoutMs, signal }),
        });

        adminSourceRoutes(http, { service: live, registry, jobs, scheduler, refreshKind: REFRESH_KIND });
        adminChannelRoutes(http, { service: live, registry, sources, sessions });
        const taskId = (type: 'tuner' | 'guide', id: string) => `livetv:${type}:${id}`;
        const schedule = async (type: 'tuner' | 'guide', id: string, everyMs: number | undefined) => {
          if (everyMs) await scheduler.schedule({ id: taskId(type, id), kind: REFRESH_KIND, at: clock.now() + everyMs, everyMs, payload: { type, id } });
          else await scheduler.cancel(taskId(type, id));
        };

        // A source added, changed or removed after start (a plugin's settings changed): import it at
        // once and schedule it, or drop its schedule and hide its channels. Changes are handled one at
        // a time; a remove-then-add of one id (an edit) is one change, read when its turn comes.
        const queued = new Set<string>();
        let changes = Promise.resolve();
        let closing = false;
        registry.onChange(({ kind, id }) => {
          const key = taskId(kind, id);
          if (closing) return;
          if (queued.has(key)) return;
          queued.add(key);
          changes = changes.then(async () => {
            queued.delete(key);
            await jobs.get(key)?.stop('source changed');
            const tuner = kind === 'tuner' ? registry.tuners.get(id) : undefined;
            const guide = kind === 'guide' ? registry.guides.get(id) : undefined;
            const source = tuner ?? guide;
            await schedule(kind, id, source?.refreshMs);
            logger.info({ event: 'source_changed', kind, id, present: !!source }, source ? 'live TV source added or changed' : 'live TV source removed');
            if (kind === 'tuner') await live.tunersChanged();
            if (!source) live.lastImports.delete(`${kind}:${id}`);
            if (tuner) void live.refreshTuner(tuner).catch(() => {}); // the outcome is logged and kept in lastImports
            else if (guide) void live.refreshGuide(guide).catch(() => {});
            else if (kind === 'guide') await live.remap();
          }).catch((err) => logger.error({ err, kind, id }, 'could not apply a live TV source change'));
        });

        scheduler.handle(REFRESH_KIND, async (task) => {
          const { type, id } = task.payload as { type: 'tuner' | 'guide'; id: string };
          const tuner = type === 'tuner' ? registry.tuners.get(id) : undefined;
          const guide = type === 'guide' ? registry.guides.get(id) : undefined;
          if (tuner) await live.refreshTuner(tuner);
          else if (guide) await live.refreshGuide(guide);
          else await scheduler.cancel(task.id); // the source left the config
        });

        // A change being applied finishes first: its queries must not reach a database being closed.
        lifecycle.onShutdown(async () => {
          closing = true;
          await changes;
          await live.stop();
        });
        lifecycle.onStart(async () => {
          await live.guide.removeUnfinished();
          // One persisted schedule per source; schedules of sources no longer configured go away.
          const wanted = new Map<string, { type: 'tuner' | 'guide'; id: string; everyMs: number }>();
          for (const t of registry.tuners.values()) if (t.refreshMs) wanted.set(`livetv:tuner:${t.id}`, { type: 'tuner', id: t.id, everyMs: t.refreshMs });
          for (const g of registry.guides.values()) if (g.refreshMs) wanted.set(`livetv:guide:${g.id}`, { type: 'guide', id: g.id, everyMs: g.refreshMs });
          for (const task of await scheduler.list(REFRESH_KIND)) if (!wanted.has(task.id)) await scheduler.cancel(task.id);
          for (const w of wanted.values()) await schedule(w.type, w.id, w.everyMs);
          if (initialImport === 'skip') return;
          const importing = importOnce(cluster, registry, () => live.refreshAll(), initialImport === 'await').then((summary) => summary && logSummary(logger, summary));
          if (initialImport === 'await') await importing;
          else importing.catch((err) => logger.error({ err }, 'initial import failed'));
        });
        return { access: accessService(registry, live, sessions, { ffmpeg, logger, readyTimeoutMs: parseDuration(readyTimeout) }), imports: { service: live, registry } };
      },
    });

    env.registerCommand({
      path: ['guide', 'refresh'],
      description: 'Re-import every tuner playlist and guide source now',
      deps: { live: importsService },
      async run(_args, io, { live: { service: live } }) {
        const summary = await live.refreshAll((label, f, m) => io.progress.update(label, f, m));
        for (const t of summary.tuners) io.out('error' in t ? `tuner ${t.id}: FAILED ${t.error} (previous channels kept)` : `tuner ${t.id}: ${t.channels} channels, ${t.added} new, ${t.removed} gone, ${t.warnings} warnings`);
        for (const g of summary.guides) io.out('error' in g ? `guide ${g.id}: FAILED ${g.error} (previous guide kept)` : `guide ${g.id}: ${g.programmes} programmes, ${g.channels} channels, ${g.skipped} skipped, ${g.warnings} warnings`);
        io.out(`${summary.mapped} channels have guide data`);
        if ([...summary.tuners, ...summary.guides].some((s) => 'error' in s)) throw new Error('some sources failed to import');
      },
    });

    env.registerCommand({
      path: ['channels', 'unmatched'],
      usage: 'channels unmatched [LIMIT]',
      description: 'List the channels without a guide, or matched with low confidence, with the closest guide channels',
      deps: { live: importsService },
      async run(args, io, { live: { service, registry } }) {
        const limit = args[0] === undefined ? 500 : Number(args[0]);
        if (!Number.isInteger(limit) || limit < 1) throw new Error(`LIMIT must be a positive integer, not ${args[0]}`);
        const { all } = await service.channels.current();
        const found = await service.guide.unmatched(all, [...registry.guides.keys()], limit);
        io.out(['ID', 'NUMBER', 'NAME', 'GUIDE', 'CANDIDATES'].join('\t'));
        for (const { channel: c, match, candidates } of found.channels) {
          const guide = match ? `${match.ref.guideId} (${match.method} ${match.score})` : '-';
          io.out([c.id, c.number, c.name, guide, candidates.map((k) => `${k.ref.guideId} "${k.name}" ${k.score}`).join(', ') || '-'].join('\t'));
        }
        io.out(`${found.total} channels unmatched or matched with low confidence${found.total > found.channels.length ? ` (the first ${found.channels.length} listed)` : ''}`);
      },
    });
  },
});

/** The channel as MPEG-TS on the node that runs it, with a key the grant minted (what a node proxying it asks for). */
const tsPath = (channelId: number, grant: AccessGrant) => `/watch/live/${channelId}/stream.ts?key=${grant.mediaKey(`live:${channelId}`)}`;

/** The channel, guide and session lookups plugins building on live TV (the DVR) get. */
function accessService(
  registry: LiveTvRegistry, service: LiveTvService, sessions: LiveSessions, ts: { ffmpeg: FfmpegService; logger: Logger; readyTimeoutMs: number },
): LiveTvAccess {
  const channel = async (id: number) => (await service.channels.current()).byId.get(id);
  const hold = async (channelId: number, label: string, options?: { viewer?: boolean }) => {
    const c = await channel(channelId);
    if (!c) throw errors.notFound(`No channel ${channelId}`);
    return sessions.hold(c, label, options);
  };
  return {
    async channel(id) {
      const c = await channel(id);
      const tuner = c && registry.tuners.get(c.tunerId);
      return c && tuner ? { id: c.id, name: c.name, number: c.number, tunerId: tuner.id, tunerName: tuner.name, maxStreams: tuner.maxStreams } : undefined;
    },
    tuners: () => [...registry.tuners.values()].map((t) => ({ id: t.id, name: t.name, maxStreams: t.maxStreams })),
    async channels() {
      const [{ channels }, icons] = await Promise.all([service.channels.current(), service.guide.channelIcons()]);
      return channels.map((c) => ({
        id: c.id, number: c.number, name: c.name, tvgId: c.tvgId ?? undefined, logo: c.logo ?? icons.get(c.id) ?? undefined, groups: c.groups,
      }));
    },
    guide: (channelIds, from, to) => service.guide.programmeDetails(channelIds, from, to),
    programme: (channelId, programmeId) => service.guide.program(channelId, programmeId),
    programmes: (channelId, from, to) => service.guide.programmesOf(channelId, from, to),
    guideVersion: () => service.guide.changeKey(),
    async findAirings(matches, from, to) {
      const present = (await service.channels.current()).byId;
      return (await service.guide.findAirings(matches, from, to)).filter((a) => present.has(a.channelId));
    },
    hold,
    async mpegTs(channelId, { label, signal, grant }) {
      let held;
      try {
        held = await hold(channelId, label, { viewer: true });
      } catch (err) {
        // Cluster mode: another node runs the channel; its stream is passed on (see ts-proxy.ts).
        if (!(err instanceof HeldElsewhere && err.url && grant)) throw err;
        const url = `${err.url.replace(/\/$/, '')}${tsPath(channelId, grant)}`;
        return proxyMpegTs(url, { node: err.node, log: ts.logger, label, readyTimeoutMs: ts.readyTimeoutMs, signal, grant });
      }
      return openMpegTs(held, { ...ts, log: ts.logger, label, signal, grant });
    },
    // The scope is the one the watch routes check (live/routes.ts).
    hlsPath: (channelId, grant) => `/watch/live/${channelId}/master.m3u8?key=${grant.mediaKey(`live:${channelId}`)}`,
    async search(query, limit) {
      const q = fold(query);
      if (!q || limit <= 0) return { channels: [], programmes: [] };
      const [snapshot, icons, programmes] = await Promise.all([
        service.channels.current(), service.guide.channelIcons(), service.guide.searchTitles(q, Date.now(), limit),
      ]);
      const channels = (await searchChannels(snapshot.channels, q)).slice(0, limit)
        .map((c) => ({ id: c.id, name: c.name, number: c.number, logo: c.logo ?? icons.get(c.id) ?? null }));
      // A programme of a channel that is not listed now (its tuner removed) is not one to show.
      return { channels, programmes: programmes.filter((p) => snapshot.byId.has(p.channelId)) };
    },
  };
}

function logSummary(logger: { info: (o: object, m: string) => void }, summary: RefreshSummary): void {
  logger.info({ event: 'initial_import', tuners: summary.tuners.length, guides: summary.guides.length, mapped: summary.mapped }, 'initial import finished');
}
