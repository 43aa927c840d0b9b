import { randomBytes } from 'node:crypto';

/** Random bytes in an owner value: 128 bits, so no two owners ever collide or guess each other. */
export const OWNER_VALUE_BYTES = 16;

/**
 * A fresh owner value from the CSPRNG. The value is what proves ownership to the release and
 * extend scripts, so it must be unguessable (not a counter, not `Math.random`), and it is
 * never logged or returned in an HTTP response.
 */
export function newOwnerValue(): string {
  return randomBytes(OWNER_VALUE_BYTES).toString('base64url');
}
