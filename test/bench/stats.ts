/** Small helpers every benchmark uses to report its figures. */
import os from 'node:os';

/** The 1-minute load average, two decimals: every figure is reported with it (a 2-core machine, shared). */
export const load1 = (): number => Math.round(os.loadavg()[0]! * 100) / 100;

export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
