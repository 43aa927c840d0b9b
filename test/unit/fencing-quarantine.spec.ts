import { fenceKeysOf, tokenFrom } from '../../lib/core/quorum/fencing';
import {
  admission,
  floorRestore,
  settledAfterMs,
  type FloorRestore,
  type NodeFacts,
} from '../../lib/core/quorum/quarantine';

describe('fencing arithmetic', () => {
  it.each([
    [[5], 6],
    [[5, 9, 7], 10],
    [[1_700_000_000_000_000, 1_700_000_000_000_123], 1_700_000_000_000_124],
  ])('the token for fences %p is %p: one above the highest', (fences, token) => {
    expect(tokenFrom(fences)).toBe(token);
  });

  it('refuses a token that is not an exact integer', () => {
    expect(() => tokenFrom([2 ** 53])).toThrow(RangeError);
  });

  it("counter keys cannot be any resource's lock key (NUL is refused in resources)", () => {
    expect(fenceKeysOf(['redlock:a', 'redlock:b'])).toEqual([
      'redlock:a\u0000fence',
      'redlock:b\u0000fence',
    ]);
  });
});

/**
 * The restart rule (lib/core/quorum/quarantine.ts), as tables: each row one survey of a 3- or 5-node
 * fleet (`undefined`: that node did not answer), the node decided on, and when it may vote.
 * maxTtl 10 000 ms, drift 1 %: a node is settled after 10 102 ms of uptime.
 */
describe('restart rule: when a node that may have lost keys votes (admission)', () => {
  const rule = { maxTtl: 10_000, driftFactor: 0.01, quorum: 2 };
  const rule5 = { ...rule, quorum: 3 };
  const facts = (over: Partial<NodeFacts> = {}): NodeFacts => ({
    runId: 'r1',
    ageMs: 86_400_000,
    born: 'r0',
    durableConfig: false,
    horizons: {},
    floor: 0,
    ...over,
  });
  /** A horizon filed under X's run_id before its restart (`x0`: no node's now). */
  const before = (ms: number) => ({ horizons: { x0: ms } });
  /** Restarted `ageMs` ago without proof its data survived (marker from this run, or none). */
  const young = (ageMs: number, over: Partial<NodeFacts> = {}) =>
    facts({ ageMs, born: over.born ?? 'r1', ...over });

  it.each<[string, (NodeFacts | undefined)[], typeof rule, number, string]>([
    [
      'settled: up for maxTtl with drift',
      [facts({ ageMs: 10_102 }), undefined, undefined],
      rule,
      0,
      'settled',
    ],
    [
      'a young node whose marker survived and that fsyncs every write',
      [young(0, { born: 'r0', durableConfig: true }), undefined, undefined],
      rule,
      0,
      'durable',
    ],
    [
      'fsync configured, but the marker is this run’s: its data is gone',
      [young(0, { durableConfig: true }), facts(), facts({ ...before(4_000) })],
      rule,
      4_042,
      'horizons',
    ],
    [
      'fsync configured, no marker at all',
      [young(0, { born: undefined, durableConfig: true }), facts(), facts()],
      rule,
      0,
      'horizons',
    ],
    [
      'every peer answered, no horizon: at once (a fresh fleet)',
      [young(0), young(0), young(0)],
      rule,
      0,
      'horizons',
    ],
    [
      'every peer answered: the longest horizon plus drift',
      [young(1_000), facts({ ...before(1_000) }), facts({ ...before(200) })],
      rule,
      1_012,
      'horizons',
    ],
    [
      'horizons of young peers count too',
      [young(1_000), young(5_000, { ...before(500) }), young(5_000)],
      rule,
      507,
      'horizons',
    ],
    [
      'horizons filed under current run_ids are leases granted since its restart: ignored',
      [
        young(1_000, { runId: 'x1' }),
        facts({ runId: 'p', horizons: { x1: 5_000, p: 5_000, q: 5_000 } }),
        facts({ runId: 'q', horizons: { x0: 300 } }),
      ],
      rule,
      305,
      'horizons',
    ],
    [
      'a silent node’s run_id cannot be told current: its horizons count',
      [
        young(1_000, { runId: 'x1' }),
        facts({ runId: 'p', horizons: { s: 700 } }),
        undefined,
        facts({ runId: 'q' }),
        facts({ runId: 'r' }),
      ],
      rule5,
      709,
      'horizons',
    ],
    [
      'a horizon longer than the uptime left: the uptime decides',
      [young(9_000), facts({ ...before(9_000) }), facts()],
      rule,
      1_102,
      'uptime',
    ],
    [
      '3 nodes, one peer silent: too few to tell, wait until settled',
      [young(1_000), undefined, facts()],
      rule,
      9_102,
      'uninformed',
    ],
    [
      '5 nodes, one silent, no other young node: enough',
      [young(1_000), undefined, facts(), facts({ ...before(300) }), facts()],
      rule5,
      305,
      'horizons',
    ],
    [
      '5 nodes, one silent and another young: too few',
      [young(1_000), undefined, young(3_000), facts(), facts()],
      rule5,
      9_102,
      'uninformed',
    ],
    [
      '5 nodes, two silent: too few',
      [young(1_000), undefined, undefined, facts(), facts()],
      rule5,
      9_102,
      'uninformed',
    ],
    [
      '1 node: nothing to ask, nothing to wait for',
      [young(0)],
      { ...rule, quorum: 1 },
      0,
      'horizons',
    ],
  ])('%s', (_name, survey, r, voteInMs, why) => {
    expect(admission(survey, 0, r)).toEqual({ voteInMs, why });
  });

  it('refuses to decide on a node that did not answer', () => {
    expect(() => admission([undefined, facts()], 0, rule)).toThrow(RangeError);
  });

  it('settledAfterMs is maxTtl with drift, plus 2 ms', () => {
    expect(settledAfterMs({ maxTtl: 60_000, driftFactor: 0.01 })).toBe(60_602);
  });
});

