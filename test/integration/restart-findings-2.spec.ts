import { startFleet, type RedisFleet } from '../support/fleet';
import { delay } from './helpers';
import { managers, nodeName, occupy, secondHolders, vacate } from './restart-findings';

/**
 * Issue 23, finding 2: an uninformed admission's stamp is trusted by everyone. A node restarts
 * while both its peers are paused (nothing is lost on them); a lock manager with a short lease,
 * which never touches resource r, looks at the node while it cannot ask the peers, and admits it
 * after its own short lease. No lock manager may act on a claim written with less knowledge than
 * its decision needs (architecture.md §5.7): a new instance must not take r while r's lease is valid.
 */
describe('finding 2: an admission decided without the peers (3 real nodes, no persistence)', () => {
  let fleet: RedisFleet;
  const created = managers();
  beforeAll(async () => {
    fleet = await startFleet(3);
  });
  afterAll(async () => {
    await fleet?.stop();
  });
  /** Every client of r uses the same lease (the docs' remedy), and the fleet's bound says so. */
  const R_OPTIONS = { ttl: 10_000, maxTtl: 10_000 };

  it('a manager with ttl 1000 looks at c while a and b are paused; a new instance then must not take r while its lease is valid', async () => {
    const [a, b, c] = fleet.nodes;
    const urls = fleet.urls();
    const first = created.create(urls, R_OPTIONS).redlock;
    await first.ready();
    // r's lease lands on exactly {a, c}.
    await occupy(b, 'r');
    const held = await first.acquire('r', { wait: 3_000 });
    await vacate(b, 'r');
    // a and b pause (nothing is lost on them) while c restarts empty.
    await Promise.all([a.pause(), b.pause()]);
    const pausedAt = performance.now();
    try {
      await c.restart();
      // Another service's lock manager, with a 1 s lease (the fleet's bound is still 10 s),
      // starts now: it never touches r, but looks at c, whose peers do not answer.
      const short = created.create(urls, { ttl: 1_000, maxTtl: R_OPTIONS.maxTtl }).redlock;
      const rejoined = new Promise<void>((resolve) =>
        short.on('nodeRejoined', (event) => {
          if (event.node === nodeName(c)) resolve();
        }),
      );
      await Promise.race([rejoined, delay(3_500)]);
      // The peers were paused about 3 s.
      await delay(Math.max(0, 3_000 - (performance.now() - pausedAt)));
    } finally {
      await Promise.all([a.resume(), b.resume()]);
    }
    // A new instance of the service of r starts, and asks for r while the 10 s lease is valid.
    const next = created.create(urls, R_OPTIONS).redlock;
    await next.ready();
    const overlaps = await secondHolders(held, () => next.tryAcquire('r'), { forMs: 3_000 });
    console.log(
      `finding 2: r's lease had ${Math.round(held.remainingMs())} ms left after the new instance's attempts`,
    );
    expect(overlaps).toEqual([]);
    expect(held.remainingMs()).toBeGreaterThan(0);
  });
});
