import type { Clock } from './clock';
import { LockLostError } from './errors';

/**
 * A held lock. Obtained from `acquire()`, `tryAcquire()` or `using()`; usable with
 * `await using lock = await redlock.acquire('r')`.
 */
export interface Lock {
  /** The locked resources, de-duplicated and sorted. */
  readonly resources: readonly string[];
  /** The random owner value that proves ownership to the nodes. A secret: never log it. */
  readonly value: string;
  /** The fencing token, when fencing is on. */
  readonly fencingToken?: number;
  /** Epoch ms by which the lock must no longer be relied on (updated by each extension). */
  readonly expiresAt: number;
  /** Validity left in ms, on the monotonic clock; 0 once expired, lost or released. */
  remainingMs(): number;
  /**
   * Aborts, with a {@link LockLostError} as its reason, the moment the lock is known lost: its
   * validity ran out without an extension, or a quorum no longer holds it. Pass it to
   * whatever the lock protects so that work stops when protection does.
   */
  readonly signal: AbortSignal;
  /**
   * Extends the lease to `ttl` ms (default: the ttl it was acquired with), measured from the
   * start of the call.
   * @throws LockLostError when a quorum could not be extended in time. If the nodes still
   *   hold the lock, it stays valid for the rest of its current lease (see `remainingMs()`).
   */
  extend(ttl?: number): Promise<void>;
  /** Releases on every node. Never throws, also for an expired or already released lock. */
  release(): Promise<void>;
  /** Same as `release()`, for `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** What a lock handle needs from the lock manager that issued it. */
export interface LockDriver {
  readonly clock: Clock;
  extend(lock: RedlockLock, ttl: number): Promise<void>;
  release(lock: RedlockLock): Promise<void>;
  /** Reports a lock that became lost (event, warning). */
  lost(lock: RedlockLock, error: LockLostError): void;
}

type LockState = 'held' | 'lost' | 'released';

/**
 * `Symbol.asyncDispose`, also where the realm lacks it (a `vm` context such as jest 29's test
 * environment): Node defines it as the registered `Symbol.for('nodejs.asyncDispose')`, the same
 * symbol in every realm, so `await using` finds the method wherever the lock was created.
 */
const ASYNC_DISPOSE: typeof Symbol.asyncDispose =
  Symbol.asyncDispose ?? (Symbol.for('nodejs.asyncDispose') as typeof Symbol.asyncDispose);

/**
 * The lock handle. Keeps the validity deadline on the monotonic clock and the lost-lock
 * signal; the protocol itself lives in the driver (the `Redlock` that issued it).
 */
export class RedlockLock implements Lock {
  private state: LockState = 'held';
  private deadline: number;
  private expiresAtMs: number;
  private controller?: AbortController;
  private expiryTimer?: NodeJS.Timeout;
  private releasing?: Promise<void>;
  private lostError?: LockLostError;

  constructor(
    private readonly driver: LockDriver,
    readonly resources: readonly string[],
    /** The Redis keys (prefixed resources). */
    readonly keys: readonly string[],
    readonly value: string,
    /** The lease the lock was acquired with; the default for `extend()`. */
    readonly ttl: number,
    deadline: number,
  ) {
    this.deadline = deadline;
    this.expiresAtMs = Date.now() + (deadline - driver.clock.now());
  }

  get expiresAt(): number {
    return this.expiresAtMs;
  }

  /** True until the lock is released or known lost. */
  get isHeld(): boolean {
    return this.state === 'held';
  }

  /** Why the lock was lost, once it is. */
  get lostReason(): LockLostError | undefined {
    return this.lostError;
  }

  get signal(): AbortSignal {
    if (this.controller === undefined) {
      // Created on first use: most locks are never asked for their signal, and a lock nobody
      // watches needs no expiry timer either.
      this.controller = new AbortController();
      if (this.lostError) this.controller.abort(this.lostError);
      else this.watchExpiry();
    }
    return this.controller.signal;
  }

  remainingMs(): number {
    return this.state === 'held' ? Math.max(0, this.deadline - this.driver.clock.now()) : 0;
  }

  extend(ttl: number = this.ttl): Promise<void> {
    return this.driver.extend(this, ttl);
  }

  release(): Promise<void> {
    this.releasing ??= this.driver.release(this);
    return this.releasing;
  }

  [ASYNC_DISPOSE](): Promise<void> {
    return this.release();
  }

  /**
   * Marks the lock lost once its validity runs out without an extension. Armed when someone
   * watches the lock (its signal, `using()`); re-armed by every extension.
   */
  watchExpiry(): void {
    if (this.state !== 'held') return;
    clearTimeout(this.expiryTimer);
    const left = this.deadline - this.driver.clock.now();
    this.expiryTimer = setTimeout(() => this.onExpiry(), Math.max(0, left));
    // Reporting a loss is no reason to keep a process alive that has nothing else to do.
    this.expiryTimer.unref();
  }

  /** Records a successful extension. */
  renew(deadline: number): void {
    if (this.state !== 'held') return;
    this.deadline = deadline;
    this.expiresAtMs = Date.now() + (deadline - this.driver.clock.now());
    if (this.expiryTimer !== undefined) this.watchExpiry();
  }

  /** Marks the lock lost, aborts its signal and reports it; false if it was not held. */
  markLost(error: LockLostError): boolean {
    if (this.state !== 'held') return false;
    this.state = 'lost';
    this.lostError = error;
    clearTimeout(this.expiryTimer);
    this.controller?.abort(error);
    this.driver.lost(this, error);
    return true;
  }

  /** Marks the lock released; its signal stays as it is (a released lock was not lost). */
  markReleased(): void {
    if (this.state === 'held') this.state = 'released';
    clearTimeout(this.expiryTimer);
  }

  private onExpiry(): void {
    // A timer can fire a little early relative to the monotonic clock; re-check.
    if (this.state !== 'held') return;
    if (this.driver.clock.now() < this.deadline) return this.watchExpiry();
    this.markLost(new LockLostError(this.resources));
  }
}
