/** The signed-in user (GET /me), shared by every view: the header shows the name, live TV the favorites. */
import { useEffect, useState } from 'preact/hooks';
import { api } from './api.js';
import type { Me } from './types.js';

let me: Me | undefined;
const listeners = new Set<(me: Me | undefined) => void>();

function publish(next: Me | undefined): void {
  me = next;
  listeners.forEach((l) => l(me));
}

export async function loadMe(): Promise<Me> {
  const { user } = await api<{ user: Me }>('/me');
  publish(user);
  return user;
}

export function clearMe(): void {
  publish(undefined);
}

/** Favorites change from the channel list and the guide; both read them here. */
export function setFavorites(favorites: number[]): void {
  if (me) publish({ ...me, favorites });
}

export function useMe(): Me | undefined {
  const [value, setValue] = useState(me);
  useEffect(() => { listeners.add(setValue); setValue(me); return () => { listeners.delete(setValue); }; }, []);
  return value;
}
