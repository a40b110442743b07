import type { PackageFormat, Packager, PackagerRegistry } from '../sdk/media.js';

/**
 * The packagers by format. In the core rather than in a plugin because live-tv,
 * vod and dvr all use them and none of them should depend on another.
 */
export class PackagerRegistryImpl implements PackagerRegistry {
  private readonly byFormat = new Map<PackageFormat, Packager>();

  add(packager: Packager): void {
    if (this.byFormat.has(packager.format)) throw new Error(`a ${packager.format} packager is already registered`);
    this.byFormat.set(packager.format, packager);
  }

  get(format: PackageFormat): Packager | undefined {
    return this.byFormat.get(format);
  }
}
