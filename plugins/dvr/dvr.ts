/**
 * The DVR: creates recordings from guide programmes (checking the tuner's
 * streams over the recording's window), starts them on time through the core
 * scheduler (a persisted task per scheduled recording), follows guide changes
 * before they start, resumes running ones at start and cancels or deletes them.
 * Series rules (rules.ts) are evaluated here too: series.ts plans, evaluateNow applies.
 */
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { errors, type AuthUser, type Cluster, type LiveChannelInfo, type LiveProgramme, type LiveTvAccess, type Logger, type ScheduledTask, type Scheduler } from 'antenna/sdk';
import { ACTIVE, type EpisodeFields, type Recording } from './model.js';
import type { Recorder } from './recorder.js';
import { defaultSpec, matchOf, ruleSpec, type Rule, type RuleSpec, type RuleStore } from './rules.js';
import { episodeIdentity, plan, replannable, type PlannedEntry } from './series.js';
import { conflictReason, TunerSlots, type TunerInfo } from './slots.js';
import type { RecordingStore } from './store.js';

export const START_TASK_KIND = 'dvr.start';
const taskId = (id: number) => `dvr:${id}`;
/** How far from its old times a programme the guide moved is looked for (by title). */
const FOLLOW_RANGE_MS = 3 * 3600_000;
/** How far ahead rules look: beyond any guide. */
const RULE_HORIZON_MS = 60 * 86_400_000;
/** A recording whose media was asked for this recently is being played: keep limits spare it. */
const PLAYING_MS = 5 * 60_000;

/** What a recording keeps of its programme as an episode. */
const episodeFields = (p: LiveProgramme): EpisodeFields => ({
  episodeKey: episodeIdentity(p), seriesKey: p.seriesKey ?? null, season: p.season ?? null, episode: p.episode ?? null, episodeTitle: p.episodeTitle ?? null,
});

/** A rule as the API gives it, with its coming airings. */
export interface RuleView { rule: Rule; next: Recording[] }

export interface DvrOptions {
  /** Where recordings are written: `<root>/<id>/`. */
  root: string;
  /** Seconds: a new rule's paddings unless it says. */
  prePadding: number;
  postPadding: number;
  /** How often the guide is checked for changes (a cheap query). */
  guideCheckMs: number;
  /** Cluster mode: how often recordings whose node died are looked for (0: a single node, never). */
  takeOverMs?: number;
  cluster?: Cluster;
}

export class Dvr {
  /** Creations run one at a time: the duplicate and tuner checks see every earlier one. */
  private creating: Promise<unknown> = Promise.resolve();
  private guideVersion: string | undefined;
  private guideTimer: NodeJS.Timeout | undefined;
  private following: Promise<void> | undefined;
  private takeOverTimer: NodeJS.Timeout | undefined;
  private takingOver: Promise<void> | undefined;
  private readonly playListeners: ((user: AuthUser, rec: Recording) => void)[] = [];
  private readonly removeListeners: ((id: number) => void)[] = [];
  /** recording id → when its media was last asked for. */
  private readonly lastPlayed = new Map<number, number>();

  constructor(
    private readonly store: RecordingStore,
    private readonly rules: RuleStore,
    private readonly recorder: Recorder,
    private readonly live: LiveTvAccess,
    private readonly scheduler: Scheduler,
    private readonly log: Logger,
    private readonly now: () => number,
    private readonly options: DvrOptions,
  ) {}

  /** A row with the live progress of its job when it is running. */
  private current(rec: Recording): Recording {
    const active = rec.status === 'recording' ? this.recorder.active(rec.id) : undefined;
    return active ? { ...rec, ...this.recorder.progress(active) } : rec;
  }

  async list(): Promise<Recording[]> {
    return (await this.store.all()).map((r) => this.current(r));
  }

  async get(id: number): Promise<Recording | undefined> {
    const rec = await this.store.get(id);
    return rec && this.current(rec);
  }

  /** Runs `task` after every creation and evaluation before it: each sees the recordings the earlier ones made. */
  private serial<T>(task: () => Promise<T>): Promise<T> {
    const next = this.creating.then(task);
    this.creating = next.catch(() => {});
    return next;
  }

