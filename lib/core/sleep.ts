/**
 * Waits `ms`, or rejects with the reason of the first of `signals` to abort — so a cancelled
 * acquire (the caller's signal, or the lock manager draining) stops at once instead of
 * finishing its retry delay.
 */
export function sleep(ms: number, ...signals: (AbortSignal | undefined)[]): Promise<void> {
  for (const signal of signals) if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const settle = (done: () => void) => {
      clearTimeout(timer);
      for (const signal of signals) signal?.removeEventListener('abort', onAbort);
      done();
    };
    const onAbort = (event: Event) => settle(() => reject((event.target as AbortSignal).reason));
    const timer = setTimeout(() => settle(resolve), ms);
    for (const signal of signals) signal?.addEventListener('abort', onAbort, { once: true });
  });
}
