import { LockNotAcquiredError } from '../../lib';
import { commandCounts, sharedFleet } from './helpers';

/**
 * What a waiter outside the fair queues costs when it meets a held key (issue 24 item 1, issue
 * 26's "S2 within noise"): it marks the key as waited for only where a fair queue exists, since
 * only such a key is ever handed off. Elsewhere it reads the lease and the queue mark (`PTTL`,
 * `EXISTS`) and runs no script: with the marking script on every held key, bench S2 with fairness
 * off cost 156 lock-node commands per success against 0cce7fe's 74 (93 since).
 */
describe('a plain waiter meeting a held key (3 nodes)', () => {
  const shared = sharedFleet(3);

  // Keys as the nodes store them: under the default keyPrefix.
  /** Holds `key` from one manager and lets another wait for it; the fleet's commands meanwhile. */
  async function waitOnHeld(key: string, beforeWaiting: () => Promise<void>) {
    // Long leases: no lease horizon is recorded again inside the window counted. Plain waiters:
    // managers with fairness off (the fair queue, the default, queues a single-key waiter).
    const holder = shared.manager({ ttl: 60_000, fairness: 'off' });
    const waiter = shared.manager({ ttl: 60_000, fairness: 'off' });
    // Each manager's first acquisition records its lease horizons: not the path counted here.
    await (await holder.acquire(`${key}:warm-holder`)).release();
    await (await waiter.acquire(`${key}:warm-waiter`)).release();
    const held = await holder.acquire(key);
    await beforeWaiting();
    for (const node of shared.fleet.nodes) await node.command('CONFIG', 'RESETSTAT');
    const error = await waiter.acquire(key, { wait: 300 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockNotAcquiredError);
    expect((error as LockNotAcquiredError).reason).toBe('held');
    const counts = await commandCounts(shared.fleet.nodes);
    const marks = await Promise.all(
      shared.fleet.nodes.map((node) => node.command('EXISTS', `redlock:${key}\0p`)),
    );
    await held.release();
    return { counts, marked: marks.filter((m) => Number(m) === 1).length };
  }

  it('without a fair queue on the key: no script, no mark', async () => {
    const { counts, marked } = await waitOnHeld('pw:plain', async () => undefined);
    // It did meet the key (an attempt's SET NX, then EXISTS + PTTL on each node)...
    expect(counts.get('set') ?? 0).toBeGreaterThanOrEqual(3);
    expect(counts.get('exists') ?? 0).toBeGreaterThanOrEqual(3);
    // ...and ran no PLAIN_WAIT for it: no TIME read, no mark written, and fewer scripts than
    // nodes met (the ones left: the give-up's look at who holds the key, `inspect`, on a quorum).
    expect(counts.get('time') ?? 0).toBe(0);
    expect(marked).toBe(0);
    expect(counts.get('evalsha') ?? 0).toBeLessThan(counts.get('set') ?? 0);
  });

  it('with a fair queue on the key: marked as waited for on every node', async () => {
    const key = 'pw:queued';
    const { counts, marked } = await waitOnHeld(key, async () => {
      // A fair group's queue mark, as ACQUIRE_QUEUED_SCRIPT writes it beside the queue.
      for (const node of shared.fleet.nodes) {
        await node.command('SET', `redlock:${key}\0w`, '1', 'PX', '30000');
      }
    });
    expect(counts.get('evalsha') ?? 0).toBeGreaterThanOrEqual(3);
    expect(marked).toBe(3);
  });
});
