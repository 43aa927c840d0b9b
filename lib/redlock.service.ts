import {
  Inject,
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationShutdown,
} from '@nestjs/common';
import {
  Redlock,
  RedlockConfigError,
  type Lock,
  type LockedRoutine,
  type LockOptions,
  type Resources,
} from './core';
import { REDLOCK_LOGGER_CONTEXT } from './redlock.constants';
import type { RedlockModuleOptions } from './redlock-module-options';
import { REDLOCK_MODULE_OPTIONS } from './redlock.module-definition';

/**
 * The Redlock lock manager, owned by Nest: created (and its options validated) at bootstrap,
 * logging through Nest's `Logger`, and shut down with the app in two steps:
 * `beforeApplicationShutdown` drains it (acquisitions still waiting give up at once — a
 * `@Locked` request then answers 503 — and new ones fail, while handlers holding a lock finish
 * under it as Nest waits for in-flight requests), and `onApplicationShutdown` closes it (locks
 * still held are reported lost and released; the connections it opened are closed, never a
 * client you passed in).
 *
 * @example
 * constructor(private readonly redlock: RedlockService) {}
 *
 * await this.redlock.using(`order:${id}`, async (lock) => {
 *   await this.payments.capture(id, { signal: lock.signal });
 * });
 */
@Injectable()
export class RedlockService implements BeforeApplicationShutdown, OnApplicationShutdown {
  /** The framework-free core, for its events (`lockLost`) and anything not wrapped here. */
  readonly redlock: Redlock;

  constructor(@Inject(REDLOCK_MODULE_OPTIONS) options: RedlockModuleOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new RedlockConfigError(
        'options',
        options,
        'RedlockModule needs an options object with `nodes`',
      );
    }
    // mapLockedError is read by the interceptor and the explorer; the core never sees it.
    const { nodes, mapLockedError: _mapLockedError, ...settings } = options;
    this.redlock = new Redlock(nodes, { ...settings, logger: new Logger(REDLOCK_LOGGER_CONTEXT) });
  }

  /**
   * Acquires a lock, retrying until `wait` ms have passed or `options.signal` aborts.
   * Release it with `lock.release()` (or `await using`).
   * @throws LockNotAcquiredError with reason `held` or `unavailable`
   */
  acquire(resources: Resources, options?: LockOptions): Promise<Lock> {
    return this.redlock.acquire(resources, options);
  }

  /**
   * One attempt, no waiting: `null` when another owner holds the lock.
   * @throws LockNotAcquiredError with reason `unavailable` when a quorum of nodes cannot be reached
   */
  tryAcquire(resources: Resources, options?: LockOptions): Promise<Lock | null> {
    return this.redlock.tryAcquire(resources, options);
  }

  /**
   * Runs `routine` under the lock, extending it while the routine runs and releasing it after.
   * @throws LockLostError when the lock was lost while the routine ran
   */
  using<T>(resources: Resources, routine: LockedRoutine<T>): Promise<T>;
  using<T>(resources: Resources, options: LockOptions, routine: LockedRoutine<T>): Promise<T>;
  using<T>(
    resources: Resources,
    optionsOrRoutine: LockOptions | LockedRoutine<T>,
    routine?: LockedRoutine<T>,
  ): Promise<T> {
    return typeof optionsOrRoutine === 'function'
      ? this.redlock.using(resources, optionsOrRoutine)
      : this.redlock.using(resources, optionsOrRoutine, routine as LockedRoutine<T>);
  }

  /** The lock held by the current async context (inside `using()` / `@Locked`), if any. */
  currentLock(): Lock | undefined {
    return this.redlock.currentLock();
  }

  /** Stops acquiring: waiting acquisitions give up, held locks stay held. */
  beforeApplicationShutdown(): void {
    this.redlock.drain();
  }

  /** Reports lost and releases the locks still held; closes the connections the module opened. */
  async onApplicationShutdown(): Promise<void> {
    await this.redlock.close();
  }
}
