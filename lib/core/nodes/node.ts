import { brandErrorClass } from '../errors';

/**
 * The RedisNode port: what the Redlock algorithm needs of one independent Redis master.
 *
 * The operations are semantic (not "eval this script") so that a simulation can implement
 * them in memory with virtual time, and so that each later protocol step (a fencing phase,
 * a quarantine check, release notifications) is one more method rather than a change to the
 * attempt loop. The algorithm bounds every call by `nodeTimeout` itself; an implementation
 * need not time out, but must not queue work forever.
 *
 * What the algorithm relies on, and what it does not:
 * - **Safety relies on no ordering at all.** Every attempt uses a fresh owner value, so a
 *   command of one attempt (a late acquire, a late cleanup release) can only touch keys of that
 *   same attempt; the extend script never re-creates a key. An adapter may reorder, delay,
 *   drop or duplicate replies and re-send commands (a NOSCRIPT fallback) without letting two
 *   clients hold one lock. `test/unit/core-safety.spec.ts` checks this by reordering.
 * - **Liveness relies on per-connection order for one thing**: the cleanup release sent to a
 *   node that did not answer an attempt's acquire in time is applied after that acquire (one
 *   connection does this), so a failed attempt leaves no key behind for a full ttl. An
 *   adapter that cannot keep that order only delays others by at most one ttl.
 * - **No fallback that re-sends after later commands on the hot path**: an adapter loads its
 *   scripts whenever its connection becomes ready (loadMissingScripts: SCRIPT EXISTS, then
 *   SCRIPT LOAD of the missing ones, which Redis never evicts), so
 *   EVALSHA normally succeeds; the NOSCRIPT fallback that remains (a `SCRIPT FLUSH` at runtime)
 *   is then safe by the first rule.
 */
export interface RedisNode {
  /** A stable name for errors and logs: `host:port`, never credentials. */
  readonly name: string;

  /**
   * Sets every key to `value` with a lease of `ttl` ms if none of them exists (all-or-nothing).
   * With `fenceKeys` (fencing, architecture.md §5.6 phase 1), a success also reports
   * `fence` = max(those counters, the server's time in µs).
   */
  acquire(
    keys: readonly string[],
    value: string,
    ttl: number,
    fenceKeys?: readonly string[],
    wait?: PlainWait,
  ): Promise<AcquireReply>;

  /**
   * Fencing phase 2: if every key still holds `value`, raises each fence counter to at least
   * `token` (kept `keepMs`); false when a key no longer holds our value. Optional: a lock
   * manager with `fencing` on refuses nodes without it.
   */
  fence?(
    keys: readonly string[],
    fenceKeys: readonly string[],
    value: string,
    token: number,
    keepMs: number,
  ): Promise<boolean>;

  /**
   * The remaining lease of `key` in ms (`PTTL`): -2 when it does not exist, -1 when it has no
   * expiry. Writes nothing. Optional: a waiter that already hears every release reads it on a
   * few nodes before sending a whole attempt to all of them (issue 19: `probeRound`). A key that
   * waiter must attempt anyway reads as absent (-2): one reserved for waiters outside the fair
   * queues (`\0r\0p`), or held by a fair lock (its owner value starts with `.`), whose release
   * may hand it on unannounced (issue 24 item 1; ScriptedNode runs PROBE_SCRIPT).
   */
  lease?(key: string): Promise<number>;

  /** Resets the lease of every key to `ttl` ms if every key still holds `value` (all-or-nothing). */
  extend(keys: readonly string[], value: string, ttl: number): Promise<boolean>;

  /**
   * Deletes each key that still holds `value`; returns how many were deleted. With `announce`,
   * publishes it on the channel of each deleted key's name (release notifications, §5.8): an id
   * of this release, the same on every node, never the owner value.
   */
  release(keys: readonly string[], value: string, announce?: string): Promise<number>;

  /**
   * Fair hand-off (architecture.md §5.11): as {@link acquire} for one key, but the key may also be taken
   * when it is reserved for `ticket.group`, and a "held" reply queues the group in `queueKey`
   * (ACQUIRE_QUEUED_SCRIPT). Optional: `fairness: 'queue'` needs it (and {@link handOff}) on
   * every node.
   */
  acquireQueued?(
    key: string,
    queueKey: string,
    value: string,
    ttl: number,
    ticket: QueueTicket,
  ): Promise<AcquireReply>;