  async create(user: AuthUser, channelId: number, programId: number): Promise<Recording> {
    const rec = await this.serial(() => this.clusterWide(() => this.createNow(user, channelId, programId)));
    // A one-off outranks rules: theirs move to other airings, or into conflict.
    if (rec.status === 'scheduled') await this.evaluateRules();
    return (await this.get(rec.id)) ?? rec;
  }

  private async createNow(user: AuthUser, channelId: number, programId: number): Promise<Recording> {
    const channel = await this.live.channel(channelId);
    if (!channel) throw errors.notFound(`No channel ${channelId}`);
    const programme = await this.live.programme(channelId, programId);
    if (!programme) throw errors.notFound(`No programme ${programId} on channel ${channelId}`);
    const now = this.now();
    if (programme.stop <= now) throw errors.badRequest(`program_id: programme ${programId} ("${programme.title}") is already over`);
    const active = await this.store.withStatus('scheduled', 'recording');
    const same = active.find((r) => r.channelId === channelId && r.programId === programId);
    if (same) throw errors.conflict(`Programme ${programId} ("${programme.title}") on channel ${channelId} is already recorded by recording ${same.id}`);
    // Rules' recordings give way to a one-off: only running ones and other one-offs count.
    this.checkTuner(channel, programme, active.filter((r) => !replannable(r, now, (x) => this.recorder.window(x))));

    const onAir = this.recorder.window(programme).from <= now;
    const rec = await this.store.insert({
      channelId, programId, tunerId: channel.tunerId, title: programme.title, start: programme.start, stop: programme.stop,
      status: onAir ? 'recording' : 'scheduled', error: null, sizeBytes: 0, duration: 0, gaps: [],
      createdBy: user.id, createdAt: now, ruleId: null, ...episodeFields(programme), prePadding: null, postPadding: null, watchedAt: null,
    }, (id) => path.join(this.options.root, String(id)));
    this.log.info({ event: 'recording_created', recording: rec.id, channel: channelId, programme: programId, status: rec.status, user: user.username }, 'recording created');
    if (onAir) await this.recorder.claim(rec);
    else await this.scheduleStart(rec);
    return this.current(rec);
  }

  /**
   * 409 when the tuner's streams would not suffice at some moment of the new recording's
   * window: counting the distinct channels of the recordings on the same tuner then.
   */
  private checkTuner(channel: LiveChannelInfo, programme: LiveProgramme, active: Recording[]): void {
    const slots = new TunerSlots();
    for (const r of active) {
      if (r.tunerId === channel.tunerId) slots.add(r.tunerId, { channelId: r.channelId, ...this.recorder.window(r), label: `"${r.title}" on channel ${r.channelId} (recording ${r.id})` });
    }
    const { from, to } = this.recorder.window(programme);
    const busy = slots.blockers(channel, channel.id, from, to);
    if (busy.length) throw errors.conflict(conflictReason(channel, busy));
  }

  private startTask(rec: Recording): ScheduledTask {
    return { id: taskId(rec.id), kind: START_TASK_KIND, at: this.recorder.window(rec).from, payload: { id: rec.id } };
  }

  private async scheduleStart(rec: Recording): Promise<void> {
    await this.scheduler.schedule(this.startTask(rec));
  }

  /** The scheduler's task: start the recording (or follow its programme if the guide moved it). */
  async startDue(id: number): Promise<void> {
    let rec = await this.store.get(id);
    if (!rec || rec.status !== 'scheduled') return;
    rec = await this.followProgramme(rec);
    const { from, to } = this.recorder.window(rec);
    const now = this.now();
    if (now >= to) {
      await this.store.update(id, { status: 'failed', error: 'missed: the server was not running during the programme' });
      this.log.warn({ recording: id }, 'recording missed');
      return;
    }
    if (from > now + 1000) return this.scheduleStart(rec); // moved later: the task fires again then
    await this.store.update(id, { status: 'recording' });
    await this.recorder.claim({ ...rec, status: 'recording' });
  }

