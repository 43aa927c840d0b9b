import { AsyncLocalStorage } from 'node:async_hooks';
import { EventEmitter } from 'node:events';
import { monotonicClock, type Clock } from './clock';
import { LockLostError, LockNotAcquiredError, RedlockConfigError } from './errors';
import { IoredisNode, type RedisNodeSpec } from './ioredis-node';
import { RedlockLock, type Lock, type LockDriver } from './lock';
import { LockSession, type LockScope } from './lock-session';
import { consoleLogger, type RedlockLogger } from './logger';
import { isRedisNode, type RedisNode } from './node';
import { describeNodeSpec, nodeSpecName } from './node-spec';
import {
  assertLockTtl,
  resolveCallSettings,
  resolveOptions,
  type LockOptions,
  type RedlockOptions,
  type ResolvedRedlockOptions,
} from './options';
import { newOwnerValue } from './owner-value';
import { quorumOf } from './quorum';
import { normalizeResources, type Resources } from './resources';
import { acquireRound, extendRound, releaseRound, type RoundContext } from './rounds';
import { sleep } from './sleep';

/** A routine run under a lock by `using()`. */
export type LockedRoutine<T> = (lock: Lock) => Promise<T> | T;

/** Events of a {@link Redlock}. */
export interface RedlockEvents {
  /** A held lock was lost (its signal aborted with the same error). */
  lockLost: [error: LockLostError, lock: Lock];
}

/**
 * How long the first acquisition waits for connections still being opened: long enough for
 * a healthy node on any sane network, short enough that a black-holed node does not hold up
 * a process's first lock for a TCP timeout.
 */
