import { driftOf, isDecided, quorumOf, validUntil } from '../../lib/core/quorum/quorum';

describe('quorum arithmetic', () => {
  it('needs a strict majority', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map(quorumOf)).toEqual([1, 2, 2, 3, 3, 4, 4]);
  });

  it('allows ttl × driftFactor + 2 ms of drift (the specification)', () => {
    expect(driftOf(10_000, 0.01)).toBe(102);
    expect(driftOf(1_000, 0)).toBe(2);
  });

  it('leaves ttl − elapsed − drift of validity, measured from the start of the round', () => {
    const start = 5_000;
    expect(validUntil(start, 10_000, 0.01) - (start + 50)).toBe(10_000 - 50 - 102);
    expect(validUntil(start, 1_000, 0.01) - (start + 1_000)).toBeLessThan(0);
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
