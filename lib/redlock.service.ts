import {
  Inject,
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnModuleInit,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { resolveOptions } from './core/options';
import { validateNodes } from './core/manager/node-list';
import {
  Redlock,
  RedlockConfigError,
  RedlockError,
  type HeldLockInfo,
  type HoldSettings,
  type HoldWork,
  type Lock,
  type LockInspection,
  type LockedRoutine,
  type LockOptions,
  type RedlockHealth,
  type Resources,
} from './core';
import { startupLine } from './core/observability/startup-report';
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
  private readonly logger = new Logger(REDLOCK_LOGGER_CONTEXT);
  private readonly nodeCount: number;
  private readonly awaitQuorum: number;

  constructor(@Inject(REDLOCK_MODULE_OPTIONS) options: RedlockModuleOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new RedlockConfigError(
        'options',
        options,
        'RedlockModule needs an options object with `nodes`',
      );
    }
    assertKnownModuleOptions(options);
    // mapLockedError is read by the interceptor and the explorer, awaitQuorum here; the core
    // sees neither.
    const { nodes, mapLockedError: _mapLockedError, awaitQuorum, ...settings } = options;
    if (
      awaitQuorum !== undefined &&
      (typeof awaitQuorum !== 'number' || Number.isNaN(awaitQuorum) || awaitQuorum < 0)
    ) {
      throw new RedlockConfigError(
        'awaitQuorum',
        awaitQuorum,
        'must be a number of ms ≥ 0 (0: do not wait; Infinity: wait until a quorum answers)',
      );
    }
    this.awaitQuorum = awaitQuorum ?? 0;
    // Bad options and node lists fail here, as the provider is created; what needs the nodes'
    // adapters (user clients' settings, fencing support) when the core is created, at the latest
    // in onModuleInit: still the bootstrap.
    resolveOptions(settings);
    validateNodes(nodes);
    this.nodeCount = Array.isArray(nodes) ? nodes.length : 0;
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
   * The hold primitive `using()` and `@Locked` are built on (see `Redlock.hold`): acquires, runs
   * `work` under the lock (auto-extended, in its async scope), releases on every exit path.
   * `settings` adds what `@Locked` needs (its `minHold`, its skip policy, how a loss is
   * reported); prefer `using()` in application code.
   * @throws what `acquire()` throws, before `work` runs; then the work's own error, or
   *   LockLostError when the lock was lost while it ran
   */
  hold<T>(
    resources: Resources,
    options: LockOptions | undefined,
    work: HoldWork<T>,
    settings?: HoldSettings,
  ): Promise<T> {
    return this.redlock.hold(resources, options, work, settings);
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
   * when two entries of `nodes` are one Redis server (same `run_id`): it would vote twice, and
   * with RedlockPermissionError when the nodes' Redis user may not run what the library needs.
   * Logs one line with the nodes' states (`3 nodes, quorum 2: a up, b up, c down`), and a
   * warning naming `awaitQuorum` when no quorum is reachable.
   * Unreachable nodes do not fail the bootstrap — a lock manager must start while a minority
   * (or, until it comes back, even a majority) of its nodes is down — unless `awaitQuorum`
   * asks for a quorum first. A single node is logged: it has no fault tolerance.
   */
  async onModuleInit(): Promise<void> {
    try {
      await this.redlock.ready();
    } catch (error) {
      // A failed bootstrap calls no shutdown hook: close the connections this opened.
      await this.core?.close();
      throw error;
    }
    // One line per lock manager: a start with every node down must not look like a healthy one.
    const health = await this.redlock.health();
    this.logger.log(startupLine(health));
    if (!health.up && this.awaitQuorum === 0) {
      const voting = health.nodes.filter((node) => node.voting).length;
      this.logger.warn(
        `No quorum of lock nodes is reachable (${voting} of ${health.nodes.length} counting, ${health.quorum} needed): ` +
          'locked calls fail as unavailable (HTTP 503) until one is; set awaitQuorum (ms) to make the start wait for a quorum, and fail without one',
      );
    }
    if (this.nodeCount === 1) {
      this.logger.warn(
        'RedlockModule has one node: no fault tolerance — locks stop while it is down, and a restart without persistence can let two holders in. Use 3 or 5 independent Redis masters in production.',
      );
    }
    if (this.awaitQuorum > 0) await this.waitForQuorum(this.awaitQuorum);
  }

  /** `awaitQuorum`: polls `health()` until a quorum answers, or fails the bootstrap. */
  private async waitForQuorum(budgetMs: number): Promise<void> {
    const deadline = performance.now() + budgetMs;
    let told = false;
    for (;;) {
      const health = await this.redlock.health();
      if (health.up) return;
      const left = deadline - performance.now();
      if (left <= 0) {
        const down = health.nodes.filter((node) => !node.up).map((node) => node.node);
        // A failed bootstrap calls no shutdown hook: close the connections this opened.
        await this.core?.close();
        throw new RedlockError(
          `No quorum of lock nodes answered within awaitQuorum (${budgetMs} ms): ${health.nodes.length - down.length} of ${health.nodes.length} up, ${health.quorum} needed (down: ${down.join(', ')})`,
        );
      }
      if (!told) {
        told = true;
        this.logger.warn(`Waiting up to ${budgetMs} ms for a quorum of lock nodes (awaitQuorum)`);
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(250, left)));
    }
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
