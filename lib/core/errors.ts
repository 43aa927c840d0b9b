/**
 * Typed errors. Every error a caller can act on has its own class, so that code (and the
 * Nest layer's HTTP mapping) can tell "someone else holds it" from "the nodes are down"
 * from "you passed something wrong" without parsing messages.
 *
 * Messages never contain a lock's owner value: it is a bearer secret for the lock.
 */

/** Base class of every error thrown by nestjs-redlock. */
export class RedlockError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** What one node answered in the last attempt of an acquisition. */
export interface NodeOutcome {
  /** The node's name (`host:port`, never credentials). */
  readonly node: string;
  /**
   * - `acquired`: the node set our keys;
   * - `held`: another owner holds at least one of the keys there;
   * - `error`: the node answered with an error or the connection failed;
   * - `timeout`: no answer within `nodeTimeout`;
   * - `pending`: no answer yet when the outcome was decided without it.
   */
  readonly outcome: 'acquired' | 'held' | 'error' | 'timeout' | 'pending';
  /** The error message, for `error`. */
  readonly error?: string;
}

/** Why a lock could not be taken. */
export type LockNotAcquiredReason = 'held' | 'unavailable';

/**
 * A lock could not be acquired within the `wait` budget (or in the single attempt of
 * `tryAcquire`, when the nodes were unavailable).
 *
 * `reason` is `held` when a quorum of nodes answered and another owner held the lock on
 * enough of them; `unavailable` when fewer than a quorum of nodes could be reached in time,
 * so nobody could have been granted the lock — the distinction a caller needs to choose
 * between "try later" (409) and "our infrastructure is down" (503).
 */
export class LockNotAcquiredError extends RedlockError {
  constructor(
    /** The resources asked for (de-duplicated and sorted). */
    readonly resources: readonly string[],
    /** `held` or `unavailable`; see the class comment. */
    readonly reason: LockNotAcquiredReason,
    /** How many attempts were made. */
    readonly attempts: number,
    /** What each node answered in the last attempt. */
    readonly nodes: readonly NodeOutcome[],
    /**
     * When `reason` is `held` and the holder's lease is known: the milliseconds until enough
     * of its keys expire for the lock to be obtainable (an upper bound if it is released).
     */
    readonly retryAfterMs?: number,
    /** Why the lock manager could not take it, when that is not the nodes (it is shutting down). */
    detail?: string,
  ) {
    const tried = `${attempts} attempt${attempts === 1 ? '' : 's'}`;
    super(
      reason === 'held'
        ? `Lock on [${resources.join(', ')}] is held by another owner (${tried})`
        : detail !== undefined
          ? `Lock on [${resources.join(', ')}] could not be acquired: ${detail} (${tried})`
          : `Lock on [${resources.join(', ')}] could not be acquired: a quorum of Redis nodes was unavailable (${tried}; ${describeOutcomes(nodes)})`,
    );
  }
}

/**
 * A lock is known to be lost: its validity ran out without a successful extension, or a
 * quorum of nodes no longer holds it. Whatever the holder was doing is no longer protected.
 */
export class LockLostError extends RedlockError {
  constructor(
    /** The resources of the lost lock. */
    readonly resources: readonly string[],
    detail = 'its validity ran out before a quorum of nodes extended it',
  ) {
    super(`Lock on [${resources.join(', ')}] was lost: ${detail}`);
  }
}

/** An option is invalid. Thrown at bootstrap for module options, at call time for per-call ones. */
export class RedlockConfigError extends RedlockError {
  constructor(
    /** The option's name, e.g. `ttl` or `nodes[2]`. */
    readonly option: string,
    /** The rejected value. */
    readonly value: unknown,
    requirement: string,
  ) {
    super(`Invalid option ${option}: ${requirement}, got ${describeValue(value)}`);
  }
}

/** A resource name, or a template value it was built from, is not usable as a lock key. */
export class LockResourceError extends RedlockError {
  constructor(
    message: string,
    /** The rejected value. */
    readonly resource?: unknown,
  ) {
    super(message);
  }
}

/** A short, safe rendering of a rejected value for an error message. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string')
    return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint')
    return String(value);
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (typeof value === 'function') return 'a function';
  return `an object (${Object.prototype.toString.call(value).slice(8, -1)})`;
}

function describeOutcomes(nodes: readonly NodeOutcome[]): string {
  return nodes.map((n) => `${n.node}: ${n.outcome}${n.error ? ` (${n.error})` : ''}`).join(', ');
}
