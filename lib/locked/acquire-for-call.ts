import { setTimeout as sleep } from 'node:timers/promises';
import { Logger } from '@nestjs/common';
import { LockNotAcquiredError, type Lock } from '../core';
import { OutageLog } from '../core/outage-log';
import { REDLOCK_LOGGER_CONTEXT } from '../redlock.constants';
import type { RedlockService } from '../redlock.service';
import type { LockedMetadata } from './locked-metadata';
import { skipsWhenBusy } from './skip-when-busy';

/**
 * How long an `onBusy: 'skip'` call keeps retrying rounds that nobody won (split votes) before
 * it skips after all. Short: instances that fire a tick together settle it within a few
 * rounds (the jittered delay between rounds breaks the tie), and a tick must not run late.
 */
export const SPLIT_VOTE_RETRY_MS = 2_000;

/**
 * Takes the lock of one `@Locked` call, handler or provider method alike.
 *
 * With `onBusy: 'skip'`, "busy" must mean "another owner holds it", not "I did not win the
 * first round": when instances fire a tick at once, each can win a minority of the nodes and
 * nobody a quorum (a split vote) — all would skip, and the tick would run nowhere. So a refused
 * round is skipped only when the nodes show one other holder on a quorum of them (or cannot
 * tell); otherwise it is retried after a jittered delay, for at most
 * {@link SPLIT_VOTE_RETRY_MS}. So is a round that failed as unavailable (nodes slow to answer on
 * a busy machine, a node restarting): it is skipped as an outage only once the window is spent. A retry cannot run a tick twice while the winner holds its lock,
 * and `minHold` keeps a short job's lock past the others' retries and clock differences.
 *
 * With `onBusy: 'skip'` an outage (a quorum of nodes unavailable, a permission missing) skips the
 * call too; every outage, skipped or thrown, is logged by an {@link OutageLog}: the first failure
 * of a method with its detail, then a summary per minute, then the recovery.
 *
 * @returns the lock, or `undefined` when the call is skipped.
 * @throws the acquisition's error otherwise (unmapped)
 */
export async function acquireForCall(
  redlock: RedlockService,
  resources: readonly string[],
  metadata: LockedMetadata,
  signal: AbortSignal | undefined,
): Promise<Lock | undefined> {
  const outages = outageLogOf(redlock);
  try {
    const lock = await acquireOrSkip(redlock, resources, metadata, signal, outages);
    if (lock !== undefined) outages.succeeded(metadata.where);
    return lock;
  } catch (error) {
    // An outage is logged per @Locked method and per cause (once, then counted), whatever the
    // transport makes of the error.
    if (OutageLog.isOutage(error) && !signal?.aborted) outages.failed(metadata.where, error);
    throw error;
  }
}

/** The outage log of a lock manager: one per application, lines in the `Redlock` context. */
function outageLogOf(redlock: RedlockService): OutageLog {
  let log = outageLogs.get(redlock);
  if (log === undefined) {
    log = new OutageLog(new Logger(REDLOCK_LOGGER_CONTEXT));
    outageLogs.set(redlock, log);
  }
  return log;
}

const outageLogs = new WeakMap<RedlockService, OutageLog>();

async function acquireOrSkip(
  redlock: RedlockService,
  resources: readonly string[],
  metadata: LockedMetadata,
  signal: AbortSignal | undefined,
  outages: OutageLog,
): Promise<Lock | undefined> {
  const options = { ...metadata.lockOptions, signal };
  if (metadata.onBusy !== 'skip') return redlock.acquire([...resources], options);
  const deadline = performance.now() + SPLIT_VOTE_RETRY_MS;
  for (;;) {
    try {
      return await redlock.acquire([...resources], options);
    } catch (error) {
      if (signal?.aborted) throw error;
      // A round nobody won (a split vote), or one whose nodes did not answer in time (a busy
      // machine, a node restarting): retried within the window, since a skip loses the tick on
      // every instance that sees the same.
      const retryable =
        error instanceof LockNotAcquiredError &&
        performance.now() < deadline &&
        (error.reason === 'unavailable' || !(await heldByAnotherOwner(redlock, resources)));
      const split = retryable;
      if (!split) {
        if (skipsWhenBusy(metadata, error)) return undefined;
        // An outage skips a scheduled call too — logged as an outage (once, then counted), not
        // as an error with a stack on every tick of every instance (issue 25).
        if (OutageLog.isOutage(error)) {
          outages.failed(metadata.where, error);
          return undefined;
        }
        throw error;
      }
    }
    const { retryDelay, retryJitter } = redlock.redlock.options;
    const pause =
      (metadata.lockOptions.retryDelay ?? retryDelay) +
      Math.random() * (metadata.lockOptions.retryJitter ?? retryJitter);
    await sleep(pause, undefined, { signal }).catch(() => undefined);
  }
}

/**
 * True when one other holder has a key of `resources` on a quorum of the nodes — the lock is
 * really held — or when the nodes cannot say (an adapter that cannot inspect, nodes that do not
 * answer): then the round is not retried, as before. False for a split vote: no holder on a
 * quorum.
 */
async function heldByAnotherOwner(
  redlock: RedlockService,
  resources: readonly string[],
): Promise<boolean> {
  for (const resource of resources) {
    const inspection = await redlock.inspect(resource).catch(() => undefined);
    if (inspection === undefined) return true;
    const quorum = Math.floor(inspection.nodes.length / 2) + 1;
    const unknown = inspection.nodes.filter((node) => node.state === 'unknown').length;
    if (unknown >= quorum) return true;
    const votes = new Map<string, number>();
    for (const node of inspection.nodes) {
      if (node.holder === undefined) continue;
      const count = (votes.get(node.holder) ?? 0) + 1;
      if (count >= quorum) return true;
      votes.set(node.holder, count);
    }
  }
  return false;
}
