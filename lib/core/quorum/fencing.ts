/**
 * Fencing tokens (architecture.md §5.6), the arithmetic. A token is issued by the quorum itself: phase 1
 * reads F = max(counter, server time in µs) on every node that granted the lock, the client
 * picks T = max(F) + 1, and phase 2 raises the counters to T where the lock is still ours.
 */

/** How long a node keeps a fence counter after its last use: by then its TIME is far past it. */
export const FENCE_COUNTER_KEEP_MS = 7 * 24 * 3_600_000;

/**
 * The fence counter key of each lock key. NUL separates them, and resource names may not
 * contain NUL (normalizeResources refuses it), so no resource's lock key can be another's
 * counter.
 */
export function fenceKeysOf(keys: readonly string[]): string[] {
  return keys.map((key) => `${key}\u0000fence`);
}

/**
 * The token for an attempt granted by nodes that reported `fences`: one above the highest, so
 * it is above every counter any previous holder's phase 2 could have left on any of them.
 * @throws RangeError when the counters went past 2^53 (a corrupt counter): a token must be exact.
 */
export function tokenFrom(fences: readonly number[]): number {
  const token = Math.max(...fences) + 1;
  if (!Number.isSafeInteger(token)) {
    throw new RangeError(`fence counter out of range: ${token}`);
  }
  return token;
}