  /**
   * Fair hand-off: releases `value`'s key to the next waiter in start order (HAND_OFF_SCRIPT):
   * `swapped` when the key now holds `handOff.next`'s value, `reserved` when it is reserved for a
   * queued group, `released` when it was deleted (nobody queued), `notOurs` when it no longer
   * held `value` (nothing written).
   */
  handOff?(
    key: string,
    queueKey: string,
    value: string,
    handOff: HandOffRequest,
  ): Promise<HandOffReply>;

  /** Fair hand-off: removes `group` from `queueKey` (its last waiter gave up). */
  leaveQueue?(queueKey: string, group: string, pass?: LeaveRequest): Promise<void>;

  /**
   * Calls `onMessage` with the release's id whenever a release is announced on `channel` (its
   * key's name) on this node, until the returned function is called. Optional: without it (or while its subscriber
   * connection is down), waiters poll. `onGap`, when given, is called when announcements may
   * have been missed (the subscriber connection dropped): waiters then poll again.
   * `onConfirmed`, when given, is called each time the server confirms the subscription (see
   * {@link RedisNode.listening}): a waiter polling until then can stop at once.
   */
  subscribe?(
    channel: string,
    onMessage: (id: string) => void,
    onGap?: () => void,
    onConfirmed?: () => void,
  ): () => void;

  /**
   * True while the subscription to `channel` is confirmed by the server and its connection has
   * not dropped since: a release this node applies after a command sent from now on is
   * announced to us. A waiter that could rely on this on every node need not poll (architecture.md §5.8).
   * Optional: without it, waiters poll.
   */
  listening?(channel: string): boolean;

  /**
   * Resolves once the node can take commands (and, for an adapter with {@link serverInfo}, has
   * read it), or a connection attempt has failed, or `timeoutMs` passed — whichever is first.
   * Never rejects. Used once, before the first
   * attempt, so that a lock manager used right after construction does not fail just
   * because its sockets are still connecting.
   */
  whenReady(timeoutMs: number): Promise<void>;

  /**
   * Whether the connection is known to be closed (refused, reset, not yet re-established):
   * a node that is merely slow or hung is *not* down. When the nodes known down leave no
   * quorum, an acquisition fails at once as `unavailable` instead of waiting out `wait`.
   * Optional: an adapter without it is never considered down.
   */
  readonly isDown?: boolean;

  /**
   * What the server said about itself on the latest (re)connection (`INFO server`), or
   * `undefined` until known or where `INFO` is not allowed. Two nodes with the same `runId`
   * are one server listed twice, which must never vote twice. Optional.
   */
  readonly serverInfo?: ServerInfo;

  /**
   * Why {@link serverInfo} is unknown: `failed` (the `INFO` read failed or timed out: try
   * {@link identify} again) or `refused` (the server does not allow `INFO`, e.g. ACLs).
   * `undefined` while the server is known or the read is still under way. Optional.
   */
  readonly identityError?: 'failed' | 'refused';

  /**
   * Reads `INFO server` again (after {@link identityError} `failed`); resolves when it has
   * answered or failed. Never rejects. Optional.
   */
  identify?(): Promise<void>;

  /**
   * Membership (architecture.md §5.7): raises this node's lease horizons filed under each of `runIds` (the
   * fleet's nodes as the lock manager knows them) to its own time + `windowMs`, and writes its
   * marker if it has none (HORIZON_SCRIPT). Needed on every node while the quarantine is on.
   */
  recordHorizon?(keys: StandingKeys, windowMs: number, runIds: readonly string[]): Promise<void>;

  /** Membership: what the node says about itself, in one atomic call (STANDING_SCRIPT). */
  readStanding?(keys: StandingKeys): Promise<NodeStanding>;

  /**
   * Membership: raises the node's fence floor to `floor` (kept `keepMs`) and records that this
   * fleet restored it, only if the server still has `runId` (RESTORE_FLOOR_SCRIPT); false when
   * it has another (it restarted since it was surveyed) and nothing was written.
   */
  restoreFloor?(keys: StandingKeys, runId: string, floor: number, keepMs: number): Promise<boolean>;

  /**
   * Registers a listener for the node's health transitions: `down` (connection lost), `up`
   * (back), `slow` (a command timed out on a live connection; at most once per interval).
   * Optional: the lock manager re-emits them as events.
   */
  onHealth?(listener: (state: NodeHealth) => void): void;

