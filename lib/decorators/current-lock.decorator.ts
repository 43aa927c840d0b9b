import { createParamDecorator } from '@nestjs/common';
import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants.js';
import type { Lock } from '../core';
import { globalSingleton } from '../core/global-singleton';
import { lockedScope } from '../locked/locked-scope';

/**
 * The factory of `@CurrentLock()`, shared by every copy of the package in the process (the ESM
 * and the CommonJS build): `@Locked` finds a handler's `@CurrentLock()` parameters by this
 * factory, and a parameter decorated through the other copy must be found too.
 */
const readCurrentLock = globalSingleton(
  'readCurrentLock@1',
  () => (): Lock | undefined => lockedScope.getStore()?.lock,
);
const currentLock = createParamDecorator(readCurrentLock);

/**
 * The positions of a method's `@CurrentLock()` parameters. A handler whose lock is named from
 * its piped arguments is locked after its parameters were resolved, so the wrapper puts the
 * lock in these positions itself. Parameter decorators run before method decorators, so
 * `@Locked` can read them.
 */
export function currentLockParameters(target: object, propertyKey: string | symbol): number[] {
  const params: Record<string, { index: number; factory?: unknown }> | undefined =
    Reflect.getMetadata(ROUTE_ARGS_METADATA, target.constructor, propertyKey);
  return Object.values(params ?? {})
    .filter((param) => param.factory === readCurrentLock)
    .map((param) => param.index);
}

/**
 * Injects the {@link Lock} held for a `@Locked` handler — the same lock
 * `RedlockService.currentLock()` returns inside it — or `undefined` on a handler without
 * `@Locked`. Watch `lock.signal` to stop early when the lock is lost: it aborts at that
 * moment, and the request then fails with the lost-lock error anyway.
 *
 * @example
 * @Post(':id/rebuild')
 * @Locked('index:{id}')
 * rebuild(@Param('id') id: string, @CurrentLock() lock: Lock) {
 *   return this.indexer.rebuild(id, { signal: lock.signal });
 * }
 */
export function CurrentLock(): ParameterDecorator {
  return currentLock();
}
