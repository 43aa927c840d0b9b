import { Cluster } from 'ioredis';
import {
  LockLostError,
  LockNotAcquiredError,
  RedlockConfigError,
  type Lock,
  type RedlockOptions,
} from '../../lib';
import { delay, eventually, sharedFleet, timed } from './helpers';

/**
 * docs/migrating.md, row by row: what a user coming from node-redlock (redlock 4.2 / 5.0-beta) or
 * redis-semaphore meets, against three real Redis nodes. Where the row is about sharing locks with
 * instances that still run node-redlock (a rolling deploy), those instances are played by
 * node-redlock's own scripts, sent as it sends them: EVAL on every node, KEYS = the resource names
 * as they are, ARGV = a random value and the ttl; redis-semaphore's RedlockMutex by the command
 * it sends (SET mutex:<key> <uuid> PX <lockTimeout> NX on every node).
 */

/** node-redlock's lock script (redlock 4.2.0 `lockScript`, 5.0.0-beta.2 `ACQUIRE_SCRIPT`), MIT. */
const NODE_REDLOCK_ACQUIRE = `
  for i, key in ipairs(KEYS) do
    if redis.call("exists", key) == 1 then
      return 0
    end
  end
  for i, key in ipairs(KEYS) do
    redis.call("set", key, ARGV[1], "PX", ARGV[2])
  end
  return #KEYS
`;

/** node-redlock's unlock script (4.2.0 `unlockScript`, 5.0.0-beta.2 `RELEASE_SCRIPT`), MIT. */
const NODE_REDLOCK_RELEASE = `
  local count = 0
  for i, key in ipairs(KEYS) do
    if redis.call("get", key) == ARGV[1] then
      redis.pcall("del", key)
      count = count + 1
    end
  end
  return count
`;

