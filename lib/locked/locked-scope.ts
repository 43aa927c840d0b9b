import { AsyncLocalStorage } from 'node:async_hooks';
import type { Lock, LockSession } from '../core';
import { globalSingleton } from '../core/global-singleton';
import type { LockedMetadata } from './locked-metadata';

/**
 * A handler call that `LockedInterceptor` hands to the method wrapper: Nest invokes the method
 * after guards and pipes, with the arguments the handler receives, so that is where its lock is
 * named and taken (DESIGN §5.10: one meaning per template). The interceptor keeps what only it
 * can do: mapping errors with the execution context, watching the client, and holding the lock
 * until the result's body has ended.
 */
export interface LockedHandoff {
  readonly metadata: LockedMetadata;
  /**
   * Names the lock from the handler's arguments and takes it. Resolves to the session to run
   * the method in, or `undefined` when the call is skipped (`onBusy: 'skip'`).
   * @throws what the call should answer instead (already mapped for its transport)
   */
  take(args: readonly unknown[]): Promise<LockSession | undefined>;
  /** The method's own work (its Promise): the lock is not released before it settles. */
  running(work: Promise<unknown>): void;
}

/** The async context of a `@Locked` call. */
export interface LockedScope {
  /** The lock held for the call: what `@CurrentLock()` injects; absent before it is taken. */
  readonly lock?: Lock;
  /**
   * Set by the interceptor until the handler is invoked. A wrapped method finding its own
   * metadata here takes the lock through it, and a second LockedInterceptor (one also
   * registered globally) knows the call is already being locked. Consumed by the first wrapped
   * call, so a recursive call of the same method from inside the handler locks normally.
   */
  handoff?: LockedHandoff;
}

/**
 * The `@Locked` scope, separate from the core's: `@CurrentLock()` is a parameter decorator,
 * created without access to the RedlockService whose `currentLock()` it would need, and the
 * handler-invocation marker above is a Nest-layer concern.
 *
 * One per process (not per copy of the package): the ESM and CommonJS builds loaded side by side
 * must see the same scope, or `@CurrentLock()` from one would miss the lock taken by the other.
 */
export const lockedScope = globalSingleton(
  'lockedScope@1',
  () => new AsyncLocalStorage<LockedScope>(),
);
