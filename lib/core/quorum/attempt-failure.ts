import type { LockNotAcquiredReason, NodeOutcome } from '../errors';
import type { NodeReply } from '../nodes/fan-out';
import { KeyTypeConflict, type AcquireReply, type RedisNode } from '../nodes/node';
import { describeNodeError } from '../nodes/node-errors';

/*
 * What a failed attempt means, pure and table-tested apart from the I/O of a round (rounds.ts,
 * architecture.md §3.1): held or unavailable, when it may become obtainable, and each node's outcome.
 */

/** Why an attempt failed, classified by {@link classifyFailure}. */
export interface AttemptFailure {
  readonly reason: LockNotAcquiredReason;
  readonly outcomes: NodeOutcome[];
  /** Shortest known remaining lease among blocking keys (ms), to cap the retry delay. */
  readonly earliestExpiry?: number;
  /** When the lock could become obtainable, as far as the blocking leases tell (ms). */
  readonly retryAfterMs?: number;
  /** A node refused because a lock key holds a non-string value: a data conflict, not contention. */
  readonly conflict?: { readonly node: string; readonly message: string };
  /**
   * {@link announcementsHeard} when the attempt was sent: an announcement heard before it was of
   * a release that landed before the attempt read any node (notifier.ts BlockedNodes).
   */
  readonly sentAt?: number;
}

/**
 * What each node answered in a granted attempt (telemetry reads it, only when it records): the
 * same per-node outcomes a failed attempt reports.
 */
export function grantedOutcomes(
  nodes: readonly RedisNode[],
  replies: readonly NodeReply<AcquireReply>[],
  voters: readonly boolean[],
): NodeOutcome[] {
  const votes = nodes.map((node, i) => ({ node: node.name, reply: replies[i], votes: voters[i] }));
  return classifyFailure(votes, nodes.length, false).outcomes;
}

/** One node's part in a failed attempt, as {@link classifyFailure} reads it. */
export interface AttemptVote {
  readonly node: string;
  readonly reply: NodeReply<AcquireReply>;
  /** False for a node whose vote is not counted (the same server as another node). */
  readonly votes: boolean;
}

/**
 * Classifies a failed attempt — pure, table-tested (architecture.md §3.1):
 * - `unavailable` when the nodes known unreachable leave fewer than a quorum (nobody could have
 *   been granted the lock), or when a quorum said yes but too late for any validity to remain;
 * - `held` when another owner's key was in the way, with `retryAfterMs`: when enough blocking
 *   keys expire for a quorum to become obtainable (the k-th shortest lease, k = quorum − free);
 * - a `conflict` when a node reported a non-string value at a lock key (WRONGTYPE).
 */
export function classifyFailure(
  votes: readonly AttemptVote[],
  quorum: number,
  tooSlow: boolean,
  /**
   * Passed through to the result ({@link AttemptFailure.sentAt}): a parameter, not
   * `{ ...classifyFailure(…), sentAt }`, V8's slow path once per failed attempt (eslint.config.mjs).
   */
  sentAt?: number,
): AttemptFailure {
  const outcomes: NodeOutcome[] = [];
  const leases: number[] = [];
  let unreachable = 0;
  let held = 0;
  let conflict: AttemptFailure['conflict'];
  for (const { node, reply, votes: counted } of votes) {
    if (!counted && reply.kind !== 'error') {
      // The same server as another node (already counted there), or quarantined.
      outcomes.push({ node, outcome: 'excluded' });
      unreachable++;
    } else if (reply.kind === 'ok') {
      if (reply.value.acquired) outcomes.push({ node, outcome: 'acquired' });
      else {
        outcomes.push({ node, outcome: 'held' });
        held++;
        if (reply.value.pttl >= 0) leases.push(reply.value.pttl);
      }
    } else if (reply.kind === 'error') {
      unreachable++;
      const message = errorMessage(reply.error);
      if (reply.error instanceof KeyTypeConflict) conflict ??= { node, message };
      outcomes.push({ node, outcome: 'error', error: message });
    } else if (reply.kind === 'skipped') {
      // Not asked: it did not answer within nodeTimeout before (suspected hung).
      unreachable++;
      outcomes.push({ node, outcome: 'timeout' });
    } else {
      // 'pending' nodes were not waited for: unknown, not unreachable.
      if (reply.kind === 'timeout') unreachable++;
      outcomes.push({ node, outcome: reply.kind });
    }
  }
  const count = votes.length;
  const reason: LockNotAcquiredReason =
    !tooSlow && count - unreachable >= quorum && held > 0 ? 'held' : 'unavailable';
  if (reason === 'unavailable' || leases.length === 0) {
    return { reason, outcomes, conflict, sentAt };
  }
  leases.sort((a, b) => a - b);
  const needed = quorum - (count - held);
  const retryAfterMs =
    needed >= 1 && needed <= leases.length && leases.length === held
      ? leases[needed - 1]
      : undefined;
  return { reason, outcomes, earliestExpiry: leases[0], retryAfterMs, conflict, sentAt };
}

/** A node's error in the library's words first (architecture.md §5.12); a key conflict keeps Redis' text. */
function errorMessage(error: unknown): string {
  if (error instanceof KeyTypeConflict) return error.message;
  return describeNodeError(error).text;
}
