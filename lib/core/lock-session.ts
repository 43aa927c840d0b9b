import type { AsyncLocalStorage } from 'node:async_hooks';
import { AutoExtender } from './auto-extender';
import type { Clock } from './clock';
import type { LockLostError } from './errors';
import type { RedlockLock } from './lock';

/** The async context of a lock session: the lock held by this context and the one around it. */
export interface LockScope {
  readonly lock: RedlockLock;
  readonly outer?: LockScope;
}

/** Settings of a session's auto-extension; `undefined` turns it off. */
export interface SessionExtension {
  readonly retryDelay: number;
  /** Longest total hold with auto-extension, in ms. */
  readonly maxHold: number;
}

/**
 * A lock held for the duration of some work — a `using()` routine, or a handler's Promise or
 * Observable in the Nest interceptor: the lock is extended while the work runs (or watched
 * for expiry when it is not), the work runs in an async scope where `currentLock()` finds it,
 * and `end()` stops the extension and releases.
 */
export class LockSession {
  private readonly extender?: AutoExtender;
  private ending?: Promise<LockLostError | undefined>;

  constructor(
    /** The held lock. */
    readonly lock: RedlockLock,
    private readonly scope: AsyncLocalStorage<LockScope>,
    clock: Clock,
    extension: SessionExtension | undefined,
  ) {
    // Whether or not it is extended, a lock held for some work is watched: the moment its
    // validity runs out, its signal aborts and the loss is reported.
    lock.watchExpiry();
    if (extension === undefined) return;
    this.extender = new AutoExtender(lock, {
      ttl: lock.ttl,
      retryDelay: extension.retryDelay,
      holdUntil: clock.now() + extension.maxHold,
      clock,
    });
    this.extender.start();
  }

  /** Runs `work` in the lock's async scope (synchronously; what it starts inherits the scope). */
  run<R>(work: () => R): R {
    return this.scope.run({ lock: this.lock, outer: this.scope.getStore() }, work);
  }

  /**
   * Stops extending and releases (idempotent, never rejects). Resolves to the LockLostError
   * if the lock was lost before the end, so the caller can report the work as unprotected.
   */
  end(): Promise<LockLostError | undefined> {
    this.ending ??= (async () => {
      this.extender?.stop();
      await this.lock.release();
      return this.lock.lostReason;
    })();
    return this.ending;
  }
}
