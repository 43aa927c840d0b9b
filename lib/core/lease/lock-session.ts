import type { AsyncLocalStorage } from 'node:async_hooks';
import type { LockLostError } from '../errors';
import type { AutoExtension, SessionLock } from './lock';

/** The async context of a lock session: the lock held by this context and the one around it. */
export interface LockScope {
  readonly lock: SessionLock;
  readonly outer?: LockScope;
}

/** How a {@link LockSession.hold} ends its session: resolves to the loss during the work, if any. */
export type SessionEnd = (session: LockSession) => Promise<LockLostError | undefined>;

/**
 * A lock held for the duration of some work — a `using()` routine, or a handler's Promise,
 * Observable or stream in the Nest layer: the lock is extended while the work runs (unless
 * turned off), the work runs in an async scope where `currentLock()` finds it, and `end()`
 * releases. Call `end()` when the work has really stopped, not when someone stopped listening.
 */
export class LockSession {
  private ending?: Promise<LockLostError | undefined>;

  constructor(
    /** The held lock (or a reentrant handle on it). */
    readonly lock: SessionLock,
    private readonly scope: AsyncLocalStorage<LockScope>,
    extension: AutoExtension | undefined,
  ) {
    if (extension !== undefined) lock.autoExtend(extension);
  }

  /** Runs `work` in the lock's async scope (synchronously; what it starts inherits the scope). */
  run<R>(work: () => R): R {
    return this.scope.run({ lock: this.lock, outer: this.scope.getStore() }, work);
  }

  /**
   * The hold primitive (architecture.md §3.1): runs `work` in the lock's scope, auto-extended, and ends
   * the session on every exit path once the work has stopped — its Promise settled, or its
   * synchronous throw. Resolves to the work's result; rejects with the work's own error (it says
   * more than a lost lock), else with the LockLostError when the lock was lost before the end.
   * `using()` and both `@Locked` paths are built on it (through {@link Redlock.hold}).
   *
   * @param end how the session ends (default {@link end}): e.g. a lock kept for a minimum time
   *   after the work, released in the background; resolves to the loss during the work, if any.
   * @param lost what a loss during successful work rejects with (default: the LockLostError).
   */
  async hold<T>(
    work: () => T | PromiseLike<T>,
    end?: SessionEnd,
    lost?: (error: LockLostError) => unknown,
  ): Promise<T> {
    let result: T;
    try {
      result = await this.run(work);
    } catch (error) {
      await (end === undefined ? this.end() : end(this));
      throw error;
    }
    const loss = await (end === undefined ? this.end() : end(this));
    if (loss) throw lost === undefined ? loss : lost(loss);
    return result;
  }

  /**
   * Releases (idempotent, never rejects). Resolves to the LockLostError if the lock was lost
   * before the end — also when its deadline passed while the process could not run timers (a
   * blocked event loop): the deadline is compared with the clock before releasing — so the
   * caller can report the work as unprotected.
   */
  end(): Promise<LockLostError | undefined> {
    this.ending ??= this.lock.release().then(() => this.lock.lostReason);
    return this.ending;
  }
}
