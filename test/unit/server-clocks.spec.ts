import { ServerClocks } from '../../lib/core/acquisition/server-clocks';
import type { Clock } from '../../lib/core/clock';
import type { RedisNode } from '../../lib/core/nodes/node';

/**
 * The fair queue's estimate of each node's clock (issue 24, S5's order inversions): the sample
 * with the smallest error bound wins, a sample that contradicts the estimate beyond both bounds
 * replaces it (the server's clock stepped), and an old estimate is not used.
 */
describe('ServerClocks', () => {
  let now = 1_000;
  const clock = { now: () => now } as Clock;
  const node = { name: 'n1' } as RedisNode;
  const other = { name: 'n2' } as RedisNode;
  let clocks: ServerClocks;

  beforeEach(() => {
    now = 1_000;
    clocks = new ServerClocks(clock);
  });

  it('has no estimate before a sample, and one per node after', () => {
    expect(clocks.onServer(node, 500)).toBeUndefined();
    // Sent at 1000, answered at 1000.2, the server read 5 001 000.1: offset 5 000 000.
    clocks.sample(node, 1_000, 1_000.2, 5_001_000.1);
    expect(clocks.onServer(node, 500)).toBeCloseTo(5_000_500, 6);
    expect(clocks.onServer(other, 500)).toBeUndefined();
  });

  it('keeps the sample of the shortest round trip; a longer one that agrees changes nothing', () => {
    clocks.sample(node, 1_000, 1_000.2, 5_001_000.1);
    // A 4 ms round trip whose reading is 1.5 ms off the midpoint: within both bounds, ignored.
    clocks.sample(node, 1_010, 1_014, 5_001_013.5);
    expect(clocks.onServer(node, 0)).toBeCloseTo(5_000_000, 6);
    // A shorter round trip wins.
    clocks.sample(node, 1_020, 1_020.1, 5_001_020.08);
    expect(clocks.onServer(node, 0)).toBeCloseTo(5_000_000.03, 6);
  });

  it("takes a sample that contradicts the estimate beyond both bounds (the server's clock stepped)", () => {
    clocks.sample(node, 1_000, 1_000.2, 5_001_000.1);
    // One hour later on the server, with a slow round trip: no longer the same clock.
    clocks.sample(node, 1_010, 1_014, 8_601_012);
    expect(clocks.onServer(node, 0)).toBeCloseTo(8_600_000, 6);
  });

  it('lets a longer round trip win once the kept sample has aged past it (drift)', () => {
    clocks.sample(node, 1_000, 1_000.2, 5_001_000.1);
    // 10 s later the kept sample's bound is 0.1 + 10 000 × 5e-4 = 5.1 ms: a 4 ms trip wins.
    now = 11_000;
    clocks.sample(node, 11_000, 11_004, 5_011_002.5);
    expect(clocks.onServer(node, 0)).toBeCloseTo(5_000_000.5, 6);
  });

  it('does not use an estimate 30 s after its sample', () => {
    clocks.sample(node, 1_000, 1_000.2, 5_001_000.1);
    now = 31_000;
    expect(clocks.onServer(node, 0)).toBeCloseTo(5_000_000, 6);
    now = 31_001;
    expect(clocks.onServer(node, 0)).toBeUndefined();
  });
});
