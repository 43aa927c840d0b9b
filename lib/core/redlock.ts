import { AsyncLocalStorage } from 'node:async_hooks';
import { EventEmitter, setMaxListeners } from 'node:events';
import { monotonicClock, type Clock } from './clock';
import { idSource } from './random';
import {
  LockReentryError,
  LockLostError,
  LockNotAcquiredError,
  RedlockConfigError,
} from './errors';
import { IoredisNode, type RedisNodeSpec } from './ioredis-node';
import { ReentrantLock, RedlockLock, type Lock, type LockDriver, type SessionLock } from './lock';
import { fenceKeysOf } from './fencing';
import { fleetId, Membership, nodesWithoutMembership } from './membership';
import { LockSession, type LockScope, type SessionEnd } from './lock-session';
import { consoleLogger, type RedlockLogger } from './logger';
import type { RedlockEvents } from './events';
import { isRedisNode, type RedisNode } from './node';
import { assertUsableNodeSpec } from './ioredis-client';
import { NodeRedisNode, isNodeRedisClient, type NodeRedisClient } from './node-redis-node';
import { describeNodeSpec, nodeSpecName } from './node-spec';
import {
  assertLockTtl,
  resolveCallSettings,
  type CallSettings,
  resolveOptions,
  type LockOptions,
  type RedlockOptions,
  type ResolvedRedlockOptions,
} from './options';
import { quorumOf } from './quorum';
import { normalizeResources, type Resources } from './resources';
import { extendRound, releaseRound, type RoundContext } from './rounds';
import { duplicateServers, evictionWarning } from './server-info';
import { fanOut } from './fan-out';
import { DescribedNodeError, describeNodeError } from './node-errors';
import { AccessCheck } from './permissions';
import { evenNodesWarning, notVotingReason } from './startup-report';
import {
  nodeLockState,
  type HeldLockInfo,
  type LockInspection,
  type NodeHealthState,
  type NodeLockState,
  type RedlockHealth,
} from './inspection';
import { ReleaseNotifier } from './notifier';
import { AcquisitionLoop, shuttingDown, type AcquisitionCall } from './acquisition';
import { FairQueue } from './fair-queue';
import { retrySplitVotes, type SplitVoteParts } from './split-vote';
import { Suspicion } from './suspicion';
import { loadOtelApi, RedlockTelemetry, type AcquireTrace } from './telemetry';

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

