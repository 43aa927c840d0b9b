import { randomBytes } from 'node:crypto';
import type { AcquisitionCall, AcquisitionLoop, GrantedAttempt } from './acquisition';
import type { ReleaseNotifier } from './notifier';
import type { RandomSource } from '../random';
import type { RoundContext } from './rounds';
import type { ClockTimer } from '../clock';
import type { LockNotAcquiredReason } from '../errors';
import type { RedlockLock } from '../lease/lock';
import type { HandOffReply, RedisNode } from '../nodes/node';
import type { BlockedNodes, Notice, WaiterHandle } from './release-notices';
import type { Clock } from '../clock';
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
 */
export interface Line {
  readonly key: string;
  readonly queueKey: string;
  /** Random per line: the nodes queue groups by it, announcements name it. Not a secret. */
  readonly group: string;
  holder?: RedlockLock;
  /** A waiter of the line is attempting (or sleeping between attempts) in the nodes' queue. */
  head: boolean;
  readonly waiters: LocalWaiter[];
  /** Rings the head: its turn came, a release nobody was queued for, a reservation unclaimed. */
  readonly alarm: Alarm;
  /** The line's subscription to the key's announcements (while it has waiters). */
  handle?: WaiterHandle;
  /** Whether the group may be in the nodes' queue (a failed attempt or a hand-off queued it). */
  queued: boolean;
  /** Why its latest attempt failed: what a waiter that gives up behind it reports. */
  reason: LockNotAcquiredReason;
  /** Per announcement naming this group: how many nodes named it so far. */
  named?: Map<string, number>;
  /** Per plain release announcement: how many nodes the head's attempt was blocked on announced it. */
  released?: Map<string, number>;
  /** Where the head's last attempt met another owner's key (notifier.ts BlockedNodes). */
  blocked?: BlockedNodes;
  /** While the head's attempt is out: plain releases heard, judged once it reports. */
  trying?: Notice[];
  /** Announcements naming another group, seen. */
  others?: Set<string>;
  /** Rings the head if the group named before it does not claim within the reservation. */
  unclaimed?: ClockTimer;
  /** Rings the head a little after the first node named it, if no quorum of nodes did. */
  turn?: ClockTimer;
}

/** How many recent announcement ids a line remembers. */
export const REMEMBERED = 16;

/** A new line on `key`, its group named `group`. */
export function newLine(key: string, group: string): Line {
  return {
    key,
    // NUL in the name, like the membership's keys: no resource name can collide with it.
    queueKey: `${key}\0q`,
    // Not a secret (announcements name it): a process prefix and a counter, no random draw per line.
    group,
    head: false,
    waiters: [],
    alarm: new Alarm(),
    queued: false,
    reason: 'held',
    // named, released, others: made when the first announcement is heard (a contended key);
    // an uncontended lock's line never needs them.
  };
}

/** One node's hand-off request, refused clearly by a node that cannot queue. */
export function handOff(
  node: RedisNode,
  line: Line,
  value: string,
  request: Parameters<NonNullable<RedisNode['handOff']>>[3],
): Promise<HandOffReply> {
  if (node.handOff === undefined) throw new Error(`node ${node.name} cannot hand off`);
  return node.handOff(line.key, line.queueKey, value, request);
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
