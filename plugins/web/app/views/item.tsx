/** Placeholder until this view is written (issue #9). */
export function ItemView({ id }: { id: string }) {
  return <p class="empty">Item {id}: coming soon.</p>;
}
