import { RedlockConfigError, type LockOptions } from '../core';
import { assertLockTimings } from '../core/options';
import type { LockedErrorMapper } from '../exceptions/locked-error-mapper';

/**
 * Options of one `@Locked` method: the per-call {@link LockOptions} but `signal` (the lock's own
 * signal is `@CurrentLock() lock.signal`), each falling back to the `RedlockModule` option of the
 * same name, plus what only a decorated method has. Picked, not redeclared, so that the option
 * documentation (and its default) is written once, on the core's `RedlockOptions`.
 *
 * What the lock options mean for a decorated method:
 * - `wait`: a lock still busy once it is spent fails the call (→ 409 over HTTP);
 * - `ttl`: with `autoExtend` (the default) the lock is extended for as long as the handler runs;
 *   with `autoExtend: false` it lasts `ttl`, and a handler that outlives it fails with the
 *   lost-lock error; `maxHold` bounds the whole hold, after which a running handler loses it;
 * - `fencing`: the token is `@CurrentLock() lock` → `lock.fencingToken`, to pass to the resource
 *   the handler writes so that it can refuse a stale holder;
 * - `reentrant`: inside a call that already holds these resources (a `@Locked` handler calling a
 *   `@Locked` provider method), reuse that lock instead of failing with LockReentryError.
 *
 * @example
 * @Locked('stock:{id}', { ttl: 5_000, wait: 0 })   // busy → 409 at once instead of queueing
 */
export interface LockedOptions extends Omit<LockOptions, 'signal'> {
  /**
   * Shortest time the lock is held, in ms from its acquisition, however quickly the method
   * returns (ShedLock's `lockAtLeastFor`). The call still returns when its work is done; the
   * lock stays held (auto-extended) in the background until `minHold` has passed, then is
   * released (at once when the app shuts down).
   *
   * Why: with `onBusy: 'skip'`, a job that takes 1 ms frees its tick's lock at once, and an
   * instance whose clock is a few hundred ms behind fires the same tick after that and runs it
   * a second time. Holding the lock for `minHold` covers clocks that far apart. The default for
   * `'skip'` (500 ms) covers the clock differences of ordinary hosts (NTP keeps them within
   * milliseconds; a VM or container resumed from a pause can be hundreds of ms off) and stays
   * below a one-second cron period: keep `minHold` below your job's period (a longer one makes
   * the next tick find its own lock still held and skip it), and raise it if your instances'
   * clocks can be further apart.
   * @default 500 with `onBusy: 'skip'`, else 0
   * @example
   * @Cron(CronExpression.EVERY_MINUTE)
   * @Locked('jobs:report', { onBusy: 'skip', minHold: 5_000 })   // clocks may be 5 s apart
   * async report() { … }
   */
  minHold?: number;
  /**
   * What a call does when another owner holds the lock (`LockNotAcquiredError` with reason
   * `held`, once `wait` is spent):
   * - `'throw'`: fail with it (409 over HTTP, the typed error elsewhere);
   * - `'skip'`: do not run; the call resolves to `undefined` and a debug line is logged. The
   *   run-once-per-cluster pattern for `@Cron` / `@Interval` jobs and queue consumers: the
   *   instance that got the lock runs the job, the others skip this tick quietly. With `'skip'`,
   *   `wait` defaults to 0 (an instance that waited for the winner to finish would then run the
   *   same tick a second time) and `minHold` to 500 ms (see there). Rounds that nobody won
   *   (instances firing together split the nodes' votes) are retried for up to 2 s before
   *   skipping: a skip means another owner holds the lock, not that this one lost a round.
   *   Not for queue consumers (a BullMQ `@Processor`, a microservice `@EventPattern`): the
   *   skipped job or event would count as done though it never ran — the bootstrap refuses it
   *   there; use `'throw'`, so that the queue retries it later.
   *
   * Unreachable nodes (`unavailable`) and every other error are never skipped: an outage must
   * stay visible.
   * @default 'throw'
   * @example
   * @Cron(CronExpression.EVERY_MINUTE)
   * @Locked('jobs:report', { onBusy: 'skip' })
   * async report() { … }
   */
  onBusy?: LockedOnBusy;
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

/** See {@link LockedOptions.onBusy}. */
export type LockedOnBusy = 'throw' | 'skip';

/** `minHold` when not given: see {@link LockedOptions.minHold}. */
export const SKIP_MIN_HOLD_MS = 500;

const NUMERIC = ['ttl', 'wait', 'retryDelay', 'retryJitter', 'maxHold'] as const;
const BOOLEAN = ['autoExtend', 'fencing', 'reentrant'] as const;
const OWN = ['minHold', 'onBusy', 'mapError'] as const;
const ON_BUSY: readonly LockedOnBusy[] = ['throw', 'skip'];
const KNOWN = new Set<string>([...NUMERIC, ...BOOLEAN, ...OWN]);

/** Every name the lists above validate. */
type Listed = (typeof NUMERIC)[number] | (typeof BOOLEAN)[number] | (typeof OWN)[number];
/**
 * `LockedOptions` is derived from the core's per-call options, so it grows when they do: this
 * fails to compile until an option added there (or removed) is listed above — else a valid
 * option would be refused at bootstrap as unknown, or a stale name accepted.
 */
const _everyOptionListed: [keyof LockedOptions] extends [Listed]
  ? [Listed] extends [keyof LockedOptions]
    ? true
    : never
  : never = true;

/**
 * Validates a decorator's options when it is applied (class definition, i.e. bootstrap),
 * naming the method, so that a typo fails the start-up rather than every request. The rules
 * are those of the core's per-call options; what depends on the module's options (ttl above
 * nodeTimeout) is checked again at bootstrap by the explorer.
 *
 * @returns the lock options to pass to `acquire()` / `session()`, without `mapError`,
 *   `minHold` and `onBusy` (with `wait: 0` for `onBusy: 'skip'` unless `wait` is given).
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
  const { mapError } = record;
  assertLockTimings(record, `${where} options.`);
  for (const key of BOOLEAN) check(key, typeof record[key] === 'boolean', 'must be a boolean');
  check('mapError', typeof mapError === 'function', 'must be a function');
  check(
    'minHold',
    typeof record.minHold === 'number' && Number.isFinite(record.minHold) && record.minHold >= 0,
    'must be a finite number of ms ≥ 0',
  );
  check(
    'minHold',
    typeof record.maxHold !== 'number' || (record.minHold as number) <= record.maxHold,
    `must not exceed maxHold (${String(record.maxHold)})`,
  );
  check(
    'onBusy',
    ON_BUSY.includes(record.onBusy as LockedOnBusy),
    `must be one of ${ON_BUSY.map((v) => `'${v}'`).join(', ')}`,
  );

  const lockOptions: LockOptions = {};
  for (const key of NUMERIC) {
    if (record[key] !== undefined) lockOptions[key] = record[key] as number;
  }
  for (const key of BOOLEAN) {
    if (record[key] !== undefined) lockOptions[key] = record[key] as boolean;
  }
  // A skipping job must not queue behind the winner: it would run the same tick after it.
  if (record.onBusy === 'skip' && record.wait === undefined) lockOptions.wait = 0;
  return Object.freeze(lockOptions);
}

/**
 * The `minHold` of a `@Locked` method (validated by {@link validateLockedOptions}): as given,
 * else {@link SKIP_MIN_HOLD_MS} with `onBusy: 'skip'`, else 0.
 */
export function minHoldOf(options: LockedOptions | undefined): number {
  return options?.minHold ?? (options?.onBusy === 'skip' ? SKIP_MIN_HOLD_MS : 0);
}
