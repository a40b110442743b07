/**
 * What hello-world offers other plugins. A plugin that builds on it imports
 * these refs from this package (`import { visitsService } from 'antenna-plugin-hello-world/api'`)
 * and names them in its init's `deps`; Antenna runs hello-world's init first.
 */
import { createExtensionPoint, createServiceRef } from 'antenna/sdk';

/** A service: hello-world's visit counts, for any plugin to read. */
export interface VisitCounts {
  /** How often the user was greeted. */
  of(userId: number): Promise<number>;
}

/** An extension point: other plugins add greetings in more languages (`GET /hello?lang=fr`). */
export interface Greetings {
  add(language: string, greeting: string): void;
}

export const visitsService = createServiceRef<VisitCounts>({ id: 'hello-world.visits', owner: 'hello-world' });
export const greetingsExtensionPoint = createExtensionPoint<Greetings>({ id: 'hello-world.greetings', owner: 'hello-world' });
