import { LockNotAcquiredError, SHUTTING_DOWN } from '../errors';
import type { RedisNode } from '../nodes/node';

/*
 * The errors an acquisition gives up with before its wait is spent, when waiting cannot help:
 * the lock manager is shutting down, a majority of nodes is known down, or restarted nodes do not
 * count toward a quorum until after the wait.
 */

/**
 * The error of an acquisition that cannot succeed before it gives up because restarted nodes do
 * not count toward a quorum yet: `retryAfterMs` says when they will.
 */
export function quarantined(
  resources: readonly string[],
  attempts: number,
  nodes: readonly RedisNode[],
  retryAfterMs: number,
): LockNotAcquiredError {
  const ms = Math.ceil(retryAfterMs);
  return new LockNotAcquiredError(
    resources,
    'unavailable',
    attempts,
    nodes.map((n) => ({ node: n.name, outcome: 'pending' })),
    ms,
    `Redis nodes that restarted without proof that their data survived do not count toward a quorum for another ${ms} ms`,
  );
}

/** The error of an acquisition refused or abandoned because the lock manager is shutting down. */
export function shuttingDown(resources: readonly string[], attempts: number): LockNotAcquiredError {
  return new LockNotAcquiredError(resources, 'unavailable', attempts, [], undefined, SHUTTING_DOWN);
}

/** The error of an acquisition that cannot succeed because a majority of nodes is known down. */
export function allDown(
  resources: readonly string[],
  attempts: number,
  nodes: readonly RedisNode[],
): LockNotAcquiredError {
  const down = nodes.filter((n) => n.isDown === true).map((n) => n.name);
  return new LockNotAcquiredError(
    resources,
    'unavailable',
    attempts,
    nodes.map((n) => ({
      node: n.name,
      outcome: n.isDown ? 'error' : 'pending',
      error: n.isDown ? 'connection closed' : undefined,
    })),
    undefined,
    `${down.length} of ${nodes.length} Redis nodes are down (${down.join(', ')}), so no quorum can answer`,
  );
}
