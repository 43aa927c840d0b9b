import { retryDelay, SHARED_POLLS_PER_SECOND } from '../../lib/core/acquisition/acquisition';
import {
  AttemptGate,
  MAX_ATTEMPTS_IN_FLIGHT,
  MIN_ATTEMPTS_IN_FLIGHT,
} from '../../lib/core/acquisition/attempt-gate';

/** Issue 19: the pure decisions of the attempt loop (architecture.md §3.1), without Redis. */
describe('retryDelay', () => {
  const settings = { retryDelay: 100, retryJitter: 50 };

  it.each([
    // failure, listening, pollers, random, expected
    [{ retryAfterMs: 27_000, earliestExpiry: 25_000 }, true, 0, 0, 27_000],
    [{ retryAfterMs: 27_000, earliestExpiry: 25_000 }, true, 0, 1, 27_050],
    // Not listening: polls every retryDelay, never past the earliest expiry.
    [{ retryAfterMs: 27_000, earliestExpiry: 25_000 }, false, 0, 0, 100],
    [{ retryAfterMs: 40, earliestExpiry: 30 }, false, 0, 0, 30],
    [{}, false, 0, 0.5, 125],
    // Listening but nothing known of the blocking lease (unavailable): polls.
    [{}, true, 0, 0, 100],
    // One poller among few: its own retryDelay.
    [{ earliestExpiry: 25_000 }, false, 1, 0, 100],
    // Thousands share the rate: each polls less often, still never past the expiry.
    [{ earliestExpiry: 25_000 }, false, 2_000, 0, (2_000 * 1000) / SHARED_POLLS_PER_SECOND],
    [{ earliestExpiry: 3_000 }, false, 20_000, 0, 3_000],
    [{ earliestExpiry: 30 }, false, 20_000, 0, 30],
  ])('%j listening=%s pollers=%d random=%d → %d ms', (failure, listening, pollers, random, ms) => {
    expect(retryDelay(failure, settings, listening, pollers, random)).toBe(ms);
  });

  it('n pollers sleeping their delay poll at most the shared rate together (plus their own floor)', () => {
    for (const n of [1, 10, 100, 1_000, 20_000]) {
      const delay = retryDelay({}, settings, false, n, 0);
      const perSecond = (n * 1000) / delay;
      expect(perSecond).toBeLessThanOrEqual(Math.max(SHARED_POLLS_PER_SECOND, n * 10) + 1e-9);
      if (n >= 100) expect(perSecond).toBeLessThanOrEqual(SHARED_POLLS_PER_SECOND + 1e-9);
    }
  });
});

describe('AttemptGate', () => {
  let now = 0;
  const gate = () => new AttemptGate(() => now, 200);

  it('admits up to its bound at once without a promise, then queues first come first served', async () => {
    const g = gate();
    for (let i = 0; i < MAX_ATTEMPTS_IN_FLIGHT; i++) expect(g.enter()).toBeUndefined();
    expect(g.busy).toBe(true);
    const order: number[] = [];
    const turns = [1, 2, 3].map((n) => g.enter()!.then(() => order.push(n)));
    expect(g.waiting).toBe(3);
    g.leave(false);
    g.leave(false);
    await Promise.resolve();
    await Promise.resolve();
    expect(order).toEqual([1, 2]);
    g.leave(false);
    await Promise.all(turns);
    expect(order).toEqual([1, 2, 3]);
    expect(g.waiting).toBe(0);
  });

  it('halves its bound on a timed-out round at most once per nodeTimeout, never below the floor, and grows back by a quarter per window', () => {
    const g = gate();
    now = 1_000;
    g.enter();
    g.leave(true);
    expect(g.limit).toBe(MAX_ATTEMPTS_IN_FLIGHT / 2);
    g.enter();
    g.leave(true); // within the same nodeTimeout: one cut for one slow spell
    expect(g.limit).toBe(MAX_ATTEMPTS_IN_FLIGHT / 2);
    for (let i = 0; i < 10; i++) {
      now += 200;
      g.enter();
      g.leave(true);
    }
    expect(g.limit).toBe(MIN_ATTEMPTS_IN_FLIGHT);
    for (let i = 0; i < MIN_ATTEMPTS_IN_FLIGHT; i++) {
      g.enter();
      g.leave(false);
    }
    expect(g.limit).toBe(Math.ceil(MIN_ATTEMPTS_IN_FLIGHT * 1.25));
  });

  it("a queued round whose caller aborts leaves the queue with the caller's reason; abortAll empties it", async () => {
    const g = gate();
    for (let i = 0; i < MAX_ATTEMPTS_IN_FLIGHT; i++) g.enter();
    const controller = new AbortController();
    const aborted = g.enter(controller.signal)!;
    const drained = g.enter()!;
    controller.abort(new Error('caller left'));
    await expect(aborted).rejects.toThrow('caller left');
    expect(g.waiting).toBe(1);
    g.abortAll(new Error('draining'));
    await expect(drained).rejects.toThrow('draining');
    expect(g.waiting).toBe(0);
    // Slots in flight are unaffected: each is given back by its round.
    for (let i = 0; i < MAX_ATTEMPTS_IN_FLIGHT; i++) g.leave(false);
    expect(g.enter()).toBeUndefined();
  });
});