describe('docs/migrating.md (3 real nodes)', () => {
  const shared = sharedFleet(3);
  const manager = (options: RedlockOptions = {}) => shared.manager(options);
  const allNodes = (...args: (string | number)[]) =>
    Promise.all(shared.fleet.nodes.map((n) => n.command(...args)));
  /** An "old instance": node-redlock's script on every node; how many nodes granted it. */
  const oldInstance = async (script: string, resource: string, value: string, ttl?: number) =>
    (
      await allNodes('EVAL', script, 1, resource, value, ...(ttl === undefined ? [] : [ttl]))
    ).filter((granted) => granted === 1).length;

  it('keys live under `redlock:` by default; `keyPrefix: ""` uses the resource name itself, as node-redlock does', async () => {
    const lock = await manager().acquire('stock:1');
    expect(await allNodes('GET', 'redlock:stock:1')).toEqual([lock.value, lock.value, lock.value]);
    const bare = await manager({ keyPrefix: '' }).acquire('stock:2');
    expect(await allNodes('GET', 'stock:2')).toEqual([bare.value, bare.value, bare.value]);
    await lock.release();
    await bare.release();
  });

  it('with `keyPrefix: ""`, locks are shared with instances still on node-redlock', async () => {
    const redlock = manager({ keyPrefix: '', wait: 0 });
    // An old instance holds stock:3: this one finds it held.
    expect(await oldInstance(NODE_REDLOCK_ACQUIRE, 'stock:3', 'old-owner', 10_000)).toBe(3);
    await expect(redlock.acquire('stock:3')).rejects.toMatchObject({ reason: 'held' });
    // Released by the old instance: free for this one.
    expect(await oldInstance(NODE_REDLOCK_RELEASE, 'stock:3', 'old-owner')).toBe(3);
    const lock = await redlock.acquire('stock:3');
    // Held by this one: the old instance's lock script is refused on every node, its unlock
    // script (another owner's value) deletes nothing.
    expect(await oldInstance(NODE_REDLOCK_ACQUIRE, 'stock:3', 'old-owner', 10_000)).toBe(0);
    expect(await oldInstance(NODE_REDLOCK_RELEASE, 'stock:3', 'old-owner')).toBe(0);
    await lock.release();
  });

  it("with `keyPrefix: 'mutex:'`, locks are shared with redis-semaphore's RedlockMutex", async () => {
    const redlock = manager({ keyPrefix: 'mutex:', wait: 0 });
    // RedlockMutex('stock:5') acquires with SET mutex:stock:5 <uuid> PX <lockTimeout> NX on
    // every node; this one finds it held.
    const granted = await allNodes('SET', 'mutex:stock:5', 'semaphore-owner', 'PX', 10_000, 'NX');
    expect(granted).toEqual(['OK', 'OK', 'OK']);
    await expect(redlock.acquire('stock:5')).rejects.toMatchObject({ reason: 'held' });
    await allNodes('DEL', 'mutex:stock:5');
    const lock = await redlock.acquire('stock:5');
    expect(await allNodes('SET', 'mutex:stock:5', 'semaphore-owner', 'PX', 10_000, 'NX')).toEqual([
      null,
      null,
      null,
    ]);
    await lock.release();
  });

  it('during such a deploy, `notifications: false` wakes a waiter soon after an old instance releases (old instances announce nothing)', async () => {
    const redlock = manager({ keyPrefix: '', notifications: false });
    expect(await oldInstance(NODE_REDLOCK_ACQUIRE, 'stock:4', 'old-owner', 5_000)).toBe(3);
    const waiting = timed(() => redlock.acquire('stock:4', { wait: 10_000 }));
    await delay(300);
    await oldInstance(NODE_REDLOCK_RELEASE, 'stock:4', 'old-owner');
    const { ms, result: lock } = await waiting;
    // Polled every retryDelay (100 ms + up to 100 ms): long before the old lease's 5 s end.
    expect(ms).toBeLessThan(2_000);
    await lock.release();
  });

  it('`retryCount` becomes `wait`, a time budget: `wait: 0` is one attempt', async () => {
    const redlock = manager();
    const holder = await redlock.acquire('job');
    const once = await redlock.acquire('job', { wait: 0 }).catch((e: unknown) => e);
    expect(once).toBeInstanceOf(LockNotAcquiredError);
    expect(once).toMatchObject({ reason: 'held', attempts: 1 });
    const { ms, result } = await timed(() =>
      redlock.acquire('job', { wait: 1_000 }).catch((e: unknown) => e),
    );
    expect(result).toMatchObject({ reason: 'held' });
    expect(ms).toBeGreaterThanOrEqual(1_000);
    expect(ms).toBeLessThan(2_500);
    expect(await redlock.tryAcquire('job')).toBeNull();
    await holder.release();
  });

  it('extend() extends the lock in place and resolves to nothing', async () => {
    const lock = await manager().acquire('doc', { ttl: 2_000 });
    const before = lock.expiresAt;
    const result: void = await lock.extend(20_000);
    expect(result).toBeUndefined();
    expect(lock.expiresAt).toBeGreaterThan(before + 15_000);
    const pttls = (await allNodes('PTTL', 'redlock:doc')) as number[];
    for (const pttl of pttls) expect(pttl).toBeGreaterThan(15_000);
    await lock.release();
  });

  it('extend() does not re-create a key a node lost: the lock lives on the others, then is lost', async () => {
    const lock: Lock = await manager().acquire('doc');
    // Node 0 lost the key (restarted without persistence, flushed): the others still hold it.
    await shared.fleet.nodes[0].command('DEL', 'redlock:doc');
    await expect(lock.extend()).resolves.toBeUndefined();
    expect(await shared.fleet.nodes[0].command('EXISTS', 'redlock:doc')).toBe(0);
    // One more node loses it: no quorum holds the lock any more.
    await shared.fleet.nodes[1].command('DEL', 'redlock:doc');
    await expect(lock.extend()).rejects.toBeInstanceOf(LockLostError);
    expect(lock.signal.aborted).toBe(true);
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    await expect(lock.release()).resolves.toBeUndefined();
  });

  it('a ttl must be at least 4 × nodeTimeout (800 ms by default): module, per call and extend()', async () => {
    expect(() => manager({ ttl: 500 })).toThrow(RedlockConfigError);
    expect(() => manager({ ttl: 500 })).toThrow(/nodeTimeout: must be at most a quarter of ttl/);
    const redlock = manager();
    await expect(redlock.acquire('r', { ttl: 500 })).rejects.toThrow(
      /ttl: must be at least 4 × nodeTimeout \(200 ms\), got 500/,
    );
    const lock = await redlock.acquire('r');
    await expect(lock.extend(500)).rejects.toBeInstanceOf(RedlockConfigError);
    await lock.release();
    // A shorter lease needs a shorter nodeTimeout.
    const fast = manager({ ttl: 200, nodeTimeout: 50 });
    await (await fast.acquire('r')).release();
  });

  it("a lease above maxTtl (node-redlock's `acquire(['r'], 600000)`) is refused; using() holds longer work on a short lease", async () => {
    const redlock = manager();
    await expect(redlock.acquire('long', { ttl: 600_000 })).rejects.toThrow(RedlockConfigError);
    await expect(redlock.acquire('long', { ttl: 600_000 })).rejects.toThrow(
      /ttl.*maxTtl \(60000 ms\)/,
    );
    expect(() => manager({ ttl: 600_000 })).toThrow(/ttl: must be at most maxTtl/);
    const lock = await redlock.acquire('long', { ttl: 2_000 });
    await expect(lock.extend(600_000)).rejects.toThrow(RedlockConfigError);
    await lock.release();
    // using() extends a 1 s lease while the work runs past it.
    const held = await redlock.using('long', { ttl: 1_000 }, async (inside) => {
      await delay(1_600);
      return inside.isValid();
    });
    expect(held).toBe(true);
    // Raised on every lock manager of the fleet, a longer lease is allowed.
    const patient = manager({ maxTtl: 600_000 });
    const long = await patient.acquire('long-2', { ttl: 600_000 });
    await long.release();
  });

  it('a Redis Cluster client is refused: list each master as a node of its own', () => {
    const cluster = new Cluster([{ host: '127.0.0.1', port: shared.fleet.nodes[0].port }], {
      lazyConnect: true,
    });
    const [, b, c] = shared.fleet.urls();
    // A type error too (a Cluster is not a Redis): this is what JavaScript, or a cast, meets.
    const nodes = [cluster as unknown as string, b, c];
    expect(() => shared.manager({}, nodes)).toThrow(RedlockConfigError);
    expect(() => shared.manager({}, nodes)).toThrow(
      /nodes\[0\]: must be an independent Redis master/,
    );
    cluster.disconnect();
  });

  it('with a quorum of nodes down, release() resolves and acquire() gives up at once, not after `wait` (last: kills two nodes)', async () => {
    const redlock = manager();
    const held = await redlock.acquire('r');
    await shared.fleet.nodes[1].kill();
    await shared.fleet.nodes[2].kill();
    shared.afterTest(async () => {
      await shared.fleet.nodes[1].restart();
      await shared.fleet.nodes[2].restart();
    });
    await expect(held.release()).resolves.toBeUndefined();
    await expect(held.release()).resolves.toBeUndefined();
    // Once the client saw the connections close, a call with a 10 s wait gives up at once.
    const seen = await eventually(
      async () => (await redlock.health()).nodes.filter((n) => !n.up).length === 2,
    );
    expect(seen).toBe(true);
    const { ms, result } = await timed(() =>
      redlock.acquire('q', { wait: 10_000 }).catch((e: unknown) => e),
    );
    expect(result).toBeInstanceOf(LockNotAcquiredError);
    expect(result).toMatchObject({ reason: 'unavailable' });
    expect(ms).toBeLessThan(1_000);
  });
});
