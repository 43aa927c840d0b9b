import type { Clock } from './clock';
import type { RandomSource } from './random';
import { RedlockConfigError } from './errors';
import type { RedlockLogger } from './observability/logger';
import type { RedlockTelemetryOptions } from './observability/telemetry';
import {
  MAX_TTL_LIMIT,
  assertBoolean,
  assertLockTimings,
  assertLockTtl,
  assertMaxHold,
  assertNonNegativeFinite,
  assertTelemetry,
  assertTtl,
  assertWait,
  assertWithinMaxTtl,
  isPositiveFinite,
  maxNodeTimeout,
} from './option-checks';

export { assertLockTimings, assertLockTtl } from './option-checks';

/**
 * Settings of a lock manager. Every per-call {@link LockOptions} falls back to the option of
 * the same name here.
 */
export interface RedlockOptions {
  /**
   * Lease of a lock in ms: how long the nodes keep it if the holder disappears.
   * @default 10000
   */
  ttl?: number;
  /**
   * Bound on clock-rate drift between this process and a node, as a fraction of the ttl;
   * validity = ttl − elapsed − (ttl × driftFactor + 2 ms).
   * @default 0.01
   */
  driftFactor?: number;
  /**
   * Bound on one command to one node in ms. Small next to the ttl — at most a quarter of it: a
   * node slower than this counts as failed for that attempt, so a hung node costs at most this
   * much, and an auto-extension (started a third into the validity) has time for retries.
   * @default 200
   */
  nodeTimeout?: number;
  /**
   * How long `acquire()` keeps trying before it gives up, in ms; 0 = one attempt.
   * `Infinity` waits until the lock is free or the caller's signal aborts.
   * @default 10000
   */
  wait?: number;
  /**
   * Base delay between attempts in ms.
   * @default 100
   */
  retryDelay?: number;
  /**
   * Random extra delay between attempts, up to this many ms, so that waiters spread out
   * instead of retrying in lock-step.
   * @default 100
   */
  retryJitter?: number;
  /**
   * Prefix of every lock key: a resource `r` is stored at `${keyPrefix}${r}`.
   * @default 'redlock:'
   */
  keyPrefix?: string;
  /**
   * Longest total time `using()` keeps extending one lock, in ms; after that the lock is left
   * to expire and is reported lost. Guards against a routine that never finishes holding a
   * resource forever.
   * @default Infinity
   */
  maxHold?: number;
  /**
   * Longest resource name accepted, in UTF-8 bytes; a longer one is a LockResourceError (HTTP
   * 400 under `@Locked`). A name is sent to every node on every attempt: one built from a
   * request must not be allowed to grow without bound.
   * @default 1024
   */
  maxResourceLength?: number;
  /**
   * Issue a fencing token with every lock (`lock.fencingToken`): strictly increasing across
   * successive holders of a resource, issued by the quorum (architecture.md §5.6). Costs one more round
   * trip per acquisition; per call with `LockOptions.fencing`.
   * @default false
   */
  fencing?: boolean;
  /**
   * Client-enforced delayed restarts (architecture.md §5.7, docs/guarantees.md): a node that may have lost
   * keys of locks still held (restarted without proof that its data survived) does not count
   * toward a quorum (it is still written to and released on) until every lease any client could
   * have held on it has ended — at most `maxTtl` after its restart, sooner when its peers' lease
   * horizons tell. `false`: off (every node votes; no horizons are recorded).
   * @default true
   */
  quarantine?: boolean;
  /**
   * The longest lease (ms) any client of this fleet may hold: a `ttl`, a per-call ttl or an
   * `extend(ttl)` above it is refused with RedlockConfigError. It is what a restarted node that
   * lost its data waits out when its peers cannot tell more, so **every lock manager of a fleet
   * must use the same value**. At most 24 h; longer work holds a lock by extending it
   * (`using()`, `@Locked`).
   * @default 60000
   */
  maxTtl?: number;
  /**
   * Let a node whose server refuses `INFO` (ACLs, some managed services) count toward a quorum.
   * Without its `run_id` a restart of it cannot be detected, so by default it does not vote;
   * turn this on only for servers that keep their data across restarts. A node whose `INFO`
   * read merely failed (a timeout) never votes until a read succeeds: it is retried.
   * @default false
   */
  trustUnidentifiedNodes?: boolean;
  /**
   * Reentrancy (architecture.md §5.9): inside the async context of a held lock, a nested acquisition of
   * resources it holds proceeds at once, and only the outermost holder releases. Off: such a
   * nested acquisition fails at once with LockReentryError instead of waiting for itself.
   * @default false
   */
  reentrant?: boolean;
  /**
   * Release notifications (architecture.md §5.8): a waiting acquisition listens on the lock key's
   * channel (one shared subscriber connection per node, opened on the first wait) and retries
   * when a release is announced; while every node confirms the subscription it does not poll
   * before the blocking lease ends. `false`: waiters poll every `retryDelay`. Releases are
   * announced either way, so managers with either setting can share resources.
   * @default true
   */
  notifications?: boolean;
  /**
   * Fair hand-off (architecture.md §5.11, docs/fair-hand-off.md). `'queue'`: waiters on one resource are
   * served in the order they started waiting, across every process; a release wakes the next
   * waiter only, and hands the lock straight to a waiter of the releasing process when that one
   * is next (a compare-and-swap of the owner value, no release + acquire). The lock itself stays
   * the quorum's: the queue decides only who tries next, and a waiter that died costs the queue
   * one short reservation (`handOffLease`). Queues single-resource locks without fencing; the
   * others (several resources, fencing, and lock managers with `'off'` on the same key) take
   * their turn beside the queue: the key is reserved for them when they waited longest. Needs
   * release notifications. `'off'`: every waiting process retries on each release, the first
   * attempt to reach a quorum wins.
   *
   * The default is `'queue'` (docs/fair-hand-off.md "Default: queue"), except where it cannot
   * run: with `notifications: false`, or over nodes that do not announce releases (the node-redis
   * adapter has no subscriber connection) or lack the queue's operations, it is `'off'`. Asked
   * for explicitly there, `'queue'` fails with RedlockConfigError. Lock managers of either
   * fairness can share a key (each waiter gets its turn); keep `'off'` while managers of another
   * library (node-redlock) share your keys: their waiters do not mark that they wait, and a
   * queue that keeps moving passes them by.
   * @default 'queue'
   */
  fairness?: 'off' | 'queue';
  /**
   * With `fairness: 'queue'`: how long a released lock stays reserved for the waiter that is
   * next (ms). The waiter normally claims it within a round trip; a waiter that died or left
   * holds the queue up for at most this long.
   * @default 2 × `nodeTimeout` + `retryDelay`
   */
  handOffLease?: number;
  /**
   * OpenTelemetry spans and metrics (README "OpenTelemetry"), through `@opentelemetry/api` when
   * it is installed, to whatever tracer and meter providers the app registered: with none, the
   * API's no-ops, at no measurable cost. `false`: never load the API. `{ recordResources: true }`
   * also puts resource names on spans (off by default: they may carry user data).
   * @default true
   */
  telemetry?: boolean | RedlockTelemetryOptions;
  /** Where warnings go. @default warnings and errors to the console */
  logger?: RedlockLogger;
  /** The monotonic clock (tests inject a virtual one). @default performance.now() */
  clock?: Clock;
  /**
   * @internal The source of every random draw of the core (a simulation injects a seeded one,
   * so that a run replays exactly from its seed): retry jitter, and then also owner values (128
   * bits) and the prefixes of release and group ids. Never in production: without it, owner
   * values come from the CSPRNG. @default Math.random (jitter) and the CSPRNG (owner values)
   */
  random?: RandomSource;
}

