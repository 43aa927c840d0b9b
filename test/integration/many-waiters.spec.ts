import { LockNotAcquiredError, type Lock } from '../../lib';
import { delay, inBatches, sharedFleet } from './helpers';

/**
 * Issue 19: thousands of waiters in one process on distinct keys held by another lock manager.
 * Before the fix, 5 000 of them polled the nodes into missing `nodeTimeout` and every one failed
 * as `unavailable` (~17 s) while every node was healthy. Overload must not be an outage, and a
 * waiter must not poll to the end of the lease either: the release wakes it.
 */
describe('many waiters in one process (5 nodes)', () => {
  const shared = sharedFleet(5);

  it('5 000 waiters on distinct busy keys all hold their locks soon after the release, none unavailable', async () => {
    const K = 5_000;
    const holder = shared.manager();
    const waiter = shared.manager();
    await Promise.all([holder.ready(), waiter.ready()]);
    const keys = Array.from({ length: K }, (_, i) => `order:${i}`);
    const held = await inBatches(keys, 500, (key) => holder.acquire(key, { ttl: 30_000 }));

    const settled: { at: number; lock?: Lock; error?: unknown }[] = new Array(K);
    const waiting = keys.map((key, i) =>
      waiter.acquire(key, { ttl: 30_000, wait: 20_000 }).then(
        (lock) => (settled[i] = { at: performance.now(), lock }),
        (error: unknown) => (settled[i] = { at: performance.now(), error }),
      ),
    );
    await delay(3_000);
    const releasedAt = performance.now();
    await inBatches(held, 1_000, (lock) => lock.release());
    await Promise.all(waiting);

    const failures = settled.filter((s) => s.error !== undefined);
    const unavailable = failures.filter(
      (s) => s.error instanceof LockNotAcquiredError && s.error.reason === 'unavailable',
    );
    const lastHeld = Math.max(...settled.map((s) => s.at)) - releasedAt;
    // Figures for the record when it fails (and when it passes, on a busy machine).
    process.stdout.write(
      `many waiters: K=${K} failed=${failures.length} unavailable=${unavailable.length} ` +
        `release-to-all-held=${Math.round(lastHeld)} ms\n`,
    );
    expect(unavailable.length).toBe(0);
    expect(failures.length).toBe(0);
    // Generous for a busy 2-core machine (the target on a quiet one is 1 s), yet a waiter that
    // polled to the lease's end (30 s) or slept out its wait (20 s) would fail it.
    expect(lastHeld).toBeLessThan(15_000);
    await inBatches(
      settled.map((s) => s.lock!),
      1_000,
      (lock) => lock.release(),
    );
  }, 90_000);
});
