import { startFleet, type RedisFleet } from '../support/fleet';
import { delay } from './helpers';
import { attempt, managers, type Managed } from './restart-findings';

/**
 * Issue 23, finding 6 (b, c): a healthy fleet shut itself out.
 * (b) After every node restarted empty, with the lock managers alive and no lock held, 3 of 5
 *     rounds quarantined every node for two ttls: no lease needed protecting.
 * (c) A harness that runs FLUSHALL between runs (as many test suites do) and starts two fresh
 *     lock managers: 20 s quarantines logged as "may have lost keys of locks still held
 *     (restarted without its data)", though no node restarted.
 * A fully restarted fleet, a flushed fleet, and managers starting together are usable at once
 * (architecture.md §5.7).
 */
describe('finding 6b-c: a fleet restarted or flushed as a whole (3 real nodes, no persistence)', () => {
  let fleet: RedisFleet;
  const fleets: RedisFleet[] = [];
  const created = managers();
  beforeAll(async () => {
    fleet = await startFleet(3);
    fleets.push(fleet);
  });
  afterAll(async () => {
    await Promise.all(fleets.map((f) => f.stop()));
  });
  const OPTIONS = { ttl: 5_000, maxTtl: 5_000 };

  /** Locks and releases r once on each lock manager: they have recorded what they record. */
  const work = async (all: readonly Managed[], round: number) => {
    for (const { redlock } of all) {
      const lock = await redlock.acquire(`work-${round}`, { wait: 5_000 });
      await lock.release();
    }
  };

  it('(b) every node restarted empty, managers alive, no lock held: a lock within 1 s of the nodes answering', async () => {
    const failures: string[] = [];
    for (let round = 1; round <= 3; round++) {
      // A fleet of its own per round: what one round leaves on the nodes cannot reach the next.
      const own = await startFleet(3);
      fleets.push(own);
      const all = [created.create(own.urls(), OPTIONS), created.create(own.urls(), OPTIONS)];
      const quarantined: string[] = [];
      all.forEach(({ redlock }, i) =>
        redlock.on('nodeQuarantined', (event) =>
          quarantined.push(`manager ${i}: ${event.node} for ${Math.round(event.remainingMs)} ms`),
        ),
      );
      await work(all, round);
      // No lock is held. Every node restarts empty, all at once.
      await Promise.all(own.nodes.map((node) => node.kill()));
      const ups = all.map(({ redlock }) => {
        const seen = new Set<string>();
        return new Promise<number>((resolve) =>
          redlock.on('nodeUp', (event) => {
            seen.add(event.node);
            if (seen.size === own.nodes.length) resolve(performance.now());
          }),
        );
      });
      await Promise.all(own.nodes.map((node) => node.restart()));
      const outcomes = await Promise.all(
        all.map(async ({ redlock }, i) => {
          // From when this lock manager has every node answering again (reconnected).
          const answering = await Promise.race([ups[i], delay(5_000).then(() => NaN)]);
          const outcome = await attempt(() =>
            redlock.acquire(`after-${round}-${i}`, { wait: 4_000, retryDelay: 50 }),
          );
          const ms = performance.now() - answering;
          if (typeof outcome !== 'string') await outcome.release();
          return { ms, outcome: typeof outcome === 'string' ? outcome : 'acquired' };
        }),
      );
      const figures = outcomes.map((o) => `${o.outcome} after ${Math.round(o.ms)} ms`);
      console.log(
        `finding 6b round ${round}: ${figures.join('; ')}${quarantined.length > 0 ? `; quarantined: ${quarantined.join(', ')}` : ''}`,
      );
      if (outcomes.some((o) => o.outcome !== 'acquired' || !(o.ms <= 1_000))) {
        failures.push(`round ${round}: ${figures.join('; ')}`);
      }
      await Promise.all(all.map(({ redlock }) => redlock.close()));
      await own.stop();
    }
    expect(failures).toEqual([]);
  }, 60_000);

  /**
   * Two fresh lock managers start together right after a FLUSHALL, each asks for a lock; with
   * `alive`, a lock manager of the previous run is still working. Returns what went wrong.
   */
  const afterFlush = async (run: number, alive?: Managed): Promise<string[]> => {
    await fleet.flushAll();
    // The previous run's lock manager, if any, goes on working after the flush.
    if (alive !== undefined) await work([alive], 100 + run);
    const start = performance.now();
    const outcomes = await Promise.all(
      [0, 1].map(async (i) => {
        const { redlock, logger } = created.create(fleet.urls(), OPTIONS);
        let quarantined = 0;
        redlock.on('nodeQuarantined', () => quarantined++);
        const outcome = await attempt(() =>
          redlock.acquire(`run-${run}-${i}`, { wait: 4_000, retryDelay: 50 }),
        );
        const ms = performance.now() - start;
        if (typeof outcome !== 'string') await outcome.release();
        const warnings = logger.lines.filter((line) => line.startsWith('warn '));
        return {
          ms,
          outcome: typeof outcome === 'string' ? outcome : 'acquired',
          quarantined,
          warnings,
        };
      }),
    );
    const figures = outcomes.map(
      (o) => `${o.outcome} after ${Math.round(o.ms)} ms, ${o.quarantined} nodes quarantined`,
    );
    console.log(`finding 6c run ${run}: ${figures.join('; ')}`);
    return outcomes
      .filter((o) => o.outcome !== 'acquired' || o.ms > 1_000 || o.quarantined > 0)
      .map(
        (o) =>
          `run ${run}: ${o.outcome} after ${Math.round(o.ms)} ms, ${o.quarantined} nodes quarantined${o.warnings.length > 0 ? `: ${o.warnings[0]}` : ''}`,
      );
  };

  it('(c) FLUSHALL between runs, then two fresh lock managers: no quarantine, a lock at once', async () => {
    const failures: string[] = [];
    for (let run = 1; run <= 3; run++) {
      // A run of the harness: two lock managers working, then closed.
      const before = [created.create(fleet.urls(), OPTIONS), created.create(fleet.urls(), OPTIONS)];
      await work(before, run);
      await Promise.all(before.map(({ redlock }) => redlock.close()));
      failures.push(...(await afterFlush(run)));
    }
    expect(failures).toEqual([]);
  }, 60_000);

  it('(c) FLUSHALL while a lock manager of the previous run still works, then two fresh ones: no quarantine, a lock at once', async () => {
    const failures: string[] = [];
    const alive = created.create(fleet.urls(), OPTIONS);
    for (let run = 1; run <= 3; run++) {
      await work([alive], run);
      // Most of a lease later the harness flushes the fleet, and starts the next run.
      await delay(OPTIONS.ttl * 0.8);
      failures.push(...(await afterFlush(run, alive)));
    }
    expect(failures).toEqual([]);
  }, 60_000);
});
