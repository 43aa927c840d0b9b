import type { Clock } from '../clock';
import { LockKeyConflictError, LockNotAcquiredError } from '../errors';
import type { LockObserver } from '../observability/observer';
import { AttemptGate } from './attempt-gate';
import type { RedlockLock } from '../lease/lock';
import type { AcquireReply, PlainWait, QueueTicket, RedisNode } from '../nodes/node';
import { newReleaseId, type ReleaseNotifier } from './notifier';
import type { CallSettings } from '../options';
import { handedOnValue, newOwnerValue } from '../lease/owner-value';
import type { RandomSource } from '../random';
import {
  acquireRound,
  grantedOutcomes,
  probeRound,
  type AttemptFailure,
  type AttemptResult,
  type RoundContext,
} from './rounds';
import { Alarm, sleep } from './sleep';
import { allDown, quarantined, shuttingDown } from './acquisition-errors';
import { blockedBy, notifyWaiting, pollWaiting, retryDelay, type WaitingStrategy } from './waiting';

export { shuttingDown } from './acquisition-errors';
export {
  blockedBy,
  notifyWaiting,
  pollWaiting,
  retryDelay,
  SHARED_POLLS_PER_SECOND,
  type WaitingStrategy,
} from './waiting';
import type { AcquireTrace } from '../observability/telemetry';

/** One acquisition, as its attempts see it. */
export interface AcquisitionCall {
  readonly names: string[];
  readonly keys: string[];
  readonly fenceKeys?: string[];
  readonly settings: CallSettings;
  readonly signal?: AbortSignal;
  /** Monotonic time of the call. */
  readonly startedAt: number;
  /** Monotonic time after which no new attempt starts. */
  readonly giveUpAt: number;
  /** Its OpenTelemetry trace, when something records it. */
  readonly trace?: AcquireTrace;
}

/** Where an acquisition waits in a fair queue (fair-queue.ts): one key, one group. */
export interface QueueSeat {
  readonly key: string;
  readonly queueKey: string;
  /** The lock manager's group of waiters on the key. */
  readonly group: string;
  /** Whether the group may be queued on the nodes already. */
  readonly queued: boolean;
  /**
   * The group was just queued behind another by its holder's hand-off: sleep before the first
   * attempt, until it is this group's turn (or the turn of the group named passed unclaimed).
   */
  readonly behind: boolean;
  /** How long the queue outlives the blocking lease (ms). */
  readonly keepMs: number;
  /** Try the plain acquire first (the key was not seen contended lately). */
  readonly plainFirst: boolean;
}

/** A granted attempt's result. */
export type GrantedAttempt = Extract<AttemptResult, { acquired: true }>;

/** What the attempt loop needs of the lock manager that composes it. */
export interface AcquisitionParts {
  readonly nodes: readonly RedisNode[];
  readonly quorum: number;
  readonly clock: Clock;
  readonly round: RoundContext;
  readonly nodeTimeout: number;
  /** Resolves once every voter's lease horizon covers `ttl` (membership, architecture.md §5.7). */
  readonly cover: (ttl: number) => Promise<void> | undefined;
  /**
   * The earliest time (monotonic ms) a quorum may vote, as restart detection knows
   * (membership, architecture.md §5.7); absent: always now.
   */
  readonly quorumAt?: () => number;
  /** Release notifications, unless turned off: the notify strategy; without, the poll strategy. */
  readonly notifier?: ReleaseNotifier;
  /** Aborted when the lock manager drains. */
  readonly draining: AbortSignal;
  /** Where acquisitions and failed attempts are reported (events, telemetry). */
  readonly observer: LockObserver;
  /** Builds the lock of a granted attempt and counts it as held. */
  readonly hold: (call: AcquisitionCall, value: string, result: GrantedAttempt) => RedlockLock;
  /**
   * The source of the retry jitter and, when injected (a simulation), of owner values; absent:
   * `Math.random` for the jitter and the CSPRNG for owner values.
   */
  readonly random?: RandomSource;
}

/**
 * The attempt loop of one lock manager (architecture.md §5.1–5.2, §5.8; issue 18 item 3): attempts, with
 * a waiting strategy between them, through an {@link AttemptGate} that bounds the rounds in
 * flight. Composed by `Redlock`, which keeps what comes before (reentrancy, telemetry, the first
 * connection) and what a lock is once granted.
 */
export class AcquisitionLoop {
  private readonly gate: AttemptGate;
  /** Waiters sleeping now, by their alarm: a drain rings them all (no listener per waiter). */
  private readonly sleepers = new Set<Alarm>();
  /** Waiters polling now at the shared rate. */
  private pollers = 0;

