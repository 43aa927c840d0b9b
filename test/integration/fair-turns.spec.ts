import { setTimeout as delay } from 'node:timers/promises';
import type { Redlock } from '../../lib';
import { sharedFleet } from './helpers';

/**
 * Issue 24 items 1, 2 and 2b (DESIGN §5.11): every acquisition takes a turn, a waiter that
 * leaves passes its turn on, and a hand-off never idles.
 */
describe('fair turns (5 nodes)', () => {
  const shared = sharedFleet(5);
  const fair = (extra: Parameters<typeof shared.manager>[0] = {}): Redlock =>
    shared.manager({ fairness: 'queue', ttl: 10_000, ...extra });

  /**
   * Poisson arrivals at `rate`/s for `ms` over `managers`, each holding `holdMs`: the waits, and
   * the longest idle spell — from a release to the next acquisition while requests waited.
   */
  async function openLoop(managers: Redlock[], key: string, rate: number, ms: number) {
    await Promise.all(managers.map((m) => m.ready()));
    const waits: number[] = [];
    let failed = 0;
    let waiting = 0;
    let inside = 0;
    let maxInside = 0;
    let idleFrom: number | undefined;
    let maxIdle = 0;
    const work: Promise<void>[] = [];
    const start = performance.now();
    let at = 0;
    let i = 0;
    for (;;) {
      at += -Math.log(1 - Math.random()) * (1000 / rate);
      if (at >= ms) break;
      const ahead = start + at - performance.now();
      if (ahead > 1) await delay(ahead);
      const manager = managers[i++ % managers.length];
      const arrived = performance.now();
      waiting++;
      work.push(
        manager.acquire(key, { wait: 10_000 }).then(
          async (lock) => {
            const now = performance.now();
            waiting--;
            waits.push(now - arrived);
            if (idleFrom !== undefined) maxIdle = Math.max(maxIdle, now - idleFrom);
            idleFrom = undefined;
            inside++;
            maxInside = Math.max(maxInside, inside);
            await delay(1);
            inside--;
            await lock.release();
            if (waiting > 0 && inside === 0) idleFrom = performance.now();
          },
          () => {
            waiting--;
            failed++;
          },
        ),
      );
    }
    await Promise.all(work);
    waits.sort((a, b) => a - b);
    return { waits, failed, maxInside, maxIdle };
  }

  it('open-loop arrivals over 2 managers: no hand-off idles while requests wait (item 2b)', async () => {
    const handOffLease = 1_000;
    const managers = [fair({ handOffLease }), fair({ handOffLease })];
    const { waits, failed, maxInside, maxIdle } = await openLoop(managers, 'turn:open', 150, 4_000);
    expect(failed).toBe(0);
    expect(maxInside).toBe(1);
    const p99 = waits[Math.floor(waits.length * 0.99)];
    if (process.env.FAIR_REPORT) {
      process.stdout.write(
        `open loop: ${waits.length} served, p99 ${p99.toFixed(1)} ms, longest idle ${maxIdle.toFixed(1)} ms\n`,
      );
    }
    // A reservation that expired unclaimed while live waiters existed idles the lock a lease.
    expect(maxIdle).toBeLessThan(handOffLease / 4);
  }, 60_000);
});
