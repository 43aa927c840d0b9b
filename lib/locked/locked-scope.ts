import { AsyncLocalStorage } from 'node:async_hooks';
import type { Lock } from '../core';
import type { LockedMetadata } from './locked-metadata';

/** The async context of a `@Locked` call. */
export interface LockedScope {
  /** The lock held for the call: what `@CurrentLock()` injects. */
  readonly lock: Lock;
  /**
   * Set by the interceptor until the handler is invoked: the metadata of the handler it holds
   * the lock for. A wrapped provider method (or a second LockedInterceptor, e.g. one also
   * registered globally) finding its own metadata here knows the lock is already held for
   * this very invocation and must not take it again. Consumed by the first wrapped call, so
   * a recursive call of the same method from inside the handler locks normally.
   */
  pending?: LockedMetadata;
}

/**
 * The `@Locked` scope, separate from the core's: `@CurrentLock()` is a parameter decorator,
 * created without access to the RedlockService whose `currentLock()` it would need, and the
 * handler-invocation marker above is a Nest-layer concern.
 */
export const lockedScope = new AsyncLocalStorage<LockedScope>();
