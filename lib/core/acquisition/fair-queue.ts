import { shuttingDown, type AcquisitionCall } from './acquisition';
import type { ClockTimer } from '../clock';
import { LockNotAcquiredError } from '../errors';
import type { RedlockLock } from '../lease/lock';
import type { AcquireReply } from '../nodes/node';
import { held, listenedSince, newReleaseId, releaseOf, type Notice } from './release-notices';
import { handedOnValue } from '../lease/owner-value';
import { acquireRound, releaseRound } from './rounds';
import {
  handOff,
  newGroupId,
  remember,
  REMEMBERED,
  TURN_MS,
  ContendedKeys,
  HeadWaiting,
  Line,
  retryAfter,
  type HeadHooks,
  type FairQueueParts,
  type LocalWaiter,
} from './queue-line';
import { idSource } from '../random';

export type { FairQueueParts } from './queue-line';

/**
 * Fair hand-off (architecture.md §5.11; docs/fair-hand-off.md): waiters on one key are served in the
 * order they started waiting, across processes, and a release hands the lock to a waiter of its
 * own process without a release + acquire when that waiter is next.
 *
 * Tickets advise, the quorum decides. Each node keeps a queue of waiting groups per key (one
 * group per lock manager and key; inside the group, waiters are first come, first served),
 * scored by when the group's oldest waiter started waiting, on that node's clock. A holder's
 * release (HAND_OFF_SCRIPT) compares its own next waiter with the node's first queued group:
 * its own next gets the key by a compare-and-swap of the owner value; another group gets a
 * short reservation of the key and an announcement naming it; only the named group attempts.
 * The key, reserved or held, is taken only through the acquire script's compare on each node
 * and counted at quorum with the validity rule, so nothing in the queue can make two holders:
 * a queue that is lost (a restart), disagrees between nodes or names a dead group costs
 * liveness (a reservation's lease, or ordinary contention), never safety.
 */
export class FairQueue {
  private readonly lines = new Map<string, Line>();
  private readonly byLock = new WeakMap<RedlockLock, Line>();
  /** Keys seen contended lately: their waiters queue at once. */
  private readonly contended: ContendedKeys;
  /** Names each new line's group. */
  private readonly groupId: () => string;
  /** What a head's waiting strategy calls back: one object per queue, not closures per head. */
  private readonly hooks: HeadHooks = {
    listen: (line) => this.listen(line),
    heard: (line, notice) => this.heard(line, notice),
    contended: (key) => this.contended.saw(key),
    now: () => this.parts.clock.now(),
  };

  constructor(private readonly parts: FairQueueParts) {
    this.groupId = parts.random === undefined ? newGroupId : idSource(parts.random);
    this.contended = new ContendedKeys(parts.clock);
  }

  /**
   * Whether an acquisition waits in a queue: one key, no fencing token (phase 2 needs its own
   * round), and a wait to spend (a single attempt, `wait: 0`, has no turn to wait for).
   */
  static eligible(
    call: Pick<AcquisitionCall, 'keys' | 'fenceKeys' | 'giveUpAt' | 'startedAt'>,
  ): boolean {
    return call.keys.length === 1 && call.fenceKeys === undefined && call.giveUpAt > call.startedAt;
  }

  /**
   * The line's key looks uncontended: its group is in no node's queue and the key was not seen
   * contended lately. Its acquisition tries the plain acquire first, its release the uncontended one.
   */
  private uncontended(line: Line): boolean {
    return !line.queued && !this.contended.lately(line.key);
  }

  /** Whether `lock` was taken through a queue (its release hands it on). */
  owns(lock: RedlockLock): boolean {
    return this.byLock.has(lock);
  }

