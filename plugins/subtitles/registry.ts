/**
 * The `subtitles` extension point: the providers, in the order tracks are
 * listed (the built-ins first), closed once every plugin has initialised.
 */
import type { SubtitleProvider, SubtitleRegistry } from 'antenna/sdk';
import { toWebVtt } from './vtt.js';

const ID = /^[a-z0-9][a-z0-9-]{0,31}$/;

export class Providers implements SubtitleRegistry {
  private readonly list: SubtitleProvider[] = [];
  private frozen = false;

  readonly toWebVtt = toWebVtt;

  addProvider(provider: SubtitleProvider): void {
    if (this.frozen) throw new Error(`cannot add subtitle provider ${provider.id}: providers are added during init`);
    if (!ID.test(provider.id)) throw new Error(`subtitle provider id ${JSON.stringify(provider.id)} must be 1-32 of a-z, 0-9 and -`);
    if (this.get(provider.id)) throw new Error(`subtitle provider ${provider.id} is already registered`);
    if (typeof provider.listTracks !== 'function' || typeof provider.fetchTrack !== 'function') {
      throw new Error(`subtitle provider ${provider.id} needs listTracks() and fetchTrack()`);
    }
    this.list.push(provider);
  }

  freeze(): void {
    this.frozen = true;
  }

  all(): readonly SubtitleProvider[] {
    return this.list;
  }

  get(id: string): SubtitleProvider | undefined {
    return this.list.find((p) => p.id === id);
  }
}