  /**
   * Whether this connection's user may run what the library needs (permissions.ts: the probe
   * script, through `EVAL`, names the commands `redis.acl_check_cmd` refuses on `probeKey`).
   * Rejects only when the node cannot be asked (down, timeout). Optional: without it the
   * permissions are not checked.
   */
  checkAccess?(probeKey: string): Promise<NodeAccess>;

  /** The ACL user the connection authenticates as (`default` when none is set), for messages. */
  readonly aclUser?: string;

  /** Round trip to the server (PING), for health checks. Optional. */
  ping?(): Promise<void>;

  /** What a key holds now, for inspection (never on the lock path). Optional. */
  inspect?(key: string): Promise<KeyState>;

  /** Closes the connection if this node owns it; leaves a caller-supplied client open. */
  close(): Promise<void>;
}

/** Where a node keeps what restart detection reads (one set per key prefix): see membership.ts. */
export interface StandingKeys {
  /** Until when (server ms) a lease granted on it may last, filed by the `run_id`s of the fleet. */
  readonly horizon: string;
  /** The `run_id` under which its data set was first written to (no expiry). */
  readonly born: string;
  /** The highest fencing token it has seen. */
  readonly floor: string;
  /** The `run_id` under which this fleet last restored its fence floor. */
  readonly fenced: string;
}

/** What a node says about itself, as {@link RedisNode.readStanding} reads it (STANDING_SCRIPT). */
export interface NodeStanding {
  /** Its `run_id` as it answered. */
  readonly runId: string;
  /** Its `uptime_in_seconds` as it answered. */
  readonly uptimeSeconds: number;
  /** The `run_id` its marker names, if it has one. */
  readonly born: string | undefined;
  /**
   * Its lease horizons still ahead: ms (on its own clock) until each, by the `run_id` it was
   * filed under.
   */
  readonly horizons: Readonly<Record<string, number>>;
  /** Its fence floor (0: none). */
  readonly floor: number;
  /** The `run_id` under which this fleet last restored its fence floor, if any. */
  readonly fenced: string | undefined;
}

/** A health transition of a node. */
export type NodeHealth = 'down' | 'up' | 'slow';

/**
 * A waiting acquisition outside the fair queues ({@link RedisNode.acquire}, issue 24 item 1): a
 * key reserved for such waiters is taken, and a key met held is marked as waited for since
 * `ageMs` ago, so that a fair hand-off gives them a turn. A node that ignores it still locks;
 * its waiters then wait for the key to be free, as before.
 */
export interface PlainWait {
  /** How long the acquisition has waited (ms). */
  readonly ageMs: number;
  /** How long the mark outlives the blocking lease (ms). */
  readonly keepMs: number;
}

/** A waiting group's ticket for {@link RedisNode.acquireQueued}. */
export interface QueueTicket {
  /** The group: this lock manager's waiters on one key, random per group. Not a secret. */
  readonly group: string;
  /** How long the group's oldest waiter has waited (ms): its place in the queue. */
  readonly ageMs: number;
  /**
   * When that waiter started, on this node's clock as the client estimates it (ms, to the µs):
   * its place to within the estimate; the node trusts it at most `START_SLACK_MS` before its own
   * bound (TIME − ageMs). Absent: TIME − ageMs.
   */
  readonly startedOnServer?: number;
  /** Whether the group may be queued on the node already (not its first attempt). */
  readonly queued: boolean;
  /** How long the queue outlives the blocking lease (ms). */
  readonly keepMs: number;
  /** An id announced with a claimed reservation (`id|c|group`), when waiters listen. */
  readonly announce?: string;
}

/** What {@link RedisNode.handOff} is asked to do. */
export interface HandOffRequest {
  /** The holder's group. */
  readonly group: string;
  /**
   * The holder's next local waiter, if any: its new owner value, ttl and wait so far, and when
   * it started on this node's clock if the client has an estimate (as {@link QueueTicket}).
   */
  readonly next?: {
    readonly value: string;
    readonly ttl: number;
    readonly ageMs: number;
    readonly startedOnServer?: number;
  };
  /** How long a reservation for a queued group lasts (ms). */
  readonly leaseMs: number;
  /** The release's announcement id, when waiters listen. */
  readonly announce?: string;
  /**
   * The holder's process saw no contention on the key lately (its lock was taken by a plain
   * first attempt): with no `next`, a node may first try the release of an uncontended lock, at
   * one round trip more where the key turns out queued or not the holder's. A hint only: the
   * outcome is the same either way.
   */
  readonly uncontended?: boolean;
}

