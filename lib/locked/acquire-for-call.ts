import type { Lock } from '../core';
import type { RedlockService } from '../redlock.service';
import type { LockedMetadata } from './locked-metadata';
import { skipsWhenBusy } from './skip-when-busy';

/**
 * Takes the lock of one `@Locked` call, handler or provider method alike.
 * @returns the lock, or `undefined` when the call is skipped (`onBusy: 'skip'` and another owner
 *   holds it).
 * @throws the acquisition's error otherwise (unmapped)
 */
export async function acquireForCall(
  redlock: RedlockService,
  resources: readonly string[],
  metadata: LockedMetadata,
  signal: AbortSignal | undefined,
): Promise<Lock | undefined> {
  try {
    return await redlock.acquire([...resources], { ...metadata.lockOptions, signal });
  } catch (error) {
    if (!signal?.aborted && skipsWhenBusy(metadata, error)) return undefined;
    throw error;
  }
}
