import type { LockLostError, LockNotAcquiredReason, NodeOutcome } from '../errors';
import type { Lock } from '../lease/lock';

/** An acquisition succeeded. */
export interface AcquiredEvent {
  readonly resources: readonly string[];
  /**
   * Attempts made, this one included; 0 for a lock handed over by its previous holder in this
   * process (`fairness: 'queue'`), which took no attempt.
   */
  readonly attempts: number;
  /** From the call to the grant, in ms (waiting included). */
  readonly waitMs: number;
  /** Validity left at the grant, in ms. */
  readonly validityMs: number;
  readonly fencingToken?: number;
}

/** One attempt of an acquisition failed (it may be retried). */
export interface AttemptFailedEvent {
  readonly resources: readonly string[];
  /** Which attempt (1-based). */
  readonly attempt: number;
  readonly reason: LockNotAcquiredReason;
  readonly nodes: readonly NodeOutcome[];
}

/** A lock was extended. */
export interface ExtendedEvent {
  readonly resources: readonly string[];
  /** Validity after the extension, in ms. */
  readonly validityMs: number;
}

/** A lock was released by its holder. */
export interface ReleasedEvent {
  readonly resources: readonly string[];
  /** From the grant to the release, in ms. */
  readonly heldMs: number;
}

/** A node changed state, or was (re)admitted to or excluded from the quorum. */
export interface NodeEvent {
  /** `host:port`, never credentials. */
  readonly node: string;
}

/** A node restarted too recently to vote (architecture.md §5.7). */
export interface NodeQuarantinedEvent extends NodeEvent {
  /** How long until it votes again, in ms. */
  readonly remainingMs: number;
}

/**
 * Events of a {@link Redlock}, emitted synchronously. None carries an owner value, and none
 * costs anything on the lock path while nobody listens to it.
 */
export interface RedlockEvents {
  acquired: [event: AcquiredEvent];
  attemptFailed: [event: AttemptFailedEvent];
  extended: [event: ExtendedEvent];
  released: [event: ReleasedEvent];
  /** A held lock was lost (its signal aborted with the same error). */
  lockLost: [error: LockLostError, lock: Lock];
  /** The connection to a node was lost. */
  nodeDown: [event: NodeEvent];
  /** The connection to a node is back. */
  nodeUp: [event: NodeEvent];
  /** A node did not answer a command in time on a live connection (at most every 10 s). */
  nodeSlow: [event: NodeEvent];
  /** A node does not count toward the quorum: restarted less than the quarantine ago. */
  nodeQuarantined: [event: NodeQuarantinedEvent];
  /** A quarantined node counts again. */
  nodeRejoined: [event: NodeEvent];
}
