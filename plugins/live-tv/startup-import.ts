/**
 * The start-up import, once per installation rather than once per node (Cluster.once): nodes
 * starting together import once, and a node that restarts within the sources' shortest refresh
 * interval imports nothing (the scheduled refreshes, which run once in the cluster, keep them
 * current). Sources that never refresh are imported again only when the configured sources change.
 */
import { createHash } from 'node:crypto';
import type { Cluster } from 'antenna/sdk';
import type { LiveTvRegistry } from './registry.js';
import type { RefreshSummary } from './service.js';

/** The summary of the import when this node ran it; undefined when another node did. */
export async function importOnce(cluster: Cluster, registry: LiveTvRegistry, refreshAll: () => Promise<RefreshSummary>, wait: boolean): Promise<RefreshSummary | undefined> {
  const sources = [...registry.tuners.values(), ...registry.guides.values()];
  const fingerprint = createHash('sha256')
    .update([...[...registry.tuners.keys()].map((id) => `tuner:${id}`), ...[...registry.guides.keys()].map((id) => `guide:${id}`)].sort().join('\n'))
    .digest('hex');
  let summary: RefreshSummary | undefined;
  await cluster.once('livetv:startup-import', { fingerprint, withinMs: Math.min(...sources.map((s) => s.refreshMs ?? Infinity)), wait }, async () => {
    summary = await refreshAll();
    // A source that failed is imported again by the next node that starts.
    return ![...summary.tuners, ...summary.guides].some((s) => 'error' in s);
  });
  return summary;
}
