import type { Database, GuideLoadResult, GuideSource, JobManager, Logger, Tuner } from 'antenna/sdk';
import { ChannelEdits, ChannelStore, type ChannelLimits, type ImportCounts } from './channel-store.js';
import { GuideStore } from './guide-store.js';
import type { LiveTvRegistry } from './registry.js';

export type Progress = (label: string, fraction: number, message?: string) => void;

/** A tuner's import: the store's counts, and the entries the tuner left out with a warning. */
export type TunerImport = ImportCounts & { warnings: number };

/** Warnings of one import written to the log; the rest are only counted. */
const LOGGED_WARNINGS = 20;

/** The last import of a source in this process: its counts, or why it failed (the previous data stayed). */
export interface LastImport {
  at: string;
  ok: boolean;
  error?: string;
  counts?: TunerImport | GuideLoadResult;
}

export interface RefreshSummary {
  tuners: ({ id: string } & (TunerImport | { error: string }))[];
  guides: ({ id: string } & (GuideLoadResult | { error: string }))[];
  mapped: number;
}

/**
 * Imports run as jobs (`livetv:tuner:<id>`, `livetv:guide:<id>`), so a refresh
 * asked for twice runs once, shows progress in GET /api/jobs and stops at shutdown.
 */
export class LiveTvService {
  readonly channels: ChannelStore;
  readonly edits: ChannelEdits;
  readonly guide: GuideStore;
  private stopped = false;
  private readonly running = new Set<Promise<RefreshSummary>>();
  /** By `tuner:<id>` and `guide:<id>`. */
  readonly lastImports = new Map<string, LastImport>();

  constructor(
    private readonly knex: Database, private readonly log: Logger, private readonly jobs: JobManager, private readonly registry: LiveTvRegistry, now: () => number,
    limits: ChannelLimits = {},
  ) {
    this.channels = new ChannelStore(knex, () => new Set(registry.tuners.keys()), now, limits);
    this.edits = new ChannelEdits(this.channels);
    this.guide = new GuideStore(knex, log);
  }

  async refreshTuner(tuner: Tuner, progress?: Progress): Promise<TunerImport> {
    const job = this.jobs.ensure<{ result?: TunerImport }>(`livetv:tuner:${tuner.id}`, () => ({
      kind: 'livetv-import',
      data: {},
      run: async (ctx) => {
        const report = (f: number, m?: string) => { ctx.progress(f, m); progress?.(tuner.name, f, m); };
        report(0, 'reading playlist');
        // An array, or an async iterable: the store reduces each channel to what it stores as the tuner
        // yields it, so a 100,000-channel list never exists as objects all at once.
        let warnings = 0;
        const warning = (message: string) => {
          if (++warnings <= LOGGED_WARNINGS) this.log.warn({ event: 'tuner_warning', tuner: tuner.id, warning: String(message).slice(0, 500) }, 'playlist entry left out');
        };
        const listed = tuner.listChannels({ signal: ctx.signal, progress: (f, m) => report(f * 0.8, m), warning });
        const channels = Symbol.asyncIterator in listed ? listed : await listed;
        const counts = await this.channels.replaceTunerChannels(tuner.id, channels, (n) => {
          ctx.signal.throwIfAborted();
          report(0.8, `storing ${n} channels`);
        });
        await this.remap();
        ctx.data.result = { ...counts, warnings };
        report(1, `${counts.channels} channels (${counts.added} new, ${counts.removed} gone, ${counts.duplicates} duplicates skipped), ${warnings} warnings`);
        this.log.info({ event: 'tuner_import', tuner: tuner.id, ...counts, warnings }, 'channels imported');
      },
    }));
    return this.outcome(job, `tuner ${tuner.name}`, `tuner:${tuner.id}`);
  }

  async refreshGuide(source: GuideSource, progress?: Progress): Promise<GuideLoadResult> {
    const job = this.jobs.ensure<{ result?: GuideLoadResult }>(`livetv:guide:${source.id}`, () => ({
      kind: 'livetv-import',
      data: {},
      run: async (ctx) => {
        const report = (f: number, m?: string) => { ctx.progress(f, m); progress?.(source.name, f, m); };
        report(0, 'reading guide');
        const result = await this.guide.import(source, ctx.signal, (f, m) => report(f * 0.95, m));
        const mapped = await this.remap();
        ctx.data.result = result;
        report(1, `${result.programmes} programmes on ${result.channels} guide channels, ${mapped} channels with guide data, ${result.skipped} skipped, ${result.warnings} warnings`);
        this.log.info({ event: 'guide_import', source: source.id, ...result, mapped }, 'guide imported');
      },
    }));
    return this.outcome(job, `guide ${source.name}`, `guide:${source.id}`);
  }

  private async outcome<T extends TunerImport | GuideLoadResult>(job: { done: Promise<string>; data: { result?: T }; error?: string }, what: string, key: string): Promise<T> {
    const state = await job.done;
    const at = new Date().toISOString();
    if (state !== 'completed' || !job.data.result) {
      const error = (job as { error?: string }).error ?? state;
      this.log.warn({ event: 'import_failed', what, error }, 'import failed; previous data kept');
      this.lastImports.set(key, { at, ok: false, error });
      throw new Error(`${what}: ${error}`);
    }
    this.lastImports.set(key, { at, ok: true, counts: job.data.result });
    return job.data.result;
  }

  /**
   * A tuner joined or left the registry: the channel list is read again (within a second, as
   * after an import of another process) with the tuners there are now. A removed tuner's
   * channels stay stored, out of the list, and are back as they were when it returns.
   */
  async tunersChanged(): Promise<void> {
    await this.knex('livetv_state').where({ key: 'version' }).increment('value', 1);
  }

  /** Every tuner, then every guide source; one failure never stops the others. */
  async refreshAll(progress?: Progress): Promise<RefreshSummary> {
    const run = this.refreshAllNow(progress);
    this.running.add(run);
    try {
      return await run;
    } finally {
      this.running.delete(run);
    }
  }

  /** At shutdown: no new import starts, running ones are stopped, and nothing touches the database afterwards. */
  async stop(): Promise<void> {
    this.stopped = true;
    const keys = [...this.registry.tuners.keys()].map((id) => `livetv:tuner:${id}`).concat([...this.registry.guides.keys()].map((id) => `livetv:guide:${id}`));
    await Promise.all(keys.map((key) => this.jobs.get(key)?.stop('shutdown')));
    await Promise.allSettled([...this.running]);
  }

  private async refreshAllNow(progress?: Progress): Promise<RefreshSummary> {
    const summary: RefreshSummary = { tuners: [], guides: [], mapped: 0 };
    for (const tuner of this.registry.tuners.values()) {
      if (this.stopped) return summary;
      try {
        summary.tuners.push({ id: tuner.id, ...(await this.refreshTuner(tuner, progress)) });
      } catch (err) {
        summary.tuners.push({ id: tuner.id, error: (err as Error).message });
      }
    }
    for (const source of this.registry.guides.values()) {
      if (this.stopped) return summary;
      try {
        summary.guides.push({ id: source.id, ...(await this.refreshGuide(source, progress)) });
      } catch (err) {
        summary.guides.push({ id: source.id, error: (err as Error).message });
      }
    }
    if (!this.stopped) summary.mapped = await this.remap();
    return summary;
  }

  async remap(): Promise<number> {
    const snapshot = await this.channels.current();
    // No version bump: the channel snapshot holds no mapping (programsFor reads it live), and a
    // bump here made every guide import reload every channel for nothing.
    return this.guide.remap(snapshot.all, [...this.registry.guides.keys()]);
  }
}
