import { LockResourceError, Redlock } from '../../lib';
import { normalizeResources } from '../../lib/core/resources';
import { memoryNodes } from './memory-node';

describe('resources', () => {
  it('de-duplicates and sorts, so [a, b] and [b, a] lock the same keys in the same order', () => {
    expect(normalizeResources(['b', 'a', 'b'], 1024)).toEqual(['a', 'b']);
    expect(normalizeResources(['b', 'a'], 1024)).toEqual(normalizeResources(['a', 'b'], 1024));
    expect(normalizeResources('x', 1024)).toEqual(['x']);
  });

  it.each([[''], [[]], [['a', '']], [42], [null], [undefined], [['a', 7]], [{ id: 1 }]])(
    'rejects %p with LockResourceError before asking any node',
    async (bad) => {
      const nodes = memoryNodes(3);
      const redlock = new Redlock(nodes);
      await expect(redlock.acquire(bad as never)).rejects.toBeInstanceOf(LockResourceError);
      await expect(redlock.tryAcquire(bad as never)).rejects.toBeInstanceOf(LockResourceError);
      await expect(redlock.using(bad as never, async () => 'ran')).rejects.toBeInstanceOf(
        LockResourceError,
      );
      expect(nodes.every((n) => n.calls.acquire === 0)).toBe(true);
      await redlock.close();
    },
  );

  it('prefixes every key with keyPrefix', async () => {
    const nodes = memoryNodes(3);
    const redlock = new Redlock(nodes, { keyPrefix: 'app:lock:' });
    const lock = await redlock.acquire(['b', 'a']);
    expect([...nodes[0].store.keys()]).toEqual(['app:lock:a', 'app:lock:b']);
    expect(lock.resources).toEqual(['a', 'b']);
    await lock.release();
    expect(nodes[0].store.size).toBe(0);
    await redlock.close();
  });
});
