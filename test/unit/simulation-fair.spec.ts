import { simulate, type SimResult } from '../sim/simulation';

/**
 * Issue 18: fair hand-off keeps the quorum lock's safety. The simulation's `fair` focus
 * (test/sim/simulation.ts): most lock managers wait in the nodes' queues (`fairness: 'queue'`,
 * several clients per manager, so releases hand the lock over inside a process), beside managers
 * with fairness off on the same keys, with every node fault of the safe mode plus the queue
 * nemesis (queues dropped, dead groups at their head, keys reserved for a dead group) and release
 * messages dropped, duplicated, delayed and reordered. The checker: never two valid holders,
 * nothing hangs. (The unfocused run of simulation.spec.ts also turns fairness on in some seeds.)
 *
 *   SIM_FOCUS=fair SIM_SEED=123 npx jest test/unit/simulation.spec.ts   # replays a seed
 *   SIM_FAIR_SEEDS=5000 npx jest test/unit/simulation-fair.spec.ts      # more seeds
 */
const seedCount = Number(process.env.SIM_FAIR_SEEDS ?? 400);
const seedBase = Number(process.env.SIM_SEED_BASE ?? 1);
/** How many fair seeds a mutant may need before it is found. */
const MUTANT_SEEDS = 400;

describe('simulation with fair hand-off (issue 18)', () => {
  // The revert experiment: each hand-made safety mutant of the fair scripts (sim-node.ts
  // queueMutant) is found within a few hundred fair seeds (first found at seeds 9, 1 and 70
  // when written). Taking a reservation named for another group is only unfair, not unsafe: not
  // a mutant here.
  it.each([
    ['handOffWithoutCompare', 33],
    ['takeHeldAtHead', 1],
    ['swapKeepsLease', 292],
  ] as const)(
    'finds the mutant %s (first at seed %d)',
    async (queueMutant, firstSeed) => {
      // Searched up to a bound, not to the exact seed: any change to the simulation or the
      // attempt loop shifts which seed finds a mutant (the first seeds move, the finding stays).
      let found: number | undefined;
      for (let seed = 1; seed <= MUTANT_SEEDS && found === undefined; seed++) {
        const result = await simulate(seed, 'safe', { focus: 'fair', queueMutant });
        if (result.violations.some((v) => v.kind === 'overlap')) found = seed;
      }
      expect(found).toBeDefined();
      if (found !== firstSeed) console.log(`mutant ${queueMutant}: first found at seed ${found}`);
    },
    120_000,
  );

  it(`${seedCount} seeds, fair focus: never two valid holders, nothing hangs`, async () => {
    const failing: SimResult[] = [];
    let cycles = 0;
    const faults: Record<string, number> = {};
    for (let seed = seedBase; seed < seedBase + seedCount && failing.length < 3; seed++) {
      const result = await simulate(seed, 'safe', { focus: 'fair' });
      cycles += result.cycles;
      for (const [kind, n] of Object.entries(result.faults)) faults[kind] = (faults[kind] ?? 0) + n;
      if (result.violations.length > 0) failing.push(result);
    }
    const described = failing.map((r) =>
      [
        `seed ${r.seed} failed (${r.params}):`,
        ...r.violations.slice(0, 5).map((v) => `  t=${v.at.toFixed(3)} ${v.kind}: ${v.detail}`),
        `replay: SIM_FOCUS=fair SIM_SEED=${r.seed} npx jest test/unit/simulation.spec.ts`,
      ].join('\n'),
    );
    expect(described).toEqual([]);
    // The fair path and its nemesis really ran.
    for (const kind of [
      'dropQueue',
      'deadHead',
      'deadReservation',
      'dropMessage',
      'duplicateMessage',
      'delayMessage',
    ]) {
      expect({ kind, injected: (faults[kind] ?? 0) > 0 }).toEqual({ kind, injected: true });
    }
    expect(cycles).toBeGreaterThan(seedCount * 5);
    if (process.env.SIM_REPORT) {
      process.stdout.write(
        `fair simulation: ${seedCount} seeds, ${cycles} lock cycles, faults ${JSON.stringify(faults)}\n`,
      );
    }
  }, 300_000);
});
