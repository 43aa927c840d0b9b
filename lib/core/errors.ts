/**
 * Typed errors. Every error a caller can act on has its own class, so that code (and the
 * Nest layer's HTTP mapping) can tell "someone else holds it" from "the nodes are down"
 * from "you passed something wrong" without parsing messages.
 *
 * Messages never contain a lock's owner value: it is a bearer secret for the lock.
 */

/**
 * The brand of an error class: a registered symbol (the same in every copy of the package) under
 * which each of our error classes names itself. The package ships an ESM and a CommonJS build, and
 * one app may load both (or two installs): without the brand, a `LockNotAcquiredError` thrown by
 * one copy would not be `instanceof LockNotAcquiredError` of the other, and a 409 would become a
 * 500.
 */
const ERROR_BRAND: unique symbol = Symbol.for('nestjs-redlock:errorBrand');

type Branded = { readonly [ERROR_BRAND]?: string };

/**
 * True when `value`'s prototype chain has a class branded `brand` — the same error class in any
 * copy of the package. Only own brands count: a user's subclass inherits its parent's brand
 * through the static prototype chain but is not itself branded, so an error of the parent is not
 * taken for an instance of the subclass.
 */
function hasBrand(value: unknown, brand: string): boolean {
  if (typeof value !== 'object' || value === null) return false;
  for (let proto: unknown = Object.getPrototypeOf(value); proto !== null && proto !== undefined;) {
    const ctor = Object.prototype.hasOwnProperty.call(proto, 'constructor')
      ? (proto as { constructor: Branded }).constructor
      : undefined;
    if (
      typeof ctor === 'function' &&
      Object.prototype.hasOwnProperty.call(ctor, ERROR_BRAND) &&
      ctor[ERROR_BRAND] === brand
    ) {
      return true;
    }
    proto = Object.getPrototypeOf(proto);
  }
  return false;
}

/** `instanceof` by brand: `value` is an instance of `ctor` here or of its class in another copy. */
function brandedInstanceOf(ctor: unknown, value: unknown): boolean {
  if (Function.prototype[Symbol.hasInstance].call(ctor, value)) return true;
  const own = Object.prototype.hasOwnProperty.call(ctor, ERROR_BRAND)
    ? (ctor as Branded)[ERROR_BRAND]
    : undefined;
  return own !== undefined && hasBrand(value, own);
}

/**
 * Brands an error class that is not a {@link RedlockError} — the errors an adapter throws
 * (NodeTimeoutError, KeyTypeConflict, DescribedNodeError) — so that the core recognises them with
 * `instanceof` also when the adapter was built against another copy of them: the
 * `nestjs-redlock/adapters` entry bundles its own (as do the ESM and CommonJS builds).
 */
export function brandErrorClass(ctor: abstract new (...args: never[]) => Error, brand: string) {
  Object.defineProperty(ctor, ERROR_BRAND, { value: brand });
  Object.defineProperty(ctor, Symbol.hasInstance, {
    value(this: unknown, value: unknown): boolean {
      return brandedInstanceOf(this, value);
    },
  });
}

/** Base class of every error thrown by nestjs-redlock. */
export class RedlockError extends Error {
  static readonly [ERROR_BRAND]: string = 'RedlockError';

  /**
   * `instanceof` that also recognises the errors of another copy of this package (the ESM and the
   * CommonJS build loaded side by side), by the class's brand.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return brandedInstanceOf(this, value);
  }

  /**
   * The detailed line for logs: resource names and node addresses included (never an owner
   * value). `message` is what a caller may see — an HTTP body, an RPC answer, a queue's
   * `failedReason` and stack, which anyone with a dashboard reads — and names none of them
   * (architecture.md §5.12); the library logs this instead, and so can you.
   */
  readonly diagnostic: string;

  constructor(message: string, options?: ErrorOptions & { diagnostic?: string }) {
    super(message, options);
    this.name = new.target.name;
    this.diagnostic = options?.diagnostic ?? message;
  }
}

/**
 * The detailed description of an error for a log line: a library error's
 * {@link RedlockError.diagnostic} (resources, nodes), any other error's message.
 */
