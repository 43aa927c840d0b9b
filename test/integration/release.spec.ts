import type { RedlockOptions } from '../../lib';
import { startLatencyProxy } from '../support/latency-proxy';
import { delay, eventually, sharedFleet } from './helpers';

describe('release (5 real nodes)', () => {
  const shared = sharedFleet(5);
  const manager = async (urls: string[], options: RedlockOptions = {}) =>
    shared.manager(options, urls);

  async function slowNodes(indexes: number[], delayMs: number) {
    const urls = shared.fleet.urls();
    for (const i of indexes) {
      const proxy = await startLatencyProxy(shared.fleet.nodes[i].port, delayMs);
      shared.afterTest(() => proxy.close());
      urls[i] = proxy.url;
    }
    return urls;
  }

  const valuesOn = (key: string) =>
    Promise.all(shared.fleet.nodes.map((n) => n.command('GET', key)));

  it('reaches nodes whose acquire timed out, after a failed attempt', async () => {
    // Three nodes answer after 300 ms, beyond the 100 ms node timeout: no quorum in time.
    const redlock = await manager(await slowNodes([0, 1, 2], 300), {
      nodeTimeout: 100,
      ttl: 5_000,
    });
    await expect(redlock.acquire('r', { wait: 0 })).rejects.toMatchObject({
      reason: 'unavailable',
    });
    // The slow nodes still run the SET, then the release sent behind it: nothing stays.
    await delay(800);
    expect(await valuesOn('redlock:r')).toEqual([null, null, null, null, null]);
  });

  it('reaches nodes whose acquire was still in flight when the quorum decided', async () => {
    // No restart detection: two of five peers slower than nodeTimeout cannot tell a young
    // fleet's nodes how long leases may last, so each would wait out the fallback (its uptime
    // reaching the ttl) first; this test is about releases, not restarts.
    const redlock = await manager(await slowNodes([3, 4], 300), {
      nodeTimeout: 100,
      ttl: 5_000,
      quarantine: false,
    });
    const lock = await redlock.acquire('r', { wait: 0 });
    await lock.release();
    await delay(800);
    expect(await valuesOn('redlock:r')).toEqual([null, null, null, null, null]);
  });

  it('resolves for an expired lock and for a lock released twice', async () => {
    const redlock = await manager(shared.fleet.urls(), { ttl: 300, nodeTimeout: 50 });
    const lock = await redlock.acquire('r');
    await delay(400);
    expect(lock.remainingMs()).toBe(0);
    await expect(lock.release()).resolves.toBeUndefined();
    await expect(lock.release()).resolves.toBeUndefined();
    const other = await redlock.acquire('q');
    await other.release();
    await expect(other.release()).resolves.toBeUndefined();
    await expect(other[Symbol.asyncDispose]()).resolves.toBeUndefined();
  });

  it("never deletes another owner's key", async () => {
    const first = await manager(shared.fleet.urls(), { ttl: 300, nodeTimeout: 50 });
    const second = await manager(shared.fleet.urls());
    const stale = await first.acquire('r');
    expect(
      await eventually(async () => (await valuesOn('redlock:r')).every((v) => v === null), 2_000),
    ).toBe(true);
    const current = await second.acquire('r', { wait: 0 });
    await stale.release();
    expect(await valuesOn('redlock:r')).toEqual(Array(5).fill(current.value));
    await current.release();
  });

  it('await using releases at the end of the block', async () => {
    const redlock = await manager(shared.fleet.urls());
    {
      await using lock = await redlock.acquire('scoped');
      expect(await valuesOn('redlock:scoped')).toEqual(Array(5).fill(lock.value));
    }
    expect(await valuesOn('redlock:scoped')).toEqual(Array(5).fill(null));
  });
});
