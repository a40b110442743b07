/**
 * The CPU budget for ffmpeg runs that encode video (sdk TranscodeBudget):
 * counting slots, nothing else. Callers take a slot before they spawn and
 * give it back once the process has exited, so the number of encoding ffmpeg
 * processes never exceeds what was granted.
 */
import os from 'node:os';
import type { Logger, TranscodeBudget, TranscodeRequest, TranscodeSlot } from '../../sdk/services.js';

/** Seconds a refused client waits before asking again: about how long a player's abandoned job takes to be noticed. */
const RETRY_AFTER_SECONDS = 10;

/** The default global limit: one encode per core (x264 keeps about one core busy at real time and beyond). */
export function defaultMaxTranscodes(): number {
  return Math.max(1, os.availableParallelism?.() ?? os.cpus().length);
}

export class TranscodeBudgetImpl implements TranscodeBudget {
  private readonly held = new Set<{ owner: string; label: string }>();

  constructor(readonly limits: { max: number; perUser: number }, private readonly log: Logger) {}

  reserve(request: TranscodeRequest): ReturnType<TranscodeBudget['reserve']> {
    const { owner, label } = request;
    const ownerKey = owner === 'system' ? 'system' : String(owner.id);
    const limited = owner !== 'system' && !owner.admin;
    if (limited) {
      const mine = [...this.held].filter((h) => h.owner === ownerKey).length;
      if (mine >= this.limits.perUser) {
        return this.refuse('user', `You are already running ${mine} transcode${mine === 1 ? '' : 's'} (the limit per user is ${this.limits.perUser}); stop another stream or try again shortly`, ownerKey, label);
      }
      if (this.held.size >= this.limits.max) {
        return this.refuse('server', `The server is running its limit of ${this.limits.max} transcodes; try again shortly`, ownerKey, label);
      }
    }
    const entry = { owner: ownerKey, label };
    this.held.add(entry);
    let released = false;
    const slot: TranscodeSlot = {
      label,
      release: () => {
        if (released) return;
        released = true;
        this.held.delete(entry);
      },
    };
    return { slot };
  }

  usage(): { total: number; byUser: Record<string, number> } {
    const byUser: Record<string, number> = {};
    for (const h of this.held) byUser[h.owner] = (byUser[h.owner] ?? 0) + 1;
    return { total: this.held.size, byUser };
  }

  private refuse(refused: 'server' | 'user', message: string, owner: string, label: string) {
    this.log.info({ event: 'transcode_refused', reason: refused, user: owner, label, running: this.held.size, max: this.limits.max }, 'transcode refused: over the limit');
    return { refused, message, retryAfter: RETRY_AFTER_SECONDS };
  }
}
