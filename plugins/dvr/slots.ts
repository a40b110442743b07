/**
 * Tuner slots over time: what recordings hold each tuner (source) when. A tuner's streams bound
 * the distinct channels recorded at once; recordings of one channel share its live session, so
 * back-to-back ones whose paddings overlap take one slot.
 */

export interface SlotUse {
  channelId: number;
  from: number;
  to: number;
  /** Names the recording in a conflict's reason. */
  label: string;
}

export interface TunerInfo { tunerId: string; tunerName: string; maxStreams: number }

const BUCKET_MS = 3600_000;

export class TunerSlots {
  /** tuner id → hour → uses overlapping that hour. */
  private readonly byTuner = new Map<string, Map<number, SlotUse[]>>();

  add(tunerId: string, use: SlotUse): void {
    let buckets = this.byTuner.get(tunerId);
    if (!buckets) this.byTuner.set(tunerId, (buckets = new Map()));
    for (let b = Math.floor(use.from / BUCKET_MS); b * BUCKET_MS < use.to; b++) {
      const list = buckets.get(b);
      if (list) list.push(use);
      else buckets.set(b, [use]);
    }
  }

  /**
   * The uses in the way of recording `channelId` over [from, to) on the tuner: at the first moment
   * where the other channels recorded fill every stream, those uses; empty when it fits.
   */
  blockers(tuner: TunerInfo, channelId: number, from: number, to: number): SlotUse[] {
    const buckets = this.byTuner.get(tuner.tunerId);
    if (!buckets) return [];
    const others = new Set<SlotUse>();
    for (let b = Math.floor(from / BUCKET_MS); b * BUCKET_MS < to; b++) {
      for (const u of buckets.get(b) ?? []) if (u.channelId !== channelId && u.from < to && u.to > from) others.add(u);
    }
    if (others.size < tuner.maxStreams) return [];
    // The set of channels only grows at the start of a use: check each such moment.
    const moments = [from, ...[...others].map((u) => u.from).filter((t) => t > from)];
    for (const at of moments) {
      const busy = [...others].filter((u) => u.from <= at && u.to > at);
      if (new Set(busy.map((u) => u.channelId)).size >= tuner.maxStreams) return busy;
    }
    return [];
  }
}

export function conflictReason(tuner: TunerInfo, busy: SlotUse[]): string {
  return `Tuner limit reached for ${tuner.tunerName}: its ${tuner.maxStreams} stream${tuner.maxStreams === 1 ? ' is' : 's are'} taken by ${busy.map((u) => u.label).join(', ')}`;
}
