/**
 * The RedisNode port: what the Redlock algorithm needs of one independent Redis master.
 *
 * The operations are semantic (not "eval this script") so that a simulation can implement
 * them in memory with virtual time, and so that each later protocol step (a fencing phase,
 * a quarantine check, release notifications) is one more method rather than a change to the
 * attempt loop. The algorithm bounds every call by `nodeTimeout` itself; an implementation
 * need not time out, but must not queue work forever.
 *
 * Ordering: operations on one node must take effect in the order they were issued (one
 * connection does this). The algorithm relies on it to clean up after an attempt whose
 * answer never came: the release it sends is applied after that attempt's acquire.
 */
export interface RedisNode {
  /** A stable name for errors and logs: `host:port`, never credentials. */
  readonly name: string;

  /**
   * Sets every key to `value` with a lease of `ttl` ms if none is held by another value
   * (all-or-nothing). Keys already holding `value` count as free.
   */
  acquire(keys: readonly string[], value: string, ttl: number): Promise<AcquireReply>;

  /** Resets the lease of every key to `ttl` ms if every key still holds `value` (all-or-nothing). */
  extend(keys: readonly string[], value: string, ttl: number): Promise<boolean>;

  /** Deletes each key that still holds `value`; returns how many were deleted. */
  release(keys: readonly string[], value: string): Promise<number>;

  /**
   * Resolves once the node can take commands, or a connection attempt has failed, or
   * `timeoutMs` passed — whichever is first. Never rejects. Used once, before the first
   * attempt, so that a lock manager used right after construction does not fail just
   * because its sockets are still connecting.
   */
  whenReady(timeoutMs: number): Promise<void>;

  /** Closes the connection if this node owns it; leaves a caller-supplied client open. */
  close(): Promise<void>;
}

/** A node's answer to {@link RedisNode.acquire}. */
export type AcquireReply =
  | { readonly acquired: true }
  | {
      readonly acquired: false;
      /** Remaining lease of the blocking key in ms; -1 when it has no expiry. */
      readonly pttl: number;
    };

/** Type guard for a {@link RedisNode} passed in place of a Redis client or URL. */
export function isRedisNode(value: unknown): value is RedisNode {
  const candidate = value as Partial<RedisNode> | null;
  return (
    typeof candidate === 'object' &&
    candidate !== null &&
    typeof candidate.name === 'string' &&
    typeof candidate.acquire === 'function' &&
    typeof candidate.extend === 'function' &&
    typeof candidate.release === 'function' &&
    typeof candidate.whenReady === 'function'
  );
}
