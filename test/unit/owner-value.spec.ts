import { newOwnerValue, OWNER_VALUE_BYTES } from '../../lib/core/owner-value';

describe('owner values', () => {
  const values = Array.from({ length: 10_000 }, newOwnerValue);

  it('are unique over 10 000 draws', () => {
    expect(new Set(values).size).toBe(values.length);
  });

  it('carry at least 128 random bits', () => {
    expect(OWNER_VALUE_BYTES * 8).toBeGreaterThanOrEqual(128);
    for (const value of values)
      expect(Buffer.from(value, 'base64url')).toHaveLength(OWNER_VALUE_BYTES);
    // Every bit position is set in about half of the values: no constant or biased bits, as a
    // counter, a timestamp or a truncated hash would show.
    const ones = new Array<number>(OWNER_VALUE_BYTES * 8).fill(0);
    for (const value of values) {
      const bytes = Buffer.from(value, 'base64url');
      for (let bit = 0; bit < ones.length; bit++)
        if (bytes[bit >> 3] & (1 << (bit & 7))) ones[bit]++;
    }
    for (const count of ones) {
      expect(count / values.length).toBeGreaterThan(0.45);
      expect(count / values.length).toBeLessThan(0.55);
    }
  });
});
