import { Redlock, type Lock, type RedisNode } from '../../lib';
import { ReleaseNotifier } from '../../lib/core/acquisition/notifier';
import { HealthNode } from '../sim/health-node';
import { VirtualClock } from '../sim/virtual-clock';

/** A node that only subscribes, every subscription confirmed: what the notifier uses of the port. */
class ChannelNode {
  readonly listeners = new Map<string, ((id: string) => void)[]>();
  subscribe(channel: string, message: (id: string) => void): () => void {
    const list = this.listeners.get(channel) ?? [];
    list.push(message);
    this.listeners.set(channel, list);
    return () => list.splice(list.indexOf(message), 1);
  }
  listening(): boolean {
    return true;
  }
  announce(channel: string, id: string): void {
    for (const message of this.listeners.get(channel) ?? []) message(id);
  }
}

/**
 * Issue 16 defect 8 (architecture.md §5.8): a release wakes a waiter that can use it. A waiter for more
 * resources than were released must not absorb the wake-up of one that needs only those: the
 * latter, a confirmed listener that stopped polling, would sleep until the old lease ends.
 */
describe('release notifications with multi-resource waiters', () => {
  describe('the notifier', () => {
    let nodes: ChannelNode[];
    let notifier: ReleaseNotifier;
    /** A release of `keys`, announced by every node on each key's channel, in key order. */
    const release = (id: string, ...keys: string[]) => {
      for (const node of nodes) for (const key of keys) node.announce(key, id);
    };

    beforeEach(() => {
      nodes = [new ChannelNode(), new ChannelNode(), new ChannelNode()];
      notifier = new ReleaseNotifier(nodes as unknown as RedisNode[]);
    });

    it('a release of a wakes the waiter for just a, also behind a longer-waiting waiter for [a, b]', () => {
      const wakes = { ab: 0, a: 0 };
      notifier.watch(['a', 'b'], () => wakes.ab++);
      notifier.watch(['a'], () => wakes.a++);
      release('r1', 'a');
      expect(wakes.a).toBe(1);
    });

    it('behind several waiters for more, the first waiter that needs only what was released is woken, and no later one', () => {
      const wakes = [0, 0, 0, 0];
      notifier.watch(['a', 'b'], () => wakes[0]++);
      notifier.watch(['a', 'c'], () => wakes[1]++);
      notifier.watch(['a'], () => wakes[2]++);
      notifier.watch(['a'], () => wakes[3]++);
      release('r1', 'a');
      expect(wakes[2]).toBe(1);
      expect(wakes[3]).toBe(0); // no stampede: one waiter that can use it is enough
    });

    it('a release of [a, b] wakes the longest waiter for [a, b] (it can use it), once', () => {
      const wakes = { ab: 0, b: 0 };
      notifier.watch(['a', 'b'], () => wakes.ab++);
      notifier.watch(['b'], () => wakes.b++);
      release('r1', 'a', 'b');
      expect(wakes.ab).toBe(1);
    });

    it('waiters for just a still get the lock one at a time: one release, one wake-up', () => {
      const wakes = [0, 0, 0];
      const handles = wakes.map((_, i) => notifier.watch(['a'], () => wakes[i]++));
      release('r1', 'a');
      expect(wakes).toEqual([1, 0, 0]);
      handles[0].stop(true);
      release('r2', 'a');
      expect(wakes).toEqual([1, 1, 0]);
    });
  });

  describe('the lock manager (virtual time, simulated nodes with pub/sub)', () => {
    it('a waiter for a behind a waiter for [a, b] gets a within milliseconds of its release, not at the end of the lease', async () => {
      const clock = new VirtualClock();
      const nodes = [0, 1, 2].map((i) => new HealthNode(`s${i}`, clock));
      const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };
      const options = { clock, logger: quiet, quarantine: false, nodeTimeout: 50 } as const;
      const holder = new Redlock(nodes, options);
      const waiter = new Redlock(nodes, { ...options, retryDelay: 5_000, retryJitter: 0 });
      try {
        const a = await clock.run(holder.acquire('a', { ttl: 10_000 }));
        const b = await clock.run(holder.acquire('b', { ttl: 10_000 }));
        const both = waiter.acquire(['a', 'b'], { wait: 30_000 });
        await clock.advance(10);
        let gotA: { at: number; lock: Lock } | undefined;
        const justA = waiter.acquire('a', { wait: 30_000 }).then((lock) => {
          gotA = { at: clock.now(), lock };
          return lock;
        });
        // Both waiters have attempted with their subscriptions confirmed: they stopped polling.
        await clock.advance(6_000);
        const releasedAt = clock.now();
        await clock.run(a.release());
        const lockA = await clock.run(justA);
        expect(gotA!.at - releasedAt).toBeLessThan(100); // not at the lease's end, ~4 s later
        await clock.run(lockA.release());
        await clock.run(b.release());
        await clock.run((await clock.run(both)).release());
      } finally {
        await clock.run(Promise.all([holder.close(), waiter.close()]));
      }
    });
  });
});
