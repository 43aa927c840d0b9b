import { startFleet, type RedisFleet } from '../support/fleet';
import { eventually } from './helpers';
import { managers } from './restart-findings';

/**
 * Issue 23, finding 4: the docs recommended the eviction policies that evict locks. Every lock
 * key has a TTL, so under memory pressure a `volatile-*` policy (like an `allkeys-*` one) evicts
 * held locks: two holders (2 of 2 runs with volatile-ttl, 2 of 5 with volatile-lru in the
 * issue). Lock nodes must run `noeviction`; a lock manager warns at start-up about a node whose
 * policy can evict lock keys, naming the policy and the fix.
 */
describe('finding 4: an eviction policy that can evict lock keys (3 real nodes)', () => {
  let fleet: RedisFleet;
  const created = managers();
  beforeAll(async () => {
    fleet = await startFleet(3);
  });
  afterEach(async () => {
    for (const node of fleet.nodes) {
      await node.command('CONFIG', 'SET', 'maxmemory-policy', 'noeviction');
      await node.command('CONFIG', 'SET', 'maxmemory', '0');
    }
    await fleet.flushAll();
  });
  afterAll(async () => {
    await fleet?.stop();
  });

  it.each(['volatile-lru', 'volatile-ttl', 'allkeys-lru'])(
    'a node with maxmemory-policy %s gets a start-up warning naming it and noeviction',
    async (policy) => {
      const node = fleet.nodes[1];
      await node.command('CONFIG', 'SET', 'maxmemory', '64mb');
      await node.command('CONFIG', 'SET', 'maxmemory-policy', policy);
      const { redlock, logger } = created.create(fleet.urls(), { ttl: 2_000, maxTtl: 2_000 });
      await redlock.ready();
      const warned = () =>
        logger.lines.some(
          (line) => line.startsWith('warn ') && line.includes(policy) && /noeviction/.test(line),
        );
      const found = await eventually(warned, 3_000);
      if (!found)
        console.log(`finding 4 (${policy}): lines logged: ${JSON.stringify(logger.lines)}`);
      expect(found).toBe(true);
    },
  );

  // A guard for the new rule, not a reproduction (it passes on 0cce7fe too): noeviction, the
  // default, is not warned about.
  it('nodes with noeviction (the default) get no such warning', async () => {
    const { redlock, logger } = created.create(fleet.urls(), { ttl: 2_000, maxTtl: 2_000 });
    await redlock.ready();
    const lock = await redlock.acquire('r');
    await lock.release();
    expect(
      logger.lines.filter((line) => line.startsWith('warn ') && /eviction|maxmemory/.test(line)),
    ).toEqual([]);
  });
});