describe('restart rule: when a node takes part in fenced acquisitions (floorRestore)', () => {
  const node = (over: Partial<NodeFacts> = {}): NodeFacts => ({
    runId: 'r1',
    ageMs: 0,
    born: 'r1',
    durableConfig: false,
    horizons: {},
    floor: 0,
    fenced: 'r1',
    ...over,
  });
  const lost = (floor = 0) => node({ fenced: undefined, floor });

  it.each<[string, (NodeFacts | undefined)[], number, FloorRestore]>([
    [
      'restored in this incarnation: complete',
      [node(), undefined, undefined],
      2,
      { kind: 'complete' },
    ],
    [
      'restored before a restart its data survived (durable): complete',
      [node({ fenced: 'r0', born: 'r0', durableConfig: true }), undefined, undefined],
      2,
      { kind: 'complete' },
    ],
    [
      'restored before a restart that lost nothing provably: not complete',
      [node({ fenced: 'r0', born: 'r0' }), node({ floor: 9 }), node({ floor: 4 })],
      2,
      { kind: 'restore', floor: 9 },
    ],
    [
      'every node answered: the highest floor of all',
      [lost(3), node({ floor: 9 }), lost(12)],
      2,
      { kind: 'restore', floor: 12 },
    ],
    [
      'one silent, the other complete: not enough in 3',
      [lost(), undefined, node({ floor: 9 })],
      2,
      { kind: 'blocked' },
    ],
    [
      '5 nodes, one silent, the rest complete: enough',
      [lost(), undefined, node({ floor: 9 }), node({ floor: 7 }), node()],
      3,
      { kind: 'restore', floor: 9 },
    ],
    [
      '5 nodes, one silent, another incomplete: not enough',
      [lost(), undefined, lost(), node(), node()],
      3,
      { kind: 'blocked' },
    ],
    [
      'a fresh fleet, everyone answered: genesis from the highest',
      [lost(), lost(), lost()],
      2,
      { kind: 'restore', floor: 0 },
    ],
  ])('%s', (_name, survey, quorum, expected) => {
    expect(floorRestore(survey, 0, quorum)).toEqual(expected);
  });
});
