import { AsyncLocalStorage } from 'node:async_hooks';
import { EventEmitter } from 'node:events';
import { monotonicClock, type Clock } from './clock';
import { LockNotAcquiredError, RedlockConfigError, type LockLostError } from './errors';
import type { RedlockEvents } from './observability/events';
import type { HeldLockInfo, LockInspection, RedlockHealth } from './inspection';
import type { RedisNodeSpec } from './nodes/ioredis-node';
import type { Lock, SessionLock } from './lease/lock';
import { LockSession, type LockScope, type SessionEnd } from './lease/lock-session';
import { consoleLogger } from './observability/logger';
import { AcquireEntry } from './manager/acquire-entry';
import { nodeAdapters, validateNodes } from './manager/node-list';
import { LockObserver } from './observability/observer';
import { assembleParts, canQueue, type ManagerParts } from './manager/parts';
import { Startup } from './manager/startup';
import { inspectResource, nodeHealth } from './manager/status';
import type { RedisNode } from './nodes/node';
import type { NodeRedisClient } from './nodes/node-redis-node';
import {
  resolveOptions,
  type LockOptions,
  type RedlockOptions,
  type ResolvedRedlockOptions,
} from './options';
import type { Resources } from './resources';
import { evenNodesWarning } from './observability/startup-report';

/** A routine run under a lock by `using()`. */
export type LockedRoutine<T> = (lock: Lock) => Promise<T> | T;

/** The work of {@link Redlock.hold}: a routine that may also use the session it runs in. */
export type HoldWork<T> = (lock: Lock, session: LockSession) => T | PromiseLike<T>;

/** How {@link Redlock.hold} acquires and ends, beyond the lock options. */
export interface HoldSettings {
  /**
   * Rounds that failed as `unavailable` are retried within the split-vote window too
   * (split-vote.ts): for work that is skipped rather than failed on an outage.
   */
  readonly retryUnavailable?: boolean;
  /** How the session ends (default: `session.end()`), e.g. kept for a minimum time. */
  readonly end?: SessionEnd;
  /** What a loss during successful work rejects with instead of the LockLostError itself. */
  readonly lost?: (error: LockLostError) => unknown;
}

export type { RedlockEvents } from './observability/events';
export { validateNodes } from './manager/node-list';

/**
 * The framework-free Redlock: a mutual-exclusion lock over N independent Redis masters.
 *
 * @example
 * const redlock = new Redlock(['redis://a:6379', 'redis://b:6379', 'redis://c:6379']);
 * await redlock.using('stock:42', async (lock) => {
 *   await decrement(42, { signal: lock.signal });
 * });
 * await redlock.close();
 */
export class Redlock extends EventEmitter<RedlockEvents> {
  /** The options in force, defaults filled in. */
  readonly options: Readonly<ResolvedRedlockOptions>;
  /** How many nodes make a majority. */
  readonly quorum: number;
  /** The parts this lock manager composes (manager/parts.ts). */
  private readonly parts: ManagerParts;
  private readonly scope = new AsyncLocalStorage<LockScope>();
  private readonly startup: Startup;
  private readonly entry: AcquireEntry;
  private closing?: Promise<void>;

