/**
 * The monotonic clock port. Lock validity is a duration measured on this machine, so it must
 * come from a clock that never jumps (NTP steps, manual changes): `Date.now()` can move
 * backwards and would make an expired lock look valid. Tests inject a virtual clock.
 */
export interface Clock {
  /** Milliseconds on a monotonic time line; only differences are meaningful. */
  now(): number;
}

/** The process's monotonic clock (`performance.now()`). */
export const monotonicClock: Clock = {
  now: () => performance.now(),
};