  /** At start: running recordings resume (into a new part) unless another node records them, scheduled ones keep their task. */
  async resume(): Promise<void> {
    const now = this.now();
    await this.takeOver();
    for (const rec of await this.store.withStatus('scheduled')) {
      if (now >= this.recorder.window(rec).to) await this.store.update(rec.id, { status: 'failed', error: 'missed: the server was not running during the programme' });
      else await this.scheduleStart(rec);
    }
  }

  /** Recordings under way that no node records (their node died): this one continues them, into a new part. */
  async takeOver(): Promise<void> {
    for (const rec of await this.store.withStatus('recording')) {
      if (!this.recorder.active(rec.id) && (await this.recorder.claim(rec)) && this.options.takeOverMs) {
        this.log.info({ event: 'recording_taken_over', recording: rec.id }, 'recording continues on this node');
      }
    }
  }

  /** Cluster mode: looks for recordings to take over every `takeOverMs`. */
  startTakingOver(): void {
    if (!this.options.takeOverMs) return;
    this.takeOverTimer = setInterval(() => {
      this.takingOver ??= this.takeOver().catch((err) => this.log.warn({ error: (err as Error).message }, 'dvr: looking for recordings to take over failed')).finally(() => { this.takingOver = undefined; });
    }, this.options.takeOverMs);
    this.takeOverTimer.unref();
  }

  /**
   * Cancels a scheduled or running recording; deletes a finished one with its files. An airing of
   * a rule becomes `skipped` instead, and stays so: its row is what keeps the rule from it.
   * Rules are evaluated after: a slot freed, or an episode is no longer recorded.
   */
  async remove(user: AuthUser, id: number): Promise<void> {
    const rec = await this.store.get(id);
    if (!rec) throw errors.notFound(`No recording ${id}`);
    if (!user.admin && rec.createdBy !== user.id) throw errors.forbidden(`Only an administrator or the user who scheduled it may remove recording ${id}`);
    if (rec.status === 'skipped') return; // cancelled already
    if (rec.ruleId !== null && (rec.status === 'scheduled' || rec.status === 'conflict')) {
      await this.store.update(id, { status: 'skipped', error: null });
      await this.scheduler.cancel(taskId(id));
      this.log.info({ event: 'recording_skipped', recording: id, rule: rec.ruleId, user: user.username }, 'airing of a rule skipped');
      await this.evaluateRules();
      return;
    }
    if (rec.status === 'scheduled') {
      await this.store.update(id, { status: 'cancelled' });
      await this.scheduler.cancel(taskId(id));
    } else if (rec.status === 'recording') {
      await this.store.update(id, { status: 'cancelled' });
      await this.recorder.stop(id, 'cancelled'); // what was recorded stays, playable
    } else {
      await this.deleteFinished(rec);
    }
    this.log.info({ event: 'recording_removed', recording: id, was: rec.status, user: user.username }, rec.status === 'scheduled' || rec.status === 'recording' ? 'recording cancelled' : 'recording deleted');
    await this.evaluateRules();
  }

  private async deleteFinished(rec: Recording): Promise<void> {
    // The dir is ours by construction (<root>/<id>); never follow a row to anything else.
    if (path.basename(rec.dir) === String(rec.id)) await rm(rec.dir, { recursive: true, force: true });
    await this.store.remove(rec.id);
    for (const listener of this.removeListeners) listener(rec.id);
  }

  /** Called after a finished recording and its files were deleted. */
  onRemoved(listener: (id: number) => void): void {
    this.removeListeners.push(listener);
  }

  /** Called (never awaited) when a user requests a recording's manifest: for continue watching, once recordings are catalog items. */
  onPlay(listener: (user: AuthUser, rec: Recording) => void): void {
    this.playListeners.push(listener);
  }

  /** Its media was asked for (a manifest or a segment): it is being played. */
  touched(id: number): void {
    this.lastPlayed.set(id, this.now());
  }

  private beingPlayed(id: number): boolean {
    const at = this.lastPlayed.get(id);
    return at !== undefined && this.now() - at < PLAYING_MS;
  }

