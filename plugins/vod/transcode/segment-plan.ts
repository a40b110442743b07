/**
 * Where segments start, decided before anything is transcoded, so the
 * manifests describe the whole title from the first request and every later
 * ffmpeg run (restarted anywhere) cuts at the same places.
 *
 * A plan is the list of segment boundaries in seconds on the file's timeline:
 * [0, b1, b2, …, duration]; segment k spans [plan[k], plan[k+1]).
 */

/**
 * A segment shorter than this at the end is merged into the one before: a
 * sliver of a segment may hold no video frame at all (the container's duration
 * often runs past the last frame), and a player would wait for it forever.
 */
const MIN_TAIL_SECONDS = 1;

/** Fixed-length segments (transcoding: keyframes are forced at these times). */
export function fixedPlan(duration: number, segmentSeconds: number): number[] {
  if (!(duration > 0)) throw new Error('the file has no duration');
  const plan = [0];
  for (let t = segmentSeconds; t < duration; t += segmentSeconds) plan.push(t);
  if (plan.length > 1 && duration - plan[plan.length - 1]! < Math.min(MIN_TAIL_SECONDS, segmentSeconds / 2)) plan.pop();
  plan.push(duration);
  return plan;
}

/**
 * Segments cut at the source's keyframes (copied video can only start a
 * segment on one), greedily: the next cut is the first keyframe at least
 * `segmentSeconds` after the previous one. Greedy cuts depend only on the cut
 * before, so a run restarted at any cut finds the same ones.
 */
export function keyframePlan(keyframes: readonly number[], duration: number, segmentSeconds: number): number[] {
  if (!(duration > 0)) throw new Error('the file has no duration');
  const plan = [0];
  let last = 0;
  for (const k of keyframes) {
    if (k >= duration) break;
    if (k >= last + segmentSeconds - 1e-6) {
      plan.push(k);
      last = k;
    }
  }
  if (plan.length > 1 && duration - plan[plan.length - 1]! < Math.min(MIN_TAIL_SECONDS, segmentSeconds / 2)) plan.pop();
  plan.push(duration);
  return plan;
}

/** Number of segments of a plan. */
export const segmentCount = (plan: readonly number[]): number => plan.length - 1;

/**
 * The segment a fragment starting at `t` belongs to: the last boundary at or
 * before t (give or take `tolerance`, for timestamps rounded to the stream's
 * time base). Binary search: a two-hour film has ~1800 boundaries.
 */
export function segmentAt(plan: readonly number[], t: number, tolerance: number): number {
  let lo = 0;
  let hi = plan.length - 2;
  if (hi < 0) return 0;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (plan[mid]! <= t + tolerance) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** The first keyframe after time t (for telling when a copied segment is complete), or Infinity. */
export function nextKeyframe(keyframes: readonly number[], t: number, tolerance: number): number {
  let lo = 0;
  let hi = keyframes.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (keyframes[mid]! <= t + tolerance) lo = mid + 1;
    else hi = mid;
  }
  return lo < keyframes.length ? keyframes[lo]! : Number.POSITIVE_INFINITY;
}
