import type { GuideRegistry, GuideSource, Tuner, TunerRegistry } from 'antenna/sdk';

const ID = /^[\w.:@-]{1,191}$/;

export interface RegistryChange { kind: 'tuner' | 'guide'; id: string }

/**
 * The tuners and guide sources other plugins add. During init they are only
 * collected; once every plugin has initialised (the host calls freeze()),
 * each addition or removal is announced, for live-tv to import or hide it.
 */
export class LiveTvRegistry {
  readonly tuners = new Map<string, Tuner>();
  readonly guides = new Map<string, GuideSource>();
  private started = false;
  private listener?: (change: RegistryChange) => void;

  readonly tunerPoint: TunerRegistry & { freeze(): void } = {
    addTuner: (tuner) => {
      this.check('tuner', tuner.id, this.tuners);
      if (!Number.isInteger(tuner.maxStreams) || tuner.maxStreams < 1) throw new Error(`tuner ${tuner.id}: maxStreams must be a positive integer`);
      this.tuners.set(tuner.id, tuner);
      this.changed('tuner', tuner.id);
    },
    removeTuner: (id) => this.tuners.delete(id) && (this.changed('tuner', id), true),
    freeze: () => { this.started = true; },
  };

  readonly guidePoint: GuideRegistry & { freeze(): void } = {
    addGuideSource: (source) => {
      this.check('guide source', source.id, this.guides);
      this.guides.set(source.id, source);
      this.changed('guide', source.id);
    },
    removeGuideSource: (id) => this.guides.delete(id) && (this.changed('guide', id), true),
    freeze: () => { this.started = true; },
  };

  /** Called for every tuner or guide source added or removed after start. */
  onChange(listener: (change: RegistryChange) => void): void {
    this.listener = listener;
  }

  private changed(kind: RegistryChange['kind'], id: string): void {
    if (this.started) this.listener?.({ kind, id });
  }

  private check(what: string, id: string, map: Map<string, unknown>): void {
    if (!ID.test(id)) throw new Error(`${what} id ${JSON.stringify(id)} must be 1-191 characters of letters, digits and . : @ _ -`);
    if (map.has(id)) throw new Error(`${what} ${id} is already registered`);
  }
}
