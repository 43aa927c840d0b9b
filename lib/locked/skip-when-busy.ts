import { Logger } from '@nestjs/common';
import { LockNotAcquiredError } from '../core';
import { describeResources, SHUTTING_DOWN } from '../core/errors';
import { REDLOCK_LOGGER_CONTEXT } from '../redlock.constants';
import type { LockedMetadata } from './locked-metadata';

const logger = new Logger(REDLOCK_LOGGER_CONTEXT);

/**
 * For `@Locked(…, { onBusy: 'skip' })`: true when a failed acquisition means "another owner has
 * it" — the call is then skipped (resolves to `undefined`) and a debug line says so. Only `held`
 * skips: `unavailable` (a quorum of nodes down) is an outage, which a job must not hide behind a
 * debug line, and a reentry or a key conflict is a bug. A refusal because the app is shutting
 * down skips too.
 */
export function skipsWhenBusy(metadata: LockedMetadata, error: unknown): boolean {
  if (metadata.onBusy !== 'skip') return false;
  if (!(error instanceof LockNotAcquiredError)) return false;
  // A tick that races the app's shutdown (the scheduler stops after the lock manager drains)
  // is not an outage either: the job would not run anyway, so no error with a stack trace.
  if (error.detail === SHUTTING_DOWN) {
    logger.debug(`${metadata.where} skipped: the application is shutting down`);
    return true;
  }
  if (error.reason !== 'held') return false;
  logger.debug(
    `${metadata.where} skipped: the lock on ${describeResources(error.resources)} is held by another owner`,
  );
  return true;
}
