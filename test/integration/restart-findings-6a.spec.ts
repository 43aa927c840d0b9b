import { startFleet, type RedisFleet } from '../support/fleet';
import { delay } from './helpers';
import { attempt, managers, spread } from './restart-findings';

/**
 * Issue 23, finding 6 (a): a healthy fleet shut itself out. Lock managers started together on a
 * flushed fleet quarantined every node for two ttls (20 s with the defaults), and with 16
 * managers every first lock was refused. Nothing restarted and no lease could have been lost: a
 * wait that protects no lease is a liveness bug (architecture.md §5.7).
 *
 * What sets it off on 0cce7fe is a standing read that does not answer within its second while
 * the managers start (a busy machine — the runs — or a node that stalls): the managers
 * then record lease horizons before any of them stamped the nodes, and every later look reads
 * those horizons. On an idle machine 16 managers in one process read fast enough, so the first
 * test passes there; the second stalls one node (SIGSTOP) for 1.5 s while they start, which on
 * 0cce7fe refuses every first lock of the round.
 *
 * The acceptance figure is 20 of 20 rounds with every first lock ≤ 200 ms; this file runs 5
 * rounds with a bound of 5 s: a fresh-clone CI run with both cores busy took 2.1 s, while the
 * quarantine this finding was about lasted 20 s (and refusals and quarantine events are asserted
 * on their own). `node scripts/measure-start.mjs` runs the first test with the acceptance figures,
 * through REDLOCK_START_ROUNDS and REDLOCK_START_BOUND_MS, after one uncounted warm-up round of
 * the process (REDLOCK_START_WARM_UP); it prints that round's figures too.
 */
const ROUNDS = Number(process.env.REDLOCK_START_ROUNDS ?? 5);
const BOUND_MS = Number(process.env.REDLOCK_START_BOUND_MS ?? 5_000);
const MANAGERS = 16;
/** One uncounted round first (scripts/measure-start.mjs sets it): see the test. */
const WARM_UP = process.env.REDLOCK_START_WARM_UP === '1';

describe('finding 6a: 16 lock managers created together on a flushed 5-node fleet', () => {
  const created = managers();
  const fleets: RedisFleet[] = [];
  afterAll(async () => {
    await Promise.all(fleets.map((fleet) => fleet.stop()));
  });

  /**
   * One round: MANAGERS lock managers created in the same tick, default options (ttl 10 s), each
   * acquiring its own job once. Returns what went wrong, and logs the figures.
   */
  const round = async (
    fleet: RedisFleet,
    label: string,
    bound: number,
    firsts: number[],
  ): Promise<string[]> => {
    const outcomes = await Promise.all(
      Array.from({ length: MANAGERS }, async (_, i) => {
        const start = performance.now();
        const { redlock, logger } = created.create(fleet.urls(), {});
        let quarantined = 0;
        redlock.on('nodeQuarantined', () => quarantined++);
        const outcome = await attempt(() => redlock.acquire(`job-${i}`, { wait: bound + 3_000 }));
        const ms = performance.now() - start;
        if (typeof outcome !== 'string') await outcome.release();
        await redlock.close();
        const warned = logger.lines.filter((line) => line.startsWith('warn ')).length;
        return {
          ms,
          outcome: typeof outcome === 'string' ? outcome : 'acquired',
          warned,
          quarantined,
        };
      }),
    );
    const times = outcomes.filter((o) => o.outcome === 'acquired').map((o) => o.ms);
    firsts.push(...times);
    const refused = outcomes.filter((o) => o.outcome !== 'acquired');
    const slow = times.filter((ms) => ms > bound);
    const warnings = outcomes.reduce((sum, o) => sum + o.warned, 0);
    const quarantines = outcomes.reduce((sum, o) => sum + o.quarantined, 0);
    const { median, max } = spread(times);
    console.log(
      `finding 6a ${label}: ${times.length}/${MANAGERS} first locks, median ${Math.round(median)} ms, max ${Math.round(max)} ms; ${refused.length} refused; ${quarantines} nodeQuarantined events; ${warnings} warnings`,
    );
    // Nothing restarted: no node is quarantined, no lock refused, none waits for a quarantine.
    return refused.length > 0 || slow.length > 0 || quarantines > 0
      ? [
          `${label}: ${refused.length} of ${MANAGERS} refused (${[...new Set(refused.map((o) => o.outcome))].join(', ')}), ${slow.length} first locks over ${bound} ms (max ${Math.round(max)} ms), ${quarantines} nodeQuarantined events`,
        ]
      : [];
  };

  it(
    `every first lock within ${BOUND_MS} ms, none unavailable, no node quarantined, in ${ROUNDS} of ${ROUNDS} rounds`,
    async () => {
      const fleet = await startFleet(5);
      fleets.push(fleet);
      const failures: string[] = [];
      const firsts: number[] = [];
      if (WARM_UP) {
        // Uncounted: the process's first round also pays for compiling this library and ioredis
        // (V8) and for their first 80 connections — 120–170 ms for ioredis alone, measured
        // without this library — which says nothing about how a fleet starts.
        await fleet.flushAll();
        await round(fleet, 'warm-up round (not counted)', BOUND_MS + 3_000, []);
      }
      for (let i = 1; i <= ROUNDS; i++) {
        await fleet.flushAll();
        failures.push(...(await round(fleet, `round ${i}`, BOUND_MS, firsts)));
      }
      const { median, max } = spread(firsts);
      console.log(
        `finding 6a: ${firsts.length}/${ROUNDS * MANAGERS} first locks over ${ROUNDS} rounds, median ${Math.round(median)} ms, max ${Math.round(max)} ms (bound ${BOUND_MS} ms)`,
      );
      expect(failures).toEqual([]);
    },
    ROUNDS * (BOUND_MS + 8_000) + 30_000,
  );

  it('the same with one node stalled for 1.5 s while they start: none quarantined, none refused', async () => {
    const STALL_MS = 1_500;
    const failures: string[] = [];
    const firsts: number[] = [];
    for (let i = 1; i <= 3; i++) {
      // A fleet just started, flushed: nothing restarted, nothing can have been lost.
      const fleet = await startFleet(5);
      fleets.push(fleet);
      await fleet.flushAll();
      const stalled = fleet.nodes[4];
      await stalled.pause();
      const stall = delay(STALL_MS).then(() => stalled.resume());
      try {
        // The four others are a quorum throughout; the stalled one answers after STALL_MS.
        failures.push(...(await round(fleet, `stalled round ${i}`, STALL_MS + 5_000, firsts)));
      } finally {
        await stall;
      }
      await fleet.stop();
    }
    expect(failures).toEqual([]);
  }, 90_000);
});
