import type { Clock, ClockTimer } from '../clock';
import { LockLostError, LockNotExtendedError } from '../errors';

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
   * True while the lock is held and its validity has not run out, read from the clock at the
   * moment of the call. Unlike `signal.aborted`, this is right also just after the process was
   * paused (GC, a stalled VM): a signal can only abort once the process runs its timers again.
   */
  isValid(): boolean;
  /**
   * Throws {@link LockLostError} unless {@link isValid}: call it right before each write the
   * lock protects. The check is synchronous, so nothing can run between it and the write
   * that follows in the same tick.
   * @example
   * lock.throwIfExpired();
   * await db.update(row); // the write starts while the lock was valid
   */
  throwIfExpired(): void;
  /**
   * Aborts, with a {@link LockLostError} as its reason, the moment the lock is known lost: its
   * validity ran out without an extension, or a quorum no longer holds it. Pass it to
   * whatever the lock protects so that work stops when protection does.
   */
  readonly signal: AbortSignal;
  /**
   * Extends the lease to `ttl` ms (default: the ttl it was acquired with), measured from the
   * start of the call.
   * @throws LockNotExtendedError when a quorum could not be extended in time but the lock is
   *   still valid for the rest of its current lease (`error.remainingMs`): not a loss.
   * @throws LockLostError when the lock is lost (expired, released, or a quorum of nodes no
   *   longer holds it); `signal` aborts with the same error.
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
  /** One extension round: the new deadline, or why not. */
  extend(lock: RedlockLock, ttl: number): Promise<{ deadline: number } | { lost: boolean }>;
  /** The release round (the lock is already marked released). */
  release(lock: RedlockLock): Promise<void>;
  /** The lock left the held state (released or lost): drop it from the registry. */
  ended(lock: RedlockLock): void;
  /**
   * Reports a lock that became lost (event, warning): the lock itself, or a nested holder's
   * handle whose outer holder released the lock while it still ran.
   */
  lost(lock: SessionLock, error: LockLostError): void;
}

/** Settings of a lock's auto-extension. */
export interface AutoExtension {
  /** The lease each extension asks for. */
  readonly ttl: number;
  /** Pause before retrying a failed extension (capped by the validity left). */
  readonly retryDelay: number;
  /** Monotonic time after which no more extensions are made (`Infinity` for no cap). */
  readonly holdUntil: number;
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
 * The lease: one object owns a lock's whole life (architecture.md §3.1) — its deadline on the monotonic
 * clock, the expiry timer that declares it lost at that deadline (always armed, so a lock
 * nobody releases still leaves the registry and is reported), its signal, its auto-extension
 * schedule (computed from the deadline, not from when the work started), and its release.
 * A loss is declared in one place only: {@link markLost}.
 */
export class RedlockLock implements Lock {
  /** Monotonic time of the grant. */
  readonly acquiredAt: number;
  /** Successful extensions so far. */
  extensions = 0;
  private state: LockState = 'held';
  private deadline: number;
  private expiresAtMs: number;
  private controller?: AbortController;
  private expiryTimer?: ClockTimer;
  private extension?: AutoExtension;
  private extensionTimer?: ClockTimer;
  private releasing?: Promise<void>;
  private lostError?: LockLostError;
  /** Nested holders' handles still in use: each is told when this lock ends (architecture.md §5.9). */
  private borrowers?: Set<ReentrantLock>;

  constructor(
    private readonly driver: LockDriver,
    readonly resources: readonly string[],
    /** The Redis keys (prefixed resources). */
    readonly keys: readonly string[],
    readonly value: string,
    /** The lease the lock was acquired with; the default for `extend()`. */
    readonly ttl: number,
    deadline: number,
    /** The fencing token, when the lock was acquired with fencing. */
    readonly fencingToken?: number,
  ) {
    this.deadline = deadline;
    this.acquiredAt = driver.clock.now();
    this.expiresAtMs = Date.now() + (deadline - this.acquiredAt);
    this.watchExpiry();
  }

  get expiresAt(): number {
    return this.expiresAtMs;
  }

  /** The lock itself (a nested, reentrant handle points here too). */
  get root(): RedlockLock {
    return this;
  }

  /** True until the lock is released or known lost (the deadline may still have passed). */
  get isHeld(): boolean {
    return this.state === 'held';
  }

  /** Why the lock was lost, once it is. */
  get lostReason(): LockLostError | undefined {
    return this.lostError;
  }