/**
 * Per-call options; each falls back to the lock manager's option of the same name. Picked from
 * {@link RedlockOptions} rather than redeclared, so that a call's option cannot drift from the
 * manager's in type or documentation (a call's value replaces the manager's for that call).
 */
export interface LockOptions extends Pick<
  RedlockOptions,
  'ttl' | 'wait' | 'retryDelay' | 'retryJitter' | 'maxHold' | 'fencing' | 'reentrant'
> {
  /** Cancels a waiting acquire: it rejects with the signal's reason. */
  signal?: AbortSignal;
  /**
   * `using()` / `@Locked` only: extend the lock while the routine runs.
   * @default true
   */
  autoExtend?: boolean;
}

/** The manager options a single call may override: those {@link LockOptions} picks. */
type PerCallOptionName = Exclude<keyof LockOptions, 'signal' | 'autoExtend'>;

/**
 * The options a lock manager resolves at construction: every {@link RedlockOptions} but the
 * injected collaborators (`logger`, `clock`, `random`, which have no value to default to).
 */
type ResolvedOptionName = Exclude<keyof RedlockOptions, 'logger' | 'clock' | 'random'>;

/**
 * Options after defaults and validation: each option of {@link RedlockOptions} that has a
 * default, now always set. Derived, so that a new option with a default is resolved (and needs
 * its entry in {@link REDLOCK_DEFAULTS}, which the compiler then asks for).
 */
