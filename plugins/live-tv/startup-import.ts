/**
 * Cluster mode: the start-up import once per installation, not once per node. The node that
 * takes the lease imports, unless a start-up import of the same sources ended within their
 * shortest refresh interval (the scheduled refreshes, which run once in the cluster, keep them current
 * from there); the others skip it. Nodes starting together thus import once, and a node that
 * restarts later does not import again. Sources that never refresh are imported again only
 * when the configured sources change.
 */
import { createHash } from 'node:crypto';
import type { Cluster, Database, Logger } from 'antenna/sdk';
import type { LiveTvRegistry } from './registry.js';
import type { RefreshSummary } from './service.js';

const LEASE = 'livetv:startup-import';
/** `livetv_state` keys: when the last complete start-up import ended (ms), and a hash of the sources it imported. */
const AT_KEY = 'startup_import_at';
const SOURCES_KEY = 'startup_import_sources';
const POLL_MS = 250;

export async function importOnce(deps: {
  cluster: Cluster; db: Database; registry: LiveTvRegistry; log: Logger; now: () => number;
  refreshAll: () => Promise<RefreshSummary>;
  /** initialImport: await: wait while another node imports (this node then listens with its channels). */
  wait: boolean;
}): Promise<RefreshSummary | undefined> {
  const { cluster, db, registry, log, now } = deps;
  const sources = sourcesHash(registry);
  const windowMs = Math.min(...[...registry.tuners.values(), ...registry.guides.values()].map((s) => s.refreshMs ?? Infinity));
  for (;;) {
    const lease = await cluster.take(LEASE);
    if (!lease) {
      // Another node imports now; what it imports reaches this one (channel messages, version checks).
      if (!deps.wait) return undefined;
      await new Promise((r) => setTimeout(r, POLL_MS));
      continue;
    }
    try {
      const rows: { key: string; value: string | number }[] = await db('livetv_state').whereIn('key', [AT_KEY, SOURCES_KEY]).select('key', 'value');
      const at = Number(rows.find((r) => r.key === AT_KEY)?.value ?? 0);
      const same = Number(rows.find((r) => r.key === SOURCES_KEY)?.value ?? -1) === sources;
      if (same && now() - at < windowMs) {
        log.info({ event: 'initial_import_skipped', importedAt: new Date(at).toISOString() }, 'start-up import skipped: another node imported these sources within their refresh interval');
        return undefined;
      }
      const summary = await deps.refreshAll();
      // A source that failed is imported again by the next node that starts.
      if (![...summary.tuners, ...summary.guides].some((s) => 'error' in s)) {
        for (const [key, value] of [[AT_KEY, now()], [SOURCES_KEY, sources]] as const) await db('livetv_state').insert({ key, value }).onConflict('key').merge();
      }
      return summary;
    } finally {
      await lease.release().catch(() => {});
    }
  }
}

/** The configured sources as a number that fits livetv_state (48 bits of a hash): another set of sources is imported at start. */
function sourcesHash(registry: LiveTvRegistry): number {
  const ids = [...[...registry.tuners.keys()].map((id) => `tuner:${id}`), ...[...registry.guides.keys()].map((id) => `guide:${id}`)].sort();
  return parseInt(createHash('sha256').update(ids.join('\n')).digest('hex').slice(0, 12), 16);
}
