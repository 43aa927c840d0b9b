/**
 * The time port of the core: the monotonic time line **and** the timers on it (round
 * timeouts, sleeps between attempts, extension schedules, expiry watches). Everything the
 * algorithm does with time goes through one object, so a simulation can drive the real code in
 * virtual time (DESIGN §6) and so that no duration is ever measured on `Date.now()`, which can
 * jump backwards and make an expired lock look valid.
 */
export interface Clock {
  /** Milliseconds on a monotonic time line; only differences are meaningful. */
  now(): number;
  /**
   * Calls `callback` once, `ms` from now. The timer must not keep a process alive on its own:
   * a lock nobody waits on is no reason to delay a clean exit.
   */
  setTimer(callback: () => void, ms: number): ClockTimer;
  /** Cancels a timer (a no-op for one that fired or was cancelled). */
  clearTimer(timer: ClockTimer | undefined): void;
}

/** A timer handle of a {@link Clock}: opaque to the core. */
export type ClockTimer = { readonly __clockTimer?: never } | object;

/** The process's monotonic clock (`performance.now()`) with Node's timers, unref'd. */
export const monotonicClock: Clock = {
  now: () => performance.now(),
  setTimer(callback, ms) {
    const timer = setTimeout(callback, Math.max(0, ms));
    timer.unref();
    return timer;
  },
  clearTimer(timer) {
    if (timer !== undefined) clearTimeout(timer as NodeJS.Timeout);
  },
};
