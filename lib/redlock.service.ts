import {
  Inject,
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnModuleInit,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { resolveOptions } from './core/options';
import { validateNodes } from './core/redlock';
import {
  Redlock,
  RedlockConfigError,
  type HeldLockInfo,
  type Lock,
  type LockInspection,
  type LockedRoutine,
  type LockOptions,
  type RedlockHealth,
  type Resources,
} from './core';
import { releaseKeptLocks } from './locked/min-hold';
import { assertKnownModuleOptions } from './module-option-names';
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
export class RedlockService
  implements OnModuleInit, BeforeApplicationShutdown, OnApplicationShutdown
{
  private core?: Redlock;
  private readonly create: () => Redlock;

  constructor(@Inject(REDLOCK_MODULE_OPTIONS) options: RedlockModuleOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new RedlockConfigError(
        'options',
        options,
        'RedlockModule needs an options object with `nodes`',
      );
    }
    assertKnownModuleOptions(options);
    // mapLockedError is read by the interceptor and the explorer; the core never sees it.
    const { nodes, mapLockedError: _mapLockedError, ...settings } = options;
    // Bad options and node lists fail here, as the provider is created; what needs the nodes'
    // adapters (user clients' settings, fencing support) when the core is created, at the latest
    // in onModuleInit: still the bootstrap.
    resolveOptions(settings);
    validateNodes(nodes);
    this.create = () =>
      new Redlock(nodes, { ...settings, logger: new Logger(REDLOCK_LOGGER_CONTEXT) });
  }

  /**
   * The framework-free core, for its events (`lockLost`) and anything not wrapped here.
   *
   * Created on first use — `onModuleInit` at the latest — rather than in the constructor: it
   * opens the connections, and a bootstrap that fails between the creation of the providers and
   * their init hooks (another provider's constructor throws; with `abortOnError: false` the
   * caller gets no app to close) never calls a shutdown hook that could close them.
   */
  get redlock(): Redlock {
    return (this.core ??= this.create());
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

  /**
   * What every node says about `resource` now (locked or free, an opaque holder tag, the lease
   * left) and whether this process holds it: for operators, never on the lock path.
   */
  inspect(resource: string): Promise<LockInspection> {
    return this.redlock.inspect(resource);
  }

  /**
   * Pings every node (each bounded by `nodeTimeout`): `up` when a quorum answers — locks can be
   * taken and released — with each node's state and latency. `RedlockHealthIndicator`
   * (`nestjs-redlock/terminus`) reports it to `@nestjs/terminus`.
   */
  health(): Promise<RedlockHealth> {
    return this.redlock.health();
  }

  /** The locks this process holds now. */
  heldLocks(): HeldLockInfo[] {
    return this.redlock.heldLocks();
  }

  /** The lock held by the current async context (inside `using()` / `@Locked`), if any. */
  currentLock(): Lock | undefined {
    return this.redlock.currentLock();
  }

  /**
   * Waits (bounded) for the nodes' connections and fails the bootstrap with RedlockConfigError
   * when two entries of `nodes` are one Redis server (same `run_id`): it would vote twice.
   * Unreachable nodes do not fail the bootstrap — a lock manager must start while a minority
   * (or, until it comes back, even a majority) of its nodes is down.
   */
  async onModuleInit(): Promise<void> {
    await this.redlock.ready();
  }

  /**
   * Stops acquiring: waiting acquisitions give up, held locks stay held — except those only
   * kept for a `@Locked` method's `minHold`, whose work is done: they are released now.
   */
  async beforeApplicationShutdown(): Promise<void> {
    this.core?.drain();
    await releaseKeptLocks(this);
  }

  /** Reports lost and releases the locks still held; closes the connections the module opened. */
  async onApplicationShutdown(): Promise<void> {
    // Never created (nothing was locked and init never ran): nothing to close.
    await this.core?.close();
  }
}
