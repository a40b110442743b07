/** Placeholder until this view is written (issue #9). */
export function LibraryView({ id }: { id: string }) {
  return <p class="empty">Library {id}: coming soon.</p>;
}
