import { AsyncLocalStorage } from 'node:async_hooks';
import type { ExecutionContext } from '@nestjs/common';
import type { Lock } from '../core';
import { globalSingleton } from '../core/global-singleton';
import type { LockedMetadata } from './locked-metadata';

/**
 * A handler call that `LockedInterceptor` hands to the method wrapper instead of locking it:
 * one whose resources are named from its (piped) arguments, which only the wrapper sees. The
 * wrapper takes the lock and maps its errors with this execution context (409 + Retry-After
 * over HTTP, as the interceptor would).
 */
export interface LockedHandoff {
  readonly metadata: LockedMetadata;
  readonly executionContext: ExecutionContext;
}

/** The async context of a `@Locked` call. */
export interface LockedScope {
  /** The lock held for the call: what `@CurrentLock()` injects; absent before it is taken. */
  readonly lock?: Lock;
  /**
   * Set by the interceptor until the handler is invoked: the metadata of the handler it holds
   * the lock for. A wrapped method (or a second LockedInterceptor, e.g. one also registered
   * globally) finding its own metadata here knows the lock is already held for this very
   * invocation and must not take it again. Consumed by the first wrapped call, so a recursive
   * call of the same method from inside the handler locks normally.
   */
  pending?: LockedMetadata;
  /** Set by the interceptor for a handler the wrapper locks; consumed like `pending`. */
  handoff?: LockedHandoff;
}

/**
 * The `@Locked` scope, separate from the core's: `@CurrentLock()` is a parameter decorator,
 * created without access to the RedlockService whose `currentLock()` it would need, and the
 * handler-invocation markers above are a Nest-layer concern.
 *
 * One per process (not per copy of the package): the ESM and CommonJS builds loaded side by side
 * must see the same scope, or `@CurrentLock()` from one would miss the lock taken by the other.
 */
export const lockedScope = globalSingleton(
  'lockedScope@1',
  () => new AsyncLocalStorage<LockedScope>(),
);
