import fc from 'fast-check';
import { driftOf, isDecided, quorumOf, validUntil } from '../../lib/core/quorum/quorum';

/**
 * Issue 9 item 4: the quorum arithmetic and the early decision against brute-force oracles.
 * The oracle knows nothing of the formulas: a quorum is the smallest vote count that two
 * disjoint sets of voters cannot both reach, and an outcome is decided once every way the
 * remaining nodes could still vote gives the same answer.
 */

/** The smallest k such that two disjoint groups of k nodes cannot exist among n. */
function oracleQuorum(n: number): number {
  for (let k = 1; ; k++) if (2 * k > n) return k;
}

/** Whether the votes so far settle the outcome: every completion agrees. */
function oracleDecided(yes: number, no: number, n: number, quorum: number): boolean {
  const remaining = n - yes - no;
  const outcomes = new Set<boolean>();
  for (let more = 0; more <= remaining; more++) outcomes.add(yes + more >= quorum);
  return outcomes.size === 1;
}

/** Every sequence of yes/no replies of length n, in arrival order (2^n of them). */
function* voteOrders(n: number): Generator<boolean[]> {
  for (let mask = 0; mask < 1 << n; mask++) {
    yield Array.from({ length: n }, (_, i) => ((mask >> i) & 1) === 1);
  }
}

describe('quorum arithmetic, against brute-force oracles (property tests)', () => {
  it('quorumOf(N) is the smallest strict majority, for N = 1..7 and any N', () => {
    for (let n = 1; n <= 7; n++) expect(quorumOf(n)).toBe(oracleQuorum(n));
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10_000 }), (n) => {
        const q = quorumOf(n);
        // Two quorums always share a node; one vote less is not a quorum.
        return 2 * q > n && 2 * (q - 1) <= n && q <= n;
      }),
    );
  });

  it('isDecided agrees with the oracle at every prefix of every vote order, for N = 1..7', () => {
    let prefixes = 0;
    for (let n = 1; n <= 7; n++) {
      const quorum = quorumOf(n);
      for (const order of voteOrders(n)) {
        const finalOutcome = order.filter(Boolean).length >= quorum;
        let yes = 0;
        let no = 0;
        let decidedAt: number | undefined;
        // The empty prefix too: with no votes nothing is decided (a quorum is at least 1).
        for (let i = 0; i <= n; i++) {
          prefixes++;
          const decided = isDecided(yes, no, n, quorum);
          expect({ n, yes, no, decided }).toEqual({
            n,
            yes,
            no,
            decided: oracleDecided(yes, no, n, quorum),
          });
          if (decided && decidedAt === undefined) {
            decidedAt = i;
            // The early decision is the final outcome, whatever the nodes not waited for say.
            expect(yes >= quorum).toBe(finalOutcome);
          }
          if (i === n) break;
          if (order[i]) yes++;
          else no++;
        }
        // Every order is decided by its last vote at the latest.
        expect(decidedAt).toBeDefined();
      }
    }
    expect(prefixes).toBe([1, 2, 3, 4, 5, 6, 7].reduce((s, n) => s + 2 ** n * (n + 1), 0));
  });

  it('isDecided agrees with the oracle for any vote counts and any quorum (masked voters too)', () => {
    // A round counts a node that may not vote (quarantined, or one server twice) as a "no":
    // any quorum between 1 and N must still be decided exactly when the oracle says so.
    fc.assert(
      fc.property(
        fc
          .integer({ min: 1, max: 40 })
          .chain((n) =>
            fc.tuple(
              fc.constant(n),
              fc.integer({ min: 1, max: n }),
              fc.integer({ min: 0, max: n }),
              fc.integer({ min: 0, max: n }),
            ),
          )
          .filter(([n, , yes, no]) => yes + no <= n)
          .map(([n, quorum, yes, no]) => ({ n, quorum, yes, no })),
        ({ n, quorum, yes, no }) =>
          isDecided(yes, no, n, quorum) === oracleDecided(yes, no, n, quorum),
      ),
    );
  });

  it('the validity is ttl − elapsed − drift, less than the lease and shrinking with elapsed time', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10_000_000 }),
        fc.double({ min: 0, max: 0.99, noNaN: true }),
        fc.double({ min: 0, max: 1e9, noNaN: true }),
        fc.double({ min: 0, max: 1e7, noNaN: true }),
        (ttl, driftFactor, start, elapsed) => {
          const drift = driftOf(ttl, driftFactor);
          const until = validUntil(start, ttl, driftFactor);
          const validity = until - (start + elapsed);
          return (
            drift >= 2 &&
            until < start + ttl &&
            Math.abs(validity - (ttl - elapsed - drift)) <= 1e-6 * Math.max(1, start + ttl)
          );
        },
      ),
    );
  });
});
