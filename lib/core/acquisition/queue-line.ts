import { randomBytes } from 'node:crypto';
import type { AcquisitionCall, AcquisitionLoop, GrantedAttempt } from './acquisition';
import { unheardBy, type AttemptReport, type WaitingStrategy } from './waiting';
import type { ReleaseNotifier } from './notifier';
import type { RandomSource } from '../random';
import type { RoundContext } from './rounds';
import type { Clock, ClockTimer } from '../clock';
import type { LockNotAcquiredReason } from '../errors';
import type { RedlockLock } from '../lease/lock';
import type { HandOffReply, HandOffRequest, RedisNode } from '../nodes/node';
import type { ServerClocks } from './server-clocks';
import type { BlockedNodes, Notice, WaiterHandle } from './release-notices';
import { Alarm } from './sleep';

/*
 * A fair queue's line on one key (fair-queue.ts): this lock manager's waiters on it, its group
 * in the nodes' queues, and the small helpers the queue uses on it.
 */

/** What a fair queue needs of the lock manager that composes it. */
export interface FairQueueParts {
  readonly clock: Clock;
  readonly round: RoundContext;
  readonly notifier: ReleaseNotifier;
  readonly loop: AcquisitionLoop;
  /** How long a reservation for the next group lasts (`handOffLease`). */
  readonly leaseMs: number;
  readonly retryJitter: number;
  /** Resolves once every voter's lease horizon covers `ttl` (membership, architecture.md §5.7). */
  readonly cover: (ttl: number) => Promise<void> | undefined;
  /** Builds the lock of a granted attempt (or hand-off) and counts it as held. */
  readonly hold: (call: AcquisitionCall, value: string, result: GrantedAttempt) => RedlockLock;
  /** Reports a hand-off as an acquisition (the `acquired` event). */
  readonly acquired: (call: AcquisitionCall, lock: RedlockLock) => void;
  /**
   * The source of the queue's jitter and, when injected (a simulation), of owner values and the
   * group ids' prefix; absent: `Math.random`, the CSPRNG and this process's prefix.
   */
  readonly random?: RandomSource;
}

/** This process's prefix of group ids (random, so that two processes never share one). */
const GROUP_PREFIX = randomBytes(6).toString('base64url');
let groupSeq = 0;

/** A new group id of this process (a fair queue without an injected random source). */
export function newGroupId(): string {
  return GROUP_PREFIX + (groupSeq = (groupSeq + 1) % Number.MAX_SAFE_INTEGER).toString(36);
}
/** A waiter of this process on a line, behind its holder or its head. */
export interface LocalWaiter {
  readonly call: AcquisitionCall;
  /**
   * Its wait ended (gave up, aborted) while a hand-off to it was out, off the line: whatever
   * that hand-off brings, it does not keep (issue 24 item 2).
   */
  left?: { error: unknown };
  /** Settles its wait: a lock handed to it, its turn as the head (after a sleep when `behind`), or an error. */
  settle(outcome: { lock: RedlockLock } | { behind: boolean } | { error: unknown }): void;
}

/**
 * This lock manager's waiters on one key (its "group" in the nodes' queues): the lock it holds
 * on the key through the queue, if any; the head, which alone attempts; the rest, in the order
 * they came, each handed the lock by its predecessor's release when it is next.
 *
 * A class with every field set in its constructor, not an object literal that gains its optional
 * fields as it goes: a fair manager opens a line per acquisition of an uncontended key, and lines
 * of one shape keep the queue's property reads monomorphic (bench S1, fairness 'queue').
 */
