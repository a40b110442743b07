import type { GuideRegistry, GuideSource, Tuner, TunerRegistry } from 'antenna/sdk';

const ID = /^[\w.:@-]{1,191}$/;

/** The tuners and guide sources other plugins add; closed once every plugin has initialised. */
export class LiveTvRegistry {
  readonly tuners = new Map<string, Tuner>();
  readonly guides = new Map<string, GuideSource>();
  private frozen = false;

  readonly tunerPoint: TunerRegistry & { freeze(): void } = {
    addTuner: (tuner) => {
      this.check('tuner', tuner.id, this.tuners);
      if (!Number.isInteger(tuner.maxStreams) || tuner.maxStreams < 1) throw new Error(`tuner ${tuner.id}: maxStreams must be a positive integer`);
      this.tuners.set(tuner.id, tuner);
    },
    freeze: () => { this.frozen = true; },
  };

  readonly guidePoint: GuideRegistry & { freeze(): void } = {
    addGuideSource: (source) => {
      this.check('guide source', source.id, this.guides);
      this.guides.set(source.id, source);
    },
    freeze: () => { this.frozen = true; },
  };

  private check(what: string, id: string, map: Map<string, unknown>): void {
    if (this.frozen) throw new Error(`cannot add ${what} ${id}: live-tv registries are closed once plugins have initialised`);
    if (!ID.test(id)) throw new Error(`${what} id ${JSON.stringify(id)} must be 1-191 characters of letters, digits and . : @ _ -`);
    if (map.has(id)) throw new Error(`${what} ${id} is already registered`);
  }
}
