import { startFleet, type RedisFleet } from '../support/fleet';
import { managers, occupy, secondHolders, vacate } from './restart-findings';

/**
 * Issue 23, finding 3: "durable" was read from the configuration, not from the data. Every node
 * runs `appendonly yes` + `appendfsync always`; c restarts without its files (a container
 * without its volume, a rescheduled pod): same configuration, no data. Durability is proven by
 * the node's data surviving the restart, never by its configuration (architecture.md §5.7).
 */
describe('finding 3: a durable configuration over lost data (3 real nodes, appendfsync always)', () => {
  let fleet: RedisFleet;
  const created = managers();
  beforeAll(async () => {
    fleet = await startFleet(3, { aof: true });
  });
  afterEach(async () => {
    for (const node of fleet.nodes) if (!node.running()) await node.restart();
    await fleet.flushAll();
  });
  afterAll(async () => {
    await fleet?.stop();
  });
  const OPTIONS = { ttl: 8_000, maxTtl: 8_000 };
  const startedAt = performance.now();
  /** Waits until every node has been up at least `ms` (the fleet starts in beforeAll). */
  const olderThan = async (ms: number) => {
    const left = startedAt + ms - performance.now();
    if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
  };

  /** r's lease on exactly {a, c}: b holds another owner's key while it is taken. */
  const leaseOnAC = async () => {
    const [, b] = fleet.nodes;
    const first = created.create(fleet.urls(), OPTIONS).redlock;
    await first.ready();
    await occupy(b, 'r');
    const held = await first.acquire('r', { wait: 3_000 });
    await vacate(b, 'r');
    return held;
  };

  it('c restarted without its files does not vote while the lease it lost is valid', async () => {
    const [, , c] = fleet.nodes;
    const held = await leaseOnAC();
    await c.restart({ withoutData: true });
    // Same configuration, nothing kept: the lease's key on c is gone.
    expect(await c.command('CONFIG', 'GET', 'appendfsync')).toEqual(['appendfsync', 'always']);
    expect(await c.command('EXISTS', 'redlock:r')).toBe(0);
    const next = created.create(fleet.urls(), OPTIONS).redlock;
    await next.ready();
    const overlaps = await secondHolders(held, () => next.tryAcquire('r'), { forMs: 3_000 });
    console.log(
      `finding 3: r's lease had ${Math.round(held.remainingMs())} ms left after the new instance's attempts`,
    );
    expect(overlaps).toEqual([]);
    expect(held.remainingMs()).toBeGreaterThan(0);
  });

  // A guard for the new rule, not a reproduction (it passes on 0cce7fe too): the fix must not
  // quarantine a node whose data did survive.
  it('c restarted with its files votes at once (its data survived)', async () => {
    const [, b, c] = fleet.nodes;
    // A lock manager that never saw this fleet cannot tell a node younger than maxTtl that never
    // restarted (a) from one that restarted empty a moment ago; with b down it would wait for a
    // to settle. The fleet is made older than maxTtl first, so that only c is in question.
    await olderThan(OPTIONS.maxTtl * 1.01 + 2_000);
    const held = await leaseOnAC();
    await c.restart();
    expect(await c.command('EXISTS', 'redlock:r')).toBe(1);
    // b down: a lock now needs c's vote.
    await b.kill();
    const next = created.create(fleet.urls(), OPTIONS).redlock;
    const start = performance.now();
    const other = await next.acquire('s', { wait: 3_000 });
    const ms = performance.now() - start;
    await other.release();
    console.log(`finding 3: with c's data kept, a lock on {a, c} took ${Math.round(ms)} ms`);
    expect(ms).toBeLessThanOrEqual(2_000);
    // And r is still held on a and c.
    expect(await next.tryAcquire('r')).toBeNull();
    expect(held.remainingMs()).toBeGreaterThan(0);
  });
});
