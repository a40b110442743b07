/** Placeholder until this view is written (issue #9). */
export function PlayerView({ kind, id }: { kind: 'live' | 'vod' | 'recording'; id: string }) {
  return <p class="empty">Play {kind} {id}: coming soon.</p>;
}
