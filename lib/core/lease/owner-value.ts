import { randomFillSync } from 'node:crypto';
import { drawBytes, type RandomSource } from '../random';

/** Random bytes in an owner value: 128 bits, so no two owners ever collide or guess each other. */
export const OWNER_VALUE_BYTES = 16;

/**
 * Owner values are cut from a pool refilled from the CSPRNG 256 values at a time: one
 * `randomBytes(16)` call per attempt cost ~5 µs of client CPU, a slice of the pool ~0.3 µs. Each
 * byte is used once; the pool is refilled in place, never reused.
 */
const POOL = Buffer.alloc(OWNER_VALUE_BYTES * 256);
let offset = POOL.length;

/**
 * A fresh owner value from the CSPRNG. The value is what proves ownership to the release and
 * extend scripts, so it must be unguessable (not a counter, not `Math.random`), and it is
 * never logged or returned in an HTTP response.
 *
 * `random`: only a simulation's seeded source (the lock manager's internal `random` option),
 * so that a run replays exactly from its seed; still 128 bits, so values never collide.
 */
export function newOwnerValue(random?: RandomSource): string {
  if (random !== undefined) return drawBytes(random, OWNER_VALUE_BYTES).toString('base64url');
  if (offset === POOL.length) {
    randomFillSync(POOL);
    offset = 0;
  }
  const value = POOL.toString('base64url', offset, offset + OWNER_VALUE_BYTES);
  offset += OWNER_VALUE_BYTES;
  return value;
}

/**
 * The first character of an owner value whose holder may hand the lock on without a release: a
 * fair queue's lock (issue 24 item 1), which its release may swap to the group's next waiter.
 * Not in base64url's alphabet, so no other owner value starts with it. A waiter outside the
 * queues that meets such a key marks it (the scripts' `plainMark`, which tests its first byte),
 * and a probe does not stand in for that waiter's attempt there: a chain of swaps is never
 * free and never announced, so only the mark gets that waiter a turn.
 */
export const HANDED_ON = '.';

/** {@link newOwnerValue} for a lock its holder may hand on ({@link HANDED_ON}). */
export function handedOnValue(random?: RandomSource): string {
  return HANDED_ON + newOwnerValue(random);
}
