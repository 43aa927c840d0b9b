import type Redis from 'ioredis';
import { Redlock } from '../../lib';
import { startFleet, type RedisFleet } from '../support/fleet';
import { delay, rawClient, RecordingLogger } from './helpers';

/**
 * The safety property itself: many concurrent holders from independent lock managers doing a
 * non-atomic read-modify-write. With mutual exclusion the counter is exact; without it,
 * updates are lost — the control case proves the test can see a race.
 */
describe('mutual exclusion (5 real nodes)', () => {
  let fleet: RedisFleet;
  let store: Redis;
  let a: Redlock;
  let b: Redlock;

  beforeAll(async () => {
    fleet = await startFleet(5);
    // A loaded machine can make a node answer late (a "hung" warning): expected here, and kept
    // out of the test output.
    // `wait` is generous: 200 waiters on one lock finish in about 5 s here, but on a 2-core
    // machine with both cores busy each hand-off costs much more, and the last of 200 waiters
    // waits for all the others (a fresh-clone CI run under load saw one reach 60 s). What
    // this test checks is the count, not the speed.
    const options = {
      retryDelay: 5,
      retryJitter: 20,
      wait: 170_000,
      logger: new RecordingLogger(),
    };
    a = new Redlock(fleet.urls(), options);
    b = new Redlock(fleet.urls(), { ...options, logger: new RecordingLogger() });
    // The counter lives on node 0 under its own key: shared by both managers like any
    // external resource, and read and written in two separate round trips.
    store = rawClient(fleet.nodes[0].url);
  });

  afterAll(async () => {
    store?.disconnect();
    await a?.close();
    await b?.close();
    await fleet?.stop();
  });

  const increment = async () => {
    const value = Number((await store.get('counter')) ?? 0);
    await delay(1);
    await store.set('counter', value + 1);
  };

  it('control: without the lock, concurrent read-modify-writes lose updates', async () => {
    await store.set('counter', 0);
    await Promise.all(Array.from({ length: 50 }, increment));
    expect(Number(await store.get('counter'))).toBeLessThan(50);
  });

  it('200 concurrent using() calls from two independent managers keep the counter exact', async () => {
    await store.set('counter', 0);
    let inside = 0;
    let maxInside = 0;
    const runs = Array.from({ length: 200 }, (_, i) =>
      (i % 2 === 0 ? a : b).using('counter', async () => {
        inside++;
        maxInside = Math.max(maxInside, inside);
        await increment();
        inside--;
      }),
    );
    await Promise.all(runs);
    expect(Number(await store.get('counter'))).toBe(200);
    expect(maxInside).toBe(1);
  }, 180_000);
});
