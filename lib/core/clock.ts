/**
 * The time port of the core: the monotonic time line **and** the timers on it (round
 * timeouts, sleeps between attempts, extension schedules, expiry watches). Everything the
 * algorithm does with time goes through one object, so a simulation can drive the real code in
 * virtual time (architecture.md §6) and so that no duration is ever measured on `Date.now()`, which can
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
  /**
   * Calls `callback` once the I/O that has already arrived has been handled. A round's timeout
   * goes through it: when the process is late, Node runs expired timers before it reads the
   * sockets in the same turn, and a reply sitting in the socket must not read as a timeout (an
   * overloaded client would otherwise see every node time out on every attempt and never
   * recover). Optional: a clock without I/O (a simulation) calls back at once.
   */
  afterIo?(callback: () => void): void;
}

/**
 * Calls `callback` once the I/O that has already arrived has been handled ({@link Clock.afterIo}),
 * or at once on a clock without I/O. What a timeout checks goes through it, so that a reply
 * already in a socket is never read as late.
 */
export function afterIo(clock: Clock, callback: () => void): void {
  if (clock.afterIo === undefined) callback();
  else clock.afterIo(callback);
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
  // The check phase comes after the poll phase of the same turn: replies already received are
  // parsed (and their promises settled) first.
  afterIo: (callback) => void setImmediate(callback),
};