export type ResolvedRedlockOptions = Required<Pick<RedlockOptions, ResolvedOptionName>>;

/** Defaults of {@link RedlockOptions}; documented on each option. */
export const REDLOCK_DEFAULTS: Readonly<ResolvedRedlockOptions> = Object.freeze({
  ttl: 10_000,
  driftFactor: 0.01,
  nodeTimeout: 200,
  wait: 10_000,
  retryDelay: 100,
  retryJitter: 100,
  keyPrefix: 'redlock:',
  maxHold: Infinity,
  maxResourceLength: 1024,
  fencing: false,
  quarantine: true,
  maxTtl: 60_000,
  trustUnidentifiedNodes: false,
  reentrant: false,
  notifications: true,
  /** `'off'` where the queue cannot run (notifications off, nodes without pub/sub). */
  fairness: 'queue',
  /** NaN: computed from `nodeTimeout` and `retryDelay` (see the option). */
  handOffLease: NaN,
  telemetry: true,
});

/**
 * The options a single acquisition runs with: the per-call ones, resolved (`maxHold` belongs to
 * the hold, not to the acquisition).
 */
export type CallSettings = Pick<ResolvedRedlockOptions, Exclude<PerCallOptionName, 'maxHold'>>;

/**
 * Applies defaults and validates every option, naming the first bad one.
 * @throws RedlockConfigError
 */
