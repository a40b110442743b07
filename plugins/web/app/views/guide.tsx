/** Placeholder until this view is written (issue #9). */
export function GuideView() {
  return <p class="empty">Coming soon.</p>;
}
