import { Redlock, type RedlockOptions } from '../../lib';
import { simNodes, type SimNode } from '../sim/sim-node';
import { VirtualClock } from '../sim/virtual-clock';

/**
 * Issue 9 item 5: tests written against mutants of the protocol files that survived the other
 * tests (`npm run mutation`, stryker.config.mjs), and the survivors that are left, explained.
 *
 * The run of this session (`npx stryker run --mutate lib/core/rounds.ts,lib/core/quorum.ts`,
 * 23 min on the shared 2-core machine): 278 mutants, 148 killed, 44 timed out (a hang the tests
 * saw), 84 survived, 2 without coverage; score 69 % (quorum.ts 100 %, rounds.ts 67 %). lock.ts
 * and redlock.ts were not run yet (about an hour each here). The survivors, by group:
 * - False survivors of per-test coverage: the quorum checks of acquireRound, fenceRound and
 *   extendRound mutated to `true` (rounds.ts `if (yes >= quorum && clock.now() < deadline …)`)
 *   fail core-safety and the simulation when applied by hand; Stryker had not run those tests
 *   against them. The config now uses coverageAnalysis 'all'; the next run will tell which of
 *   the vote-counting survivors (`reply.kind === 'ok' && reply.value && voters[i]` mutated) are
 *   real.
 * - Reporting only (classifyFailure): the per-node outcome list, `retryAfterMs` (the k-th
 *   shortest lease), the sort of the leases, `unreachable` counts and the `held` /
 *   `unavailable` reason decide what an error says and how long the next sleep is, never
 *   whether a lock is granted: no safety check can see them, and rounds.spec.ts tests only
 *   some of its table. To kill with more table rows (left undone: out of time).
 * - Deadline boundaries (`clock.now() < deadline` → `<=`): a grant at exactly its deadline has
 *   zero validity and is marked lost at the first check, so nothing runs under it: equivalent.
 * - releaseRound resolving on the first reply instead of a quorum (`++confirmed >= needed` →
 *   `true`): only how soon release() resolves; the release requests still go to every node.
 *
 * Killed here: removing the cleanup of the nodes that did not answer an attempt in time
 * (rounds.ts, acquireRound: `void releaseRound(ctx, unanswered, …)`) — a liveness mutant that
 * no safety check can see (the key only blocks others for a ttl).
 */
describe('mutants of the protocol files (virtual time, simulated nodes)', () => {
  let clock: VirtualClock;
  let nodes: SimNode[];
  const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };
  const managers: Redlock[] = [];
  const manager = (options: RedlockOptions = {}) => {
    const redlock = new Redlock(nodes, {
      logger: quiet,
      clock,
      notifications: false,
      ...options,
    });
    managers.push(redlock);
    return redlock;
  };

  beforeEach(() => {
    clock = new VirtualClock();
    nodes = simNodes(3, clock);
  });
  afterEach(async () => {
    for (const redlock of managers.splice(0)) await clock.run(redlock.close());
  });

  it('a failed attempt also releases on the nodes that did not answer in time (their SET may have landed)', async () => {
    // s0 is held by a rival; s1 applies our acquire at once but its reply comes after the node
    // timeout; s2 says yes. One vote of three: the attempt fails, and s1 must not keep our key
    // for a whole ttl (the cleanup of unanswered nodes in acquireRound).
    nodes[0].put('redlock:r', 'rival', 60_000);
    nodes[1].fault = (op) => (op === 'acquire' ? { replyDelay: 1_000 } : undefined);
    const redlock = manager({ ttl: 10_000, nodeTimeout: 100 });
    const lock = await clock.run(redlock.tryAcquire('r'));
    expect(lock).toBeNull();
    await clock.advance(10);
    expect(nodes[1].valueAt('redlock:r')).toBeUndefined();
    expect(nodes[2].valueAt('redlock:r')).toBeUndefined();
  });
});
