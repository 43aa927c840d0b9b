import { LockNotAcquiredError, monotonicClock, type Clock, type RedlockOptions } from '../../lib';
import { driftOf } from '../../lib/core/quorum/quorum';
import { eventually, sharedFleet } from './helpers';

describe('validity (5 real nodes)', () => {
  const shared = sharedFleet(5);
  const manager = (options: RedlockOptions) => shared.manager(options);

  const allFree = async (key: string) =>
    (await Promise.all(shared.fleet.nodes.map((n) => n.command('GET', key)))).every(
      (v) => v === null,
    );

  it('is at most ttl − drift right after acquiring, and counts down', async () => {
    const ttl = 10_000;
    const redlock = manager({ ttl });
    const before = Date.now();
    const lock = await redlock.acquire('r');
    const remaining = lock.remainingMs();
    expect(remaining).toBeLessThanOrEqual(ttl - driftOf(ttl, 0.01));
    // (a generous floor: only a grossly wrong computation, not a slow machine, goes below it)
    expect(remaining).toBeGreaterThan(ttl - driftOf(ttl, 0.01) - 1_000);
    expect(lock.expiresAt).toBeGreaterThanOrEqual(before + remaining - 50);
    expect(lock.expiresAt).toBeLessThanOrEqual(Date.now() + ttl);
    await new Promise((r) => setTimeout(r, 200));
    expect(lock.remainingMs()).toBeLessThan(remaining - 150);
    await lock.release();
    expect(lock.remainingMs()).toBe(0);
  });

  it('the nodes keep the key for the ttl asked, no longer (one resource, several, fenced)', async () => {
    const cases = [
      { fencing: false, resources: ['lease:one'] },
      { fencing: false, resources: ['lease:many', 'lease:other'] },
      { fencing: true, resources: ['lease:fenced'] },
    ];
    for (const { fencing, resources } of cases) {
      const redlock = manager({ ttl: 5_000, fencing });
      const resource = resources[0];
      const lock = await redlock.acquire(resources);
      // Every node (the writes to the last nodes may land after the quorum answered).
      let pttls: number[] = [];
      expect(
        await eventually(async () => {
          pttls = (await Promise.all(
            shared.fleet.nodes.map((n) => n.command('PTTL', `redlock:${resource}`)),
          )) as number[];
          return pttls.every((pttl) => pttl > 0);
        }),
      ).toBe(true);
      // A longer lease would keep others out past what the holder asked for.
      for (const pttl of pttls) expect(pttl).toBeLessThanOrEqual(5_000);
      await lock.release();
    }
  });

  it('an attempt measured as longer than the ttl is a failure (injected clock)', async () => {
    // A clock that jumps by the whole ttl while the attempt is in flight, as a long pause would.
    let jump = 0;
    const clock: Clock = { ...monotonicClock, now: () => performance.now() + jump };
    const redlock = manager({ ttl: 1_000, clock });
    await (await redlock.acquire('warm-up')).release();
    const attempt = redlock.acquire('r', { wait: 0 });
    jump = 1_000;
    const error = (await attempt.catch((e: unknown) => e)) as LockNotAcquiredError;
    expect(error).toBeInstanceOf(LockNotAcquiredError);
    // every node granted it, but no validity was left: nobody may rely on it, and it is released
    expect(await eventually(() => allFree('redlock:r'), 1_000)).toBe(true);
  });

  it('an attempt stalled past the ttl by a blocked event loop is a failure (real pause)', async () => {
    const redlock = manager({ ttl: 400, nodeTimeout: 100 });
    await (await redlock.acquire('warm-up')).release();
    const attempt = redlock.acquire('r', { wait: 0 });
    // The requests are on the wire; now stall this process as a GC pause would.
    const until = performance.now() + 600;
    while (performance.now() < until) {
      /* busy */
    }
    await expect(attempt).rejects.toBeInstanceOf(LockNotAcquiredError);
    expect(await eventually(() => allFree('redlock:r'), 1_000)).toBe(true);
  });
});
