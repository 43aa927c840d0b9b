import type Redis from 'ioredis';
import { Redlock } from '../../lib';
import { startFleet, type RedisFleet } from '../support/fleet';
import { eventually, rawClient } from './helpers';

/**
 * For every subset of the 5 nodes pre-locked by a foreign owner, the lock is granted exactly
 * when the free nodes are a majority — and a refused attempt leaves none of our keys behind.
 */
describe('quorum masks (5 real nodes)', () => {
  let fleet: RedisFleet;
  let clients: Redis[];
  let redlock: Redlock;

  beforeAll(async () => {
    fleet = await startFleet(5);
    clients = fleet.urls().map(rawClient);
    redlock = new Redlock(fleet.urls(), { keyPrefix: 'l:' });
  });

  afterAll(async () => {
    for (const c of clients ?? []) c.disconnect();
    await redlock?.close();
    await fleet?.stop();
  });

  const masks = Array.from({ length: 32 }, (_, mask) => mask);

  it.each(masks)('mask %i: acquired iff the free nodes are a majority', async (mask) => {
    const resource = `mask-${mask}`;
    const key = `l:${resource}`;
    const blocked = [0, 1, 2, 3, 4].filter((i) => mask & (1 << i));
    await Promise.all(blocked.map((i) => clients[i].set(key, 'foreign', 'PX', 30_000)));
    const free = 5 - blocked.length;

    const lock = await redlock.tryAcquire(resource);
    const values = await Promise.all(clients.map((c) => c.get(key)));

    if (free >= 3) {
      expect(lock).not.toBeNull();
      // Decided at quorum: a quorum holds our value now; the remaining free nodes' SETs may
      // still be in flight, and land shortly.
      expect(values.filter((value) => value === lock!.value).length).toBeGreaterThanOrEqual(3);
      const expected = [0, 1, 2, 3, 4].map((i) => (blocked.includes(i) ? 'foreign' : lock!.value));
      const current = () => Promise.all(clients.map((c) => c.get(key)));
      expect(
        await eventually(
          async () => JSON.stringify(await current()) === JSON.stringify(expected),
          1_000,
        ),
      ).toBe(true);
      await lock!.release();
    } else {
      expect(lock).toBeNull();
      // nothing of ours left anywhere; the foreign keys untouched
      values.forEach((value, i) => expect(value).toBe(blocked.includes(i) ? 'foreign' : null));
    }
    const after = await Promise.all(clients.map((c) => c.get(key)));
    after.forEach((value, i) => expect(value).toBe(blocked.includes(i) ? 'foreign' : null));
  });
});
