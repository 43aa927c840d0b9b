import { RedlockConfigError, type LockOptions } from '../core';
import { assertLockTimings } from '../core/options';
import type { LockedErrorMapper } from '../exceptions/locked-error-mapper';

/**
 * Options of one `@Locked` method. Each lock option falls back to the `RedlockModule` option
 * of the same name.
 *
 * @example
 * @Locked('stock:{id}', { ttl: 5_000, wait: 0 })   // busy → 409 at once instead of queueing
 */
export interface LockedOptions {
  /**
   * Lease in ms; auto-extension keeps the lock for as long as the handler runs.
   * @default the module's `ttl` (10000)
   */
  ttl?: number;
  /**
   * How long to wait for a busy lock before giving up (→ 409), in ms; 0 = one attempt.
   * @default the module's `wait` (10000)
   */
  wait?: number;
  /**
   * Base delay between attempts, in ms.
   * @default the module's `retryDelay` (100)
   */
  retryDelay?: number;
  /**
   * Random extra delay between attempts, up to this many ms.
   * @default the module's `retryJitter` (100)
   */
  retryJitter?: number;
  /**
   * Extend the lock while the handler runs. With `false` the lock lasts `ttl` and a handler
   * that outlives it fails with the lost-lock error.
   * @default true
   */
  autoExtend?: boolean;
  /**
   * Longest total hold with auto-extension, in ms; a handler running longer loses the lock.
   * @default the module's `maxHold` (Infinity)
   */
  maxHold?: number;
  /**
   * Replaces the error mapping for this method: return what to throw, or `undefined` for the
   * module's `mapLockedError` and then the default mapping (409 / 503 / 400 / 500 over HTTP,
   * typed errors elsewhere).
   * @default undefined
   * @example
   * mapError: (error) => (error instanceof LockNotAcquiredError ? new HttpException('Busy', 423) : undefined)
   */
  mapError?: LockedErrorMapper;
}

const NUMERIC = ['ttl', 'wait', 'retryDelay', 'retryJitter', 'maxHold'] as const;
const KNOWN = new Set<string>([...NUMERIC, 'autoExtend', 'mapError']);

/**
 * Validates a decorator's options when it is applied (class definition, i.e. bootstrap),
 * naming the method, so that a typo fails the start-up rather than every request. The rules
 * are those of the core's per-call options; what depends on the module's options (ttl above
 * nodeTimeout) is checked again at bootstrap by the explorer.
 *
 * @returns the lock options to pass to `acquire()` / `session()`, without `mapError`.
 * @throws RedlockConfigError
 */
export function validateLockedOptions(options: unknown, where: string): LockOptions {
  if (options === undefined) return {};
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new RedlockConfigError(`${where} options`, options, 'must be an object');
  }
  const record = options as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!KNOWN.has(key)) {
      throw new RedlockConfigError(
        `${where} options.${key}`,
        record[key],
        `is not an option of @Locked (expected ${[...KNOWN].join(', ')})`,
      );
    }
  }
  const check = (key: string, ok: boolean, requirement: string) => {
    if (record[key] !== undefined && !ok) {
      throw new RedlockConfigError(`${where} options.${key}`, record[key], requirement);
    }
  };
  const { autoExtend, mapError } = record;
  assertLockTimings(record, `${where} options.`);
  check('autoExtend', typeof autoExtend === 'boolean', 'must be a boolean');
  check('mapError', typeof mapError === 'function', 'must be a function');

  const lockOptions: LockOptions = {};
  for (const key of NUMERIC) {
    if (record[key] !== undefined) lockOptions[key] = record[key] as number;
  }
  if (autoExtend !== undefined) lockOptions.autoExtend = autoExtend as boolean;
  return Object.freeze(lockOptions);
}
