import type { ProgressReporter } from '../../sdk/services.js';

/** A bar on a terminal (redrawn in place), plain progress lines otherwise (at most one per 10 %). */
export function createProgress(stream: NodeJS.WriteStream = process.stderr): ProgressReporter {
  const tty = !!stream.isTTY;
  const lastDecile = new Map<string, number>();
  return {
    update(label, fraction, message) {
      const f = Math.max(0, Math.min(1, fraction));
      const pct = Math.floor(f * 100);
      if (tty) {
        const width = 30;
        const filled = Math.round(f * width);
        stream.write(`\r\x1b[2K${label}  [${'#'.repeat(filled)}${' '.repeat(width - filled)}] ${String(pct).padStart(3)}%${message ? '  ' + message : ''}`);
        return;
      }
      const decile = Math.floor(pct / 10);
      if (lastDecile.get(label) === decile) return;
      lastDecile.set(label, decile);
      stream.write(`${label}: ${pct}%${message ? ' ' + message : ''}\n`);
    },
    done(label, message) {
      lastDecile.delete(label);
      stream.write(`${tty ? '\r\x1b[2K' : ''}${label}: done${message ? ' — ' + message : ''}\n`);
    },
  };
}
