import { isObservable } from 'rxjs';
import { RedlockConfigError, type Lock } from '../core';
import {
  mapLockedError,
  type LockedErrorMapper,
  type LockedErrorStage,
} from '../exceptions/locked-error-mapper';
import type { RedlockService } from '../redlock.service';
import { providerLockedContext } from './locked-context';
import type { LockedMetadata } from './locked-metadata';
import { lockedScope } from './locked-scope';

/** A method of a provider instance. */
export type AnyMethod = (this: unknown, ...args: unknown[]) => unknown;

const wrappers = new WeakSet<AnyMethod>();

/** True for a function returned by {@link lockMethod}. */
export function isLockedWrapper(method: unknown): boolean {
  return typeof method === 'function' && wrappers.has(method as AnyMethod);
}

/**
 * Wraps a provider method so that every call runs under its `@Locked` lock: the resources are
 * named from the call's arguments, the lock is acquired (waiting per the options), the method
 * runs inside the lock's async scope with auto-extension, and the lock is released when its
 * result settles. The wrapper is `async` — a locked method necessarily returns a Promise, also
 * when the original was synchronous.
 *
 * Kept from the original: `this` (the wrapper calls it with its own `this`), `name`, `length`
 * and every reflect-metadata key, so that other decorators' explorers (schedule, event
 * emitter, queue consumers) still find their metadata on the wrapped method.
 *
 * Errors: the method's own pass through untouched; lock errors go through the decorator's
 * `mapError`, the module's, then the default, which outside HTTP returns them as they are.
 * A lock lost while a successful call ran rejects with `LockLostError`.
 */
export function lockMethod(
  original: AnyMethod,
  metadata: LockedMetadata,
  redlock: RedlockService,
  moduleMapper: LockedErrorMapper | undefined,
): AnyMethod {
  const fail = (error: unknown, stage: LockedErrorStage, resources?: readonly string[]) =>
    mapLockedError(error, { type: 'provider', stage, resources }, [
      metadata.mapError,
      moduleMapper,
    ]);

  const wrapped = async function (this: unknown, ...args: unknown[]): Promise<unknown> {
    const scope = lockedScope.getStore();
    if (scope?.pending === metadata) {
      // The LockedInterceptor holds this method's lock for this very invocation (a gateway or
      // resolver method that Nest calls through the instance): taking it again would deadlock
      // on ourselves. Consumed once, so a recursive call from inside still locks.
      scope.pending = undefined;
      return original.apply(this, args);
    }
    let resources: string[];
    try {
      resources = metadata.resolve(providerLockedContext(args));
    } catch (error) {
      throw fail(error, 'resolve');
    }
    let lock: Lock;
    try {
      lock = await redlock.acquire(resources, metadata.lockOptions);
    } catch (error) {
      throw fail(error, 'acquire', resources);
    }
    const session = redlock.redlock.session(lock, metadata.lockOptions);
    let result: unknown;
    try {
      result = await session.run(() => lockedScope.run({ lock }, () => original.apply(this, args)));
      if (isObservable(result)) {
        // Its work would run when subscribed — after the release. Fail loudly, not unlocked.
        throw new RedlockConfigError(
          metadata.where,
          'an Observable',
          'a locked provider method must return a value or a Promise; lock inside the Observable pipeline instead',
        );
      }
    } catch (error) {
      // The method's own error wins, also over a lost lock: it says more about what happened.
      await session.end();
      throw error;
    }
    const lost = await session.end();
    if (lost) throw fail(lost, 'hold', resources);
    return result;
  };

  Object.defineProperty(wrapped, 'name', { value: original.name, configurable: true });
  Object.defineProperty(wrapped, 'length', { value: original.length, configurable: true });
  for (const key of Reflect.getMetadataKeys(original)) {
    Reflect.defineMetadata(key, Reflect.getMetadata(key, original), wrapped);
  }
  wrappers.add(wrapped);
  return wrapped;
}