  played(user: AuthUser, rec: Recording): void {
    this.touched(rec.id);
    if (rec.watchedAt === null) {
      this.store.update(rec.id, { watchedAt: this.now() }).catch((err) => this.log.warn({ err, recording: rec.id }, 'dvr: noting a play failed'));
    }
    for (const listener of this.playListeners) {
      try { listener(user, rec); } catch (err) { this.log.warn({ err, recording: rec.id }, 'a play listener failed'); }
    }
  }

  /** Checks the guide every guideCheckMs; when it changed, recordings follow their programmes. */
  startFollowingGuide(): void {
    this.guideTimer = setInterval(() => {
      this.following ??= this.followGuide().catch((err) => this.log.warn({ err }, 'dvr: following the guide failed')).finally(() => { this.following = undefined; });
    }, this.options.guideCheckMs);
    this.guideTimer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.guideTimer);
    clearInterval(this.takeOverTimer);
    await this.following;
    await this.takingOver;
  }

  async followGuide(): Promise<void> {
    const version = await this.live.guideVersion();
    if (version === this.guideVersion) return;
    this.guideVersion = version; // the first time too: the CLI may have refreshed the guide while the server was down
    for (const rec of await this.store.withStatus('scheduled', 'recording')) await this.followProgramme(rec);
    await this.evaluateRules();
  }

  // ---- series rules

  /** Evaluates every rule against the guide and applies the plan (series.ts). */
  evaluateRules(): Promise<void> {
    return this.serial(() => this.clusterWide(() => this.evaluateNow()));
  }

  /**
   * Cluster mode: recordings are created and rules evaluated by one node at a time (two at
   * once would both add the same airing, or both take the last tuner slot), so this waits for
   * the lease another node may hold, two lease times at most.
   */
  private async clusterWide<T>(task: () => Promise<T>): Promise<T> {
    const cluster = this.options.cluster;
    if (!cluster?.enabled) return task();
    const deadline = this.now() + cluster.leaseMs * 2;
    for (;;) {
      const lease = await cluster.take('dvr:planning');
      if (lease) {
        try {
          return await task();
        } finally {
          await lease.release();
        }
      }
      if (this.now() > deadline) throw errors.unavailable('Another node is planning recordings; try again');
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  private async evaluateNow(): Promise<void> {
    const rules = await this.rules.all();
    const now = this.now();
    const recordings = await this.store.all();
    const window = (r: Parameters<Recorder['window']>[0]) => this.recorder.window(r);
    const airings = rules.length ? await this.live.findAirings(rules.map(matchOf), now, now + RULE_HORIZON_MS) : [];
    const tuners = new Map<number, TunerInfo>();
    for (const channelId of new Set([...airings.map((a) => a.channelId), ...recordings.filter((r) => ACTIVE.has(r.status)).map((r) => r.channelId)])) {
      const c = await this.live.channel(channelId);
      if (c) tuners.set(channelId, c);
    }
    const entries = plan({ rules, airings, tuners, recordings, now, window });
    const planned = new Set<number>();
    let changes = 0;
    for (const e of entries) {
      if (!e.existing) continue;
      planned.add(e.existing.id);
      if (await this.update(e, e.existing, tuners.get(e.airing.channelId)?.tunerId)) changes++;
    }
    changes += await this.insertNew(entries.filter((e) => !e.existing), tuners);
    // Rows of rules the plan no longer wants (rule changed, episode recorded elsewhere, airing gone): never recorded, so removed.
    for (const r of recordings) {
      if (!planned.has(r.id) && replannable(r, now, window)) {
        await this.scheduler.cancel(taskId(r.id));
        await this.store.remove(r.id);
        changes++;
      }
    }
    if (changes) this.log.info({ event: 'rules_evaluated', rules: rules.length, entries: entries.length, changes }, 'series rules evaluated');
    // A keep limit also holds as soon as it is set or lowered.
    // (The completed rows read above: an evaluation changes none, and one completing meanwhile is kept by applyKeep after.)
    for (const rule of rules) if (rule.keep) await this.keepLimit(rule, recordings.filter((r) => r.ruleId === rule.id && r.status === 'completed'));
  }

  /** The fields of a rule's row that an entry of the plan sets. */
  private planFields(e: PlannedEntry, tunerId: string | undefined) {
    const a = e.airing;
    return {
      channelId: a.channelId, tunerId: tunerId ?? e.existing?.tunerId ?? '', programId: a.id, title: a.title, start: a.start, stop: a.stop,
      status: e.status, error: e.reason,
    };
  }

  /** Makes an existing row say what the plan says; whether anything changed. */
  private async update(e: PlannedEntry, old: Recording, tunerId: string | undefined): Promise<boolean> {
    const a = e.airing;
    const fields = this.planFields(e, tunerId);
    const same = (Object.keys(fields) as (keyof typeof fields)[]).every((k) => old[k] === fields[k]);
    if (same) return false;
    await this.store.update(old.id, { ...fields, episodeTitle: a.episodeTitle ?? null, season: a.season ?? null, episode: a.episode ?? null });
    if (e.status === 'scheduled') await this.scheduleStart({ ...old, ...fields });
    else await this.scheduler.cancel(taskId(old.id));
    return true;
  }

  /** The rows of new entries, in one transaction (an evaluation after an import makes hundreds); how many. */
  private async insertNew(entries: PlannedEntry[], tuners: Map<number, TunerInfo>): Promise<number> {
    const now = this.now();
    const recs = await this.store.insertMany(entries.map((e) => ({
      ...this.planFields(e, tuners.get(e.airing.channelId)?.tunerId), sizeBytes: 0, duration: 0, gaps: [], createdBy: e.rule.createdBy, createdAt: now, ruleId: e.rule.id,
      ...episodeFields(e.airing), episodeKey: e.key, prePadding: e.rule.pre_padding, postPadding: e.rule.post_padding, watchedAt: null,
    })), (id) => path.join(this.options.root, String(id)));
    await this.scheduler.scheduleMany(recs.filter((r) => r.status === 'scheduled').map((r) => this.startTask(r)));
    for (const [i, rec] of recs.entries()) {
      const e = entries[i];
      this.log.info({ event: 'recording_created', recording: rec.id, rule: e.rule.id, channel: e.airing.channelId, programme: e.airing.id, status: rec.status }, 'recording created by a rule');
    }
    return recs.length;
  }

  async listRules(): Promise<RuleView[]> {
    const now = this.now();
    const upcoming = (await this.store.all()).filter((r) => r.ruleId !== null && ['scheduled', 'recording', 'conflict'].includes(r.status) && r.stop > now);
    return (await this.rules.all()).map((rule) => ({ rule, next: upcoming.filter((r) => r.ruleId === rule.id).map((r) => this.current(r)) }));
  }

  async rule(id: number): Promise<RuleView | undefined> {
    return (await this.listRules()).find((v) => v.rule.id === id);
  }

  async createRule(user: AuthUser, body: Partial<RuleSpec>): Promise<RuleView> {
    const spec = ruleSpec(body, defaultSpec(this.options.prePadding, this.options.postPadding));
    await this.checkChannel(spec);
    const rule = await this.rules.insert(spec, user.id, this.now());
    this.log.info({ event: 'rule_created', rule: rule.id, user: user.username }, 'series rule created');
    await this.evaluateRules();
    return (await this.rule(rule.id))!;
  }

  async updateRule(user: AuthUser, id: number, body: Partial<RuleSpec>): Promise<RuleView> {
    const rule = await this.ownRule(user, id);
    const spec = ruleSpec(body, rule);
    await this.checkChannel(spec);
    const { id: _id, createdBy: _by, createdAt: _at, ...stored } = { ...rule, ...spec };
    await this.rules.update(id, stored);
    await this.evaluateRules();
    return (await this.rule(id))!;
  }

  async removeRule(user: AuthUser, id: number): Promise<void> {
    await this.ownRule(user, id);
    await this.serial(async () => {
      for (const r of await this.store.ofRule(id)) if (r.status === 'scheduled') await this.scheduler.cancel(taskId(r.id));
      await this.store.forgetRule(id);
      await this.rules.remove(id);
    });
    this.log.info({ event: 'rule_removed', rule: id, user: user.username }, 'series rule removed');
    await this.evaluateRules(); // freed slots
  }

  private async ownRule(user: AuthUser, id: number): Promise<Rule> {
    const rule = await this.rules.get(id);
    if (!rule) throw errors.notFound(`No rule ${id}`);
    if (!user.admin && rule.createdBy !== user.id) throw errors.forbidden(`Only an administrator or the user who made it may change rule ${id}`);
    return rule;
  }

  private async checkChannel(spec: RuleSpec): Promise<void> {
    if (spec.channel_id !== null && !(await this.live.channel(spec.channel_id))) throw errors.badRequest(`channel_id: no channel ${spec.channel_id}`);
  }

  /**
   * A rule's keep limit, after one of its recordings finished: completed recordings beyond it are
   * deleted with their files, watched ones first, then the oldest; never one being played.
   */
  async applyKeep(ruleId: number): Promise<void> {
    const rule = await this.rules.get(ruleId);
    if (rule?.keep) await this.keepLimit(rule, (await this.store.ofRule(ruleId)).filter((r) => r.status === 'completed'));
  }

  /** The rule's keep limit over its completed recordings `kept` (by start). */
  private async keepLimit(rule: Rule, kept: Recording[]): Promise<void> {
    if (!rule.keep) return;
    let doomed: Recording[];
    if ('latest' in rule.keep) {
      const excess = kept.length - rule.keep.latest;
      if (excess <= 0) return;
      doomed = [...kept].sort((a, b) => Number(b.watchedAt !== null) - Number(a.watchedAt !== null) || a.start - b.start || a.id - b.id)
        .filter((r) => !this.beingPlayed(r.id)).slice(0, excess);
    } else {
      const before = this.now() - rule.keep.days * 86_400_000;
      doomed = kept.filter((r) => r.stop < before && !this.beingPlayed(r.id));
    }
    for (const r of doomed) {
      await this.deleteFinished(r);
      this.log.info({ event: 'recording_removed', recording: r.id, rule: rule.id, why: 'keep limit' }, 'recording deleted by its rule\'s keep limit');
    }
  }

  /**
   * The recording's programme as the guide has it now: found by id, else (its start moved,
   * which changes the id) by title, nearest to the old start. A scheduled recording takes
   * the new times; a running one only a new stop, of the same programme (same id): by title
   * it could be the next showing. Returns the row as it is afterwards.
   */
  private async followProgramme(rec: Recording): Promise<Recording> {
    let programme = await this.live.programme(rec.channelId, rec.programId);
    if (!programme && rec.status === 'scheduled') {
      const title = rec.title.trim().toLowerCase();
      const near = (await this.live.programmes(rec.channelId, rec.start - FOLLOW_RANGE_MS, rec.stop + FOLLOW_RANGE_MS))
        .filter((p) => p.title.trim().toLowerCase() === title)
        .sort((a, b) => Math.abs(a.start - rec.start) - Math.abs(b.start - rec.start));
      programme = near[0];
    }
    if (!programme || (programme.start === rec.start && programme.stop === rec.stop && programme.id === rec.programId)) return rec;
    if (!ACTIVE.has(rec.status)) return rec;
    if (rec.status === 'recording') {
      if (programme.stop === rec.stop) return rec;
      await this.store.update(rec.id, { stop: programme.stop });
      this.log.info({ recording: rec.id, stop: new Date(programme.stop).toISOString() }, 'recording follows the guide: new stop');
      return { ...rec, stop: programme.stop };
    }
    const moved = { ...rec, programId: programme.id, start: programme.start, stop: programme.stop };
    await this.store.update(rec.id, { programId: programme.id, start: programme.start, stop: programme.stop });
    await this.scheduleStart(moved);
    this.log.info({ recording: rec.id, start: new Date(programme.start).toISOString(), stop: new Date(programme.stop).toISOString() }, 'recording follows the guide: new times');
    return moved;
  }
}
