import { simulateReentrantWork, type ReentrantWorkResult } from '../sim/reentrant-work';

/**
 * Issue 16 defect 6 in the deterministic simulation: reentrant nested work that outlives its
 * outer holder (test/sim/reentrant-work.ts says what runs and what is checked). A failing seed
 * prints the command that replays it with a trace:
 *
 *   SIM_REENTRANT_SEED=12 npx jest test/unit/simulation-reentrancy.spec.ts
 *
 * SIM_REENTRANT_SEEDS (default 50) chooses how many seeds run.
 */
const replay =
  process.env.SIM_REENTRANT_SEED === undefined ? undefined : Number(process.env.SIM_REENTRANT_SEED);
const seedCount = Number(process.env.SIM_REENTRANT_SEEDS ?? 50);

function describeFailure(result: ReentrantWorkResult): string {
  return [
    `seed ${result.seed} failed (${result.params}):`,
    ...result.violations.slice(0, 5).map((v) => `  t=${v.at.toFixed(3)} ${v.kind}: ${v.detail}`),
    `replay: SIM_REENTRANT_SEED=${result.seed} npx jest test/unit/simulation-reentrancy.spec.ts`,
  ].join('\n');
}

describe('simulation: reentrant nested work that outlives its outer holder (issue 16 defect 6)', () => {
  if (replay !== undefined) {
    it(`replays seed ${replay}`, async () => {
      const result = await simulateReentrantWork(replay, { trace: true });
      process.stdout.write(`${result.trace.join('\n')}\n`);
      expect(result.violations).toEqual([]);
    });
    return;
  }

  it(`${seedCount} seeds: at most one untold holder, and a using() that resolved never overlapped another holder`, async () => {
    const results: ReentrantWorkResult[] = [];
    for (let seed = 1; seed <= seedCount; seed++) {
      const result = await simulateReentrantWork(seed);
      results.push(result);
      if (result.violations.length > 0) break;
    }
    const failing = results.filter((r) => r.violations.length > 0);
    if (failing.length > 0) throw new Error(failing.map(describeFailure).join('\n\n'));
    // The runs really exercised what they are about: nested work outliving its outer holder.
    const outlived = results.reduce((sum, r) => sum + r.outlived, 0);
    const routines = results.reduce((sum, r) => sum + r.routines, 0);
    expect(outlived).toBeGreaterThan(0);
    expect(routines).toBeGreaterThan(seedCount * 5);
  }, 120_000);
});
