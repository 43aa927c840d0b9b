import { createParamDecorator } from '@nestjs/common';
import type { Lock } from '../core';
import { lockedScope } from '../locked/locked-scope';

const currentLock = createParamDecorator((): Lock | undefined => lockedScope.getStore()?.lock);

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
