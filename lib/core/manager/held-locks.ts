import type { AcquisitionCall, GrantedAttempt } from '../acquisition/acquisition';
import type { Clock } from '../clock';
import { LockLostError } from '../errors';
import type { HeldLockInfo } from '../inspection';
import { RedlockLock, type LockDriver, type SessionLock } from '../lease/lock';
import type { LockObserver } from '../observability/observer';

/** How a held lock's rounds run: supplied by the lock manager that composes the registry. */
export interface LeaseRounds {
  /** One release round; `notSent` marks the nodes the grant skipped (nothing to delete there). */
  release(lock: RedlockLock, notSent: readonly boolean[] | undefined): Promise<void>;
  /** One extension round to `ttl`: the new deadline, or whether the lock was lost. */
  extend(lock: RedlockLock, ttl: number): Promise<{ deadline: number } | { lost: boolean }>;
  /** The lock left the held state (a fair queue forgets its turn). */
  ended?(lock: RedlockLock): void;
}

/**
 * The locks this process holds through one lock manager: built from granted attempts, counted
 * while held (for `heldLocks()`, `inspect()`'s `heldHere`, the `redlock.locks.held` gauge and
 * `close()`), and driven — extended, released, reported lost — through the lock manager's
 * rounds and its observer. The lease object itself is `RedlockLock` (lock.ts).
 */
export class HeldLocks {
  private readonly held = new Set<RedlockLock>();
  /** Per lock, the nodes its grant did not send to (nothing of it to release there). */
  private readonly notSent = new WeakMap<RedlockLock, readonly boolean[]>();
  private readonly driver: LockDriver;

  constructor(clock: Clock, rounds: LeaseRounds, observer: LockObserver) {
    this.driver = {
      clock,
      extend: (lock, ttl) => rounds.extend(lock, ttl),
      release: (lock) => observer.release(lock, () => rounds.release(lock, this.notSent.get(lock))),
      ended: (lock) => {
        this.held.delete(lock);
        rounds.ended?.(lock);
      },
      lost: (lock: SessionLock, error: LockLostError) => observer.lost(lock, error),
    };
  }

  /** Builds the lock of a granted attempt and counts it as held. */
  add(call: AcquisitionCall, value: string, result: GrantedAttempt): RedlockLock {
    const lock = new RedlockLock(
      this.driver,
      call.names,
      call.keys,
      value,
      call.settings.ttl,
      result.deadline,
      result.fencingToken,
    );
    this.held.add(lock);
    if (result.skipped !== undefined) this.notSent.set(lock, result.skipped);
    return lock;
  }

  /** How many locks are held now. */
  get size(): number {
    return this.held.size;
  }

  /** Whether a lock held now covers `resource`. */
  covers(resource: string): boolean {
    for (const lock of this.held) if (lock.resources.includes(resource)) return true;
    return false;
  }

  /** What `heldLocks()` reports: resources, held for, validity left, extensions, token. */
  list(now: number): HeldLockInfo[] {
    return [...this.held].map((lock) => ({
      resources: lock.resources,
      heldMs: now - lock.acquiredAt,
      remainingMs: lock.remainingMs(),
      extensions: lock.extensions,
      fencingToken: lock.fencingToken,
    }));
  }

  /**
   * Ends every lock still held as lost — whatever it protects is no longer protected, so its
   * signal aborts and a warning names it — and releases them (the lock manager is closing).
   */
  endAll(): Promise<void> {
    return Promise.all(
      [...this.held].map((lock) => {
        lock.markLost(
          new LockLostError(lock.resources, 'its lock manager was closed while it was held'),
        );
        return lock.release();
      }),
    ).then(() => undefined);
  }
}
