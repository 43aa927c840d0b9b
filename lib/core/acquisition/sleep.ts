import type { Clock } from '../clock';

/**
 * Waits `ms` on `clock`, or rejects with the reason of the first of `signals` to abort — so a
 * cancelled acquire (the caller's signal, or the lock manager draining) stops at once instead
 * of finishing its retry delay. `wake`, when given, resolves the sleep early (a release
 * notification, a node coming back).
 */
export function sleep(
  clock: Clock,
  ms: number,
  signals: readonly (AbortSignal | undefined)[],
  wake?: Alarm,
): Promise<void> {
  for (const signal of signals) if (signal?.aborted) return Promise.reject(signal.reason);
  if (wake?.take()) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const settle = (done: () => void) => {
      clock.clearTimer(timer);
      for (const signal of signals) signal?.removeEventListener('abort', onAbort);
      if (wake) wake.ring = undefined;
      done();
    };
    const onAbort = (event: Event) => settle(() => reject((event.target as AbortSignal).reason));
    const timer = clock.setTimer(() => settle(resolve), ms);
    for (const signal of signals) signal?.addEventListener('abort', onAbort, { once: true });
    if (wake) wake.ring = () => settle(resolve);
  });
}

/**
 * Ends a {@link sleep} early (a release notification). A ring while nobody sleeps is kept for
 * the next sleep, which then returns at once: the release happened during the attempt.
 */
export class Alarm {
  /** Set while a sleep is waiting on this alarm. */
  ring?: () => void;
  private pending = false;

  /** Rings: wakes the current sleep, or the next one. */
  readonly sound = (): void => {
    if (this.ring) this.ring();
    else this.pending = true;
  };

  /** Consumes a ring that came while nobody slept. */
  take(): boolean {
    const pending = this.pending;
    this.pending = false;
    return pending;
  }
}
