import type { Clock } from './clock';
import type { NodeOutcome, LockNotAcquiredReason } from './errors';
import { fanOut, type NodeReply } from './fan-out';
import type { AcquireReply, RedisNode } from './node';
import { isDecided, validUntil } from './quorum';

/** What every round needs to know about the node set. */
export interface RoundContext {
  readonly nodes: readonly RedisNode[];
  /** Votes needed: floor(N/2) + 1. */
  readonly quorum: number;
  readonly nodeTimeout: number;
  readonly driftFactor: number;
  readonly clock: Clock;
}

/** The outcome of one acquisition attempt. */
export type AttemptResult =
  | {
      readonly acquired: true;
      /** Monotonic time at which the validity ends: start + ttl − drift. */
      readonly deadline: number;
    }
  | {
      readonly acquired: false;
      readonly reason: LockNotAcquiredReason;
      readonly outcomes: NodeOutcome[];
      /** Shortest known remaining lease among blocking keys (ms), to cap the retry delay. */
      readonly earliestExpiry?: number;
      /** When the lock could become obtainable, as far as the blocking leases tell (ms). */
      readonly retryAfterMs?: number;
    };

/** The outcome of one extension round. */
export type ExtendResult =
  | { readonly extended: true; readonly deadline: number }
  | {
      readonly extended: false;
      /** True when so many nodes no longer hold our value that a quorum is out of reach. */
      readonly lost: boolean;
    };

const isAcquired = (reply: NodeReply<AcquireReply>) => reply.kind === 'ok' && reply.value.acquired;
const isHeld = (reply: NodeReply<AcquireReply>) => reply.kind === 'ok' && !reply.value.acquired;

/**
 * One Redlock attempt (DESIGN §5.1): the acquire script to every node at once, decided at
 * quorum, validity checked on the monotonic clock, and on failure a release on every node
 * that may now hold our keys — before the caller's next attempt, so retries do not pile up
 * stale keys that block everyone else.
 */
export async function acquireRound(
  ctx: RoundContext,
  keys: readonly string[],
  value: string,
  ttl: number,
): Promise<AttemptResult> {
  const { nodes, quorum, clock } = ctx;
  const count = nodes.length;
  const start = clock.now();
  let yes = 0;
  let no = 0;
  const replies = await fanOut(
    nodes,
    (node) => node.acquire(keys, value, ttl),
    ctx.nodeTimeout,
    (reply) => {
      if (isAcquired(reply)) yes++;
      else no++;
      return isDecided(yes, no, count, quorum);
    },
  );
  // The lease started on each node after `start`, so the validity measured from `start` is a
  // safe lower bound; the drift term covers node clocks running faster than ours.
  const deadline = validUntil(start, ttl, ctx.driftFactor);
  if (yes >= quorum && clock.now() < deadline) return { acquired: true, deadline };

  // A node that answered "held" wrote nothing (the script is all-or-nothing); every other node
  // may hold our keys now. Those that answered are released before we return, so a failed
  // attempt leaves nothing behind on a responsive node. Those that did not answer are sent
  // the release without waiting: it is queued behind their acquire on the same connection,
  // so it removes whatever that acquire sets, and waiting for a hung node gains nothing.
  const answered: RedisNode[] = [];
  const unanswered: RedisNode[] = [];
  for (let i = 0; i < count; i++) {
    const kind = replies[i].kind;
    if (isHeld(replies[i])) continue;
    if (kind === 'ok' || kind === 'error') answered.push(nodes[i]);
    else unanswered.push(nodes[i]);
  }
  if (unanswered.length > 0) void releaseRound(ctx, unanswered, keys, value);
  if (answered.length > 0) await releaseRound(ctx, answered, keys, value);
  return describeFailure(ctx, replies, yes >= quorum);
}

/**
 * Compare-and-PEXPIRE on every node (DESIGN §5.4): a success only on a quorum within the new
 * validity, measured from the start of the round.
 */
export async function extendRound(
  ctx: RoundContext,
  keys: readonly string[],
  value: string,
  ttl: number,
): Promise<ExtendResult> {
  const { nodes, quorum, clock } = ctx;
  const count = nodes.length;
  const start = clock.now();
  let yes = 0;
  let no = 0;
  let notOurs = 0;
  await fanOut(
    nodes,
    (node) => node.extend(keys, value, ttl),
    ctx.nodeTimeout,
    (reply) => {
      if (reply.kind === 'ok' && reply.value) yes++;
      else {
        no++;
        if (reply.kind === 'ok') notOurs++;
      }
      return isDecided(yes, no, count, quorum);
    },
  );
  const deadline = validUntil(start, ttl, ctx.driftFactor);
  if (yes >= quorum && clock.now() < deadline) return { extended: true, deadline };
  return { extended: false, lost: count - notOurs < quorum };
}

/**
 * Compare-and-delete on the given nodes (all of them, unless a caller knows better), one
 * attempt each, bounded by `nodeTimeout`. Never rejects: a node that is down keeps our key
 * only until its lease expires, and nothing the caller could do would change that.
 */
export async function releaseRound(
  ctx: RoundContext,
  nodes: readonly RedisNode[],
  keys: readonly string[],
  value: string,
): Promise<void> {
  await fanOut(nodes, (node) => node.release(keys, value), ctx.nodeTimeout);
}

function describeFailure(
  ctx: RoundContext,
  replies: readonly NodeReply<AcquireReply>[],
  tooSlow: boolean,
): AttemptResult {
  const { nodes, quorum } = ctx;
  const outcomes: NodeOutcome[] = [];
  const leases: number[] = [];
  let unreachable = 0;
  let held = 0;
  for (let i = 0; i < replies.length; i++) {
    const reply = replies[i];
    const node = nodes[i].name;
    if (reply.kind === 'ok') {
      if (reply.value.acquired) outcomes.push({ node, outcome: 'acquired' });
      else {
        outcomes.push({ node, outcome: 'held' });
        held++;
        if (reply.value.pttl >= 0) leases.push(reply.value.pttl);
      }
    } else if (reply.kind === 'error') {
      unreachable++;
      outcomes.push({ node, outcome: 'error', error: errorMessage(reply.error) });
    } else {
      // 'pending' nodes were not waited for: unknown, not unreachable.
      if (reply.kind === 'timeout') unreachable++;
      outcomes.push({ node, outcome: reply.kind });
    }
  }
  // 'unavailable' when the nodes known to be unreachable leave fewer than a quorum (nobody
  // could have been granted the lock), or when the nodes answered too slowly for any validity
  // to remain; otherwise another owner's key was in the way: 'held'.
  const reason: LockNotAcquiredReason =
    !tooSlow && nodes.length - unreachable >= quorum && held > 0 ? 'held' : 'unavailable';
  if (reason === 'unavailable' || leases.length === 0) return { acquired: false, reason, outcomes };
  leases.sort((a, b) => a - b);
  // The lock becomes obtainable once enough blocking keys expire for the nodes that are not
  // blocked to reach a quorum: the k-th shortest lease, k = quorum − (N − held).
  const needed = quorum - (nodes.length - held);
  const retryAfterMs =
    needed >= 1 && needed <= leases.length && leases.length === held
      ? leases[needed - 1]
      : undefined;
  return { acquired: false, reason, outcomes, earliestExpiry: leases[0], retryAfterMs };
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