export function resolveOptions(options: RedlockOptions = {}): ResolvedRedlockOptions {
  const resolved: ResolvedRedlockOptions = { ...REDLOCK_DEFAULTS };
  for (const key of Object.keys(REDLOCK_DEFAULTS) as (keyof ResolvedRedlockOptions)[]) {
    if (options[key] !== undefined)
      (resolved as unknown as Record<string, unknown>)[key] = options[key];
  }
  // The fair queue needs release notifications (its next waiter is told, nobody polls): without
  // them the default is the plain contention, and only an explicit 'queue' is an error (below).
  if (options.fairness === undefined && resolved.notifications === false) resolved.fairness = 'off';
  assertTtl('ttl', resolved.ttl);
  if (
    typeof resolved.driftFactor !== 'number' ||
    !(resolved.driftFactor >= 0 && resolved.driftFactor < 1)
  ) {
    throw new RedlockConfigError('driftFactor', resolved.driftFactor, 'must be a number in [0, 1)');
  }
  if (!isPositiveFinite(resolved.nodeTimeout)) {
    throw new RedlockConfigError(
      'nodeTimeout',
      resolved.nodeTimeout,
      'must be a positive, finite number of ms',
    );
  }
  if (resolved.nodeTimeout > maxNodeTimeout(resolved.ttl)) {
    throw new RedlockConfigError(
      'nodeTimeout',
      resolved.nodeTimeout,
      `must be at most a quarter of ttl (${resolved.ttl} ms), or slow nodes eat the lease and leave auto-extension no time to retry`,
    );
  }
  if (!Number.isInteger(resolved.maxResourceLength) || resolved.maxResourceLength < 1) {
    throw new RedlockConfigError(
      'maxResourceLength',
      resolved.maxResourceLength,
      'must be a positive integer number of bytes',
    );
  }
  assertWait('wait', resolved.wait);
  assertNonNegativeFinite('retryDelay', resolved.retryDelay);
  assertNonNegativeFinite('retryJitter', resolved.retryJitter);
  assertMaxHold('maxHold', resolved.maxHold);
  if (typeof resolved.keyPrefix !== 'string') {
    throw new RedlockConfigError('keyPrefix', resolved.keyPrefix, 'must be a string');
  }
  assertBoolean('fencing', resolved.fencing);
  assertBoolean('reentrant', resolved.reentrant);
  assertBoolean('notifications', resolved.notifications);
  assertBoolean('trustUnidentifiedNodes', resolved.trustUnidentifiedNodes);
  assertTelemetry(resolved.telemetry);
  if (resolved.fairness !== 'off' && resolved.fairness !== 'queue') {
    throw new RedlockConfigError('fairness', resolved.fairness, "must be 'off' or 'queue'");
  }
  if (resolved.fairness === 'queue' && !resolved.notifications) {
    throw new RedlockConfigError(
      'fairness',
      resolved.fairness,
      'needs release notifications (notifications: true): the next waiter is told it is its turn, nobody polls for it',
    );
  }
  if (options.handOffLease === undefined) {
    resolved.handOffLease = 2 * resolved.nodeTimeout + resolved.retryDelay;
  } else if (!isPositiveFinite(resolved.handOffLease) || resolved.handOffLease > resolved.ttl) {
    throw new RedlockConfigError(
      'handOffLease',
      resolved.handOffLease,
      `must be a positive number of ms, at most ttl (${resolved.ttl} ms)`,
    );
  }
  if (typeof resolved.quarantine !== 'boolean') {
    throw new RedlockConfigError(
      'quarantine',
      resolved.quarantine,
      'must be true or false (how long a restarted node waits is maxTtl, the longest lease of the fleet)',
    );
  }
  assertTtl('maxTtl', resolved.maxTtl);
  if (resolved.maxTtl > MAX_TTL_LIMIT) {
    throw new RedlockConfigError(
      'maxTtl',
      resolved.maxTtl,
      `must be at most ${MAX_TTL_LIMIT} ms (24 h); hold a lock longer by extending it (using(), @Locked)`,
    );
  }
  assertWithinMaxTtl('ttl', resolved.ttl, resolved.maxTtl);
  return resolved;
}

/**
 * Merges per-call options over the resolved defaults, validating only what the caller set
 * (the defaults were validated once, at construction).
 * @throws RedlockConfigError
 */
export function resolveCallSettings(
  defaults: ResolvedRedlockOptions,
  options: LockOptions | undefined,
): CallSettings {
  if (options === undefined) return defaults;
  assertLockTimings(options);
  const { ttl, wait, retryDelay, retryJitter, fencing, reentrant } = options;
  if (ttl !== undefined) assertLockTtl(ttl, defaults.nodeTimeout, 'ttl', defaults.maxTtl);
  if (fencing !== undefined) assertBoolean('fencing', fencing);
  if (reentrant !== undefined) assertBoolean('reentrant', reentrant);
  return {
    ttl: ttl ?? defaults.ttl,
    wait: wait ?? defaults.wait,
    retryDelay: retryDelay ?? defaults.retryDelay,
    retryJitter: retryJitter ?? defaults.retryJitter,
    fencing: fencing ?? defaults.fencing,
    reentrant: reentrant ?? defaults.reentrant,
  };
}