  get signal(): AbortSignal {
    // Created on first use: most locks are never asked for their signal.
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.lostError) this.controller.abort(this.lostError);
    }
    return this.controller.signal;
  }

  remainingMs(): number {
    return this.state === 'held' ? Math.max(0, this.deadline - this.driver.clock.now()) : 0;
  }

  isValid(): boolean {
    return this.checkDeadline();
  }

  throwIfExpired(): void {
    if (this.checkDeadline()) return;
    throw this.lostError ?? new LockLostError(this.resources, 'it was released');
  }

  async extend(ttl: number = this.ttl): Promise<void> {
    if (!this.checkDeadline()) {
      throw this.lostError ?? new LockLostError(this.resources, 'it was released');
    }
    const result = await this.driver.extend(this, ttl);
    // Lost or released while the round was in flight: an extension that landed does not undo it.
    if (!this.checkDeadline()) {
      throw (
        this.lostError ?? new LockLostError(this.resources, 'it was released while being extended')
      );
    }
    if ('deadline' in result) {
      this.extensions++;
      this.deadline = result.deadline;
      this.expiresAtMs = Date.now() + (result.deadline - this.driver.clock.now());
      this.watchExpiry();
      return;
    }
    if (result.lost) {
      const error = new LockLostError(this.resources, 'a quorum of nodes no longer holds it');
      this.markLost(error);
      throw error;
    }
    throw new LockNotExtendedError(this.resources, this.remainingMs());
  }

  release(): Promise<void> {
    this.releasing ??= (async () => {
      // A lock whose deadline passed while the process could not run its timers (a blocked
      // event loop, a pause) was lost before this release, whatever the timer would have said.
      this.checkDeadline();
      this.end('released');
      await this.driver.release(this);
    })();
    return this.releasing;
  }

  [ASYNC_DISPOSE](): Promise<void> {
    return this.release();
  }

  /**
   * Keeps the lock alive until it is released (architecture.md §5.4): an extension a third of the way
   * into the validity left (so two more chances remain before it ends), a failed one retried
   * after `retryDelay` while validity remains. It never declares a loss itself: the expiry
   * timer does, at the deadline, whether or not an extension is in flight.
   */
  autoExtend(settings: AutoExtension): void {
    this.extension = settings;
    this.scheduleExtension(this.remainingMs() / 3);
  }

  /**
   * A nested holder's handle on this held lock (reentrancy, architecture.md §5.9). It cannot outlive the
   * lock: when this lock ends — released by its outer holder, or lost — a handle not yet
   * released is lost too (its signal aborts, a nested `using()` rejects with LockLostError),
   * since whatever it still does is no longer protected.
   */
  borrow(resources: readonly string[]): ReentrantLock {
    const handle = new ReentrantLock(this, resources);
    (this.borrowers ??= new Set()).add(handle);
    return handle;
  }

  /** A nested handle was released before this lock ended: nothing to tell it any more. */
  returned(handle: ReentrantLock): void {
    this.borrowers?.delete(handle);
  }

  /** Marks the lock lost, aborts its signal and reports it; false if it was not held. */
  markLost(error: LockLostError): boolean {
    if (this.state !== 'held') return false;
    this.lostError = error;
    this.end('lost');
    this.controller?.abort(error);
    this.driver.lost(this, error);
    return true;
  }

  /** True while held and within the deadline; a passed deadline is declared lost here. */
  private checkDeadline(): boolean {
    if (this.state !== 'held') return false;
    if (this.driver.clock.now() < this.deadline) return true;
    this.markLost(new LockLostError(this.resources));
    return false;
  }

  private end(state: 'lost' | 'released'): void {
    if (this.state !== 'held') return;
    this.state = state;
    this.driver.clock.clearTimer(this.expiryTimer);
    this.driver.clock.clearTimer(this.extensionTimer);
    this.driver.ended(this);
    const borrowers = this.borrowers;
    this.borrowers = undefined;
    for (const handle of borrowers ?? []) {
      // A loss is the same loss for the nested holder (reported once, for the lock). A release
      // by the outer holder leaves the nested work running unprotected, which is a loss for it
      // — a new holder may enter as soon as the release reaches the nodes — reported as such.
      if (this.lostError !== undefined) {
        handle.outerEnded(this.lostError);
        continue;
      }
      const error = new LockLostError(
        handle.resources,
        'its outer holder released the lock while this nested holder still ran',
      );
      handle.outerEnded(error);
      this.driver.lost(handle, error);
    }
  }

  private watchExpiry(): void {
    this.driver.clock.clearTimer(this.expiryTimer);
    const left = this.deadline - this.driver.clock.now();
    // A timer may fire a little early relative to the monotonic clock: re-check, re-arm.
    this.expiryTimer = this.driver.clock.setTimer(() => {
      if (this.checkDeadline()) this.watchExpiry();
    }, left);
  }

  private scheduleExtension(delay: number): void {
    const extension = this.extension;
    if (extension === undefined || this.state !== 'held') return;
    if (this.driver.clock.now() + delay >= extension.holdUntil) return;
    this.driver.clock.clearTimer(this.extensionTimer);
    this.extensionTimer = this.driver.clock.setTimer(() => void this.extendOnce(extension), delay);
  }

  private async extendOnce(extension: AutoExtension): Promise<void> {
    try {
      await this.extend(extension.ttl);
      this.scheduleExtension(this.remainingMs() / 3);
    } catch {
      // Not extended. If the lock is lost, extend() said so (and nothing is scheduled on a lock
      // that is not held); otherwise try again while the current lease lasts — at least 1 ms
      // apart: a round can fail without waiting for anything (too many nodes suspected hung to
      // reach a quorum), and halving the validity left would then retry ever faster, never
      // letting the expiry timer's moment arrive (found by the simulation).
      this.scheduleExtension(Math.max(1, Math.min(extension.retryDelay, this.remainingMs() / 2)));
    }
  }
}