export class Line {
  readonly queueKey: string;
  holder: RedlockLock | undefined = undefined;
  /** A waiter of the line is attempting (or sleeping between attempts) in the nodes' queue. */
  head = false;
  readonly waiters: LocalWaiter[] = [];
  private rings?: Alarm;
  /** The line's subscription to the key's announcements (while it has waiters). */
  handle: WaiterHandle | undefined = undefined;
  /** Whether the group may be in the nodes' queue (a failed attempt or a hand-off queued it). */
  queued = false;
  /** Why its latest attempt failed: what a waiter that gives up behind it reports. */
  reason: LockNotAcquiredReason = 'held';
  /** When the head's latest failed attempt said the lock becomes obtainable (its retryAfterMs). */
  retryAt: number | undefined = undefined;
  /** Per announcement naming this group: how many nodes named it so far. */
  named: Map<string, number> | undefined = undefined;
  /**
   * The nodes the head's last attempt was blocked on that announced a release since (by index;
   * a notice without one, by release id).
   */
  releasedOn: Set<number | string> | undefined = undefined;
  /** Where the head's last attempt met another owner's key (notifier.ts BlockedNodes). */
  blocked: BlockedNodes | undefined = undefined;
  /** The nodes the head's last attempt did not hear from (waiting.ts unheardBy). */
  unheard: BlockedNodes | undefined = undefined;
  /** While the head's attempt is out: plain releases heard, judged once it reports. */
  trying: Notice[] | undefined = undefined;
  /** Announcements naming another group, seen. */
  others: Set<string> | undefined = undefined;
  /** Rings the head if the group named before it does not claim within the reservation. */
  unclaimed: ClockTimer | undefined = undefined;
  /** Rings the head a little after the first node named it, if no quorum of nodes did. */
  turn: ClockTimer | undefined = undefined;

  constructor(
    readonly key: string,
    /**
     * Per line: the nodes queue groups by it, announcements name it. Not a secret: a process
     * prefix and a counter ({@link newGroupId}), no random draw per line.
     */
    readonly group: string,
  ) {
    // NUL in the name, like the membership's keys: no resource name can collide with it.
    this.queueKey = `${key}\0q`;
  }

  /**
   * Rings the head: its turn came, a release nobody was queued for, a reservation unclaimed.
   * Made on first use: the line of a lock taken at its first attempt never sleeps on it.
   */
  get alarm(): Alarm {
    return (this.rings ??= new Alarm());
  }
}

/** How many recent announcement ids a line remembers. */
export const REMEMBERED = 16;

/**
 * How long a head named by fewer than a quorum of nodes waits for the others' announcements of
 * the same release before it tries (ms). They left in one fan-out and come within a fraction of a
 * millisecond on a LAN; a node that named another group (the queues differ) never names this
 * one. Trying early costs at most an attempt that fails where the release has not yet run (the
 * namings heard after it still ring the head), and waiting is the lock idle with a waiter in
 * line: at 20 ms, bench/fair-rates.mjs at 300 requests/s saw 6-14 such pauses per 10 s and a
 * wait p99 of 48-79 ms; at 5 ms none over 15 ms, and p99 12-21 ms (issue 24 item 2b).
 */
export const TURN_MS = 5;

/**
 * One node's hand-off request, refused clearly by a node that cannot queue. With the next local
 * waiter's start (`startedAt`, monotonic ms) and the clock estimates, that start is sent on the
 * node's clock where it is known (server-clocks.ts).
 */
export function handOff(
  node: RedisNode,
  line: Line,
  value: string,
  request: HandOffRequest,
  clocks?: ServerClocks,
  startedAt?: number,
): Promise<HandOffReply> {
  if (node.handOff === undefined) throw new Error(`node ${node.name} cannot hand off`);
  const { next } = request;
  const startedOnServer =
    next === undefined || startedAt === undefined ? undefined : clocks?.onServer(node, startedAt);
  if (next === undefined || startedOnServer === undefined) {
    return node.handOff(line.key, line.queueKey, value, request);
  }
  const { group, leaseMs, announce } = request;
  const onNode = { value: next.value, ttl: next.ttl, ageMs: next.ageMs, startedOnServer };
  return node.handOff(line.key, line.queueKey, value, { group, next: onNode, leaseMs, announce });
}

