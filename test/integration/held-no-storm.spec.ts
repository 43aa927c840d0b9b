import { LockNotAcquiredError, type Redlock, type RedlockOptions } from '../../lib';
import { sharedFleet } from './helpers';

/**
 * Issue 24 item 0, found by running node-redlock's own suite against ours: an attempt that fails
 * as `held` after taking some node (a partial grant) releases that node again, and the release is
 * announced on the key's channel like any other. A waiter that heard its own cleanup's
 * announcement attempted again at once — 2 118 attempts in a 1 s wait, 749 ms of client CPU, where
 * node-redlock's "fails when a majority of clients fail" expects 11 in 3 s. It showed whenever no
 * wait could be computed from the replies: a node down, or a foreign key without a TTL.
 *
 * The rule (acquisition.ts, notifier.ts): a waiter is woken only by a release on a node where its
 * last attempt found the key held by another owner — never by its own cleanup, nor by another
 * waiter's cleanup of a node it did not need — so whatever the replies, an attempt is followed by
 * a wait: the computed one, or the retry delay.
 *
 * The setup, on real nodes: node 2 (index 2) killed; node 1 holds `redlock:r` for another owner;
 * node 0 is free, so every attempt takes node 0 alone, fails and cleans it up.
 */
describe('an acquisition failing as held after a partial grant does not wake itself (3 nodes)', () => {
  const shared = sharedFleet(3);
  /** 1 000 ms / (100 + 0…100 ms) ≈ 7–10 attempts; a storm is hundreds to thousands. */
  const WAIT = 1_000;
  const MAX_ATTEMPTS = 50;

  /** Kills node 2 for this test (it comes back, empty, after it). */
  const killNode2 = async () => {
    const node = shared.fleet.nodes[2];
    await node.kill();
    shared.afterTest(() => node.restart());
  };

  /** Node 1 holds the key for another owner, with `PX ms` or without a TTL. */
  const foreignKey = async (pxMs?: number) => {
    const node = shared.fleet.nodes[1];
    if (pxMs === undefined) await node.command('SET', 'redlock:r', 'someone-else');
    else await node.command('SET', 'redlock:r', 'someone-else', 'PX', pxMs);
  };

  /**
   * Connects and takes a lock once while every node is up, so that every node is admitted to
   * vote (architecture.md §5.7: a node is stamped by a manager that saw its peers); node 2 dies after.
   */
  const warmUp = async (redlock: Redlock) => {
    await redlock.ready();
    await (await redlock.acquire('warm-up', { wait: 5_000 })).release();
  };

  /** The attempts one `acquire('r', { wait })` made before it gave up. */
  const attemptsOf = async (redlock: Redlock): Promise<number> => {
    const error = await redlock.acquire('r', { wait: WAIT }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockNotAcquiredError);
    expect((error as LockNotAcquiredError).reason).toBe('held');
    return (error as LockNotAcquiredError).attempts;
  };

  const configurations: [string, RedlockOptions][] = [
    ['notify strategy (default)', {}],
    ['poll strategy (notifications: false)', { notifications: false }],
    ["fair queue (fairness: 'queue')", { fairness: 'queue' }],
  ];

  describe.each([
    ['the foreign key has PX 5000', 5_000],
    ['the foreign key has no TTL', undefined],
  ])('node 2 down, %s, node 0 free', (_, pxMs) => {
    it.each(configurations)('%s: one waiter retries at its retry delay', async (_name, options) => {
      const redlock = shared.manager(options);
      await warmUp(redlock);
      await killNode2();
      await foreignKey(pxMs);
      const attempts = await attemptsOf(redlock);
      // It kept trying (not one attempt and a sleep to the end), and did not storm.
      expect(attempts).toBeGreaterThan(2);
      expect(attempts).toBeLessThanOrEqual(MAX_ATTEMPTS);
    });

    it.each(configurations)(
      "%s: two lock managers' waiters do not wake each other with their cleanups",
      async (_name, options) => {
        const managers = [shared.manager(options), shared.manager(options)];
        for (const m of managers) await warmUp(m);
        await killNode2();
        await foreignKey(pxMs);
        const attempts = await Promise.all(managers.map(attemptsOf));
        for (const n of attempts) {
          expect(n).toBeGreaterThan(2);
          expect(n).toBeLessThanOrEqual(MAX_ATTEMPTS);
        }
      },
    );

    it.each(configurations)(
      '%s: two waiters of one lock manager do not wake each other with their cleanups',
      async (_name, options) => {
        const redlock = shared.manager(options);
        await warmUp(redlock);
        await killNode2();
        await foreignKey(pxMs);
        const attempts = await Promise.all([attemptsOf(redlock), attemptsOf(redlock)]);
        // A fair queue's second waiter waits behind the first without attempting of its own.
        expect(attempts[0]).toBeGreaterThan(2);
        for (const n of attempts) expect(n).toBeLessThanOrEqual(MAX_ATTEMPTS);
      },
    );
  });

  it.each(configurations.filter(([name]) => !name.startsWith('poll')))(
    '%s: a real release on the nodes that blocked it still wakes the waiter at once (node 2 down)',
    async (_name, options) => {
      const holder = shared.manager();
      const waiter = shared.manager({ ...options, retryDelay: 10_000, retryJitter: 0 });
      await warmUp(holder);
      await warmUp(waiter);
      const lock = await holder.acquire('r', { ttl: 30_000 });
      await killNode2();
      let failed = 0;
      waiter.on('attemptFailed', () => failed++);
      const started = performance.now();
      const waiting = waiter.acquire('r', { wait: 20_000 });
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const released = performance.now();
      await lock.release();
      const next = await waiting;
      // Neither the 10 s retry delay nor the 29 s left of the lease: the release woke it.
      expect(performance.now() - released).toBeLessThan(3_000);
      expect(performance.now() - started).toBeLessThan(10_000);
      expect(failed).toBeLessThanOrEqual(MAX_ATTEMPTS);
      await next.release();
    },
  );
});
