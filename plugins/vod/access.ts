/**
 * Finding what a request may play. Unknown ids, ids of libraries the user was
 * not granted and ids with path tricks all answer the same 404, so ids never
 * leak (PRODUCT.md §2 Access).
 */
import type { FastifyRequest } from 'fastify';
import { errors, type AuthService, type AuthUser } from 'antenna/sdk';
import { PLAYABLE, type Item, type MediaFile } from './model.js';
import type { VodStore } from './store.js';

/** What access needs from the store (VodStore, or a cache in front of it). */
export type ItemSource = Pick<VodStore, 'item' | 'versions'>;

/** Item ids are opaque ([A-Za-z0-9_-], at most 64): anything else is unknown without a query. */
export const isItemId = (id: string): boolean => /^[A-Za-z0-9_-]{1,64}$/.test(id);

export async function visibleItem(store: Pick<VodStore, 'item'>, auth: AuthService, user: AuthUser, id: string): Promise<Item> {
  const item = isItemId(id) ? await store.item(id) : undefined;
  if (!item || !auth.canAccessLibrary(user, item.libraryId)) throw errors.notFound(`No item ${JSON.stringify(id.slice(0, 64))}`);
  return item;
}

export interface Playable {
  user: AuthUser;
  item: Item;
  /** Every readable version, best first. */
  versions: MediaFile[];
  /** The chosen version. */
  file: MediaFile;
  version: number;
}

/** The item and version a playback request names (`version` defaults to 0, the best). */
export async function playableItem(store: ItemSource, auth: AuthService, request: FastifyRequest, id: string, version = 0): Promise<Playable> {
  const user = auth.requireUser(request);
  const item = await visibleItem(store, auth, user, id);
  if (!PLAYABLE.has(item.type)) throw errors.badRequest(`Item ${id} is a ${item.type}; play one of its episodes`);
  const versions = await store.versions(item.id);
  if (!versions.length) throw errors.notFound(`Item ${id} has no readable file`);
  const file = versions[version];
  if (!file || !file.info) throw errors.notFound(`Item ${id} has no version ${version} (it has ${versions.length})`);
  return { user, item, versions, file, version };
}
