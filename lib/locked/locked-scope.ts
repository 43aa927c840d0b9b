import { AsyncLocalStorage } from 'node:async_hooks';
import type { Lock } from '../core';
import { globalSingleton } from '../core/global-singleton';
import type { LockedMetadata } from './locked-metadata';

/** A method of a class, as found on its prototype. */
export type AnyMethod = (this: unknown, ...args: unknown[]) => unknown;

/**
 * A handler call that `LockedInterceptor` locks, as the method wrapper finds it in the call's
 * async scope: Nest invokes the method after guards and pipes, with the arguments the handler
 * receives, so that is where its lock is named and taken (architecture.md §5.10: one meaning per
 * template). The interceptor keeps what only it can do: mapping errors with the execution
 * context, watching the client, and holding the lock until the result's body has ended.
 *
 * Immutable (frozen), and never changed once in the scope: nothing passes between the two paths
 * but this token and the call it names. Its identity — its `metadata` — is what the wrapper
 * compares to know the interceptor locks this very method.
 */
export interface LockedCallToken {
  readonly metadata: LockedMetadata;
  /**
   * Runs `method` on `self` with `args` under the call's lock: names the lock from `args`,
   * takes it through the core's hold primitive and invokes the method in its scope. Resolves
   * to what Nest should see as the method's result (after the release for a single value;
   * `undefined` when the call is skipped), or rejects with what the call should answer
   * instead (already mapped for its transport).
   *
   * Returns `undefined`, without running anything, when this call's method was already invoked
   * once: a second invocation in the same scope (an interceptor inside ours that subscribes
   * twice) is not this handler call, and locks on its own.
   */
  readonly lockCall: (
    method: AnyMethod,
    self: unknown,
    args: unknown[],
  ) => Promise<unknown> | undefined;
}

/** The async context of a `@Locked` call. */
export interface LockedScope {
  /** The lock held for the call: what `@CurrentLock()` injects; absent before it is taken. */
  readonly lock?: Lock;
  /**
   * Set by the interceptor around the handler chain. A wrapped method finding its own
   * metadata here takes the lock through it, and a second LockedInterceptor (one also
   * registered globally) knows the call is already being locked.
   */
  readonly call?: LockedCallToken;
}

/**
 * The `@Locked` scope, separate from the core's: `@CurrentLock()` is a parameter decorator,
 * created without access to the RedlockService whose `currentLock()` it would need, and the
 * handler-call token above is a Nest-layer concern.
 *
 * One per process (not per copy of the package): the ESM and CommonJS builds loaded side by side
 * must see the same scope, or `@CurrentLock()` from one would miss the lock taken by the other.
 */
export const lockedScope = globalSingleton(
  'lockedScope@1',
  () => new AsyncLocalStorage<LockedScope>(),
);