/** A lock as a session holds it: the lease itself, or a reentrant handle on it. */
export type SessionLock = RedlockLock | ReentrantLock;

/**
 * A nested holder's handle on a lock its async context already holds (reentrancy, architecture.md §5.9):
 * it reads through to the lock itself — one deadline, one token — and only the outermost
 * holder's release reaches the nodes. Releasing this handle (or ending its session) does nothing
 * to the lock; extending it extends the one lock. It never outlives the lock: when the lock ends
 * first (released by the outer holder, or lost), this handle is lost — its signal aborts.
 */
export class ReentrantLock implements Lock {
  private released = false;
  /** Set when the lock ended before this handle was released: the nested holder's loss. */
  private lostError?: LockLostError;
  private controller?: AbortController;

  /** Use {@link RedlockLock.borrow}: a handle the lock does not know of would never be told. */
  constructor(
    /** The lock held by the outer holder. */
    readonly root: RedlockLock,
    /** What the nested holder asked for: a subset of the lock's resources. */
    readonly resources: readonly string[],
  ) {}

  get value(): string {
    return this.root.value;
  }
  get fencingToken(): number | undefined {
    return this.root.fencingToken;
  }
  get expiresAt(): number {
    return this.root.expiresAt;
  }
  /**
   * Its own signal, not the lock's: it must also abort when the outer holder releases the lock
   * while this nested holder still runs, which the lock's own signal (not lost) does not.
   */
  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.lostError) this.controller.abort(this.lostError);
    }
    return this.controller.signal;
  }
  get lostReason(): LockLostError | undefined {
    return this.lostError;
  }
  remainingMs(): number {
    return this.released || this.lostError ? 0 : this.root.remainingMs();
  }
  isValid(): boolean {
    // Asking the lock also declares a passed deadline lost, which reaches this handle.
    return !this.released && this.root.isValid() && this.lostError === undefined;
  }
  throwIfExpired(): void {
    if (this.lostError) throw this.lostError;
    if (this.released) throw new LockLostError(this.resources, 'it was released');
    this.root.throwIfExpired();
  }
  extend(ttl?: number): Promise<void> {
    if (this.lostError) return Promise.reject(this.lostError);
    return this.root.extend(ttl);
  }
  /** The outer holder extends the lock already. */
  autoExtend(): void {}
  async release(): Promise<void> {
    if (this.released) return;
    // A deadline that passed while timers could not run (a blocked event loop) is a loss for
    // the nested holder too: asking the lock declares it, and it reaches this handle.
    this.root.isValid();
    this.released = true;
    this.root.returned(this);
  }
  [ASYNC_DISPOSE](): Promise<void> {
    return this.release();
  }

  /** The lock ended while this handle was in use (see {@link RedlockLock.borrow}). */
  outerEnded(error: LockLostError): void {
    if (this.released || this.lostError) return;
    this.lostError = error;
    this.controller?.abort(error);
  }
}
