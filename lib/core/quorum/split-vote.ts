import type { Clock } from '../clock';
import { LockNotAcquiredError, SHUTTING_DOWN } from '../errors';
import type { LockInspection } from '../inspection';
import { quorumOf } from './quorum';
import { sleep } from '../acquisition/sleep';

/**
 * How long an acquisition keeps retrying rounds that nobody won (split votes) before it reports
 * them as `held`, from the start of the call. Short: contenders that start together settle it
 * within a few rounds (the jittered delay between rounds breaks the tie), and a caller that
 * asked not to wait (`wait: 0`, a scheduled tick with `onBusy: 'skip'`) must not answer late.
 */
export const SPLIT_VOTE_RETRY_MS = 2_000;

/** What the retry policy needs of the lock manager. */
export interface SplitVoteParts {
  readonly clock: Clock;
  /** What every node says about one resource (`Redlock.inspect`). */
  readonly inspect: (resource: string) => Promise<LockInspection>;
  /** Aborted when the lock manager drains. */
  readonly draining: AbortSignal;
  /** The source of the jitter between retries. */
  readonly random: () => number;
  /** Every node may vote now (restart detection keeps none out). */
  readonly everyNodeVotes: () => boolean;
}

/** One acquisition, as the retry policy sees it. */
export interface SplitVoteCall {
  readonly names: readonly string[];
  /** Monotonic time of the call: the window is counted from it. */
  readonly startedAt: number;
  readonly retryDelay: number;
  readonly retryJitter: number;
  readonly signal?: AbortSignal;
  /**
   * The call made one attempt (`wait: 0`, `tryAcquire()`) or skips its work when busy: the calls
   * a lost round answers wrongly. A call that waits retries on its own until its `wait` is spent,
   * and keeps that bound.
   */
  readonly settles: boolean;
  /**
   * Rounds that failed as `unavailable` (nodes too slow to answer on a busy machine, a node
   * restarting) are retried within the window too: for a call that would otherwise skip its
   * work as an outage (`@Locked` with `onBusy: 'skip'`), where a skip loses a tick on every
   * instance that sees the same.
   */
  readonly retryUnavailable?: boolean;
}

/**
 * The retry policy of every acquisition (issue 26): `reason: 'held'` means that another owner
 * holds a quorum of the nodes, not that this call lost a round. When contenders start at once
 * (instances firing the same tick), each can win a minority of the nodes and nobody a quorum: a
 * split vote. A one-attempt acquisition (`wait: 0`, `tryAcquire()`, and `@Locked` with
 * `onBusy: 'skip'`, which must not skip a tick nobody holds) that met such a round tries again
 * after a jittered delay while the window ({@link SPLIT_VOTE_RETRY_MS} from its start) lasts,
 * and reports `held` only once the nodes show one other holder on a quorum (or cannot tell: an
 * adapter that cannot inspect, nodes that do not answer). A call that waits keeps its `wait`:
 * its own retries cover the rounds it loses. The error that stands counts every attempt.
 *
 * Called with the failure of the call's acquisition (nothing is added to a lock that was
 * granted); `attempt` is one more attempt, made now.
 * @returns the lock of a retry that won
 * @throws `failure` (or a retry's) when it stands
 */
export async function retrySplitVotes<L>(
  failure: unknown,
  call: SplitVoteCall,
  parts: SplitVoteParts,
  attempt: () => Promise<L>,
): Promise<L> {
  if (!call.settles) throw failure;
  const until = call.startedAt + SPLIT_VOTE_RETRY_MS;
  let attempts = 0;
  for (let error = failure, retry = 0; ; retry++) {
    if (error instanceof LockNotAcquiredError) attempts += error.attempts;
    if (!(await retries(error, call, parts, until))) throw withAttempts(error, attempts);
    // The jitter's spread doubles with each retry (up to 8×): a split vote is settled when one
    // contender's retry reaches the others' nodes before their own retries do, so what counts
    // is the gap between the first retry and the next, against the nodes' round trip. With a
    // fixed 100 ms spread, three contenders 40 ms apart all retried within that gap about a
    // third of the time, round after round; a loaded machine, which widens the gap needed,
    // left a tick fired on three instances run nowhere (skip-run-once.spec, both cores busy).
    // Doubling keeps the first retry prompt and makes each failed round less likely than the last.
    const spread = call.retryJitter * 2 ** Math.min(retry, 3);
    const pause = call.retryDelay + parts.random() * spread;
    try {
      await sleep(parts.clock, pause, [call.signal, parts.draining]);
    } catch {
      call.signal?.throwIfAborted();
      throw new LockNotAcquiredError(call.names, 'unavailable', 0, [], undefined, SHUTTING_DOWN);
    }
    try {
      return await attempt();
    } catch (next) {
      error = next;
    }
  }
}

/** The failure that stands, counting the attempts of the whole call (every retry's too). */
function withAttempts(error: unknown, attempts: number): unknown {
  if (!(error instanceof LockNotAcquiredError) || error.attempts === attempts) return error;
  return new LockNotAcquiredError(
    error.resources,
    error.reason,
    attempts,
    error.nodes,
    error.retryAfterMs,
    error.detail,
  );
}

/** Whether a failed acquisition is retried (see {@link acquireSettlingSplitVotes}). */
async function retries(
  error: unknown,
  call: SplitVoteCall,
  parts: SplitVoteParts,
  until: number,
): Promise<boolean> {
  if (!(error instanceof LockNotAcquiredError)) return false;
  if (call.signal?.aborted || parts.draining.aborted || error.detail === SHUTTING_DOWN) {
    return false;
  }
  if (parts.clock.now() >= until) return false;
  if (error.reason === 'unavailable') return call.retryUnavailable === true;
  if (error.reason !== 'held') return false;
  // With a node kept out by restart detection, the keys a restarted node lost leave the holder
  // on fewer nodes than a quorum: a lock held, not a split vote. Retrying it would turn a
  // one-attempt call into a 2 s wait for the quarantine to end (quarantine.spec: tryAcquire
  // answered a lock ~2 s late instead of null at once).
  if (!parts.everyNodeVotes()) return false;
  return !(await heldByAnotherOwner(parts, call.names));
}

/**
 * True when one other holder has a key of `names` on a quorum of the nodes — the lock is really
 * held — or when the nodes cannot say (an adapter that cannot inspect, a quorum that does not
 * answer): then the failure stands, as it always did. False for a split vote.
 */
async function heldByAnotherOwner(
  parts: SplitVoteParts,
  names: readonly string[],
): Promise<boolean> {
  for (const name of names) {
    const inspection = await parts.inspect(name).catch(() => undefined);
    if (inspection === undefined) return true;
    const quorum = quorumOf(inspection.nodes.length);
    let unknown = 0;
    const votes = new Map<string, number>();
    for (const node of inspection.nodes) {
      if (node.state === 'unknown') unknown++;
      if (node.holder === undefined) continue;
      const count = (votes.get(node.holder) ?? 0) + 1;
      if (count >= quorum) return true;
      votes.set(node.holder, count);
    }
    if (unknown >= quorum) return true;
  }
  return false;
}