  /**
   * @param nodes the independent Redis masters: `redis://` / `rediss://` URLs, ioredis options,
   *   ioredis clients (used as they are, never closed by us), or {@link RedisNode} adapters.
   * @throws RedlockConfigError naming the first bad option or node.
   */
  constructor(
    nodes: readonly (RedisNodeSpec | RedisNode | NodeRedisClient)[],
    options: RedlockOptions = {},
  ) {
    super();
    const resolved = resolveOptions(options);
    const logger = options.logger ?? consoleLogger;
    const clock: Clock = options.clock ?? monotonicClock;
    validateNodes(nodes);
    if (nodes.length % 2 === 0) logger.warn(evenNodesWarning(nodes.length));
    const adapters = nodeAdapters(nodes, resolved.nodeTimeout, logger, clock);
    // The default fairness is the queue where every node can run it (the ioredis adapter can);
    // over nodes without its scripts or release notifications (the node-redis adapter, an
    // adapter of your own) it is 'off', as with notifications off. Asked for explicitly,
    // 'queue' is refused there (assembleParts).
    if (options.fairness === undefined && !adapters.every(canQueue)) resolved.fairness = 'off';
    this.options = Object.freeze(resolved);
    const observer = new LockObserver(this, logger, () => clock.now());
    this.parts = assembleParts(
      adapters,
      adapters.map((node, i) => node === nodes[i]),
      this.options,
      clock,
      observer,
      options.random,
    );
    this.quorum = this.parts.quorum;
    this.startup = new Startup(
      this.parts,
      this.options.telemetry,
      () => this.closing !== undefined,
    );
    this.entry = new AcquireEntry(this.parts, this.scope, this.startup, (resource) =>
      this.inspect(resource),
    );
  }

  /**
   * Resolves once every node has connected (or failed to, or `CONNECT_WAIT_MS` passed) and
   * checks that no Redis server is listed twice under two names (`127.0.0.1` and `localhost`,
   * a DNS alias): that server would vote twice, and its one restart would let a second client
   * in. The Nest module awaits it at bootstrap, so such a list fails the app's start.
   * @throws RedlockConfigError naming the two entries that are one server
   */
  ready(signal?: AbortSignal): Promise<void> {
    return this.startup.ready(signal);
  }

  /**
   * Acquires a lock, retrying until `wait` ms have passed or `options.signal` aborts.
   * @throws LockNotAcquiredError with reason `held` or `unavailable`
   * @throws LockResourceError for a bad resource; RedlockConfigError for a bad option
   * @throws the signal's reason when `options.signal` aborts
   */
  acquire(resources: Resources, options?: LockOptions): Promise<Lock> {
    return this.entry.take(resources, options);
  }

  /**
   * One attempt, no waiting. Resolves to `null` when another owner holds the lock.
   * @throws LockNotAcquiredError with reason `unavailable` when a quorum of nodes cannot be
   *   reached: "nobody holds it" and "we could not ask" are different answers.
   */
  async tryAcquire(resources: Resources, options?: LockOptions): Promise<Lock | null> {
    try {
      return await this.entry.take(resources, options, { wait: 0 });
    } catch (error) {
      if (error instanceof LockNotAcquiredError && error.reason === 'held') return null;
      throw error;
    }
  }

  /**
   * Runs `routine` under the lock: acquires (waiting as `acquire()` does), extends the lock
   * while the routine runs (unless `autoExtend: false`), and releases it when the routine
   * settles. The routine's result or error is passed through; if the lock was lost while it
   * ran, `lock.signal` aborted at that moment and `using()` rejects with LockLostError once
   * the routine returns (a routine that failed keeps its own error).
   */
  using<T>(resources: Resources, routine: LockedRoutine<T>): Promise<T>;
  using<T>(resources: Resources, options: LockOptions, routine: LockedRoutine<T>): Promise<T>;
  async using<T>(
    resources: Resources,
    optionsOrRoutine: LockOptions | LockedRoutine<T>,
    maybeRoutine?: LockedRoutine<T>,
  ): Promise<T> {
    const [options, routine] =
      typeof optionsOrRoutine === 'function'
        ? [undefined, optionsOrRoutine]
        : [optionsOrRoutine, maybeRoutine];
    if (typeof routine !== 'function') {
      throw new RedlockConfigError(
        'routine',
        routine,
        'using() needs a function to run under the lock',
      );
    }
    return this.hold(resources, options, routine);
  }