/** Sets `key` in a small map that forgets its oldest entry past {@link REMEMBERED}. */
export function remember(map: Map<string, number>, key: string, value: number): void {
  map.set(key, value);
  if (map.size > REMEMBERED) map.delete(map.keys().next().value as string);
}

/** How many contended keys a fair queue remembers, and for how long (ms). */
const REMEMBERED_CONTENDED = 1_024;
const CONTENDED_FOR_MS = 10_000;

/**
 * Keys a fair queue saw contended lately (bounded: the oldest are forgotten first): their
 * waiters join the queue at once instead of first trying as plain waiters.
 */
export class ContendedKeys {
  /** Monotonic time each key was last seen contended, oldest first. */
  private readonly seen = new Map<string, number>();

  constructor(private readonly clock: Clock) {}

  /** Remembers that `key` had waiters. */
  saw(key: string): void {
    this.seen.delete(key);
    this.seen.set(key, this.clock.now());
    if (this.seen.size > REMEMBERED_CONTENDED) {
      this.seen.delete(this.seen.keys().next().value as string);
    }
  }

  /** Whether `key` was seen contended within the last CONTENDED_FOR_MS. */
  lately(key: string): boolean {
    const at = this.seen.get(key);
    return at !== undefined && this.clock.now() - at < CONTENDED_FOR_MS;
  }
}

/** What {@link HeadWaiting} calls back into its fair queue. */
export interface HeadHooks {
  /** Subscribes the line to the key's announcements, once. */
  listen(line: Line): void;
  /** One node's announcement on the line's key. */
  heard(line: Line, notice: Notice): void;
  /** The key had waiters: its next waiters queue at once. */
  contended(key: string): void;
  /** The lock manager's clock. */
  now(): number;
}

/**
 * How a line's head waits (fair-queue.ts): for its group's turn, announced by the nodes. A class,
 * one object per acquisition, rather than a literal of seven closures: the fair manager makes one
 * for every acquisition, also of an uncontended key (bench S1).
 */
export class HeadWaiting implements WaitingStrategy {
  readonly sharesPollRate = false;

  constructor(
    private readonly line: Line,
    private readonly hooks: HeadHooks,
  ) {}

  get alarm(): Alarm {
    return this.line.alarm;
  }

  listening(): boolean {
    return this.line.handle?.listening() ?? false;
  }

  attempting(): void {
    this.line.trying = [];
  }

  attempted(blocked?: BlockedNodes, failure?: AttemptReport): void {
    const line = this.line;
    const retryAfterMs = failure?.retryAfterMs;
    line.retryAt = retryAfterMs === undefined ? undefined : this.hooks.now() + retryAfterMs;
    line.releasedOn = undefined;
    // Its next attempt is queued (and this one, if queued, queued the group where held).
    line.queued = true;
    line.blocked = blocked;
    // A release on a node it did not hear from counts too, but is not waited for (unheardBy).
    line.unheard = failure === undefined ? undefined : unheardBy(failure);
    const heard = line.trying ?? [];
    line.trying = undefined;
    for (const notice of heard) this.hooks.heard(line, notice);
  }

  doubtful(): boolean {
    return false;
  }

  willSleep(): void {
    this.hooks.contended(this.line.key);
    this.hooks.listen(this.line);
  }

  stop(): void {
    // Nothing to undo: the line keeps its subscription while it has waiters (FairQueue.next).
  }
}

/**
 * What a waiter that gives up in line is told of when to retry (`retryAfterMs`, an HTTP 409's
 * `Retry-After`), as a waiter that attempted would be: the lease of the lock manager's own holder
 * when the line has one (it attempted nothing: it waited for that holder's hand-off), else what
 * the head's latest attempt read of the blocking lease, while that is still ahead.
 */
export function retryAfter(line: Line, now: number): number | undefined {
  if (line.reason !== 'held') return undefined;
  if (line.holder !== undefined) return Math.max(1, line.holder.remainingMs());
  return line.retryAt !== undefined && line.retryAt > now ? line.retryAt - now : undefined;
}
