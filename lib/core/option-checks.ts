import { RedlockConfigError } from './errors';

/*
 * The checks behind every option (options.ts): each names the option and the bad value in a
 * RedlockConfigError, at construction (or bootstrap) rather than at the first lock.
 */

/** The per-lock timing options as set by a caller, not yet checked (per-call or `@Locked`). */
export interface LockTimings {
  readonly ttl?: unknown;
  readonly wait?: unknown;
  readonly retryDelay?: unknown;
  readonly retryJitter?: unknown;
  readonly maxHold?: unknown;
}

/**
 * Checks the per-lock timing options that are set, each on its own: per-call options and
 * `@Locked` options alike. Errors name the option as `${prefix}${key}`.
 * @throws RedlockConfigError
 */
export function assertLockTimings(options: LockTimings, prefix = ''): void {
  const { ttl, wait, retryDelay, retryJitter, maxHold } = options;
  if (ttl !== undefined) assertTtl(`${prefix}ttl`, ttl);
  if (wait !== undefined) assertWait(`${prefix}wait`, wait);
  if (retryDelay !== undefined) assertNonNegativeFinite(`${prefix}retryDelay`, retryDelay);
  if (retryJitter !== undefined) assertNonNegativeFinite(`${prefix}retryJitter`, retryJitter);
  if (maxHold !== undefined) assertMaxHold(`${prefix}maxHold`, maxHold);
}

/**
 * A lease for one lock: a positive integer number of ms, at least four node timeouts (else
 * slow nodes could eat the lease, and an auto-extension would have no time to retry), and at
 * most `maxTtl` when given (the fleet's longest lease: what a restarted node waits out).
 * @throws RedlockConfigError
 */
export function assertLockTtl(
  ttl: unknown,
  nodeTimeout: number,
  option = 'ttl',
  maxTtl?: number,
): void {
  assertTtl(option, ttl);
  if (nodeTimeout > maxNodeTimeout(ttl as number)) {
    throw new RedlockConfigError(
      option,
      ttl,
      `must be at least 4 × nodeTimeout (${nodeTimeout} ms)`,
    );
  }
  if (maxTtl !== undefined) assertWithinMaxTtl(option, ttl as number, maxTtl);
}

/** The largest `maxTtl`: 24 h, so that no timer of twice it (with drift) can overflow. */
export const MAX_TTL_LIMIT = 86_400_000;

/**
 * A lease above the fleet's `maxTtl` is refused: a node that restarted without its data waits
 * `maxTtl` at most, so a longer lease could outlive the wait and meet a second holder.
 */
export function assertWithinMaxTtl(option: string, ttl: number, maxTtl: number): void {
  if (ttl > maxTtl) {
    throw new RedlockConfigError(
      option,
      ttl,
      `must be at most maxTtl (${maxTtl} ms), the longest lease of the fleet; hold a lock longer by extending it (using(), @Locked), or raise maxTtl on every lock manager of the fleet`,
    );
  }
}

/**
 * The largest node timeout a lease of `ttl` allows: a quarter. Extension starts a third into
 * the validity; with rounds bounded by a quarter of the ttl, at least two extension attempts
 * fit before it ends even when a node hangs.
 */
export function maxNodeTimeout(ttl: number): number {
  return ttl / 4;
}

export function assertBoolean(option: string, value: unknown): void {
  if (typeof value !== 'boolean')
    throw new RedlockConfigError(option, value, 'must be true or false');
}

/** `true`, `false`, or `{ recordResources?: boolean }` and nothing else (a typo is refused). */
export function assertTelemetry(value: unknown): void {
  if (typeof value === 'boolean') return;
  const expected = 'must be true, false or { recordResources?: boolean }';
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new RedlockConfigError('telemetry', value, expected);
  }
  for (const [key, setting] of Object.entries(value)) {
    if (key !== 'recordResources') {
      throw new RedlockConfigError(
        `telemetry.${key}`,
        setting,
        `is not an option; telemetry ${expected}`,
      );
    }
    if (setting !== undefined) assertBoolean('telemetry.recordResources', setting);
  }
}

export function isPositiveFinite(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0;
}

/** PX takes whole milliseconds, so the lease must be a positive integer. */
export function assertTtl(option: string, value: unknown): void {
  if (!isPositiveFinite(value) || !Number.isInteger(value)) {
    throw new RedlockConfigError(option, value, 'must be a positive integer number of ms');
  }
}

export function assertWait(option: string, value: unknown): void {
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0) {
    throw new RedlockConfigError(option, value, 'must be a number of ms ≥ 0 (or Infinity)');
  }
}

export function assertMaxHold(option: string, value: unknown): void {
  if (typeof value !== 'number' || Number.isNaN(value) || value <= 0) {
    throw new RedlockConfigError(option, value, 'must be a positive number of ms (or Infinity)');
  }
}

export function assertNonNegativeFinite(option: string, value: unknown): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new RedlockConfigError(option, value, 'must be a finite number of ms ≥ 0');
  }
}