  /**
   * The hold primitive: acquires (as `acquire()` does, waiting per `options`), runs `work` under
   * the lock — in its async scope (`currentLock()`), auto-extended unless `autoExtend: false` —
   * and releases it on every exit path once the work has stopped (see {@link LockSession.hold}).
   * `using()` is this with its arguments checked; the `@Locked` interceptor and method wrapper
   * hold their calls' locks through it too, with the `settings` below.
   * @throws what `acquire()` throws, before `work` runs; then the work's own error, or
   *   LockLostError when the lock was lost while it ran
   */
  async hold<T>(
    resources: Resources,
    options: LockOptions | undefined,
    work: HoldWork<T>,
    settings?: HoldSettings,
  ): Promise<T> {
    const lock = await this.entry.take(resources, options, {
      retryUnavailable: settings?.retryUnavailable,
    });
    const session = this.session(lock, options);
    return session.hold(() => work(lock, session), settings?.end, settings?.lost);
  }

  /**
   * What every node says about `resource` now — locked or free, by which holder (an opaque
   * tag, the same on every node the holder has), for how long — and whether this process holds
   * it. For operators; never on the lock path, never reveals an owner value.
   * @example
   * const { nodes } = await redlock.inspect('stock:42');
   * // [{ node: '10.0.0.1:6379', state: 'locked', holder: 'Zk3…', remainingMs: 8123 }, …]
   */
  inspect(resource: string): Promise<LockInspection> {
    return inspectResource(this.parts, resource);
  }

  /**
   * Pings every node (bounded by `nodeTimeout`): up when a quorum answers — locks can then be
   * taken and released — with each node's state and latency. For health checks.
   */
  health(): Promise<RedlockHealth> {
    return nodeHealth(this.parts);
  }

  /** The locks this process holds now (resources, held for, validity left, extensions). */
  heldLocks(): HeldLockInfo[] {
    return this.parts.held.list(this.parts.clock.now());
  }

  /** The lock held by the current async context (inside `using()` / `@Locked`), if any. */
  currentLock(): Lock | undefined {
    return this.scope.getStore()?.lock;
  }

  /**
   * Stops acquiring: waiting acquisitions give up at once and new ones fail, both with
   * LockNotAcquiredError (`unavailable`, "shutting down"); locks already held stay held until
   * released or `close()`. The first step of a graceful shutdown: work in flight finishes under
   * its locks, while requests that would only start waiting answer at once.
   */
  drain(): void {
    this.parts.draining.abort();
    this.parts.acquisition.drain();
    this.parts.fair?.drain();
  }

  /**
   * Drains, then ends every lock still held — its signal aborts with LockLostError and a
   * warning names it, since whatever it protects is no longer protected — releases them, and
   * closes the connections this instance opened (never a client or a `RedisNode` adapter you
   * passed in: other lock managers may share it).
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.drain();
      const { membership, suspicion, observer, held, builtNodes } = this.parts;
      membership.close();
      suspicion.close();
      observer.telemetry?.close();
      await held.endAll();
      // Adapters we built close the clients they created and leave a caller's client open;
      // a caller's RedisNode adapter (an IoredisNode included) is the caller's to close: other
      // lock managers may share it.
      await Promise.all(builtNodes.map((node) => node.close()));
    })();
    return this.closing;
  }

  /**
   * Holds an acquired lock for the duration of some work: auto-extension per `options` (or an
   * expiry watch with `autoExtend: false`), the async scope `currentLock()` reads, and release
   * on `end()`. `using()` is built on it; so is the Nest interceptor, whose work may be an
   * Observable rather than a Promise.
   */
  session(lock: Lock, options?: LockOptions): LockSession {
    const held = lock as SessionLock;
    const extension =
      options?.autoExtend === false
        ? undefined
        : {
            ttl: held.root.ttl,
            retryDelay: options?.retryDelay ?? this.options.retryDelay,
            holdUntil: this.parts.clock.now() + (options?.maxHold ?? this.options.maxHold),
          };
    return new LockSession(held, this.scope, extension);
  }
}