  constructor(private readonly parts: AcquisitionParts) {
    this.gate = new AttemptGate(() => parts.clock.now(), parts.nodeTimeout);
  }

  /** The bound on attempts in flight now (for tests and diagnostics). */
  get attemptsInFlightLimit(): number {
    return this.gate.limit;
  }

  /**
   * Acquires: attempts until one is granted, `wait` is spent or the call is aborted. `strategy`:
   * how it waits, when the caller decides (a fair queue's line); else by notifications or polls.
   * `seat`: its place in a fair queue (architecture.md §5.11), when it waits in one — a parameter,
   * not a field of a copy of `call` (`{ ...call, seat }`: V8's slow path, see eslint.config.mjs).
   */
  async acquire(
    call: AcquisitionCall,
    strategy?: WaitingStrategy,
    seat?: QueueSeat,
  ): Promise<RedlockLock> {
    const { notifier } = this.parts;
    const waiting =
      strategy ??
      (notifier === undefined || !notifier.usable
        ? pollWaiting()
        : notifyWaiting(notifier, call.keys, this.gate.busy));
    let acquired = false;
    try {
      const lock = await this.attempts(call, waiting, seat);
      acquired = true;
      return lock;
    } finally {
      waiting.stop(acquired);
    }
  }

  /** Ends every wait at once (the lock manager drains): each gives up as shutting down. */
  drain(): void {
    this.gate.abortAll(this.parts.draining.reason);
    for (const alarm of [...this.sleepers]) alarm.sound();
  }

