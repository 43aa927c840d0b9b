import type { Clock, ClockTimer } from '../../lib';

interface VirtualTimer {
  readonly at: number;
  readonly seq: number;
  readonly callback: () => void;
  cancelled: boolean;
}

/** Lets every pending promise callback run (a real macrotask turn flushes the microtasks). */
export const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Virtual time for the core (architecture.md §6): `now()` moves only when a test says so, and the core's
 * timers (round timeouts, sleeps, extension schedules, expiry watches) fire in time order as it
 * moves, with every promise continuation run in between. The same code as in production runs,
 * deterministically, in microseconds of real time.
 */
export class VirtualClock implements Clock {
  private time = 1_000;
  private seq = 0;
  private readonly timers: VirtualTimer[] = [];
  /**
   * Called after every step — each time the pending promise callbacks have run, between timers —
   * so that a simulation can check its invariants at every instant something may have changed.
   */
  onStep?: () => void;

  now(): number {
    return this.time;
  }

  setTimer(callback: () => void, ms: number): ClockTimer {
    const timer: VirtualTimer = {
      at: this.time + Math.max(0, ms),
      seq: this.seq++,
      callback,
      cancelled: false,
    };
    this.timers.push(timer);
    return timer;
  }

  clearTimer(timer: ClockTimer | undefined): void {
    if (timer !== undefined) (timer as VirtualTimer).cancelled = true;
  }

  /**
   * Moves time without running any timer: a process paused (GC, a stopped VM) or an event loop
   * blocked by synchronous work. The timers due meanwhile run at the next `advance`.
   */
  jump(ms: number): void {
    this.time += ms;
  }

  /** Moves time forward by `ms`, firing each due timer at its own time, in order. */
  async advance(ms: number): Promise<void> {
    const until = this.time + ms;
    for (;;) {
      await settle();
      this.onStep?.();
      const next = this.nextTimer();
      if (next === undefined || next.at > until) break;
      this.remove(next);
      this.time = Math.max(this.time, next.at);
      next.callback();
    }
    this.time = Math.max(this.time, until);
    await settle();
    this.onStep?.();
  }

  /**
   * Runs virtual time until `promise` settles (or `limitMs` of virtual time passed): the way a
   * test awaits an operation of the core that sleeps or times out.
   */
  async run<T>(promise: Promise<T>, limitMs = 600_000): Promise<T> {
    let done = false;
    promise.then(
      () => (done = true),
      () => (done = true),
    );
    const until = this.time + limitMs;
    for (;;) {
      await settle();
      this.onStep?.();
      if (done) return promise;
      const next = this.nextTimer();
      if (next === undefined || next.at > until) {
        throw new Error(
          `VirtualClock.run: nothing left to run at t=${this.time} and the promise is pending`,
        );
      }
      this.remove(next);
      this.time = Math.max(this.time, next.at);
      next.callback();
    }
  }

  /** Timers still pending (for leak checks). */
  get pending(): number {
    return this.timers.filter((t) => !t.cancelled).length;
  }

  private nextTimer(): VirtualTimer | undefined {
    let best: VirtualTimer | undefined;
    for (let i = this.timers.length - 1; i >= 0; i--) {
      const t = this.timers[i];
      if (t.cancelled) {
        this.timers.splice(i, 1);
        continue;
      }
      if (best === undefined || t.at < best.at || (t.at === best.at && t.seq < best.seq)) best = t;
    }
    return best;
  }

  private remove(timer: VirtualTimer): void {
    this.timers.splice(this.timers.indexOf(timer), 1);
  }
}
