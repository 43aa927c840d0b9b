import type { Clock } from '../clock';
import { fanOut, type NodeReply } from '../nodes/fan-out';
import type { AcquireReply, RedisNode } from '../nodes/node';
import { isDecided, validUntil } from '../quorum/quorum';
import { FENCE_COUNTER_KEEP_MS, tokenFrom } from '../quorum/fencing';
import { announcementsHeard, CLEANUP_MARK, newReleaseId } from './release-notices';
import type { Suspicion } from '../nodes/suspicion';
import { classifyFailure, type AttemptFailure, type AttemptVote } from '../quorum/attempt-failure';
import type { ServerClocks } from './server-clocks';

export {
  classifyFailure,
  grantedOutcomes,
  type AttemptFailure,
  type AttemptVote,
} from '../quorum/attempt-failure';

/** What every round needs to know about the node set. */
export interface RoundContext {
  readonly nodes: readonly RedisNode[];
  /** Votes needed: floor(N/2) + 1. */
  readonly quorum: number;
  readonly nodeTimeout: number;
  readonly driftFactor: number;
  readonly clock: Clock;
  /** Announce releases to waiters (release notifications, architecture.md §5.8). */
  readonly notify: boolean;
  /** A new release id (notifier.ts `newReleaseId`, unless a random source was injected). */
  readonly releaseId?: () => string;
  /**
   * Which nodes may vote now, by index, read once at the start of each round: false for a node
   * that is the same server as an earlier node (same `run_id`), whose "yes" would be a second
   * vote of one server, or one restarted too recently (quarantine); with `fenced`, also one
   * whose fence floor is not complete. Such a node is still written to and released on, like
   * any node.
   */
  readonly voters: (ttl?: number, fenced?: boolean) => readonly boolean[];
  /**
   * Nodes suspected hung (issue 18): sent no acquire or extend (a "no" vote), and releases to
   * them are not waited for. Absent: every node is always sent to.
   */
  readonly suspicion?: Suspicion;
  /**
   * Where each node's clock stands against this process's (the fair queue's order, issue 24 S5).
   * Absent: the nodes place waiters by their own clock alone.
   */
  readonly serverClocks?: ServerClocks;
}