  private async attempts(
    call: AcquisitionCall,
    waiting: WaitingStrategy,
    seat: QueueSeat | undefined,
  ): Promise<RedlockLock> {
    const { names, keys, fenceKeys, settings, signal, startedAt, giveUpAt, trace } = call;
    const { nodes, quorum, clock, observer, draining } = this.parts;
    // Queued behind another group by its own holder's hand-off: its turn is announced.
    if (seat?.behind)
      await this.sleep(waiting.alarm, Math.min(settings.ttl, giveUpAt - clock.now()), signal);
    if (draining.aborted) throw shuttingDown(names, 0);
    // What the next try is when its waiter listens (issue 19): a probe of whether the key is
    // held (probeRound) on enough nodes (`some`) or on all (`all`), or an attempt (undefined).
    // A probe first, and after an attempt sent before the waiter listened (a release since then
    // went unheard or not: the probe tells), or one that had to release keys it took (its own
    // release is announced to it; an attempt woken by that would take them again). Never in a
    // fair queue: there the attempt is what queues the group, and it is made only on its turn.
    let probe = (seat === undefined ? 'some' : undefined) as 'some' | 'all' | undefined;
    for (let attempts = 1; ; attempts++) {
      // Known down (refused, not just slow): no quorum can answer, so waiting out `wait`
      // would only delay the 503. A node that reconnects makes the next call wait again.
      const down = knownDown(nodes);
      if (nodes.length - down < quorum) throw allDown(names, attempts - 1, nodes);
      // Restarted nodes that do not count yet (architecture.md §5.7) leave no quorum until after this
      // call gives up: say so now, with when to come back, rather than after the whole wait.
      const quorumAt = this.parts.quorumAt?.() ?? -Infinity;
      if (quorumAt > giveUpAt && quorumAt > clock.now() && Number.isFinite(quorumAt)) {
        throw quarantined(names, attempts - 1, nodes, quorumAt - clock.now());
      }
      // A fresh owner value per attempt (architecture.md §5.1): the cleanup of a failed attempt, however
      // late a node applies it, can then never delete a key that a later attempt counted.
      // A queued acquisition's lock may be handed on by its release (owner-value.ts HANDED_ON).
      const value =
        seat === undefined ? newOwnerValue(this.parts.random) : handedOnValue(this.parts.random);
      let listening = false;
      // From here until it reports, a release announced is judged by this attempt's result:
      // one on a node the attempt then takes (its own cleanup's among them) wakes nobody here.
      waiting.attempting();
      const turn = this.gate.enter(signal);
      if (turn !== undefined) {
        try {
          await turn;
        } catch (error) {
          if (signal?.aborted) throw error;
          throw shuttingDown(names, attempts - 1);
        }
      }
      let result: AttemptResult | undefined;
      try {
        // No node's vote counts for a lease its recorded horizon does not cover (architecture.md §5.7).
        // Inside the gate: thousands of calls at once must not all wait on one record and then
        // send their rounds in one burst.
        const covering = this.parts.cover(settings.ttl);
        // Still no quorum covered once its records answered (a record late under this process's
        // own load): once more, rather than a round in which no vote could count.
        if (covering !== undefined) await covering.then(() => this.parts.cover(settings.ttl));
        // Read before the round is sent: only a subscription confirmed before it vouches that
        // a release after the round will be announced.
        listening = waiting.listening();
        // A key not seen contended lately is tried with the plain acquire first: an uncontended
        // lock costs what it costs without fairness, and only a "held" joins the queue.
        // Outside the queues, a waiting attempt takes a key reserved for such waiters and marks
        // a key it meets held (issue 24 item 1): a fair hand-off then gives it a turn.
        const send =
          seat === undefined
            ? plainSend(keys, value, settings, fenceKeys, startedAt, giveUpAt, clock)
            : seat.plainFirst && attempts === 1
              ? undefined
              : queuedSend(seat, value, settings.ttl, startedAt, attempts, this.parts);
        const probed: AttemptFailure | undefined =
          seat === undefined &&
          listening &&
          probe !== undefined &&
          keys.length === 1 &&
          giveUpAt > clock.now()
            ? await probeRound(this.parts.round, keys[0], settings.ttl, probe === 'all', signal)
            : undefined;
        result =
          probed !== undefined
            ? { acquired: false, ...probed }
            : await acquireRound(
                this.parts.round,
                keys,
                value,
                settings.ttl,
                signal,
                fenceKeys,
                send,
              );
      } finally {
        this.gate.leave(result !== undefined && timedOut(result, nodes));
      }
      probe = seat === undefined ? probeNext(listening, result) : undefined;
      if (!result.acquired) waiting.attempted(blockedBy(result), result);
      if (result.acquired) {
        const { replies, voters } = result;
        observer.granted(trace, attempts, () => grantedOutcomes(nodes, replies, voters));
        const lock = this.parts.hold(call, value, result);
        if (signal?.aborted || draining.aborted) {
          // Nobody is waiting for it any more.
          void lock.release();
          signal?.throwIfAborted();
          throw shuttingDown(names, attempts);
        }
        observer.acquired(names, attempts, startedAt, lock);
        return lock;
      }
      observer.attemptFailed(names, attempts, result.reason, result.outcomes, trace);
      // The caller gave up (also in the middle of the round): its reason, not ours.
      signal?.throwIfAborted();
      if (draining.aborted) throw shuttingDown(names, attempts);
      if (result.conflict) {
        throw new LockKeyConflictError(names, result.conflict.node, result.conflict.message);
      }
      const left = giveUpAt - clock.now();
      if (left <= 0) {
        throw new LockNotAcquiredError(
          names,
          result.reason,
          attempts,
          result.outcomes,
          result.retryAfterMs,
        );
      }
      waiting.willSleep();
      // Its plain first attempt met a holder: join the queue now, not after a retry delay (its
      // place is kept by its start time, but a turn announced meanwhile would be missed).
      if (seat?.plainFirst && attempts === 1 && result.reason === 'held') continue;
      // Only a waiter not yet sure to hear releases shares the poll rate: one that listens and
      // still polls (its attempt missed replies, so no lease is known) retries at its own pace,
      // as any waiter would after a slow spell.
      // Confirmed while that attempt was out (its ring found no sleep to end): the try that
      // closes the gap goes now, not at the shared poll rate (issue 19: thousands waited for it).
      const confirmed = !listening && waiting.listening();
      // Whatever the replies, an attempt is followed by a wait: the one computed from the
      // blocking leases, or the retry delay. Only a release on a node where this attempt met
      // another owner's key ends it early (`attempted` above): never this attempt's own cleanup,
      // which frees only nodes it took and is announced like any release — a waiter woken by it
      // attempted again at once, thousands of times a second (issue 24: held-no-storm.spec, 2 118
      // attempts in a 1 s wait; unavailable-no-storm.spec, 5 482 in 2 s). Failed as unavailable
      // (no quorum of votes could count), it polls at its retry delay: no lease tells more.
      const unavailable = result.reason === 'unavailable';
      const polls = waiting.sharesPollRate && !listening && !confirmed && !unavailable;
      const delay =
        confirmed && !unavailable
          ? 0
          : retryDelay(
              result,
              settings,
              listening && !unavailable,
              polls ? this.pollers + 1 : 0,
              (this.parts.random ?? Math.random)(),
            );
      if (polls) this.pollers++;
      try {
        await this.sleep(waiting.alarm, Math.min(delay, left), signal);
      } finally {
        if (polls) this.pollers--;
      }
      // Woken by a release heard while its attempt was out: in another process's race that is
      // the release the winner took, so read before writing (a probe costs reads, an attempt
      // writes and cleans up); a release that landed after the attempt read is found free.
      if (seat === undefined && waiting.doubtful()) probe = 'all';
      if (draining.aborted) throw shuttingDown(names, attempts);
    }
  }

