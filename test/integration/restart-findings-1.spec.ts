import { startFleet, type FleetNode, type RedisFleet } from '../support/fleet';
import { managers, occupy, secondHolders, spread, vacate } from './restart-findings';

/**
 * Issue 23, finding 1: two services share a Redis node. Fleet X = [a, b, c] and fleet Y =
 * [c, d, e], both with the default keyPrefix, so c carries what each fleet's lock managers write
 * about it. A fleet must be unaffected by another fleet that shares a node (architecture.md §5.7).
 */
describe('finding 1: two fleets share a node (5 real nodes, no persistence)', () => {
  let fleet: RedisFleet;
  const created = managers();
  beforeAll(async () => {
    fleet = await startFleet(5);
  });
  afterEach(async () => {
    for (const node of fleet.nodes) if (!node.running()) await node.restart();
    await fleet.flushAll();
  });
  afterAll(async () => {
    await fleet?.stop();
  });
  const urls = (nodes: readonly FleetNode[]) => nodes.map((node) => node.url);
  const fleets = () => {
    const [a, b, c, d, e] = fleet.nodes;
    return { a, b, c, d, e, X: urls([a, b, c]), Y: urls([c, d, e]) };
  };
  /** X's lock managers: every client of X uses the same lease, and says so. */
  const X_OPTIONS = { ttl: 8_000, maxTtl: 8_000 };
  /** Y's: another service, with its own (shorter) lease. */
  const Y_OPTIONS = { ttl: 2_000, maxTtl: 2_000 };

  it("the shared node restarts: Y's admission of it does not let a second X manager take X's lock", async () => {
    const { b, c, X, Y } = fleets();
    const x1 = created.create(X, X_OPTIONS).redlock;
    await x1.ready();
    // X's lock on r lands on exactly {a, c}: b holds another owner's key while it is taken.
    await occupy(b, 'r');
    const held = await x1.acquire('r', { wait: 3_000 });
    await vacate(b, 'r');
    // c restarts empty: it lost X's key; a still has it, b never had it.
    await c.restart();
    // Y works on its own resources, on its own fleet (c, d, e are all up).
    const y = created.create(Y, Y_OPTIONS).redlock;
    await y.ready();
    const yStart = performance.now();
    const yLock = await y.acquire('y-job', { wait: 5_000 });
    const yMs = performance.now() - yStart;
    await yLock.release();
    // A second X lock manager (a new instance of the service) asks for r while X's lock holds.
    const x2 = created.create(X, X_OPTIONS).redlock;
    await x2.ready();
    const overlaps = await secondHolders(held, () => x2.tryAcquire('r'), { forMs: 4_000 });
    console.log(
      `finding 1: Y's first lock took ${Math.round(yMs)} ms; X's lock had ${Math.round(held.remainingMs())} ms left after the second manager's attempts`,
    );
    expect(overlaps).toEqual([]);
    expect(held.remainingMs()).toBeGreaterThan(0);
  });

  it("Y answers on its healthy fleet: X's leases on the shared node do not quarantine Y's nodes", async () => {
    const { c, X, Y } = fleets();
    // X has been working for a while: its lease horizon is on the shared node c.
    const x = created.create(X, X_OPTIONS).redlock;
    await x.ready();
    const xLock = await x.acquire('x-job', { wait: 3_000 });
    expect(await c.command('DBSIZE')).toBeGreaterThan(0);
    // Y's lock managers start on Y's nodes: c (shared) and d, e (never used). Nothing restarted.
    const starts: number[] = [];
    const refused: string[] = [];
    const warnings: string[] = [];
    await Promise.all(
      [0, 1].map(async (i) => {
        const { redlock: y, logger } = created.create(Y, Y_OPTIONS);
        const start = performance.now();
        try {
          const lock = await y.acquire(`y-job-${i}`, { wait: 5_000 });
          starts.push(performance.now() - start);
          await lock.release();
        } catch (error) {
          refused.push(`Y manager ${i}: ${(error as Error).message}`);
        }
        // Nothing restarted and every node is fresh or intact: nothing to warn about.
        warnings.push(...logger.lines.filter((line) => line.startsWith('warn ')));
      }),
    );
    await xLock.release();
    console.log(`finding 1: Y's first locks (ms): ${JSON.stringify(spread(starts))}`);
    expect(refused).toEqual([]);
    expect(warnings).toEqual([]);
    expect(Math.max(...starts)).toBeLessThanOrEqual(2_000);
  });
  it("a fleet started fresh beside a working fleet on a shared node: X's horizons do not keep Y's young nodes out", async () => {
    // Found by the exhaustive restart search (docs/restart-search.md, `other-fleet-wait`): with
    // one horizon hash per key prefix, X's horizons on c, filed under a's and b's run_ids (no
    // node of Y's), read to Y as horizons of a restart: Y's young nodes d and e waited for X's
    // lease, up to Y's maxTtl, on a fleet where nothing restarted and nothing of Y's was held.
    const { a, b, c, d, e, X, Y } = fleets();
    // Every node just started empty: all young, none settled for either fleet.
    for (const node of [a, b, c, d, e]) await node.restart();
    const same = { ttl: 8_000, maxTtl: 8_000 };
    const x = created.create(X, same).redlock;
    const xLock = await x.acquire('x-job', { wait: 3_000 });
    const { redlock: y, logger } = created.create(Y, same);
    const start = performance.now();
    const outcome = await y.acquire('y-job', { wait: 3_000 }).then(
      async (lock) => {
        await lock.release();
        return 'acquired';
      },
      (error: unknown) => `refused: ${(error as Error).message}`,
    );
    const ms = performance.now() - start;
    await xLock.release();
    console.log(
      `finding 1 (search): Y's first lock beside X's on a fresh fleet: ${outcome} after ${Math.round(ms)} ms`,
    );
    expect(outcome).toBe('acquired');
    expect(logger.lines.filter((line) => line.startsWith('warn '))).toEqual([]);
    // Generous for a busy machine; the defect waited X's whole lease (8 s) or failed at once.
    expect(ms).toBeLessThanOrEqual(2_000);
  });
});
