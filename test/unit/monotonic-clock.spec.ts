import { monotonicClock } from '../../lib/core/clock';

/**
 * Node's timers run on the event loop's millisecond clock, so a `setTimeout` can fire up to 1 ms
 * before a `performance.now()` deadline. Everything in the core measures time on
 * `performance.now()`: a sleep that ends early (a delayed restart, a validity watch) would let the
 * code act before the time it computed.
 */
describe('monotonicClock', () => {
  it('never calls a timer back before its deadline on performance.now()', async () => {
    const early: number[] = [];
    const fired = await Promise.all(
      Array.from({ length: 200 }, (_, i) => {
        const ms = 1 + (i % 10) * 0.37;
        const start = performance.now();
        return new Promise<void>((resolve) => {
          monotonicClock.setTimer(() => {
            const late = performance.now() - (start + ms);
            if (late < 0) early.push(late);
            resolve();
          }, ms);
        });
      }),
    );
    expect(fired).toHaveLength(200);
    expect(early).toEqual([]);
  });

  it('cancels a timer, also one re-armed after an early wake-up', async () => {
    let calls = 0;
    const timers = Array.from({ length: 50 }, (_, i) =>
      monotonicClock.setTimer(() => (calls += 1), 1 + (i % 5) * 0.5),
    );
    // Cancel half now, the other half after about their first wake-up.
    timers.slice(0, 25).forEach((t) => monotonicClock.clearTimer(t));
    await new Promise((r) => setTimeout(r, 1));
    timers.slice(25).forEach((t) => monotonicClock.clearTimer(t));
    const before = calls;
    await new Promise((r) => setTimeout(r, 20));
    expect(calls).toBe(before);
    monotonicClock.clearTimer(undefined);
  });

  it('re-arms after an early wake-up, and that re-armed timer can still be cancelled', () => {
    // Drive the loop's timers by hand and let performance.now() lag them, as it can by < 1 ms.
    jest.useFakeTimers({ doNotFake: ['performance'] });
    let now = 0;
    const spy = jest.spyOn(performance, 'now').mockImplementation(() => now);
    try {
      const calls: number[] = [];
      const kept = monotonicClock.setTimer(() => calls.push(now), 1.5);
      const cancelled = monotonicClock.setTimer(() => calls.push(-1), 1.5);
      now = 1.2; // the loop's clock says 2 ms have passed; performance.now() says 1.2
      jest.advanceTimersByTime(2);
      expect(calls).toEqual([]);
      monotonicClock.clearTimer(cancelled);
      now = 1.6;
      jest.advanceTimersByTime(1);
      expect(calls).toEqual([1.6]);
      monotonicClock.clearTimer(kept); // a fired timer: a no-op
    } finally {
      spy.mockRestore();
      jest.useRealTimers();
    }
  });

  it('does not keep the process alive', () => {
    const refTimeouts = (): number =>
      process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = refTimeouts();
    const timer = monotonicClock.setTimer(() => undefined, 60_000);
    expect(refTimeouts()).toBe(before);
    monotonicClock.clearTimer(timer);
  });
});
