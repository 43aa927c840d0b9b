import type { Lock } from '../core';
import type { LockedMetadata } from './locked-metadata';
import type { LockedScope } from './locked-scope';

/** The `@Locked` scope of one handler call whose lock `LockedInterceptor` holds. */
export interface HoldingScope {
  /** The store to run the handler chain in (`lockedScope.run(scope, ...)`). */
  readonly scope: LockedScope;
  /** The lock is about to be released: from now on `pending` no longer vouches for it. */
  close(): void;
}

/**
 * The store of a handler call: its lock, and `pending` — what tells the method wrapper that
 * the interceptor holds the lock for this very invocation — readable only while the lock is
 * held. Nest cannot un-call a handler: pipes still running when the chain was torn down (for
 * instance by an interceptor inside the lock) invoke the method afterwards. If that happens
 * after the release, the wrapper no longer finds `pending` and takes the lock itself (an
 * `async` method) or refuses to run (`RedlockConfigError`): never a call without the lock.
 */
export function holdingScope(lock: Lock, metadata: LockedMetadata): HoldingScope {
  let consumed = false;
  let closed = false;
  const scope: LockedScope = {
    lock,
    get pending(): LockedMetadata | undefined {
      return consumed || closed ? undefined : metadata;
    },
    set pending(value: LockedMetadata | undefined) {
      // The wrapper consumes it (sets undefined) right before it calls the method.
      if (value === undefined) consumed = true;
    },
  };
  return {
    scope,
    close: () => {
      closed = true;
    },
  };
}
