import { Logger } from '@nestjs/common';
import { LockNotAcquiredError } from '../core';
import { describeResources } from '../core/errors';
import { REDLOCK_LOGGER_CONTEXT } from '../redlock.constants';
import type { LockedMetadata } from './locked-metadata';

const logger = new Logger(REDLOCK_LOGGER_CONTEXT);

/**
 * For `@Locked(…, { onBusy: 'skip' })`: true when a failed acquisition means "another owner has
 * it" — the call is then skipped (resolves to `undefined`) and a debug line says so. Only `held`
 * skips: `unavailable` (a quorum of nodes down) is an outage, which a job must not hide behind a
 * debug line, and a reentry or a key conflict is a bug.
 */
export function skipsWhenBusy(metadata: LockedMetadata, error: unknown): boolean {
  if (metadata.onBusy !== 'skip') return false;
  if (!(error instanceof LockNotAcquiredError) || error.reason !== 'held') return false;
  logger.debug(
    `${metadata.where} skipped: the lock on ${describeResources(error.resources)} is held by another owner`,
  );
  return true;
}