  /** Acquires in the key's queue: handed the lock, or attempting as the line's head. */
  async acquire(call: AcquisitionCall): Promise<RedlockLock> {
    const key = call.keys[0];
    let line = this.lines.get(key);
    if (line === undefined) {
      line = new Line(key, this.groupId());
      this.lines.set(key, line);
    }
    let behind = false;
    if (line.holder !== undefined || line.head || line.waiters.length > 0) {
      this.contended.saw(key);
      this.listen(line);
      const outcome = await this.waitInLine(line, call);
      if ('lock' in outcome) return outcome.lock;
      behind = outcome.behind;
    }
    line.head = true;
    // A new head: the last one's attempts say nothing of where this one will be blocked.
    line.blocked = undefined;
    line.releasedOn = undefined;
    line.trying = undefined;
    const seat = {
      key,
      queueKey: line.queueKey,
      group: line.group,
      queued: line.queued,
      behind,
      keepMs: 2 * this.parts.leaseMs + this.parts.retryJitter + 1_000,
      plainFirst: this.uncontended(line),
    };
    let lock: RedlockLock;
    try {
      lock = await this.parts.loop.acquire(call, new HeadWaiting(line, this.hooks), seat);
    } catch (error) {
      this.contended.saw(key);
      line.head = false;
      line.queued = true;
      if (error instanceof LockNotAcquiredError) line.reason = error.reason;
      this.next(line, false);
      throw error;
    }
    line.head = false;
    // A queued attempt that won on a quorum queued the group where it met a holder: the group's
    // release takes it out there (HAND_OFF_SCRIPT), or, if the line closes first, its leave.
    if (!seat.plainFirst) line.queued = true;
    line.holder = lock;
    this.byLock.set(lock, line);
    return lock;
  }

  /**
   * A lock of a line ended (architecture.md §5.11): released — its release hands it on, nothing to do
   * here — or lost: nothing will hand it on, so the next local waiter attempts.
   */
  ended(lock: RedlockLock): void {
    const line = this.byLock.get(lock);
    if (line === undefined || lock.lostReason === undefined || line.holder !== lock) return;
    line.holder = undefined;
    this.next(line, false);
  }

