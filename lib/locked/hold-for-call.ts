import { Logger } from '@nestjs/common';
import type { HoldSettings, HoldWork, LockLostError, LockOptions } from '../core';
import { OutageLog } from '../core/observability/outage-log';
import { REDLOCK_LOGGER_CONTEXT } from '../redlock.constants';
import type { RedlockService } from '../redlock.service';
import type { LockedMetadata } from './locked-metadata';
import { endAfterMinHold } from './min-hold';
import { skipsWhenBusy } from './skip-when-busy';

/** How a `@Locked` call answers a failure of its lock (mapped for its caller). */
export interface CallFailures {
  /** The acquisition failed (not skipped): what the call throws instead. */
  notAcquired(error: unknown): unknown;
  /** The lock was lost while the work ran and the work succeeded: what the call throws instead. */
  lost(error: LockLostError): unknown;
}

/**
 * Holds the lock of one `@Locked` call, handler or provider method alike, through the core's
 * hold primitive (`RedlockService.hold` → `Redlock.hold`: acquire, run with auto-extension in the
 * lock's scope, release on every exit path). What this adds is the `@Locked` policy around it:
 * - `onBusy: 'skip'`: a lock held by another owner — which, since the core retries split votes
 *   (core/split-vote.ts), means one owner holds a quorum — skips the call (resolves to
 *   `undefined`, the work never runs); so does an outage, after the core retried rounds that failed
 *   as unavailable within the same window (a skip loses the tick on every instance that sees it);
 * - `minHold`: the lock is kept that long after its acquisition (see {@link endAfterMinHold});
 * - every outage, skipped or thrown, is logged by an {@link OutageLog}: the first failure of a
 *   method with its detail, then a summary per minute, then the recovery.
 *
 * @returns the work's result, or `undefined` when the call is skipped
 * @throws `failures.notAcquired(error)` when the lock was not acquired; the work's own error;
 *   `failures.lost(error)` when the lock was lost while successful work ran
 */
export async function holdForCall<T>(
  redlock: RedlockService,
  resources: string[],
  metadata: LockedMetadata,
  signal: AbortSignal | undefined,
  work: HoldWork<T>,
  failures: CallFailures,
): Promise<T | undefined> {
  let started = false;
  let acquiredAt = 0;
  const run: HoldWork<T> = (lock, session) => {
    started = true;
    acquiredAt = performance.now();
    const outages = outageLogs.get(redlock);
    if (outages !== undefined) outages.succeeded(metadata.where);
    return work(lock, session);
  };
  // `signal` before the spread (a property after it is V8's slow path: eslint.config.mjs); the
  // same object either way, since lockOptions never holds a signal (validateLockedOptions).
  const options: LockOptions =
    signal === undefined ? metadata.lockOptions : { signal, ...metadata.lockOptions };
  const settings: HoldSettings = {
    retryUnavailable: metadata.onBusy === 'skip',
    end:
      metadata.minHold > 0
        ? (session) => endAfterMinHold(session, metadata.minHold, acquiredAt, redlock)
        : undefined,
    lost: (error) => failures.lost(error),
  };
  try {
    return await redlock.hold(resources, options, run, settings);
  } catch (error) {
    if (started) throw error;
    if (skipsWhenBusy(metadata, error)) return undefined;
    // An outage is logged per @Locked method and per cause (once, then counted), whatever the
    // transport makes of the error; a scheduled call skips it (issue 25).
    if (OutageLog.isOutage(error) && !signal?.aborted) {
      outageLogOf(redlock).failed(metadata.where, error);
      if (metadata.onBusy === 'skip') return undefined;
    }
    throw failures.notAcquired(error);
  }
}

/**
 * The outage log of a lock manager: one per application, lines in the `Redlock` context. Made on
 * the first outage: a call that finds none has nothing to say.
 */
function outageLogOf(redlock: RedlockService): OutageLog {
  let log = outageLogs.get(redlock);
  if (log === undefined) {
    log = new OutageLog(new Logger(REDLOCK_LOGGER_CONTEXT));
    outageLogs.set(redlock, log);
  }
  return log;
}

const outageLogs = new WeakMap<RedlockService, OutageLog>();
