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

/**
 * A timer of {@link monotonicClock}: the Node timeout currently armed for it. It changes when
 * the timer wakes up early and re-arms for the rest, so cancelling goes through this object.
 */
class MonotonicTimer {
  timeout: NodeJS.Timeout | undefined;
}

/**
 * Arms `timer` to call `callback` at `deadline` on `performance.now()`, `left` ms from now,
 * re-arming if woken early.
 */
function armUntil(
  timer: MonotonicTimer,
  callback: () => void,
  deadline: number,
  left: number,
): void {
  // Node's timers run on the event loop's millisecond clock, which can be up to 1 ms ahead of
  // `performance.now()`: a bare setTimeout may call back before the deadline the core computed
  // (a delayed restart or a validity watch would then act early). Rounding up and re-arming for
  // the remainder keeps "not before the deadline" true on the clock the core measures with.
  const timeout = setTimeout(() => {
    const rest = deadline - performance.now();
    if (rest > 0) return armUntil(timer, callback, deadline, rest);
    timer.timeout = undefined;
    callback();
  }, Math.ceil(left));
  timeout.unref();
  timer.timeout = timeout;
}

/**
 * The process's monotonic clock (`performance.now()`) with Node's timers, unref'd. A timer never
 * calls back before its deadline on `performance.now()`.
 */
export const monotonicClock: Clock = {
  now: () => performance.now(),
  setTimer(callback, ms) {
    const timer = new MonotonicTimer();
    const left = Math.max(0, ms);
    armUntil(timer, callback, performance.now() + left, left);
    return timer;
  },
  clearTimer(timer) {
    if (timer instanceof MonotonicTimer && timer.timeout !== undefined) {
      clearTimeout(timer.timeout);
      timer.timeout = undefined;
    }
  },
  // The check phase comes after the poll phase of the same turn: replies already received are
  // parsed (and their promises settled) first.
  afterIo: (callback) => void setImmediate(callback),
};
