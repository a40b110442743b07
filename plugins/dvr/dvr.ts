/**
 * The DVR: creates recordings from guide programmes (checking the tuner's
 * streams over the recording's window), starts them on time through the core
 * scheduler (a persisted task per scheduled recording), follows guide changes
 * before they start, resumes running ones at start and cancels or deletes them.
 */
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { errors, type AuthUser, type LiveChannelInfo, type LiveProgramme, type LiveTvAccess, type Logger, type Scheduler } from 'antenna/sdk';
import { ACTIVE, type Recording } from './model.js';
import type { Recorder } from './recorder.js';
import type { RecordingStore } from './store.js';

export const START_TASK_KIND = 'dvr.start';
const taskId = (id: number) => `dvr:${id}`;
/** How far from its old times a programme the guide moved is looked for (by title). */
const FOLLOW_RANGE_MS = 3 * 3600_000;

export interface DvrOptions {
  /** Where recordings are written: `<root>/<id>/`. */
  root: string;
  /** How often the guide is checked for changes (a cheap query). */
  guideCheckMs: number;
}

export class Dvr {
  /** Creations run one at a time: the duplicate and tuner checks see every earlier one. */
  private creating: Promise<unknown> = Promise.resolve();
  private guideVersion: string | undefined;
  private guideTimer: NodeJS.Timeout | undefined;
  private following: Promise<void> | undefined;
  private readonly playListeners: ((user: AuthUser, rec: Recording) => void)[] = [];
  private readonly removeListeners: ((id: number) => void)[] = [];

  constructor(
    private readonly store: RecordingStore,
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

  create(user: AuthUser, channelId: number, programId: number): Promise<Recording> {
    const next = this.creating.then(() => this.createNow(user, channelId, programId));
    this.creating = next.catch(() => {});
    return next;
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
    this.checkTuner(channel, programme, active);

    const onAir = this.recorder.window(programme).from <= now;
    const rec = await this.store.insert({
      channelId, programId, tunerId: channel.tunerId, title: programme.title, start: programme.start, stop: programme.stop,
      status: onAir ? 'recording' : 'scheduled', error: null, sizeBytes: 0, duration: 0, gaps: [],
      createdBy: user.id, createdAt: now,
    }, (id) => path.join(this.options.root, String(id)));
    this.log.info({ event: 'recording_created', recording: rec.id, channel: channelId, programme: programId, status: rec.status, user: user.username }, 'recording created');
    if (onAir) this.recorder.start(rec);
    else await this.scheduleStart(rec);
    return this.current(rec);
  }

  /**
   * 409 when the tuner's streams would not suffice at some moment of the new recording's
   * window: counting the distinct channels of the recordings on the same tuner then.
   */
  private checkTuner(channel: LiveChannelInfo, programme: LiveProgramme, active: Recording[]): void {
    const mine = this.recorder.window(programme);
    const others = active
      .filter((r) => r.tunerId === channel.tunerId && r.channelId !== channel.id)
      .map((r) => ({ rec: r, ...this.recorder.window(r) }))
      .filter((o) => o.from < mine.to && o.to > mine.from);
    // The set of channels only grows at the start of a recording: check each such moment.
    for (const at of [mine.from, ...others.map((o) => o.from).filter((t) => t > mine.from)]) {
      const busy = others.filter((o) => o.from <= at && o.to > at);
      const channels = new Set(busy.map((o) => o.rec.channelId));
      if (channels.size + 1 > channel.maxStreams) {
        const names = busy.map((o) => `"${o.rec.title}" on channel ${o.rec.channelId} (recording ${o.rec.id})`).join(', ');
        throw errors.conflict(`Tuner limit reached for ${channel.tunerName}: its ${channel.maxStreams} stream${channel.maxStreams === 1 ? ' is' : 's are'} taken during this programme by ${names}`);
      }
    }
  }

  private async scheduleStart(rec: Recording): Promise<void> {
    await this.scheduler.schedule({ id: taskId(rec.id), kind: START_TASK_KIND, at: this.recorder.window(rec).from, payload: { id: rec.id } });
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
    this.recorder.start({ ...rec, status: 'recording' });
  }

  /** At start: running recordings resume (into a new part), scheduled ones keep their task. */
  async resume(): Promise<void> {
    const now = this.now();
    for (const rec of await this.store.withStatus('recording')) this.recorder.start(rec);
    for (const rec of await this.store.withStatus('scheduled')) {
      if (now >= this.recorder.window(rec).to) await this.store.update(rec.id, { status: 'failed', error: 'missed: the server was not running during the programme' });
      else await this.scheduleStart(rec);
    }
  }

  /** Cancels a scheduled or running recording; deletes a finished one with its files. */
  async remove(user: AuthUser, id: number): Promise<void> {
    const rec = await this.store.get(id);
    if (!rec) throw errors.notFound(`No recording ${id}`);
    if (!user.admin && rec.createdBy !== user.id) throw errors.forbidden(`Only an administrator or the user who scheduled it may remove recording ${id}`);
    if (rec.status === 'scheduled') {
      await this.store.update(id, { status: 'cancelled' });
      await this.scheduler.cancel(taskId(id));
    } else if (rec.status === 'recording') {
      await this.store.update(id, { status: 'cancelled' });
      await this.recorder.stop(id, 'cancelled'); // what was recorded stays, playable
    } else {
      // The dir is ours by construction (<root>/<id>); never follow a row to anything else.
      if (path.basename(rec.dir) === String(id)) await rm(rec.dir, { recursive: true, force: true });
      await this.store.remove(id);
      for (const listener of this.removeListeners) listener(id);
    }
    this.log.info({ event: 'recording_removed', recording: id, was: rec.status, user: user.username }, rec.status === 'scheduled' || rec.status === 'recording' ? 'recording cancelled' : 'recording deleted');
  }

  /** Called after a finished recording and its files were deleted. */
  onRemoved(listener: (id: number) => void): void {
    this.removeListeners.push(listener);
  }

  /** Called (never awaited) when a user requests a recording's manifest: for continue watching, once recordings are catalog items. */
  onPlay(listener: (user: AuthUser, rec: Recording) => void): void {
    this.playListeners.push(listener);
  }

  played(user: AuthUser, rec: Recording): void {
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
    await this.following;
  }

  async followGuide(): Promise<void> {
    const version = await this.live.guideVersion();
    if (version === this.guideVersion) return;
    this.guideVersion = version; // the first time too: the CLI may have refreshed the guide while the server was down
    for (const rec of await this.store.withStatus('scheduled', 'recording')) await this.followProgramme(rec);
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
