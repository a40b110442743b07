/** Runs `work` over `items`, at most `concurrency` at once; stops taking new ones when aborted. */
export async function pool<T>(items: readonly T[], concurrency: number, signal: AbortSignal, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length && !signal.aborted) await work(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, worker));
}
