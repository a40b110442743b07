const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls until fn returns a truthy value or the deadline passes (then returns the last value). */
export async function waitFor<T>(fn: () => T | Promise<T>, timeoutMs: number, everyMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v || Date.now() > deadline) return v;
    await sleep(everyMs);
  }
}