/**
 * What a group leaving the queue passes on ({@link RedisNode.leaveQueue}, issue 24 item 2): a key
 * reserved for it goes to the queue's next group at once (reserved and announced), or is freed
 * and announced when nobody is queued, instead of idling a whole reservation.
 */
export interface LeaveRequest {
  /** The lock key. */
  readonly key: string;
  /** How long a reservation for the next group lasts (ms). */
  readonly leaseMs: number;
  /** The announcement id, when waiters listen. */
  readonly announce?: string;
}

/** A node's answer to {@link RedisNode.handOff}. */
export type HandOffReply = 'swapped' | 'reserved' | 'released' | 'notOurs';

/** A key's value and remaining lease (`PTTL`: -2 absent, -1 no expiry). */
export interface KeyState {
  readonly value: string | null;
  readonly pttl: number;
}

/** What a Redis server says about itself (`INFO server`), read when a connection becomes ready. */
export interface ServerInfo {
  /** The server's `run_id`: random per server process, so equal ids mean the same server. */
  readonly runId: string;
  /** `uptime_in_seconds` at the time of reading. */
  readonly uptimeSeconds: number;
  /**
   * True when the server's configuration writes every command to its append-only file before
   * answering (`appendonly yes` with `appendfsync always`). Configuration alone proves nothing
   * about a restart (a container restarted without its volume keeps it and loses the data): a
   * restarted node is exempt only when its marker also survived (quarantine.ts). False when
   * unknown (CONFIG not allowed).
   */
  readonly durable: boolean;
  /**
   * Its `maxmemory-policy`, when CONFIG may be read: any policy but `noeviction` can evict lock
   * keys (every one has a TTL) under memory pressure, and the lock manager warns at start-up.
   */
  readonly evictionPolicy?: string;
  /**
   * When the reading was taken, on the core's clock ({@link Clock.now} of the `Redlock` the
   * node serves). An adapter that cannot say leaves it out.
   */
  readonly readAt?: number;
}

/** A node's answer to {@link RedisNode.acquire}. */
export type AcquireReply =
  | {
      readonly acquired: true;
      /** With fence keys: max(their counters, the server's time in µs). */
      readonly fence?: number;
    }
  | {
      readonly acquired: false;
      /** Remaining lease of the blocking key in ms; -1 when it has no expiry. */
      readonly pttl: number;
      /**
       * The node's clock (TIME, ms to the µs) when a queued acquire queued its group there
       * ({@link RedisNode.acquireQueued}); absent otherwise. The fair queue's clock estimate.
       */
      readonly serverTime?: number;
    };

/**
 * The error an adapter throws when a lock key holds a value that is not a string (Redis
 * `WRONGTYPE`): another application writes at our keys. Not a node failure but a data
 * conflict, reported as such instead of as an unavailable node.
 */
export class KeyTypeConflict extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeyTypeConflict';
  }
}
brandErrorClass(KeyTypeConflict, 'KeyTypeConflict');

/** Type guard for a {@link RedisNode} passed in place of a Redis client or URL. */
export function isRedisNode(value: unknown): value is RedisNode {
  const candidate = value as Partial<RedisNode> | null;
  return (
    typeof candidate === 'object' &&
    candidate !== null &&
    typeof candidate.name === 'string' &&
    typeof candidate.acquire === 'function' &&
    typeof candidate.extend === 'function' &&
    typeof candidate.release === 'function' &&
    typeof candidate.whenReady === 'function'
  );
}

/**
 * The error an adapter throws when its client gave up waiting for a node's reply (ioredis's
 * `commandTimeout`): the same as no answer within the round's timeout, and read as `timeout`.
 * A client timer and the round's timer of equal length fire in the same turn, so without it the
 * outcome would depend on which ran first.
 */
export class NodeTimeoutError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NodeTimeoutError';
  }
}
brandErrorClass(NodeTimeoutError, 'NodeTimeoutError');

/** What a node's permission probe found (permissions.ts). */
export interface NodeAccess {
  /** `EVAL` was allowed (the probe script ran). */
  readonly scripting: boolean;
  /**
   * Commands `redis.acl_check_cmd` refused on the lock keys or channels (upper case); `undefined`
   * when it could not be asked (Redis < 7, or scripts refused).
   */
  readonly denied?: readonly string[];
  /** The lock keys are refused to the script's keys themselves (`~pattern` of the user). */
  readonly keysDenied?: boolean;
}
