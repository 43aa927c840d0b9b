import type { Writable } from 'node:stream';
import Redis from 'ioredis';
import { IoredisNode, type Redlock } from '../../lib';
import { delay, eventually, RecordingLogger, sharedFleet, timed } from './helpers';

/** Counts the failed attempts of a lock manager (its `attemptFailed` events). */
function countAttempts(redlock: Redlock): () => number {
  let failed = 0;
  redlock.on('attemptFailed', () => failed++);
  return () => failed;
}

/**
 * Issue 16: wake-ups that reach the waiter that can use them (architecture.md §5.8), on real nodes —
 * behind a multi-resource waiter (defect 8), for each key of a multi-resource release (a
 * surviving mutant), through callers' ioredis clients with a `keyPrefix` (defect 9) — and a
 * subscription confirmed only by its own SUBSCRIBE reply (a surviving mutant).
 */
describe('wake-ups on real nodes (3 nodes)', () => {
  const shared = sharedFleet(3);

  /** Whether node 0 has a subscriber on each of `channels`. */
  const subscribed = async (...channels: string[]) => {
    const reply = (await shared.fleet.nodes[0].command('PUBSUB', 'NUMSUB', ...channels)) as (
      string | number
    )[];
    return channels.every((_, i) => Number(reply[2 * i + 1]) > 0);
  };

  it('defect 8: a release of a wakes the waiter for a that waits behind a waiter for [a, b]', async () => {
    const holder = shared.manager();
    const waiter = shared.manager({ retryDelay: 10_000, retryJitter: 0 });
    const a = await holder.acquire('a', { ttl: 30_000 });
    const b = await holder.acquire('b', { ttl: 30_000 });
    const both = waiter.acquire(['a', 'b'], { wait: 60_000 });
    expect(await eventually(() => subscribed('redlock:a', 'redlock:b'))).toBe(true);
    const justA = timed(() => waiter.acquire('a', { wait: 60_000 }));
    await delay(1_000); // both have attempted and sleep (for 10 s, or for the lease)
    await a.release();
    const { ms, result } = await justA;
    expect(ms).toBeLessThan(1_000 + 5_000); // neither the 10 s poll nor the 30 s lease
    await result.release();
    await b.release();
    await (await both).release();
  });

  it('a release of [a, b] is announced on both channels: a listening waiter for b alone wakes', async () => {
    const holder = shared.manager();
    const waiter = shared.manager({ retryDelay: 10_000, retryJitter: 0 });
    const lock = await holder.acquire(['a', 'b'], { ttl: 30_000 });
    const justB = timed(() => waiter.acquire('b', { wait: 60_000 }));
    expect(await eventually(() => subscribed('redlock:b'))).toBe(true);
    await delay(500);
    await lock.release();
    const { ms, result } = await justB;
    expect(ms).toBeLessThan(500 + 5_000); // neither the 10 s poll nor the 30 s lease
    await result.release();
  });

  it("defect 9: callers' ioredis clients with a keyPrefix: the waiter hears the release on the channel the script publishes on", async () => {
    const prefixed = () =>
      shared.fleet.urls().map((url) => {
        const client = new Redis(url, {
          keyPrefix: 'app:',
          enableOfflineQueue: false,
          maxRetriesPerRequest: 0,
          commandTimeout: 500,
        });
        shared.afterTest(async () => client.disconnect());
        return client;
      });
    const holder = shared.manager({}, prefixed());
    const waiter = shared.manager({ retryDelay: 200, retryJitter: 0 }, prefixed());
    const attempts = countAttempts(waiter);
    const lock = await holder.acquire('r', { ttl: 30_000 });
    // The key, and so the release's PUBLISH, carry the client's prefix.
    expect(await shared.fleet.nodes[0].command('EXISTS', 'app:redlock:r')).toBe(1);
    const waiting = waiter.acquire('r', { wait: 60_000 });
    // Subscribed on every node, on the channel the script publishes on (with the prefix)...
    for (const node of shared.fleet.nodes) {
      expect(
        await eventually(async () => {
          const reply = (await node.command('PUBSUB', 'NUMSUB', 'app:redlock:r')) as unknown[];
          return Number(reply[1]) > 0;
        }),
      ).toBe(true);
    }
    // ...it listens (confirmed) and stops polling: every 200 ms would be ~5 attempts in 1 s.
    // Counted from once it subscribed: how long confirming takes is the machine's load (a bound
    // on the attempts since the start failed once on a busy host: 5 against 4).
    await delay(300);
    const before = attempts();
    await delay(1_000);
    expect(attempts() - before).toBeLessThanOrEqual(1);
    const { ms, result } = await timed(async () => {
      await lock.release();
      return waiting;
    });
    expect(ms).toBeLessThan(5_000); // woken by the release, not at the lease's end (28 s away)
    expect(await shared.fleet.nodes[0].command('GET', 'app:redlock:r')).toBe(result.value);
    await result.release();
  });

  it('a subscription is confirmed by its own SUBSCRIBE reply, never by the reply of an earlier subscribe of the same channel', async () => {
    const node = IoredisNode.from(shared.fleet.urls()[0], 1_000, new RecordingLogger());
    shared.afterTest(() => node.close());
    await node.whenReady(2_000);
    node.subscribe('warm', () => undefined);
    expect(await eventually(() => node.listening('warm'))).toBe(true);
    const heard: string[] = [];
    // A waiter comes and goes: SUBSCRIBE, then UNSUBSCRIBE, both sent now.
    node.subscribe('ch', (id) => heard.push(id))();
    // The next waiter's SUBSCRIBE is held back in the subscriber's socket, so that the server
    // has no subscription for the channel while the earlier replies come back.
    const subscriber = (node as unknown as { transport: { subscriber: { stream: Writable } } })
      .transport.subscriber;
    subscriber.stream.cork();
    try {
      node.subscribe('ch', (id) => heard.push(id));
      await delay(500); // the replies to the first SUBSCRIBE and the UNSUBSCRIBE arrive
      expect(await subscribed('ch')).toBe(false);
      // Not subscribed on the server, so not listening: a release now would be missed.
      expect(node.listening('ch')).toBe(false);
    } finally {
      subscriber.stream.uncork();
    }
    expect(await eventually(() => node.listening('ch'))).toBe(true);
    await shared.fleet.nodes[0].command('PUBLISH', 'ch', 'r1');
    expect(await eventually(() => heard.includes('r1'))).toBe(true);
  });
});