export type { RedlockEvents } from './events';

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
  /** The adapters this instance built (from URLs, options or clients): the ones `close()` closes. */
  private readonly builtNodes: readonly RedisNode[];
  private readonly logger: RedlockLogger;
  private readonly clock: Clock;
  private readonly round: RoundContext;
  private readonly driver: LockDriver;
  private readonly scope = new AsyncLocalStorage<LockScope>();
  private readonly held = new Set<RedlockLock>();
  /** What this lock manager knows of its nodes: identities, restarts, lease horizons (DESIGN §5.7). */
  private readonly membership: Membership;
  /** The attempt loop and its waiting strategies (DESIGN §3, §5.2). */
  private readonly acquisition: AcquisitionLoop;
  /** Fair hand-off (DESIGN §5.11), with `fairness: 'queue'`. */
  private readonly fair?: FairQueue;
  /** Whether each node's Redis user may run what the library needs (permissions.ts). */
  private readonly access: AccessCheck;
  /** Nodes suspected hung get no lock traffic until a probe finds them answering (issue 18). */
  private readonly suspicion: Suspicion;
  /**
   * The nodes a lock's acquire did not reach (suspected then), for locks that have any: its
   * release skips them. Nothing is stored while every node answers.
   */
  private readonly notSent = new WeakMap<RedlockLock, readonly boolean[]>();
  /** OpenTelemetry, once `@opentelemetry/api` is loaded; unset without it or with `telemetry: false`. */
  private telemetry?: RedlockTelemetry;
  /** While `@opentelemetry/api` is being imported (never rejects). */
  private instrumenting?: Promise<void>;
  private connecting?: Promise<void>;
  private closing?: Promise<void>;
  /** Servers (by run_id) whose eviction policy was warned about: once each. */
  private readonly evictionSaid = new Set<string>();
  /** Aborted by `drain()`: wakes every waiting acquisition so that it gives up at once. */
  private readonly draining = new AbortController();
  /** The retry policy for rounds nobody won (split-vote.ts). */
  private readonly splitVotes: SplitVoteParts;

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
    this.options = Object.freeze(resolveOptions(options));
    this.logger = options.logger ?? consoleLogger;
    this.clock = options.clock ?? monotonicClock;
    validateNodes(nodes);
    if (nodes.length % 2 === 0) this.logger.warn(evenNodesWarning(nodes.length));
    // Every waiting acquisition listens to it; hundreds of waiters are normal, not a leak.
    setMaxListeners(0, this.draining.signal);
    this.nodes = nodes.map((spec) =>
      isRedisNode(spec)
        ? spec
        : isNodeRedisClient(spec)
          ? new NodeRedisNode(spec, this.clock)
          : IoredisNode.from(spec, this.options.nodeTimeout, this.logger, this.clock),
    );
    // A RedisNode passed in is used as it is: it may be shared with other lock managers.
    this.builtNodes = this.nodes.filter((node, i) => node !== nodes[i]);
    this.quorum = quorumOf(this.nodes.length);
    this.access = new AccessCheck(this.nodes, this.clock, this.options, this.logger);
    this.membership = new Membership(
      this.nodes,
      this.clock,
      {
        quarantine: this.options.quarantine,
        trustUnidentifiedNodes: this.options.trustUnidentifiedNodes,
        driftFactor: this.options.driftFactor,
        nodeTimeout: this.options.nodeTimeout,
        keyPrefix: this.options.keyPrefix,
        ttl: this.options.ttl,
        maxTtl: this.options.maxTtl,
        fencing: this.options.fencing,
        fleet: fleetId(
          this.options.keyPrefix,
          this.nodes.map((node) => node.name),
        ),
      },
      this.logger,
      {
        quarantined: (node, remainingMs) => this.emit('nodeQuarantined', { node, remainingMs }),
        rejoined: (node) => this.emit('nodeRejoined', { node }),
      },
    );
    if (this.membership.enabled) {
      const unable = nodesWithoutMembership(this.nodes)[0];
      if (unable !== undefined) {
        throw new RedlockConfigError(
          'quarantine',
          this.options.quarantine,
          `needs nodes that can record lease horizons and report on themselves; ${unable.name} cannot (pass quarantine: false to use it without restart detection)`,
        );
      }
    }
    for (const node of this.nodes) {
      node.onHealth?.((state) => {
        const event = { node: node.name };
        if (state === 'down') this.emit('nodeDown', event);
        else if (state === 'up') this.emit('nodeUp', event);
        else this.emit('nodeSlow', event);
        if (state !== 'up') this.telemetry?.nodeError(node.name, state);
      });
    }
    if (this.options.fencing) this.assertCanFence();
    this.suspicion = new Suspicion(this.nodes, this.clock, this.options.nodeTimeout);
    this.splitVotes = {
      clock: this.clock,
      inspect: (resource) => this.inspect(resource),
      draining: this.draining.signal,
      random: options.random ?? Math.random,
      everyNodeVotes: () => this.membership.voters().every(Boolean),
    };
    this.round = {
      nodes: this.nodes,
      quorum: this.quorum,
      nodeTimeout: this.options.nodeTimeout,
      driftFactor: this.options.driftFactor,
      clock: this.clock,
      voters: (ttl, fenced) => this.membership.voters(ttl, fenced),
      // Every release is announced, also with notifications off here: other lock managers of
      // the same resources may rely on it (their waiters stop polling while they listen), and
      // a PUBLISH nobody listens to costs the server well under a microsecond.
      notify: true,
      suspicion: this.suspicion,
      // A simulation's seeded source names releases too: a run replays from its seed alone.
      releaseId: options.random === undefined ? undefined : idSource(options.random),
    };
    this.driver = {
      clock: this.clock,
      extend: (lock, ttl) => this.extendLock(lock, ttl),
      release: (lock) => {
        if (lock.lostReason === undefined && this.listenerCount('released') > 0) {
          this.emit('released', {
            resources: lock.resources,
            heldMs: this.clock.now() - lock.acquiredAt,
          });
        }
        const telemetry = this.telemetry;
        const span = telemetry?.startRound('redlock.release', lock.resources);
        // No closure unless a span records: nothing added to the lock path otherwise.
        const notSent = this.notSent.get(lock);
        const fair = this.fair;
        if (telemetry === undefined || span === undefined) {
          if (fair?.owns(lock)) return fair.release(lock, notSent);
          return releaseRound(this.round, this.nodes, lock.keys, lock.value, notSent);
        }
        const heldMs =
          lock.lostReason === undefined ? this.clock.now() - lock.acquiredAt : undefined;
        return telemetry.traceRelease(span, heldMs, () =>
          fair?.owns(lock)
            ? fair.release(lock, notSent)
            : releaseRound(this.round, this.nodes, lock.keys, lock.value, notSent),
        );
      },
      ended: (lock) => {
        this.held.delete(lock);
        this.fair?.ended(lock);
      },
      lost: (lock, error) => this.reportLost(lock, error),
    };
    const notifier = this.options.notifications ? new ReleaseNotifier(this.nodes) : undefined;
    const hold: ConstructorParameters<typeof AcquisitionLoop>[0]['hold'] = (
      call,
      value,
      result,
    ) => {
      const lock = new RedlockLock(
        this.driver,
        call.names,
        call.keys,
        value,
        call.settings.ttl,
        result.deadline,
        result.fencingToken,
      );
      this.held.add(lock);
      if (result.skipped !== undefined) this.notSent.set(lock, result.skipped);
      return lock;
    };
    const cover = (ttl: number) => this.membership.cover(ttl);
    this.acquisition = new AcquisitionLoop({
      nodes: this.nodes,
      quorum: this.quorum,
      clock: this.clock,
      round: this.round,
      nodeTimeout: this.options.nodeTimeout,
      cover,
      quorumAt: () => this.membership.quorumAt(),
      notifier,
      draining: this.draining.signal,
      events: this,
      hold,
      random: options.random,
    });
    if (this.options.fairness === 'queue' && notifier !== undefined) {
      const unable = this.nodes.find(
        (node) => node.acquireQueued === undefined || node.handOff === undefined,
      );
      if (unable !== undefined) {
        throw new RedlockConfigError(
          'fairness',
          this.options.fairness,
          `needs nodes that can queue waiters; ${unable.name} cannot`,
        );
      }
      this.fair = new FairQueue({
        clock: this.clock,
        round: this.round,
        notifier,
        loop: this.acquisition,
        leaseMs: this.options.handOffLease,
        retryJitter: this.options.retryJitter,
        cover,
        hold,
        acquired: (call, lock) => this.handedOver(call, lock),
        random: options.random,
      });
    }
    // Connections open in the background; the first attempt waits for them (bounded), so a
    // lock taken right after start-up does not fail on sockets that are still connecting.
    this.connecting = this.ready().finally(() => {
      this.connecting = undefined;
    });
    const telemetry = this.options.telemetry;
    if (telemetry !== false) {
      this.instrumenting = loadOtelApi()
        .then((api) => {
          if (api === undefined || this.closing !== undefined) return;
          this.telemetry = new RedlockTelemetry(
            api,
            this.clock,
            telemetry !== true && telemetry.recordResources === true,
            this.nodes.length,
            this.quorum,
            () => this.held.size,
          );
        })
        .finally(() => {
          this.instrumenting = undefined;
        });
    }
    // Keep the promise from being reported unhandled: the first acquisition (or `ready()`)
    // throws its error to someone who is listening.
    this.connecting.catch(() => undefined);
  }

  /**
   * Resolves once every node has connected (or failed to, or `CONNECT_WAIT_MS` passed) and
   * checks that no Redis server is listed twice under two names (`127.0.0.1` and `localhost`,
   * a DNS alias): that server would vote twice, and its one restart would let a second client
   * in. The Nest module awaits it at bootstrap, so such a list fails the app's start.
   * @throws RedlockConfigError naming the two entries that are one server
   */
  async ready(signal?: AbortSignal): Promise<void> {
    const waiting = Promise.all(this.nodes.map((n) => n.whenReady(CONNECT_WAIT_MS)));
    await (signal ? raceAbort(waiting, signal) : waiting);
    // A first decision on every node's standing (admitted, or quarantined after a restart), so
    // that the first lock is not refused only because the checks were still under way.
    const settling = this.membership.settle(CONNECT_WAIT_MS);
    await (signal ? raceAbort(settling, signal) : settling);
    this.warnEviction();
    const duplicates = duplicateServers(this.nodes);
    if (duplicates.length > 0) {
      const [first, second] = duplicates[0];
      throw new RedlockConfigError(
        `nodes[${second}]`,
        this.nodes[second].name,
        `must not be the same Redis server as nodes[${first}] (${this.nodes[first].name}): ` +
          'both report the same run_id, so one server would vote twice',
      );
    }
    // A user without a permission the library needs fails here, naming the ACL it lacks, rather
    // than every lock failing after its whole wait (issue 25).
    const verifying = this.access.verify();
    await (signal ? raceAbort(verifying, signal) : verifying);
  }

  /**
   * Warns once per node whose eviction policy can remove lock keys (DESIGN §5.7): a warning,
   * not a refusal, because many managed services set a `volatile-*` policy and some do not let
   * it be changed; eviction happens only under memory pressure, which the operator can size
   * away, and the warning names the fix.
   */
  private warnEviction(): void {
    this.nodes.forEach((node) => {
      const info = node.serverInfo;
      if (info === undefined || this.evictionSaid.has(info.runId)) return;
      const warning = evictionWarning(node.name, info.evictionPolicy);
      if (warning === undefined) return;
      this.evictionSaid.add(info.runId);
      this.logger.warn(warning);
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
    const lock = await this.take(resources, options, undefined, settings?.retryUnavailable);
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
  async inspect(resource: string): Promise<LockInspection> {
    const [name] = normalizeResources(resource, this.options.maxResourceLength);
    const key = this.options.keyPrefix + name;
    const replies = await fanOut(
      this.nodes,
      (node) => {
        if (node.inspect === undefined)
          throw new DescribedNodeError('error', 'this node adapter cannot inspect keys');
        return node.inspect(key);
      },
      { clock: this.clock, timeoutMs: this.options.nodeTimeout },
    );
    const nodes = replies.map((reply, i): NodeLockState => {
      const node = this.nodes[i].name;
      if (reply.kind === 'ok') return nodeLockState(node, reply.value);
      const error = reply.kind === 'error' ? errorText(reply.error) : 'no answer in time';
      return { node, state: 'unknown', error };
    });
    const heldHere = [...this.held].some((lock) => lock.resources.includes(name));
    return { resource: name, nodes, heldHere };
  }

  /**
   * Pings every node (bounded by `nodeTimeout`): up when a quorum answers — locks can then be
   * taken and released — with each node's state and latency. For health checks.
   */
  async health(): Promise<RedlockHealth> {
    // A node whose standing is still being checked (just reconnected) is reported as decided.
    await this.membership.settle(this.options.nodeTimeout * 2);
    const started = this.nodes.map(() => 0);
    const replies = await fanOut(
      this.nodes,
      (node, i) => {
        if (node.ping === undefined)
          throw new DescribedNodeError('error', 'this node adapter cannot ping');
        started[i] = this.clock.now();
        return node.ping().then(() => this.clock.now() - started[i]);
      },
      { clock: this.clock, timeoutMs: this.options.nodeTimeout },
    );
    const voters = this.membership.voters();
    const refused = (index: number) => this.access.missingOn(index).length > 0;
    const facts = {
      nodes: this.nodes,
      quarantine: this.membership.enabled,
      trustUnidentifiedNodes: this.options.trustUnidentifiedNodes,
      missing: (index: number) => this.access.missingOn(index),
    };
    const nodes = replies.map((reply, i): NodeHealthState => {
      const node = this.nodes[i].name;
      if (reply.kind === 'ok') {
        // Each entry says why it does not count, so that `up` agrees with the nodes listed.
        return voters[i] && !refused(i)
          ? { node, up: true, latencyMs: reply.value, voting: true }
          : {
              node,
              up: true,
              latencyMs: reply.value,
              voting: false,
              reason: notVotingReason(facts, i),
            };
      }
      const error =
        reply.kind === 'error' ? errorText(reply.error) : 'no answer within nodeTimeout';
      return { node, up: false, error, voting: false };
    });
    const up = nodes.filter((n) => n.voting).length >= this.quorum;
    return { up, quorum: this.quorum, nodes };
  }

  /** The locks this process holds now (resources, held for, validity left, extensions). */
  heldLocks(): HeldLockInfo[] {
    const now = this.clock.now();
    return [...this.held].map((lock) => ({
      resources: lock.resources,
      heldMs: now - lock.acquiredAt,
      remainingMs: lock.remainingMs(),
      extensions: lock.extensions,
      fencingToken: lock.fencingToken,
    }));
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
    this.acquisition.drain();
    this.fair?.drain();
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
      this.membership.close();
      this.suspicion.close();
      this.telemetry?.close();
      await Promise.all(
        [...this.held].map((lock) => {
          lock.markLost(
            new LockLostError(lock.resources, 'its lock manager was closed while it was held'),
          );
          return lock.release();
        }),
      );
      // Adapters we built close the clients they created and leave a caller's client open;
      // a caller's RedisNode adapter (an IoredisNode included) is the caller's to close: other
      // lock managers may share it.
      await Promise.all(this.builtNodes.map((node) => node.close()));
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
            holdUntil: this.clock.now() + (options?.maxHold ?? this.options.maxHold),
          };
    return new LockSession(held, this.scope, extension);
  }

  /** Acquires with the waiting loop of DESIGN §5.2. */
  private async take(
    resources: Resources,
    options: LockOptions | undefined,
    waitOverride?: number,
    retryUnavailable?: boolean,
  ): Promise<RedlockLock | ReentrantLock> {
    const names = normalizeResources(resources, this.options.maxResourceLength);
    const settings = resolveCallSettings(this.options, options);
    const signal = options?.signal;
    signal?.throwIfAborted();
    const nested = this.nestedLock(names, settings.reentrant, settings.fencing);
    if (nested !== undefined) return nested;
    // The first acquisitions wait for the API's import (a few ms at most, once per process),
    // so that they are traced like any other.
    if (this.instrumenting !== undefined) await this.instrumenting;
    // Read after the reentrancy check: a nested handle is no acquisition of its own.
    const trace = this.telemetry?.startAcquire(names);
    if (trace === undefined) {
      return this.acquireNew(names, settings, signal, waitOverride, retryUnavailable);
    }
    try {
      const lock = await trace.run(() =>
        this.acquireNew(names, settings, signal, waitOverride, retryUnavailable, trace),
      );
      trace.succeeded();
      return lock;
    } catch (error) {
      trace.failed(error, signal);
      throw error;
    }
  }

  /** A new lock (not a nested handle): the waiting loop of DESIGN §5.2. */
  private async acquireNew(
    names: string[],
    settings: CallSettings,
    signal: AbortSignal | undefined,
    waitOverride: number | undefined,
    retryUnavailable: boolean | undefined,
    trace?: AcquireTrace,
  ): Promise<RedlockLock> {
    if (this.draining.signal.aborted) throw shuttingDown(names, 0);
    if (settings.fencing) this.assertCanFence();
    if (this.connecting) {
      try {
        await raceAbort(this.connecting, signal, this.draining.signal);
      } catch (error) {
        signal?.throwIfAborted();
        if (this.draining.signal.aborted) throw shuttingDown(names, 0);
        throw error;
      }
    }
    const refused = this.access.refusal();
    if (refused !== undefined) throw refused;
    if (settings.fencing) {
      // Fence floors complete on a quorum first (restored from peers after a restart, §5.6).
      const fences = this.membership.fences(CONNECT_WAIT_MS);
      if (fences !== undefined) await raceAbort(fences, signal, this.draining.signal);
    }
    const prefix = this.options.keyPrefix;
    const keys = prefix === '' ? names : names.map((name) => prefix + name);
    // The node's fence floor too: it carries the highest token across a restart (DESIGN §5.6).
    const fenceKeys = settings.fencing
      ? [...fenceKeysOf(keys), this.membership.keys.floor]
      : undefined;
    const startedAt = this.clock.now();
    const giveUpAt = startedAt + (waitOverride ?? settings.wait);
    const call: AcquisitionCall = {
      names,
      keys,
      fenceKeys,
      settings,
      signal,
      startedAt,
      giveUpAt,
      trace,
    };
    try {
      return await this.attempt(call);
    } catch (failure) {
      // One retry policy (split-vote.ts): a round nobody won is not reported as `held`. A retry
      // is one more attempt, made now.
      return retrySplitVotes(
        failure,
        {
          names,
          startedAt,
          retryDelay: settings.retryDelay,
          retryJitter: settings.retryJitter,
          signal,
          settles: giveUpAt === startedAt || retryUnavailable === true,
          retryUnavailable,
        },
        this.splitVotes,
        () => this.attempt({ ...call, giveUpAt: this.clock.now() }),
      );
    }
  }

  /** Attempts until `call` gives up: in the fair queue when it waits in one, else the loop. */
  private attempt(call: AcquisitionCall): Promise<RedlockLock> {
    return this.fair !== undefined && FairQueue.eligible(call)
      ? this.fair.acquire(call)
      : this.acquisition.acquire(call);
  }

  /** A lock handed over by its previous holder in this process (fair hand-off): `acquired`. */
  private handedOver(call: AcquisitionCall, lock: RedlockLock): void {
    if (this.listenerCount('acquired') === 0) return;
    this.emit('acquired', {
      resources: call.names,
      attempts: 0,
      waitMs: this.clock.now() - call.startedAt,
      validityMs: lock.remainingMs(),
      fencingToken: lock.fencingToken,
    });
  }

  /**
   * The lock this async context already holds on `names`, as a nested handle when reentrancy
   * is on; `undefined` when the context holds none of them. A context that holds some of them
   * and may not (or cannot) reuse its lock gets a LockReentryError: waiting would be waiting for
   * itself. So does a nested call that asks for what the lock lacks (a fencing token): it must
   * not get silently less than it asked for (DESIGN §5.9).
   */
  private nestedLock(
    names: readonly string[],
    reentrant: boolean,
    fencing: boolean,
  ): ReentrantLock | undefined {
    for (let scope = this.scope.getStore(); scope !== undefined; scope = scope.outer) {
      const root = scope.lock.root;
      if (!root.isHeld) continue;
      const held = new Set(root.resources);
      if (!names.some((name) => held.has(name))) continue;
      if (!reentrant) {
        throw new LockReentryError(
          names,
          'this async context already holds it (an enclosing using() or @Locked call), ' +
            'and would wait for itself; pass reentrant: true to reuse that lock',
          root.resources,
        );
      }
      if (!names.every((name) => held.has(name))) {
        throw new LockReentryError(
          names,
          'this async context holds only part of it; a nested lock cannot ask for more',
          root.resources,
        );
      }
      if (fencing && root.fencingToken === undefined) {
        throw new LockReentryError(
          names,
          'this async context holds it without a fencing token (taken with fencing off); ' +
            'a nested lock cannot ask for one: take the outer lock with fencing: true',
          root.resources,
        );
      }
      return root.borrow(names);
    }
    return undefined;
  }

  /** Fencing needs phase 2 on every node: refused up front when an adapter cannot do it. */
  private assertCanFence(): void {
    const unable = this.nodes.find((node) => typeof node.fence !== 'function');
    if (unable !== undefined) {
      throw new RedlockConfigError(
        'fencing',
        true,
        `needs nodes that can fence; ${unable.name} cannot`,
      );
    }
  }

  private async extendLock(
    lock: RedlockLock,
    ttl: number,
  ): Promise<{ deadline: number } | { lost: boolean }> {
    assertLockTtl(ttl, this.options.nodeTimeout, 'ttl', this.options.maxTtl);
    // A longer lease needs a horizon that covers it before any node's "yes" counts.
    const covering = this.membership.cover(ttl);
    if (covering !== undefined) await covering;
    const telemetry = this.telemetry;
    const span = telemetry?.startRound('redlock.extend', lock.resources);
    const result = await (telemetry === undefined || span === undefined
      ? extendRound(this.round, lock.keys, lock.value, ttl)
      : telemetry.traceExtend(span, ttl, () =>
          extendRound(this.round, lock.keys, lock.value, ttl),
        ));
    if (!result.extended) return { lost: result.lost };
    if (this.listenerCount('extended') > 0) {
      this.emit('extended', {
        resources: lock.resources,
        validityMs: result.deadline - this.clock.now(),
      });
    }
    return { deadline: result.deadline };
  }

  private reportLost(lock: Lock, error: LockLostError): void {
    this.logger.warn(error.diagnostic);
    this.telemetry?.lockLost();
    this.emit('lockLost', error, lock);
  }
}

/** `promise`, or the reason of the first of `signals` to abort, whichever comes first. */
function raceAbort<T>(promise: Promise<T>, ...signals: (AbortSignal | undefined)[]): Promise<T> {
  const live = signals.filter((s): s is AbortSignal => s !== undefined);
  if (live.length === 0) return promise;
  for (const s of live) if (s.aborted) return Promise.reject(s.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (event: Event) => {
      cleanup();
      reject((event.target as AbortSignal).reason);
    };
    const cleanup = () => live.forEach((s) => s.removeEventListener('abort', onAbort));
    live.forEach((s) => s.addEventListener('abort', onAbort, { once: true }));
    promise.then(
      (value) => {
        cleanup();
        resolve(value);
      },
      (error: unknown) => {
        cleanup();
        reject(error);
      },
    );
  });
}

/** Rejects an empty node list, an unusable entry and the same node listed twice. */
export function validateNodes(
  nodes: unknown,
): asserts nodes is readonly (RedisNodeSpec | RedisNode | NodeRedisClient)[] {
  if (!Array.isArray(nodes) || nodes.length === 0) {
    throw new RedlockConfigError('nodes', nodes, 'must list at least one Redis node');
  }
  const seen = new Map<string, number>();
  nodes.forEach((spec: unknown, index) => {
    assertUsableNodeSpec(spec, `nodes[${index}]`);
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

/** A node's error for `health()` and `inspect()`: the library's words first (node-errors.ts). */
function errorText(error: unknown): string {
  return describeNodeError(error).text;
}