  /** Sleeps until `ms` passed, `alarm` rang, `signal` aborted or the manager drains. */
  private async sleep(alarm: Alarm, ms: number, signal?: AbortSignal): Promise<void> {
    this.sleepers.add(alarm);
    try {
      await sleep(this.parts.clock, ms, [signal], alarm);
    } finally {
      this.sleepers.delete(alarm);
    }
  }
}

/**
 * The per-node request of a waiting attempt outside the fair queues (issue 24 item 1): the
 * acquire with how long it has waited, so that a node marks a key it meets held (a fair
 * hand-off then gives it a turn) and lets it take a key reserved for it. A single attempt
 * (`wait: 0`) has no turn to wait for: the plain acquire, which takes a free key only.
 */
function plainSend(
  keys: readonly string[],
  value: string,
  settings: CallSettings,
  fenceKeys: readonly string[] | undefined,
  startedAt: number,
  giveUpAt: number,
  clock: Clock,
): ((node: RedisNode) => Promise<AcquireReply>) | undefined {
  if (giveUpAt <= startedAt) return undefined;
  const wait: PlainWait = {
    ageMs: clock.now() - startedAt,
    keepMs: settings.retryDelay + settings.retryJitter + 1_000,
  };
  return (node) => node.acquire(keys, value, settings.ttl, fenceKeys, wait);
}

/**
 * The per-node request of an attempt in a fair queue: the queued acquire, with the group's place
 * (how long its oldest waiter has waited: `startedAt` is that waiter's) and, when waiters listen,
 * an id announcing a claimed reservation.
 */
function queuedSend(
  seat: QueueSeat,
  value: string,
  ttl: number,
  startedAt: number,
  attempts: number,
  parts: Pick<AcquisitionParts, 'clock' | 'round'>,
): (node: RedisNode) => Promise<AcquireReply> {
  const ticket: QueueTicket = {
    group: seat.group,
    ageMs: parts.clock.now() - startedAt,
    queued: seat.queued || attempts > 1,
    keepMs: seat.keepMs,
    announce: parts.round.notify ? (parts.round.releaseId ?? newReleaseId)() : undefined,
  };
  const { clock, round } = parts;
  const clocks = round.serverClocks;
  return async (node) => {
    if (node.acquireQueued === undefined) throw new Error(`node ${node.name} cannot queue`);
    if (clocks === undefined)
      return node.acquireQueued(seat.key, seat.queueKey, value, ttl, ticket);
    // The group's start on this node's clock, where it is known; and a sample of that clock
    // when the node queues the group (it read TIME for it): server-clocks.ts.
    const startedOnServer = clocks.onServer(node, startedAt);
    const sentAt = clock.now();
    const reply = await node.acquireQueued(
      seat.key,
      seat.queueKey,
      value,
      ttl,
      startedOnServer === undefined ? ticket : onServer(ticket, startedOnServer),
    );
    if (!reply.acquired && reply.serverTime !== undefined) {
      clocks.sample(node, sentAt, clock.now(), reply.serverTime);
    }
    return reply;
  };
}

/** `ticket` for one node whose clock is known: with the group's start on that clock. */
function onServer(ticket: QueueTicket, startedOnServer: number): QueueTicket {
  const { group, ageMs, queued, keepMs, announce } = ticket;
  return { group, ageMs, queued, keepMs, announce, startedOnServer };
}

/** What the try after `result` is when its waiter listens (see `probe` in the attempt loop). */
function probeNext(listening: boolean, result: AttemptResult): 'some' | 'all' | undefined {
  if (!listening) return 'some';
  if (result.acquired || !result.outcomes.some((o) => o.outcome === 'acquired')) return undefined;
  return 'all';
}

/**
 * Whether a round waited for a reply that did not come within `nodeTimeout` from a node not known
 * down: the load (the fleet's, or this process's) is above what the gate's bound assumes.
 */
function timedOut(result: AttemptResult, nodes: readonly RedisNode[]): boolean {
  if (result.acquired) {
    return result.replies.some((reply, i) => reply.kind === 'timeout' && nodes[i].isDown !== true);
  }
  return result.outcomes.some((o, i) => o.outcome === 'timeout' && nodes[i].isDown !== true);
}

/** How many nodes are known down right now (a closed connection, not a slow one). */
function knownDown(nodes: readonly RedisNode[]): number {
  let down = 0;
  for (const node of nodes) if (node.isDown === true) down++;
  return down;
}
