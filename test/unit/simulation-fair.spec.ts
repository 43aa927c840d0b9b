import { simulate, type SimResult, type SimWait } from '../sim/simulation';

/** Per kind of waiter: waits, how many were overtaken, gave up, and the longest wait. */
interface WaitReport {
  waits: number;
  overtaken: number;
  gaveUp: number;
  maxWaitMs: number;
}

/**
 * Issue 24 item 4: how waiters of a mixed fleet fare. A wait is overtaken when a wait on a shared
 * resource that started after it was granted before it was granted (or gave up); it starved when
 * it gave up as held.
 */
function reportWaits(waits: readonly SimWait[], into: Record<SimWait['kind'], WaitReport>): void {
  for (const w of waits) {
    const r = into[w.kind];
    r.waits++;
    if (w.gaveUp) r.gaveUp++;
    if (w.grantedAt !== undefined) r.maxWaitMs = Math.max(r.maxWaitMs, w.grantedAt - w.startedAt);
    const until = w.grantedAt ?? Infinity;
    const overtaken = waits.some(
      (o) =>
        o !== w &&
        o.startedAt > w.startedAt &&
        o.grantedAt !== undefined &&
        o.grantedAt < until &&
        (w.grantedAt !== undefined || w.gaveUp) &&
        o.resources.some((res) => w.resources.includes(res)),
    );
    if (overtaken) r.overtaken++;
  }
}

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
const MUTANT_SEEDS = 800;

describe('simulation with fair hand-off (issue 18)', () => {
  // The revert experiment: each hand-made safety mutant of the fair scripts (sim-node.ts
  // queueMutant) is found within a few hundred fair seeds (first found at seeds 9, 1 and 70
  // when written). Taking a reservation named for another group is only unfair, not unsafe: not
  // a mutant here.
  it.each([
    ['handOffWithoutCompare', 1],
    ['takeHeldAtHead', 1],
    ['swapKeepsLease', 395],
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
    const empty = (): WaitReport => ({ waits: 0, overtaken: 0, gaveUp: 0, maxWaitMs: 0 });
    const byKind = { queued: empty(), plain: empty() };
    for (let seed = seedBase; seed < seedBase + seedCount && failing.length < 3; seed++) {
      const result = await simulate(seed, 'safe', { focus: 'fair' });
      cycles += result.cycles;
      reportWaits(result.waits, byKind);
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
    // Waiters outside the queues (fenced, several resources, fairness off) take turns too.
    expect(byKind.plain.waits).toBeGreaterThan(seedCount);
    expect(byKind.plain.waits - byKind.plain.gaveUp).toBeGreaterThan(byKind.plain.waits / 2);
    // …and starve no more than queued ones (in this nemesis many waits of both give up: faults,
    // waits of half a ttl; 400 seeds when written: queued 40.0 %, plain 39.7 %).
    const rate = (r: WaitReport) => r.gaveUp / Math.max(1, r.waits);
    expect(rate(byKind.plain)).toBeLessThan(1.25 * rate(byKind.queued) + 0.05);
    if (process.env.SIM_REPORT) {
      process.stdout.write(
        `fair simulation: ${seedCount} seeds, ${cycles} lock cycles, faults ${JSON.stringify(faults)}\n`,
      );
      for (const [kind, r] of Object.entries(byKind)) {
        process.stdout.write(
          `  ${kind} waits: ${r.waits}, overtaken ${((100 * r.overtaken) / Math.max(1, r.waits)).toFixed(1)} %, ` +
            `gave up (starved) ${((100 * r.gaveUp) / Math.max(1, r.waits)).toFixed(1)} %, max wait ${r.maxWaitMs.toFixed(0)} ms (virtual)\n`,
        );
      }
    }
  }, 300_000);
});
