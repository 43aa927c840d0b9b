import Redis from 'ioredis';
import { LockNotAcquiredError, type Redlock, type RedlockOptions } from '../../lib';
import { CLEANUP_MARK } from '../../lib/core/acquisition/release-notices';
import { delay, eventually, sharedFleet, timed } from './helpers';

/** Issue 8 item 6: release notifications (architecture.md §5.8) on real nodes. Functional, not timing. */
/** Counts the failed attempts of a lock manager (its `attemptFailed` events). */
function countAttempts(redlock: Redlock): () => number {
  let failed = 0;
  redlock.on('attemptFailed', () => failed++);
  return () => failed;
}

describe('release notifications (3 real nodes)', () => {
  const fleet = sharedFleet(3);
  // Every waiter here is a plain one, counted by its failed attempts: with the fair queue (the
  // default) only a line's head attempts, and fair-hand-off.spec.ts covers it.
  const shared = {
    get fleet() {
      return fleet.fleet;
    },
    manager: (options: RedlockOptions = {}) => fleet.manager({ fairness: 'off', ...options }),
  };

  /** Subscriber connections (`CLIENT LIST` entries in pub/sub mode) and subscribed channels on a node. */
  const pubsub = async (i: number) => {
    const clients = String(await shared.fleet.nodes[i].command('CLIENT', 'LIST'));
    const subscribers = clients
      .split('\n')
      .filter((l) => /\bflags=P\b/.test(l) || /sub=[1-9]/.test(l)).length;
    const channels = (await shared.fleet.nodes[i].command(
      'PUBSUB',
      'CHANNELS',
      'redlock:*',
    )) as string[];
    return { subscribers, channels };
  };

  it('a waiter wakes on the release, long before its retry delay', async () => {
    const holder = shared.manager();
    const waiter = shared.manager({ retryDelay: 5_000, retryJitter: 0 });
    const lock = await holder.acquire('r', { ttl: 30_000 });
    const waiting = timed(() => waiter.acquire('r', { wait: 20_000 }));
    // Released once the waiter listens: a release before its SUBSCRIBE lands is missed by
    // design (it costs one retry delay, tested below), which a slow machine would turn into 5 s.
    expect(await eventually(async () => (await pubsub(0)).channels.includes('redlock:r'))).toBe(
      true,
    );
    await delay(50);
    await lock.release();
    const { ms, result } = await waiting;
    expect(ms).toBeLessThan(2_500); // polling would have taken 5 s
    await result.release();
  });

  it('a lost notification (subscriber connection killed) still acquires within the retry delay', async () => {
    const holder = shared.manager();
    const waiter = shared.manager({ retryDelay: 1_000, retryJitter: 0 });
    const lock = await holder.acquire('lost', { ttl: 30_000 });
    const waiting = timed(() => waiter.acquire('lost', { wait: 20_000 }));
    expect(await eventually(async () => (await pubsub(0)).channels.includes('redlock:lost'))).toBe(
      true,
    );
    for (const node of shared.fleet.nodes) await node.command('CLIENT', 'KILL', 'TYPE', 'pubsub');
    await lock.release();
    const { ms, result } = await waiting;
    expect(ms).toBeLessThan(1_000 + 2_000);
    await result.release();
  });

  it('1 000 waiters on one resource share one subscriber connection per node, and leave nothing subscribed', async () => {
    const holder = shared.manager();
    const waiter = shared.manager({ retryDelay: 10_000, retryJitter: 0 });
    const lock = await holder.acquire('crowd', { ttl: 30_000 });
    const sets = async () =>
      Number(
        /cmdstat_set:calls=(\d+)/.exec(
          String(await shared.fleet.nodes[0].command('INFO', 'commandstats')),
        )?.[1] ?? 0,
      );
    let tries = 0;
    waiter.on('attemptFailed', () => tries++);
    const waiters = Array.from({ length: 1_000 }, () =>
      // A budget no loaded machine runs out of: the hand-off count and the attempts per
      // hand-off below are the point, not the speed.
      waiter.acquire('crowd', { wait: 60_000 }).then(
        (l) => l.release().then(() => 'got'),
        (e: unknown) => (e instanceof LockNotAcquiredError ? 'gave up' : String(e)),
      ),
    );
    expect(await eventually(async () => (await pubsub(0)).channels.includes('redlock:crowd'))).toBe(
      true,
    );
    // every waiter has made its first try and sleeps (a waiter that listens already reads
    // whether the key is held instead of sending SETs: counted by its failed tries, not SETs)
    expect(await eventually(() => tries >= 1_000, 5_000)).toBe(true);
    await delay(300);
    for (let i = 0; i < 3; i++) expect((await pubsub(i)).subscribers).toBe(1);
    // Each release wakes the longest waiter only: the lock is handed from waiter to waiter,
    // about one attempt per hand-off, instead of a stampede of every waiter on every release
    // (and instead of each waiting out its 10 s retry delay).
    const before = await sets();
    const { ms } = await timed(async () => {
      await lock.release();
      return Promise.all(waiters);
    });
    const outcomes = await Promise.all(waiters);
    const attempts = (await sets()) - before;
    const got = outcomes.filter((o) => o === 'got').length;
    expect(got).toBe(1_000);
    expect(ms).toBeLessThan(30_000);
    // Polling (or a stampede) would show here: hundreds of failed attempts per release.
    expect(attempts).toBeLessThan(got * 1.5 + 20);
    console.log(`1 000 waiters: ${got} hand-offs in ${Math.round(ms)} ms, ${attempts} attempts`);
    // everyone is done: no channel left subscribed
    expect(await eventually(async () => (await pubsub(0)).channels.length === 0)).toBe(true);
  });

  it('close() leaves no subscriber connection behind', async () => {
    const holder = shared.manager();
    const waiter = shared.manager({ retryDelay: 10_000 });
    const lock = await holder.acquire('bye', { ttl: 30_000 });
    const waiting = waiter.acquire('bye', { wait: 20_000 }).catch((e: unknown) => e);
    expect(await eventually(async () => (await pubsub(1)).subscribers === 1)).toBe(true);
    await waiter.close();
    expect(await waiting).toBeInstanceOf(LockNotAcquiredError);
    await lock.release();
    expect(await eventually(async () => (await pubsub(1)).subscribers === 0)).toBe(true);
  });

  it('notifications: false polls, and its releases are still announced (for other managers)', async () => {
    const probe = new Redis(shared.fleet.urls()[0]);
    try {
      let messages = 0;
      await probe.psubscribe('redlock:*');
      // Releases only: a poll that reaches node 0 between the holder's release there and on the
      // others takes node 0 alone, fails and announces its cleanup (id ending in CLEANUP_MARK).
      probe.on('pmessage', (_pattern: string, _channel: string, id: string) => {
        if (!id.endsWith(CLEANUP_MARK)) messages++;
      });
      const polling = shared.manager({ notifications: false, retryDelay: 20, retryJitter: 0 });
      const attempts = countAttempts(polling);
      const holder = shared.manager();
      const lock = await holder.acquire('polled', { ttl: 30_000 });
      const waiting = polling.acquire('polled', { wait: 20_000 });
      await delay(500);
      // Polls every 20 ms: far more than a listening waiter's two or three attempts.
      expect(attempts()).toBeGreaterThan(10);
      await lock.release();
      await (await waiting).release();
      // Both releases announced on node 0, the polling manager's included.
      expect(await eventually(() => messages === 2)).toBe(true);
    } finally {
      probe.disconnect();
    }
  });

  it('a waiter every node confirmed it listens for stops polling, and is woken by the release', async () => {
    const holder = shared.manager();
    const waiter = shared.manager({ retryDelay: 20, retryJitter: 0 });
    const attempts = countAttempts(waiter);
    const lock = await holder.acquire('calm', { ttl: 30_000 });
    const waiting = waiter.acquire('calm', { wait: 20_000 });
    await delay(1_000);
    // Polling every 20 ms would be ~50 attempts by now; a listening waiter stops after the
    // first attempt made with its subscriptions confirmed.
    expect(attempts()).toBeLessThanOrEqual(5);
    const { ms, result } = await timed(async () => {
      await lock.release();
      return waiting;
    });
    // Woken by the release, not by the lease's end (29 s away).
    expect(ms).toBeLessThan(5_000);
    expect(result.isValid()).toBe(true);
    await result.release();
  });

  it("a releaser with notifications off still wakes another manager's listening waiter", async () => {
    const holder = shared.manager({ notifications: false });
    const waiter = shared.manager({ retryDelay: 10_000, retryJitter: 0 });
    const lock = await holder.acquire('mixed', { ttl: 30_000 });
    const waiting = timed(() => waiter.acquire('mixed', { wait: 20_000 }));
    await delay(300);
    await lock.release();
    const { ms, result } = await waiting;
    expect(ms).toBeLessThan(5_000); // neither its retry delay (10 s) nor the lease (30 s)
    await result.release();
  });

  it('a waiter that stopped polling is woken when its subscriber connection drops', async () => {
    const holder = shared.manager();
    const waiter = shared.manager({ retryDelay: 1_000, retryJitter: 0 });
    const attempts = countAttempts(waiter);
    const lock = await holder.acquire('dropped', { ttl: 30_000 });
    const waiting = timed(() => waiter.acquire('dropped', { wait: 25_000 }));
    // Past its first retry delay: it has attempted while listening, and sleeps for the lease.
    await delay(2_500);
    const before = attempts();
    expect(before).toBeLessThanOrEqual(3);
    // The drop loses whatever is announced before the subscriber is back: here, the release.
    for (const node of shared.fleet.nodes) await node.command('CLIENT', 'KILL', 'TYPE', 'pubsub');
    await lock.release();
    const { ms, result } = await waiting;
    // Woken by the drop, it polls again: well before the 30 s lease would have ended.
    expect(ms).toBeLessThan(2_500 + 1_000 + 3_000);
    await result.release();
  });
  it('with the fair queue (the default), a queued waiter is woken when its subscriber connection drops', async () => {
    const holder = fleet.manager();
    const waiter = fleet.manager({ retryDelay: 1_000, retryJitter: 0 });
    expect(waiter.options.fairness).toBe('queue');
    const attempts = countAttempts(waiter);
    const lock = await holder.acquire('dropped-fair', { ttl: 30_000 });
    const waiting = timed(() => waiter.acquire('dropped-fair', { wait: 25_000 }));
    // Its tries come at once (the plain one, the queued one, the ones its subscriptions'
    // confirmations close the gap with), then it sleeps: no polling while it listens, where
    // polling at its retry delay would have tried twice more in the next 2 s.
    await delay(500);
    const settled = attempts();
    await delay(2_000);
    expect(attempts()).toBe(settled);
    // The hand-off to the waiter's group is announced while nobody listens: lost.
    for (const node of shared.fleet.nodes) await node.command('CLIENT', 'KILL', 'TYPE', 'pubsub');
    await lock.release();
    const { ms, result } = await waiting;
    expect(ms).toBeLessThan(2_500 + 1_000 + 3_000);
    await result.release();
  });
});