  /**
   * Releases a lock taken through the queue: to this process's next waiter on the key when it
   * waited longer than every group queued on a node (a compare-and-swap there), else to the
   * nodes' first queued group (reserved and announced), else as a plain release.
   */
  async release(lock: RedlockLock, notSent?: readonly boolean[]): Promise<void> {
    const line = this.byLock.get(lock);
    if (line === undefined) return;
    this.byLock.delete(lock);
    if (line.holder === lock) line.holder = undefined;
    const { round, leaseMs, clock } = this.parts;
    let next: LocalWaiter | undefined;
    // A lost lock is handed to nobody: its holder had no quorum any more.
    if (lock.lostReason === undefined && line.holder === undefined && !line.head) {
      next = line.waiters.shift();
    }
    // The successor's lease is counted only where the horizon covers it (architecture.md §5.7). When the
    // horizon must be recorded first, no swap: waiting for that round as well would make this
    // release last longer than one round (§5.3; the fair simulation found releases of up to
    // three rounds: cover, swap, the failed swap's cleanup). The key is handed on as with no
    // local waiter, and the waiter attempts as the line's head (its attempt covers itself).
    const covering = next === undefined ? undefined : this.parts.cover(next.call.settings.ttl);
    if (covering !== undefined && next !== undefined) {
      covering.catch(() => undefined);
      line.waiters.unshift(next);
      next = undefined;
    }
    if (next === undefined) {
      // Always the hand-off script, also for a key never seen contended here: groups of other
      // processes may be queued on the nodes, and the first hand-off must be in order too (a plain
      // release would let them, and newcomers, contend). It costs what a plain release does
      // where nobody queued (issue 24 item 3): it reads the queue only where its mark says one
      // may exist (HAND_OFF_SCRIPT), 25 commands per uncontended cycle on 5 nodes either way.
      const uncontended = this.uncontended(line);
      await releaseRound(round, round.nodes, lock.keys, lock.value, notSent, (node, announce) =>
        handOff(node, line, lock.value, { group: line.group, leaseMs, announce, uncontended }),
      );
      // The hand-off took the group out of every node's queue it reached (also where the key
      // was not its own): nothing left to leave unless a head queues it again.
      if (!line.head) line.queued = false;
      if (!line.head && line.holder === undefined) this.next(line, false);
      return;
    }
    const { call } = next;
    const waiter = next;
    const clocks = round.serverClocks;
    line.head = true;
    const value = handedOnValue(this.parts.random);
    const announce = round.notify ? (round.releaseId ?? newReleaseId)() : undefined;
    let reserved = 0;
    const request = {
      group: line.group,
      next: { value, ttl: call.settings.ttl, ageMs: clock.now() - call.startedAt },
      leaseMs,
      announce,
    };
    const handing = acquireRound(
      round,
      lock.keys,
      value,
      call.settings.ttl,
      call.signal,
      undefined,
      async (node): Promise<AcquireReply> => {
        const reply = await handOff(node, line, lock.value, request, clocks, call.startedAt);
        if (reply === 'reserved') reserved++;
        return reply === 'swapped'
          ? { acquired: true }
          : { acquired: false, pttl: reply === 'reserved' ? leaseMs : 0 };
      },
    ).then((result) => this.handed(line, waiter, value, result, reserved >= round.quorum));
    // The release itself is one round (§5.3): the caller waits for the swap round at most
    // `nodeTimeout`, never for a failed swap's cleanup, which is the successor's business.
    let timer: ClockTimer | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = clock.setTimer(resolve, round.nodeTimeout);
    });
    try {
      await Promise.race([handing, bound]);
    } finally {
      clock.clearTimer(timer);
      handing.catch((error: unknown) => waiter.settle({ error }));
    }
  }

  /** The end of a hand-off to `next`: the lock handed over, or `next` attempts as the head. */
  private handed(
    line: Line,
    next: LocalWaiter,
    value: string,
    result: Awaited<ReturnType<typeof acquireRound>>,
    reservedAtQuorum: boolean,
  ): void {
    const { call } = next;
    line.head = false;
    if (result.acquired) {
      const handed = this.parts.hold(call, value, result);
      line.holder = handed;
      this.byLock.set(handed, line);
      const left = next.left ?? (call.signal?.aborted ? { error: call.signal.reason } : undefined);
      if (left !== undefined) {
        // Its wait ended while the hand-off was out: it never sees the lock, which goes on to
        // the next waiter at once (the release hands it on like any other).
        next.settle(left);
        void handed.release().catch(() => undefined);
        return;
      }
      this.parts.acquired(call, handed);
      next.settle({ lock: handed });
      return;
    }
    if (next.left !== undefined) {
      next.settle(next.left);
      line.queued = true;
      this.next(line, reservedAtQuorum);
      return;
    }
    // Not handed (another group waited longer, or no quorum swapped): the next waiter attempts,
    // after sleeping until its group's turn when a quorum reserved the key for another group.
    line.queued = true;
    line.waiters.unshift(next);
    this.next(line, reservedAtQuorum);
  }

  /** Every local waiter gives up (the lock manager drains); heads are ended by the loop. */
  drain(): void {
    for (const line of this.lines.values()) {
      for (const waiter of line.waiters.splice(0)) {
        waiter.settle({ error: shuttingDown(waiter.call.names, 0) });
      }
    }
  }

  /** Makes the line's next local waiter its head, or closes the line when it has none. */
  private next(line: Line, behind: boolean): void {
    if (line.head || line.holder !== undefined) return;
    const waiter = line.waiters.shift();
    if (waiter !== undefined) {
      line.head = true;
      waiter.settle({ behind });
      return;
    }
    this.lines.delete(line.key);
    this.clearTimers(line);
    line.handle?.stop(false);
    line.handle = undefined;
    // Gave up while queued: leave the nodes' queues, so that no release reserves the key for a
    // group nobody waits in (that would cost the next waiter a reservation's lease).
    // A key still reserved for the group (its turn came as it left) is passed on at once.
    if (line.queued) {
      const { round, leaseMs } = this.parts;
      void releaseRound(round, round.nodes, [line.key], '', undefined, (node, announce) =>
        node.leaveQueue === undefined
          ? Promise.resolve()
          : node.leaveQueue(line.queueKey, line.group, { key: line.key, leaseMs, announce }),
      );
    }
  }

  /** Waits behind the line's holder or head: handed the lock, made the head, or given up. */
  private waitInLine(
    line: Line,
    call: AcquisitionCall,
  ): Promise<{ lock: RedlockLock } | { behind: boolean }> {
    const { clock } = this.parts;
    return new Promise((resolve, reject) => {
      const onAbort = () => leave({ error: call.signal?.reason });
      const waiter: LocalWaiter = {
        call,
        settle: (outcome) => {
          clock.clearTimer(timer);
          call.signal?.removeEventListener('abort', onAbort);
          if ('error' in outcome) reject(outcome.error);
          else resolve(outcome);
        },
      };
      const leave = (outcome: { error: unknown }) => {
        const index = line.waiters.indexOf(waiter);
        // Off the line: a hand-off to it is out, and its end settles it (see `handed`).
        if (index < 0) {
          waiter.left ??= outcome;
          return;
        }
        line.waiters.splice(index, 1);
        waiter.settle(outcome);
      };
      line.waiters.push(waiter);
      // Settled only from a timer, an abort or another call's progress: never before this line.
      const timer = clock.setTimer(
        () =>
          leave({
            error: new LockNotAcquiredError(
              call.names,
              line.reason,
              0,
              [],
              retryAfter(line, clock.now()),
            ),
          }),
        Math.max(0, call.giveUpAt - clock.now()),
      );
      if (call.signal?.aborted) onAbort();
      else call.signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Subscribes the line to the key's announcements, once. */
  private listen(line: Line): void {
    line.handle ??= this.parts.notifier.watch(
      [line.key],
      line.alarm.sound,
      line.alarm.sound,
      (notice) => this.heard(line, notice),
    );
  }

  /**
   * One node's announcement on the line's key. The head tries when its group is named by a
   * quorum of nodes (or a little after the first, in case the others' queues differ), when a
   * node released with nobody queued, or when a group named before it did not claim its
   * reservation in time (it died or left); otherwise it sleeps.
   */
  private heard(line: Line, notice: Notice): void {
    const { clock, round } = this.parts;
    if (notice.kind === 'released') {
      // Only a release announced by a quorum of the nodes that blocked the head's last attempt
      // (the notifier's rule, issue 24), or by all of them when fewer answered "held" before
      // the round was decided. A failed attempt's cleanup is announced too, from the nodes it
      // took, and a head woken by its own cleanup attempted again at once, round after round
      // (bench/profile-s2.mjs: 125 failed rounds for 100 successes). Heard while its attempt is
      // out, a release waits for that attempt's result (it may be the cleanup's). A release
      // seen by fewer nodes is still met when the blocking lease ends.
      if (line.trying !== undefined) {
        line.trying.push(notice);
        if (line.trying.length > REMEMBERED * 4) line.trying.shift();
        return;
      }
      const { node, id, seq } = notice;
      const blocked = line.blocked;
      if (blocked !== undefined && node !== undefined) {
        const sentAt = listenedSince(blocked, line.unheard, node, id);
        if (sentAt === undefined || (seq !== undefined && seq <= sentAt)) return;
      }
      // What a quorum needs beyond the nodes that did not answer "held", which may be free (as
      // retryAfterMs counts). Counting held ones only, a head slept beside a free quorum until a
      // lost release's lease ended (fair search B = 3, "mixed fairness" `0:1 1:1 17:3`, 990 ms:
      // it took a node it had not waited for). Each wake-up still needs a release it can use.
      const needed =
        blocked === undefined
          ? round.quorum
          : Math.max(1, round.quorum - blocked.length + held(blocked));
      // Counted by node, not by release: after a split vote each blocking node held another
      // contender's attempt, and each of their cleanups is a release of its own announced by one
      // node. Counted per release, none reached two, and every head slept until those attempts'
      // leases ended (450 ms with the lock free, simulation-multi-waiters seed 5).
      const from = (line.releasedOn ??= new Set());
      from.add(node ?? id);
      if (from.size === needed) line.alarm.sound();
      return;
    }
    if (notice.kind === 'claimed') {
      clock.clearTimer(line.unclaimed);
      line.unclaimed = undefined;
      return;
    }
    if (notice.group === line.group) {
      // Named during an attempt that fails: a release there, for it (test/search/fair-search.ts).
      line.trying?.push(releaseOf(notice));
      const named = (line.named ??= new Map());
      const count = (named.get(notice.id) ?? 0) + 1;
      remember(named, notice.id, count);
      if (count === 1) {
        clock.clearTimer(line.unclaimed);
        line.unclaimed = undefined;
        clock.clearTimer(line.turn);
        line.turn = clock.setTimer(
          () => line.alarm.sound(),
          Math.min(round.nodeTimeout / 4, TURN_MS),
        );
      }
      if (count === round.quorum) {
        clock.clearTimer(line.turn);
        line.alarm.sound();
      }
      return;
    }
    const others = (line.others ??= new Set());
    if (others.has(notice.id)) return;
    others.add(notice.id);
    if (others.size > REMEMBERED) others.delete(others.values().next().value as string);
    clock.clearTimer(line.unclaimed);
    line.unclaimed = clock.setTimer(
      () => line.alarm.sound(),
      this.parts.leaseMs + (this.parts.random ?? Math.random)() * this.parts.retryJitter,
    );
  }

  private clearTimers(line: Line): void {
    this.parts.clock.clearTimer(line.unclaimed);
    this.parts.clock.clearTimer(line.turn);
  }
}
