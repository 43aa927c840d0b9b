import { LockReentryError, Redlock, type Lock, type RedlockOptions } from '../../lib';
import { simNodes, type SimNode } from '../sim/sim-node';
import { VirtualClock } from '../sim/virtual-clock';

/** Issue 7 in virtual time: reentrancy (§5.9) and the fencing rounds (§5.6). */
describe('reentrancy and fencing (virtual time, simulated nodes)', () => {
  let clock: VirtualClock;
  let nodes: SimNode[];
  const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };
  const managers: Redlock[] = [];
  const manager = (options: RedlockOptions = {}) => {
    const redlock = new Redlock(nodes, { logger: quiet, clock, ...options });
    managers.push(redlock);
    return redlock;
  };

  beforeEach(() => {
    clock = new VirtualClock();
    nodes = simNodes(5, clock);
  });
  afterEach(async () => {
    for (const redlock of managers.splice(0)) await clock.run(redlock.close());
  });

  describe('reentrancy', () => {
    it('nested 3 deep: one acquisition, released only when the outermost holder ends', async () => {
      const redlock = manager({ reentrant: true });
      const seen: (Lock | undefined)[] = [];
      const run = redlock.using(['a', 'b'], async (outer) => {
        await redlock.using('a', async (middle) => {
          await redlock.using(['b', 'a'], async (inner) => {
            seen.push(outer, middle, inner);
            expect(inner.value).toBe(outer.value);
          });
          // the innermost ended: still held on the nodes
          expect(nodes[0].valueAt('redlock:a')).toBe(outer.value);
        });
        expect(nodes[0].valueAt('redlock:a')).toBe(outer.value);
      });
      await clock.run(run);
      expect(nodes.map((n) => n.applied.acquire)).toEqual([1, 1, 1, 1, 1]);
      expect(nodes[0].valueAt('redlock:a')).toBeUndefined();
      expect(seen).toHaveLength(3);
    });

    it('a nested acquisition asking for more than the context holds is an error that says so', async () => {
      const redlock = manager({ reentrant: true });
      const error = await clock.run(
        redlock.using('a', () => redlock.acquire(['a', 'c'])).catch((e: unknown) => e),
      );
      expect(error).toBeInstanceOf(LockReentryError);
      expect((error as Error).message).toMatch(/holds only part of it.*cannot ask for more/);
      expect((error as LockReentryError).diagnostic).toMatch(/the context holds \["a"\]/);
    });

    it('without reentrant, a nested acquisition fails at once instead of waiting for itself', async () => {
      const redlock = manager({ wait: 10_000 });
      const started = clock.now();
      const error = await clock.run(
        redlock.using('a', () => redlock.acquire('a')).catch((e: unknown) => e),
      );
      expect(error).toBeInstanceOf(LockReentryError);
      expect((error as Error).message).toMatch(/would wait for itself; pass reentrant: true/);
      expect(clock.now() - started).toBeLessThan(100);
    });

    it('per call: reentrant on the nested call is enough', async () => {
      const redlock = manager();
      const nested = await clock.run(
        redlock.using('a', async () => {
          const lock = await redlock.acquire('a', { reentrant: true });
          await lock.release();
          return 'nested';
        }),
      );
      expect(nested).toBe('nested');
    });

    it('other resources in a locked context are acquired normally', async () => {
      const redlock = manager({ reentrant: true });
      await clock.run(redlock.using('a', () => redlock.using('z', async () => undefined)));
      expect(nodes[0].applied.acquire).toBe(2);
    });
  });

  describe('fencing', () => {
    it('tokens strictly increase across holders and survive an extension unchanged', async () => {
      const [a, b] = [manager({ fencing: true }), manager({ fencing: true })];
      let last = 0;
      for (let i = 0; i < 50; i++) {
        const lock = await clock.run((i % 2 ? a : b).acquire(['r', 's']));
        expect(lock.fencingToken).toBeGreaterThan(last);
        last = lock.fencingToken!;
        await clock.run(lock.extend());
        expect(lock.fencingToken).toBe(last);
        await clock.run(lock.release());
      }
    });

    it("a multi-resource token is above every resource's counter", async () => {
      const redlock = manager({ fencing: true });
      for (const n of nodes) n.counters.set('redlock:s\u0000fence', 9e15);
      const lock = await clock.run(redlock.acquire(['r', 's']));
      expect(lock.fencingToken).toBe(9e15 + 1);
    });

    it('a holder whose phase 2 lands after its key expired gets no token (the attempt fails)', async () => {
      const redlock = manager({ fencing: true, ttl: 1_000, nodeTimeout: 250 });
      for (const n of nodes) n.fault = (op) => (op === 'fence' ? { applyDelay: 1_100 } : undefined);
      const error = await clock.run(redlock.acquire('r', { wait: 0 }).catch((e: unknown) => e));
      expect(error).toMatchObject({ name: 'LockNotAcquiredError' });
      await clock.advance(2_000);
      // phase 2 reached the nodes after the key was gone: no counter was raised
      expect(nodes.every((n) => !n.counters.has('redlock:r\u0000fence'))).toBe(true);
    });

    it('fencing off costs nothing: one command per node per cycle, no token', async () => {
      const redlock = manager();
      const lock = await clock.run(redlock.acquire('r'));
      expect(lock.fencingToken).toBeUndefined();
      expect(nodes.map((n) => n.applied.fence)).toEqual([0, 0, 0, 0, 0]);
      expect(nodes.map((n) => n.applied.acquire)).toEqual([1, 1, 1, 1, 1]);
    });
  });
});