export function diagnosticOf(error: unknown): string {
  if (error instanceof RedlockError) return `${error.name}: ${error.diagnostic}`;
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** What one node answered in the last attempt of an acquisition. */
export interface NodeOutcome {
  /** The node's name (`host:port`, never credentials). */
  readonly node: string;
  /**
   * - `acquired`: the node set our keys;
   * - `held`: another owner holds at least one of the keys there;
   * - `error`: the node answered with an error or the connection failed;
   * - `timeout`: no answer within `nodeTimeout`;
   * - `pending`: no answer yet when the outcome was decided without it;
   * - `excluded`: its vote was not counted: the same server (same `run_id`) as another node of
   *   the list (one server must never vote twice), or restarted too recently (quarantine).
   */
  readonly outcome: 'acquired' | 'held' | 'error' | 'timeout' | 'pending' | 'excluded';
  /** The error message, for `error`. */
  readonly error?: string;
}

/** Why a lock could not be taken. */
export type LockNotAcquiredReason = 'held' | 'unavailable';

/**
 * A lock could not be acquired within the `wait` budget (or in the single attempt of
 * `tryAcquire`, when the nodes were unavailable).
 *
 * `reason` is `held` when a quorum of nodes answered and another owner held the lock on
 * enough of them; `unavailable` when fewer than a quorum of nodes could be reached in time,
 * so nobody could have been granted the lock — the distinction a caller needs to choose
 * between "try later" (409) and "our infrastructure is down" (503).
 */
export class LockNotAcquiredError extends RedlockError {
  static override readonly [ERROR_BRAND]: string = 'LockNotAcquiredError';

  constructor(
    /** The resources asked for (de-duplicated and sorted). */
    readonly resources: readonly string[],
    /** `held` or `unavailable`; see the class comment. */
    readonly reason: LockNotAcquiredReason,
    /** How many attempts were made. */
    readonly attempts: number,
    /** What each node answered in the last attempt. */
    readonly nodes: readonly NodeOutcome[],
    /**
     * When `reason` is `held` and the holder's lease is known: the milliseconds until enough
     * of its keys expire for the lock to be obtainable (an upper bound if it is released). When
     * `reason` is `unavailable` because restarted nodes do not count toward a quorum yet: the
     * milliseconds until they do.
     */
    readonly retryAfterMs?: number,
    /**
     * Why the lock manager could not take it, when that is not the nodes:
     * {@link SHUTTING_DOWN} when it is draining or closed.
     */
    readonly detail?: string,
  ) {
    const tried = `${attempts} attempt${attempts === 1 ? '' : 's'}`;
    const named = describeResources(resources);
    super(
      reason === 'held'
        ? `The lock is held by another owner (${tried})`
        : detail === SHUTTING_DOWN
          ? `The lock could not be acquired: ${detail} (${tried})`
          : `The lock could not be acquired: a quorum of Redis nodes was unavailable (${tried}${nodes.length > 0 ? `; ${summarizeOutcomes(nodes)}` : ''})`,
      {
        diagnostic:
          reason === 'held'
            ? `Lock on ${named} is held by another owner (${tried})`
            : detail !== undefined
              ? `Lock on ${named} could not be acquired: ${detail} (${tried})`
              : `Lock on ${named} could not be acquired: a quorum of Redis nodes was unavailable (${tried}; ${describeOutcomes(nodes)})`,
      },
    );
  }
}

/**
 * A lock is known to be lost: its validity ran out without a successful extension, or a
 * quorum of nodes no longer holds it. Whatever the holder was doing is no longer protected.
 */
export class LockLostError extends RedlockError {
  static override readonly [ERROR_BRAND]: string = 'LockLostError';

  constructor(
    /** The resources of the lost lock. */
    readonly resources: readonly string[],
    detail = 'its validity ran out before a quorum of nodes extended it',
  ) {
    super(`The lock was lost: ${detail}`, {
      diagnostic: `Lock on ${describeResources(resources)} was lost: ${detail}`,
    });
  }
}

/**
 * An extension did not reach a quorum in time, but the lock is **still valid** for
 * `remainingMs` (the nodes that were not extended keep their current lease): not a loss. Retry,
 * or finish the work within `remainingMs`; a real loss is a {@link LockLostError} (and aborts
 * `lock.signal`).
 */
export class LockNotExtendedError extends RedlockError {
  static override readonly [ERROR_BRAND]: string = 'LockNotExtendedError';

  constructor(
    /** The resources of the lock. */
    readonly resources: readonly string[],
    /** Validity left when the extension gave up, in ms. */
    readonly remainingMs: number,
  ) {
    const said =
      'could not be extended on a quorum of nodes in time; ' +
      `it is still held and remains valid for ${Math.floor(remainingMs)} ms`;
    super(`The lock ${said}`, { diagnostic: `Lock on ${describeResources(resources)} ${said}` });
  }
}

/**
 * A nested acquisition inside the async context of a lock on the same resources (a `@Locked`
 * method calling another, `using()` inside `using()`): without `reentrant` it would wait for
 * itself until `wait` runs out, so it fails at once; with `reentrant`, asking for more
 * resources than the context holds, or for a fencing token the context's lock was taken without,
 * fails too (a lock cannot grow without a new acquisition, and a silent partial lock would
 * protect less than it says).
 */
export class LockReentryError extends RedlockError {
  static override readonly [ERROR_BRAND]: string = 'LockReentryError';

  constructor(
    /** The resources asked for. */
    readonly resources: readonly string[],
    /** Why, without resource names (it is the message's end). */
    detail: string,
    /** What the context holds: named in {@link RedlockError.diagnostic} only. */
    held?: readonly string[],
  ) {
    super(`The lock cannot be acquired here: ${detail}`, {
      diagnostic:
        `Lock on ${describeResources(resources)} cannot be acquired here: ${detail}` +
        (held === undefined ? '' : ` (the context holds ${describeResources(held)})`),
    });
  }
}

/**
 * A lock key holds a value that is not a string on a node (Redis `WRONGTYPE`): something other
 * than this library writes at the lock's keys. A data or configuration conflict (choose
 * another `keyPrefix`, or remove the foreign key), not contention and not an outage.
 */
export class LockKeyConflictError extends RedlockError {
  static override readonly [ERROR_BRAND]: string = 'LockKeyConflictError';

  constructor(
    /** The resources asked for. */
    readonly resources: readonly string[],
    /** The node that reported it. */
    readonly node: string,
    detail: string,
  ) {
    super(
      'The lock cannot be taken: a lock key holds a non-string value; something else writes at these keys: use another keyPrefix',
      {
        diagnostic:
          `Lock on ${describeResources(resources)} cannot be taken: a lock key on ${node} holds a ` +
          `non-string value (${detail}); something else writes at these keys: use another keyPrefix`,
      },
    );
  }
}

/** An option is invalid. Thrown at bootstrap for module options, at call time for per-call ones. */
export class RedlockConfigError extends RedlockError {
  static override readonly [ERROR_BRAND]: string = 'RedlockConfigError';

  constructor(
    /** The option's name, e.g. `ttl` or `nodes[2]`. */
    readonly option: string,
    /** The rejected value. */
    readonly value: unknown,
    requirement: string,
  ) {
    super(`Invalid option ${option}: ${requirement}, got ${describeValue(value)}`);
  }
}

/** One permission a node's Redis user lacks, as {@link RedlockPermissionError} lists it. */
export interface MissingPermission {
  /** What the library cannot run, e.g. `scripts (EVAL, EVALSHA, SCRIPT LOAD)`. */
  readonly what: string;
  /** The ACL category (or key / channel pattern) it belongs to, e.g. `@scripting`. */
  readonly category: string;
  /** The command that grants it, e.g. `ACL SETUSER app +@scripting`. */
  readonly grant: string;
}

/**
 * The Redis user of some nodes may not run what the library needs (an ACL without
 * `@scripting`, `INFO`, `@pubsub` …): thrown by `ready()` — so the Nest bootstrap fails — and by
 * acquisitions while too few nodes allow it for a quorum. The message names each ACL category
 * and the `ACL SETUSER` that grants it.
 */
export class RedlockPermissionError extends RedlockError {
  static override readonly [ERROR_BRAND]: string = 'RedlockPermissionError';

  constructor(
    /** The nodes whose user lacks a permission (`host:port`). */
    readonly nodes: readonly string[],
    /** The ACL user. */
    readonly user: string,
    /** What is missing, and how to grant it. */
    readonly missing: readonly MissingPermission[],
  ) {
    const lines = missing.map(
      (permission) => `- ${permission.what} (ACL ${permission.category}): ${permission.grant}`,
    );
    const message =
      `Redis user "${user}" may not run what nestjs-redlock needs on ${nodes.join(', ')}:\n` +
      lines.join('\n');
    super(message);
  }
}

/** A resource name, or a template value it was built from, is not usable as a lock key. */
export class LockResourceError extends RedlockError {
  static override readonly [ERROR_BRAND]: string = 'LockResourceError';

  constructor(
    /** What a caller may read: no template, resource name or option name (architecture.md §5.12). */
    message: string,
    /** The rejected value. */
    readonly resource?: unknown,
    /** The detailed line for logs (the template, the placeholder, the option); default `message`. */
    diagnostic?: string,
  ) {
    super(message, { diagnostic });
  }
}

/**
 * Resource names as they may appear in a message or a log line: each JSON-quoted (a newline
 * or a control character in a route parameter cannot forge a log line) and cut to a bounded
 * length (a long name cannot flood the logs).
 */
export function describeResources(resources: readonly string[]): string {
  const shown = resources.slice(0, 5).map((r) => describeValue(r));
  if (resources.length > 5) shown.push(`… ${resources.length - 5} more`);
  return `[${shown.join(', ')}]`;
}

/** A short, safe rendering of a rejected value for an error message. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string')
    return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint')
    return String(value);
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (typeof value === 'function') return 'a function';
  return `an object (${Object.prototype.toString.call(value).slice(8, -1)})`;
}

/**
 * What the nodes answered, without naming them: how many of each outcome, a node error by the
 * library's sentence only (the client's text in parentheses may name an address).
 */
function summarizeOutcomes(nodes: readonly NodeOutcome[]): string {
  const counts = new Map<string, number>();
  for (const node of nodes) {
    const said = node.error === undefined ? node.outcome : node.error.replace(/\s*\(.*$/s, '');
    counts.set(said, (counts.get(said) ?? 0) + 1);
  }
  return `${nodes.length} nodes: ${[...counts].map(([said, n]) => `${n} ${said}`).join(', ')}`;
}

function describeOutcomes(nodes: readonly NodeOutcome[]): string {
  return nodes.map((n) => `${n.node}: ${n.outcome}${n.error ? ` (${n.error})` : ''}`).join(', ');
}

/** The `detail` of a LockNotAcquiredError refused because the lock manager is shutting down. */
export const SHUTTING_DOWN = 'the lock manager is shutting down';
