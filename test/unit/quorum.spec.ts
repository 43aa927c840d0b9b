import { driftOf, isDecided, quorumOf, validityOf } from '../../lib/core/quorum';

describe('quorum arithmetic', () => {
  it('needs a strict majority', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map(quorumOf)).toEqual([1, 2, 2, 3, 3, 4, 4]);
  });

  it('allows ttl × driftFactor + 2 ms of drift (the specification)', () => {
    expect(driftOf(10_000, 0.01)).toBe(102);
    expect(driftOf(1_000, 0)).toBe(2);
  });

  it('subtracts the elapsed time and the drift from the ttl', () => {
    expect(validityOf(10_000, 50, 0.01)).toBe(10_000 - 50 - 102);
    expect(validityOf(1_000, 1_000, 0.01)).toBeLessThan(0);
  });

  it('decides as soon as the quorum is reached or out of reach, not before', () => {
    // 5 nodes, quorum 3
    expect(isDecided(2, 0, 5, 3)).toBe(false);
    expect(isDecided(3, 0, 5, 3)).toBe(true);
    expect(isDecided(2, 2, 5, 3)).toBe(false);
    expect(isDecided(0, 2, 5, 3)).toBe(false);
    expect(isDecided(0, 3, 5, 3)).toBe(true);
    expect(isDecided(2, 3, 5, 3)).toBe(true);
  });
});