const CONNECT_WAIT_MS = 2_000;

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
  /** The options in force, defaults applied. */
  readonly options: Readonly<ResolvedRedlockOptions>;
  /** Votes needed out of the nodes: floor(N/2) + 1. */
  readonly quorum: number;
  private readonly nodes: readonly RedisNode[];
  private readonly logger: RedlockLogger;
  private readonly clock: Clock;
  private readonly round: RoundContext;
  private readonly driver: LockDriver;
  private readonly scope = new AsyncLocalStorage<LockScope>();
  private readonly held = new Set<RedlockLock>();
  private connecting?: Promise<void>;
  private closing?: Promise<void>;
  /** Aborted by `drain()`: wakes every waiting acquisition so that it gives up at once. */
  private readonly draining = new AbortController();

  /**
   * @param nodes the independent Redis masters: `redis://` / `rediss://` URLs, ioredis options,
   *   ioredis clients (used as they are, never closed by us), or {@link RedisNode} adapters.
   * @throws RedlockConfigError naming the first bad option or node.
   */
  constructor(nodes: readonly (RedisNodeSpec | RedisNode)[], options: RedlockOptions = {}) {
    super();
    this.options = Object.freeze(resolveOptions(options));
    this.logger = options.logger ?? consoleLogger;
    this.clock = options.clock ?? monotonicClock;
    validateNodes(nodes);
    if (nodes.length % 2 === 0) {
      this.logger.warn(
        `${nodes.length} Redis nodes: an even count tolerates no more failures than ${nodes.length - 1}; use an odd number`,
      );
    }
    this.nodes = nodes.map((spec) =>
      isRedisNode(spec) ? spec : IoredisNode.from(spec, this.options.nodeTimeout, this.logger),
    );
    this.quorum = quorumOf(this.nodes.length);
    this.round = {
      nodes: this.nodes,
      quorum: this.quorum,
      nodeTimeout: this.options.nodeTimeout,
      driftFactor: this.options.driftFactor,
      clock: this.clock,
    };
    this.driver = {
      clock: this.clock,
      extend: (lock, ttl) => this.extendLock(lock, ttl),
      release: (lock) => this.releaseLock(lock),
      lost: (lock, error) => this.reportLost(lock, error),
    };
    // Connections open in the background; the first attempt waits for them (bounded), so a
    // lock taken right after start-up does not fail on sockets that are still connecting.
    this.connecting = Promise.all(this.nodes.map((n) => n.whenReady(CONNECT_WAIT_MS))).then(() => {
      this.connecting = undefined;
    });
  }

  /**
   * Acquires a lock, retrying until `wait` ms have passed or `options.signal` aborts.
   * @throws LockNotAcquiredError with reason `held` or `unavailable`
   * @throws LockResourceError for a bad resource; RedlockConfigError for a bad option
   * @throws the signal's reason when `options.signal` aborts
   */
  acquire(resources: Resources, options?: LockOptions): Promise<Lock> {
    return this.take(resources, options);
  }

  /**
   * One attempt, no waiting. Resolves to `null` when another owner holds the lock.
   * @throws LockNotAcquiredError with reason `unavailable` when a quorum of nodes cannot be
   *   reached: "nobody holds it" and "we could not ask" are different answers.
   */
  async tryAcquire(resources: Resources, options?: LockOptions): Promise<Lock | null> {
    try {
      return await this.take(resources, options, 0);
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
    const lock = await this.take(resources, options);
    const session = this.session(lock, options);
    let result: T;
    try {
      result = await session.run(() => routine(lock));
    } catch (error) {
      // The routine's own error wins over a lost lock: it says more about what went wrong.
      await session.end();
      throw error;
    }
    const lost = await session.end();
    if (lost) throw lost;
    return result;
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
    this.draining.abort();
  }

  /**
   * Drains, then ends every lock still held — its signal aborts with LockLostError and a
   * warning names it, since whatever it protects is no longer protected — releases them, and
   * closes the connections this instance opened (never a client you passed in).
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.drain();
      await Promise.all(
        [...this.held].map((lock) => {
          lock.markLost(
            new LockLostError(lock.resources, 'its lock manager was closed while it was held'),
          );
          return lock.release();
        }),
      );
      // Adapters we built close the clients they created and leave a caller's client open;
      // a caller's RedisNode adapter is the caller's to close.
      await Promise.all(
        this.nodes.filter((node) => node instanceof IoredisNode).map((node) => node.close()),
      );
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
    const extension =
      options?.autoExtend === false
        ? undefined
        : {
            retryDelay: options?.retryDelay ?? this.options.retryDelay,
            maxHold: options?.maxHold ?? this.options.maxHold,
          };
    return new LockSession(lock as RedlockLock, this.scope, this.clock, extension);
  }

  /** Acquires with the waiting loop of DESIGN §5.2. */
  private async take(
    resources: Resources,
    options: LockOptions | undefined,
    waitOverride?: number,
  ): Promise<RedlockLock> {
    const names = normalizeResources(resources);
    const settings = resolveCallSettings(this.options, options);
    const signal = options?.signal;
    signal?.throwIfAborted();
    if (this.draining.signal.aborted) throw shuttingDown(names, 0);
    if (this.connecting) await this.connecting;
    const prefix = this.options.keyPrefix;
    const keys = prefix === '' ? names : names.map((name) => prefix + name);
    // One value for every attempt of this acquisition: a key left by an earlier attempt
    // (whose release did not reach a node in time) then counts as ours, not as a blocker.
    const value = newOwnerValue();
    const giveUpAt = this.clock.now() + (waitOverride ?? settings.wait);
    for (let attempts = 1; ; attempts++) {
      const result = await acquireRound(this.round, keys, value, settings.ttl);
      if (result.acquired) {
        const lock = new RedlockLock(
          this.driver,
          names,
          keys,
          value,
          settings.ttl,
          result.deadline,
        );
        if (signal?.aborted || this.draining.signal.aborted) {
          // Nobody is waiting for it any more.
          await lock.release();
          signal?.throwIfAborted();
          throw shuttingDown(names, attempts);
        }
        this.held.add(lock);
        return lock;
      }
      if (this.draining.signal.aborted) throw shuttingDown(names, attempts);
      const left = giveUpAt - this.clock.now();
      if (left <= 0) {
        throw new LockNotAcquiredError(
          names,
          result.reason,
          attempts,
          result.outcomes,
          result.retryAfterMs,
        );
      }
      let delay = settings.retryDelay + Math.random() * settings.retryJitter;
      // Never sleep past the moment a blocking key is known to expire.
      if (result.earliestExpiry !== undefined && result.earliestExpiry < delay)
        delay = result.earliestExpiry;
      try {
        await sleep(Math.min(delay, left), signal, this.draining.signal);
      } catch (error) {
        if (signal?.aborted) throw error;
        throw shuttingDown(names, attempts);
      }
    }
  }

  private async extendLock(lock: RedlockLock, ttl: number): Promise<void> {
    if (!lock.isHeld) throw lock.lostReason ?? new LockLostError(lock.resources, 'it was released');
    assertLockTtl(ttl, this.options.nodeTimeout);
    if (lock.remainingMs() <= 0) {
      const error = new LockLostError(lock.resources);
      lock.markLost(error);
      throw error;
    }
    const result = await extendRound(this.round, lock.keys, lock.value, ttl);
    if (!lock.isHeld) {
      // Lost (its validity ended) or released while the round was in flight: an extension that
      // lands now does not undo that.
      throw (
        lock.lostReason ?? new LockLostError(lock.resources, 'it was released while being extended')
      );
    }
    if (result.extended) return lock.renew(result.deadline);
    if (result.lost) {
      const error = new LockLostError(lock.resources, 'a quorum of nodes no longer holds it');
      lock.markLost(error);
      throw error;
    }
    throw new LockLostError(
      lock.resources,
      `it could not be extended on a quorum of nodes in time; it remains valid for ${Math.floor(lock.remainingMs())} ms`,
    );
  }

  private async releaseLock(lock: RedlockLock): Promise<void> {
    lock.markReleased();
    this.held.delete(lock);
    await releaseRound(this.round, this.nodes, lock.keys, lock.value);
  }

  private reportLost(lock: RedlockLock, error: LockLostError): void {
    this.logger.warn(error.message);
    this.emit('lockLost', error, lock);
  }
}

/** The error of an acquisition refused or abandoned because the lock manager is shutting down. */
function shuttingDown(resources: readonly string[], attempts: number): LockNotAcquiredError {
  return new LockNotAcquiredError(
    resources,
    'unavailable',
    attempts,
    [],
    undefined,
    'the lock manager is shutting down',
  );
}

/** Rejects an empty node list, an unusable entry and the same node listed twice. */
function validateNodes(nodes: unknown): asserts nodes is readonly (RedisNodeSpec | RedisNode)[] {
  if (!Array.isArray(nodes) || nodes.length === 0) {
    throw new RedlockConfigError('nodes', nodes, 'must list at least one Redis node');
  }
  const seen = new Map<string, number>();
  nodes.forEach((spec: unknown, index) => {
    const name = nodeSpecName(spec);
    if (name === undefined) {
      throw new RedlockConfigError(
        `nodes[${index}]`,
        describeNodeSpec(spec),
        'must be a redis:// or rediss:// URL, ioredis options, an ioredis client or a RedisNode',
      );
    }
    const first = seen.get(name);
    if (first !== undefined) {
      throw new RedlockConfigError(
        `nodes[${index}]`,
        name,
        `must not repeat nodes[${first}]: one Redis server counted twice would vote twice`,
      );
    }
    seen.set(name, index);
  });
}