/** The outcome of one acquisition attempt. */
export type AttemptResult =
  | {
      readonly acquired: true;
      /** Monotonic time at which the validity ends: start + ttl − drift. */
      readonly deadline: number;
      /** With fencing: the token this attempt was issued. */
      readonly fencingToken?: number;
      /** What each node replied, by index (for {@link grantedOutcomes}; nothing is built here). */
      readonly replies: readonly NodeReply<AcquireReply>[];
      /** Which nodes' votes counted in this round, by index. */
      readonly voters: readonly boolean[];
      /**
       * Nodes this round sent nothing to (suspected hung), by index; absent when it sent to
       * every node. Its release need not reach them: nothing of this lock can be there.
       */
      readonly skipped?: readonly boolean[];
    }
  | ({ readonly acquired: false } & AttemptFailure);

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
 * One Redlock attempt (architecture.md §5.1): the acquire script to every node at once, decided at
 * quorum, validity checked on the monotonic clock, and on failure a release on every node that
 * may now hold our keys. `value` must be this attempt's own: a cleanup of this attempt that
 * lands late can then only ever delete this attempt's keys (architecture.md §3.1), whatever order the
 * nodes apply commands in.
 *
 * An abort of `signal` ends the wait for replies at once; the attempt then counts as failed
 * and is cleaned up like any other.
 *
 * With `fenceKeys`, a granted attempt also runs fencing's phase 2 (architecture.md §5.6) on the nodes
 * that granted it, and succeeds only if that reaches a quorum within the validity.
 *
 * `send` replaces the acquire script per node (fair hand-off, architecture.md §5.11: the queued acquire,
 * or a holder's hand-off to its next local waiter). It must keep the acquire script's contract:
 * a "held" reply wrote nothing of `value`, a granted one set every key to `value` with a lease of
 * `ttl` after the round started.
 */
export async function acquireRound(
  ctx: RoundContext,
  keys: readonly string[],
  value: string,
  ttl: number,
  signal?: AbortSignal,
  fenceKeys?: readonly string[],
  send: (node: RedisNode) => Promise<AcquireReply> = (node) =>
    node.acquire(keys, value, ttl, fenceKeys),
): Promise<AttemptResult> {
  const { nodes, quorum, clock } = ctx;
  const count = nodes.length;
  const start = clock.now();
  const voters = ctx.voters(ttl, fenceKeys !== undefined);
  const skipped = ctx.suspicion?.skipped();
  let yes = 0;
  let no = 0;
  const sentAt = announcementsHeard();
  const replies = await fanOut(
    nodes,
    send,
    { clock, timeoutMs: ctx.nodeTimeout, signal, skip: skipped, watch: ctx.suspicion },
    (reply, index) => {
      if (isAcquired(reply) && voters[index]) yes++;
      else no++;
      return isDecided(yes, no, count, quorum);
    },
  );
  // The lease started on each node after `start`, so the validity measured from `start` is a
  // safe lower bound; the drift term covers node clocks running faster than ours.
  const deadline = validUntil(start, ttl, ctx.driftFactor);
  if (yes >= quorum && clock.now() < deadline && !signal?.aborted) {
    if (fenceKeys === undefined) return { acquired: true, deadline, replies, voters, skipped };
    const fencingToken = await fenceRound(ctx, voters, replies, keys, fenceKeys, value, deadline);
    if (fencingToken !== undefined && !signal?.aborted) {
      return { acquired: true, deadline, fencingToken, replies, voters, skipped };
    }
  }

  // A node that answered "held" wrote nothing (the script is all-or-nothing), nor did one not
  // sent to; every other node may hold our keys now. Released without waiting for the ones that
  // did not answer (waiting for a hung node gains nothing: the release queues behind the acquire
  // on its connection).
  const answered: RedisNode[] = [];
  const unanswered: RedisNode[] = [];
  for (let i = 0; i < count; i++) {
    if (isHeld(replies[i]) || replies[i].kind === 'skipped') continue;
    const kind = replies[i].kind;
    (kind === 'ok' || kind === 'error' ? answered : unanswered).push(nodes[i]);
  }
  // Announced as a cleanup (release-notices.ts CLEANUP_MARK): it frees only this attempt's own
  // writes, never a lock anyone held (nor a key reserved for the plain waiters: RELEASE_SCRIPT).
  const cleanup = () => (ctx.notify ? (ctx.releaseId ?? newReleaseId)() + CLEANUP_MARK : undefined);
  if (unanswered.length > 0) {
    void releaseRound(ctx, unanswered, keys, value, undefined, undefined, cleanup());
  }
  if (answered.length > 0) {
    await releaseRound(ctx, answered, keys, value, undefined, undefined, cleanup());
  }
  // The spread last: a property after it is V8's slow path (eslint.config.mjs).
  return {
    acquired: false,
    ...classifyFailure(
      nodes.map((node, i) => ({ node: node.name, reply: replies[i], votes: voters[i] })),
      quorum,
      yes >= quorum,
      sentAt,
    ),
  };
}

/**
 * Per lock manager (its round context): where its next probe starts reading, so that probes
 * spread over the nodes — kept per manager, not per process, so that a run does not depend on
 * what other lock managers of the process probed before (a simulation replays from its seed).
 */
const nextProbe = new WeakMap<RoundContext, number>();

/**
 * A probe in place of an attempt (issue 19), for a waiter that already hears every release of
 * `key` (every node confirmed its subscription before this is called): reads the key's lease
 * (`PTTL`, which writes nothing) until it knows that an attempt sent now could not reach a
 * quorum — N − quorum + 1 nodes holding the key — on just that many nodes, or on every node
 * with `all` (the key may be held on only a quorum of them: an attempt left alone would take the
 * others, fail, release them and hear its own release). Then it fails as that attempt would
 * have ('held'; the nodes not counted as holding are taken as free, so the lock is taken to
 * become obtainable when the shortest lease read ends) at 3 to 5 commands instead of 10 to 14
 * (5 `SET NX GET`, a `PTTL` per "held", a release where we may have written). `undefined` when
 * the probe cannot tell — a node cannot be read this way, is not a voter or is suspected now,
 * or too few reads find the key with an expiry (absent, failing, late): the caller then sends
 * the attempt.
 *
 * Safe, and it loses no wake-up: it writes nothing (no owner value, nothing to clean up), and
 * since the waiter listens, a release applied on a node after the read is announced to it,
 * while one applied before shows there as an absent key.
 */
export async function probeRound(
  ctx: RoundContext,
  key: string,
  ttl: number,
  all: boolean,
  signal?: AbortSignal,
): Promise<AttemptFailure | undefined> {
  const { nodes, quorum } = ctx;
  const count = nodes.length;
  const voters = ctx.voters(ttl);
  const skipped = ctx.suspicion?.skipped();
  for (let i = 0; i < count; i++) {
    if (nodes[i].lease === undefined || !voters[i] || skipped?.[i] === true) return undefined;
  }
  const needed = count - quorum + 1;
  const reads = all ? count : needed;
  const first = nextProbe.get(ctx) ?? 0;
  nextProbe.set(ctx, (first + reads) % count);
  const read = Array.from({ length: reads }, (_, j) => (first + j) % count);
  const isLease = (reply: NodeReply<number>) => reply.kind === 'ok' && reply.value > 0;
  let held = 0;
  let free = 0;
  const sentAt = announcementsHeard();
  const replies = await fanOut(
    read.map((i) => nodes[i]),
    (node) => node.lease!(key),
    { clock: ctx.clock, timeoutMs: ctx.nodeTimeout, signal, watch: ctx.suspicion },
    (reply) => {
      if (isLease(reply)) held++;
      else free++;
      return held >= needed || free > reads - needed;
    },
  );
  if (held < needed) return undefined;
  const votes: AttemptVote[] = nodes.map((node) => ({
    node: node.name,
    reply: { kind: 'pending' },
    votes: true,
  }));
  read.forEach((i, j) => {
    const reply = replies[j];
    if (reply.kind !== 'ok' || !isLease(reply)) return;
    const lease: AcquireReply = { acquired: false, pttl: reply.value };
    votes[i] = { node: nodes[i].name, reply: { kind: 'ok', value: lease }, votes: true };
  });
  return classifyFailure(votes, quorum, false, sentAt);
}

/**
 * Fencing phase 2 on the nodes that granted phase 1: the token T = max(F) + 1 over their
 * replies, written where the lock is still ours. The token, or `undefined` when phase 2 did not
 * reach a quorum before `deadline` (a holder paused past its expiry gets no token).
 */
async function fenceRound(
  ctx: RoundContext,
  voters: readonly boolean[],
  replies: readonly NodeReply<AcquireReply>[],
  keys: readonly string[],
  fenceKeys: readonly string[],
  value: string,
  deadline: number,
): Promise<number | undefined> {
  const granted: RedisNode[] = [];
  const indexes: number[] = [];
  const fences: number[] = [];
  replies.forEach((reply, i) => {
    if (reply.kind === 'ok' && reply.value.acquired && reply.value.fence !== undefined) {
      granted.push(ctx.nodes[i]);
      indexes.push(i);
      fences.push(reply.value.fence);
    }
  });
  const token = tokenFrom(fences);
  let yes = 0;
  let no = 0;
  const timeoutMs = Math.min(ctx.nodeTimeout, deadline - ctx.clock.now());
  await fanOut(
    granted,
    (node) => {
      if (node.fence === undefined) throw new Error(`node ${node.name} cannot fence`);
      return node.fence(keys, fenceKeys, value, token, FENCE_COUNTER_KEEP_MS);
    },
    { clock: ctx.clock, timeoutMs, watch: ctx.suspicion },
    (reply, j) => {
      if (reply.kind === 'ok' && reply.value && voters[indexes[j]]) yes++;
      else no++;
      return isDecided(yes, no, granted.length, ctx.quorum);
    },
  );
  return yes >= ctx.quorum && ctx.clock.now() < deadline ? token : undefined;
}

/**
 * Compare-and-PEXPIRE on every node (architecture.md §5.4): a success only on a quorum within the new
 * validity, measured from the start of the round (the nodes restarted their countdown after
 * it, never before).
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
  const voters = ctx.voters(ttl);
  let yes = 0;
  let no = 0;
  let notOurs = 0;
  // A suspected node is not extended: its key (if any) keeps its old lease and ends on its own;
  // its "no" is not "not ours", so it never makes the lock count as lost.
  await fanOut(
    nodes,
    (node) => node.extend(keys, value, ttl),
    {
      clock,
      timeoutMs: ctx.nodeTimeout,
      skip: ctx.suspicion?.skipped(),
      watch: ctx.suspicion,
    },
    (reply, index) => {
      if (reply.kind === 'ok' && reply.value && voters[index]) yes++;
      else {
        no++;
        if (reply.kind === 'ok' && !reply.value) notOurs++;
      }
      return isDecided(yes, no, count, quorum);
    },
  );
  const deadline = validUntil(start, ttl, ctx.driftFactor);
  if (yes >= quorum && clock.now() < deadline) return { extended: true, deadline };
  return { extended: false, lost: count - notOurs < quorum };
}

/**
 * Compare-and-delete on the given nodes, one attempt each, bounded by `nodeTimeout`. Resolves
 * once a quorum of them confirmed (or once the rest can no longer matter): the lock is then
 * free for anyone, and a hung node must not add its timeout to every release. The requests to
 * the others run on in the background, bounded by the same timeout. Never rejects: a node
 * that is down keeps our key only until its lease expires, and nothing the caller could do
 * would change that.
 *
 * `notSent` (by index of `nodes`): nodes the lock's acquire never reached (suspected then), so
 * nothing of it can be there: skipped. A node suspected now that the acquire did reach may hold
 * our key: it is still sent the release — at once, not deferred to its rejoining (a list of
 * deferred releases would grow with every lock while the node hangs, and the release queued on
 * its connection now is applied in order after the acquire, as soon as it answers) — but not
 * waited for. Such releases are few: only locks taken before the node was suspected.
 *
 * `release` replaces the release script per node (a fair hand-off with nobody local to hand to,
 * architecture.md §5.11); it gets the release's announcement id, `announcement` when given (a
 * failed attempt's cleanup: acquireRound).
 */
export async function releaseRound(
  ctx: RoundContext,
  nodes: readonly RedisNode[],
  keys: readonly string[],
  value: string,
  notSent?: readonly boolean[],
  release: (node: RedisNode, announcement?: string) => Promise<unknown> = (node, announcement) =>
    node.release(keys, value, announcement),
  announcement = ctx.notify ? (ctx.releaseId ?? newReleaseId)() : undefined,
): Promise<void> {
  const send = (node: RedisNode) => release(node, announcement);
  const { suspicion, clock, nodeTimeout } = ctx;
  let targets = nodes;
  if (
    suspicion !== undefined &&
    (notSent !== undefined || nodes.some((node) => suspicion.isSuspected(node)))
  ) {
    const awaited: RedisNode[] = [];
    const background: RedisNode[] = [];
    nodes.forEach((node, i) => {
      if (notSent?.[i] === true) return;
      (suspicion.isSuspected(node) ? background : awaited).push(node);
    });
    if (background.length > 0) {
      void fanOut(background, send, { clock, timeoutMs: nodeTimeout, watch: suspicion });
    }
    targets = awaited;
    if (targets.length === 0) return;
  }
  const needed = Math.min(ctx.quorum, targets.length);
  let confirmed = 0;
  await fanOut(
    targets,
    send,
    { clock, timeoutMs: nodeTimeout, watch: suspicion },
    (reply) => reply.kind === 'ok' && ++confirmed >= needed,
  );
}
