import { simulateAttemptRate, type RateResult } from '../sim/attempt-rate';

/**
 * Issue 24 item 0 in the deterministic simulation: a waiting acquisition's attempts stay within a
 * bound set by its retry delay and by what other owners did to its key meanwhile
 * (test/sim/attempt-rate.ts derives it), whatever the replies — nodes down, keys without a TTL,
 * late replies — and however it waits (notifications, polling, fair queue). A failing seed
 * prints the command that replays it with a trace:
 *
 *   SIM_RATE_SEED=12 npx jest test/unit/simulation-attempt-rate.spec.ts
 *
 * SIM_RATE_SEEDS (default 300) chooses how many seeds run.
 */
const replay =
  process.env.SIM_RATE_SEED === undefined ? undefined : Number(process.env.SIM_RATE_SEED);
const seedCount = Number(process.env.SIM_RATE_SEEDS ?? 300);

function describeFailure(result: RateResult): string {
  return [
    `seed ${result.seed} failed (${result.params}):`,
    ...result.violations.slice(0, 5).map((v) => `  ${v}`),
    `replay: SIM_RATE_SEED=${result.seed} npx jest test/unit/simulation-attempt-rate.spec.ts`,
  ].join('\n');
}

describe('simulation: attempts per waiter stay within their bound (issue 24)', () => {
  if (replay !== undefined) {
    it(`replays seed ${replay}`, async () => {
      const result = await simulateAttemptRate(replay, { trace: true });
      process.stdout.write(`${result.trace.join('\n')}\n`);
      expect(result.violations).toEqual([]);
    });
    return;
  }

  it(`${seedCount} seeds: no waiter attempts more than its retry delay and other owners' doings allow`, async () => {
    const results: RateResult[] = [];
    for (let seed = 1; seed <= seedCount; seed++) {
      const result = await simulateAttemptRate(seed);
      results.push(result);
      if (results.filter((r) => r.violations.length > 0).length === 3) break;
    }
    const failing = results.filter((r) => r.violations.length > 0);
    if (failing.length > 0) throw new Error(failing.map(describeFailure).join('\n\n'));
    const calls = results.flatMap((r) => r.calls);
    // The shapes really ran: every way of waiting, waits that ended without the lock after
    // several attempts (the storm's shape), and locks granted.
    for (const strategy of ['notify', 'poll', 'fair'] as const) {
      const mine = calls.filter((c) => c.strategy === strategy);
      expect({ strategy, gaveUp: mine.some((c) => !c.acquired && c.attempts > 3) }).toEqual({
        strategy,
        gaveUp: true,
      });
      expect({ strategy, got: mine.some((c) => c.acquired) }).toEqual({ strategy, got: true });
    }
    if (process.env.SIM_REPORT) {
      const worst = calls.reduce((w, c) => Math.max(w, c.attempts / c.bound), 0);
      process.stdout.write(
        `attempt rate: ${results.length} seeds, ${calls.length} calls, ` +
          `${calls.reduce((n, c) => n + c.attempts, 0)} attempts, worst attempts/bound ${worst.toFixed(2)}\n`,
      );
    }
  }, 300_000);

  // A run is a function of its seed (issue 23 item 7): a failing seed replays exactly.
  it('a seed replays the same run', async () => {
    const first = await simulateAttemptRate(4, { trace: true });
    await simulateAttemptRate(5);
    const second = await simulateAttemptRate(4, { trace: true });
    expect(second.trace).toEqual(first.trace);
    expect(second.calls).toEqual(first.calls);
  });
});
