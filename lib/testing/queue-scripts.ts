import type {
  AcquireReply,
  HandOffReply,
  HandOffRequest,
  LeaveRequest,
  PlainWait,
  QueueTicket,
} from 'nestjs-redlock';

/**
 * The fair hand-off's three scripts (lib/core/protocol/scripts.ts ACQUIRE_QUEUED_SCRIPT, HAND_OFF_SCRIPT,
 * LEAVE_QUEUE_SCRIPT), written once over an in-memory store, for every node without Redis: the
 * testing module's {@link InMemoryRedisNode}, and the unit tests' MemoryNode and SimNode. Each
 * function is one script run: the caller applies it atomically. Arguments are read as the
 * adapters send them (script-replies.ts `queuedArgs`, `handOffArgs`: ages to the µs, leases
 * rounded up). test/support/queue-contract.ts runs the same cases against these fakes and a real
 * server.
 */

/**
 * A waiter's age as the adapters send it (script-replies.ts `ageArg`: ms to the µs, never
 * negative). Restated here: this module reaches the package only for types.
 */
function ageArg(ms: number): number {
  return Math.max(0, Math.round(ms * 1000) / 1000);
}

/** queue-scripts.ts START_SLACK_MS, restated (this module reaches the package only for types). */
const START_SLACK_MS = 10;

/**
 * release-notices.ts CLEANUP_MARK, restated: the end of a failed attempt's cleanup's announcement
 * id. Such a release frees only its own writes (RELEASE_SCRIPT).
 */
export const CLEANUP_MARK = '~';

/**
 * The scripts' `start`: a waiter's start on this server's clock, TIME − its age, or the
 * client's estimate (sent to the µs) where that is earlier, by at most START_SLACK_MS.
 */
function startOf(now: number, ageMs: number, estimate: number | undefined): number {
  const bound = now - ageArg(ageMs);
  if (estimate === undefined) return bound;
  const at = Number(estimate.toFixed(3));
  return at >= bound ? bound : Math.max(at, bound - START_SLACK_MS);
}

/** What a script reads and writes on one node: its string keys, clock, queues and channels. */
export interface ScriptStore {
  /** The live value of a string key. */
  get(key: string): string | undefined;
  /** `PTTL`: -2 absent, -1 no expiry. */
  pttl(key: string): number;
  /** `SET key value PX ttl`. */
  set(key: string, value: string, ttl: number): void;
  /** `DEL key`. */
  del(key: string): void;
  /** `TIME` in ms (this server's clock). */
  serverNow(): number;
  /** The node's sorted sets. */
  readonly queues: SortedSets;
  /** `PUBLISH` (a node nobody can subscribe to drops it). */
  publish(channel: string, message: string): void;
}

interface SortedSet {
  readonly members: Map<string, number>;
  /** When the key expires, on the store's expiry clock; undefined: no expiry. */
  expiresAt?: number;
}

/**
 * Sorted sets with key expiry, as Redis keeps them: ordered by score, then member (bytewise); a
 * set emptied by ZREM is deleted (its expiry with it), so a later ZADD creates one with none.
 */
export class SortedSets {
  private readonly sets = new Map<string, SortedSet>();

  /** `now`: the clock the node's key leases run on (not its TIME, which may be offset). */
  constructor(private readonly now: () => number) {}

  /** `ZSCORE`. */
  score(key: string, member: string): number | undefined {
    return this.live(key)?.members.get(member);
  }

  /** `ZADD` (sets the score of a member already there). */
  add(key: string, member: string, score: number): void {
    let set = this.live(key);
    if (set === undefined) this.sets.set(key, (set = { members: new Map() }));
    set.members.set(member, score);
  }

  /** `ZREM`: 1 when the member was there. */
  remove(key: string, member: string): number {
    const set = this.live(key);
    if (set === undefined || !set.members.delete(member)) return 0;
    if (set.members.size === 0) this.sets.delete(key);
    return 1;
  }

  /** `ZRANGE key 0 0 WITHSCORES`: the first member and its score. */
  head(key: string): [string, number] | undefined {
    return this.range(key)[0];
  }

  /** Every member in order, with its score. */
  range(key: string): [string, number][] {
    const set = this.live(key);
    if (set === undefined) return [];
    return [...set.members].sort(([a, x], [b, y]) =>
      x !== y ? x - y : Buffer.compare(Buffer.from(a), Buffer.from(b)),
    );
  }

  /** `PTTL`: -2 absent, -1 no expiry. */
  pttl(key: string): number {
    const set = this.live(key);
    if (set === undefined) return -2;
    return set.expiresAt === undefined ? -1 : set.expiresAt - this.now();
  }

  /** `PEXPIRE`. */
  pexpire(key: string, ms: number): void {
    const set = this.live(key);
    if (set !== undefined) set.expiresAt = this.now() + ms;
  }

  /** `DEL` of a queue (a test's nemesis). */
  drop(key: string): void {
    this.sets.delete(key);
  }

  /** Loses every set (a restart without persistence). */
  clear(): void {
    this.sets.clear();
  }

  private live(key: string): SortedSet | undefined {
    const set = this.sets.get(key);
    if (set?.expiresAt !== undefined && set.expiresAt <= this.now()) {
      this.sets.delete(key);
      return undefined;
    }
    return set;
  }
}

/** The prefix of a reserved key's value (lib/core/protocol/scripts.ts RESERVATION_PREFIX). */
const RESERVED = '\0r';

/**
 * The suffix of the key marking a lock key as waited for outside the queues, and the name of
 * those waiters in a reservation (lib/core/protocol/scripts.ts plainMark, issue 24 item 1).
 */
const PLAIN = '\0p';

/** A key's value while a fair hand-off reserves it for the waiters outside the queues. */
export const PLAIN_RESERVATION = RESERVED + PLAIN;

/**
 * The suffix of the key marking a lock key's queue as possibly non-empty (issue 24 item 3): every
 * script that sets a queue's expiry writes it as long, and HAND_OFF_SCRIPT reads the queue only
 * where it exists. A test's nemesis that queues a group by hand writes it too ({@link markQueued}),
 * as the group's own script would have.
 */
export const QUEUE_MARK = '\0w';

/** Marks `key`'s queue as possibly non-empty for `keep` ms, and gives the queue that expiry. */
export function markQueued(store: ScriptStore, key: string, queueKey: string, keep: number): void {
  store.queues.pexpire(queueKey, keep);
  store.set(key + QUEUE_MARK, '1', keep);
}

/**
 * PLAIN_WAIT_SCRIPT, and ACQUIRE_SCRIPT's mark on a blocking key, for a waiting acquisition
 * outside the queues: a key reserved for the plain waiters is taken; any other is marked.
 */
export function plainWait(
  store: ScriptStore,
  key: string,
  value: string,
  ttl: number,
  wait: PlainWait,
): AcquireReply {
  const cur = store.get(key);
  if (cur === undefined) return { acquired: false, pttl: 0 };
  if (cur === PLAIN_RESERVATION) {
    store.set(key, value, ttl);
    return { acquired: true };
  }
  markPlain(store, key, wait);
  return { acquired: false, pttl: store.pttl(key) };
}

/**
 * plainMark (lib/core/protocol/scripts.ts): `key` is waited for since (server time - age), behind
 * its value (`started|holder`).
 */
export function markPlain(store: ScriptStore, key: string, wait: PlainWait): void {
  const cur = store.get(key)!;
  // Only a key that may be handed on: held by a fair holder (its value starts with '.',
  // owner-value.ts HANDED_ON), or with a fair queue.
  if (cur[0] !== '.' && store.get(key + QUEUE_MARK) === undefined) return;
  const started = store.serverNow() - ageArg(wait.ageMs);
  const marked = named(store.get(key + PLAIN), cur) ?? Infinity;
  const keep = Math.max(store.pttl(key), 0) + Math.ceil(wait.keepMs);
  if (started < marked || store.pttl(key + PLAIN) < keep) {
    store.set(key + PLAIN, `${Math.min(started, marked).toFixed(3)}|${cur}`, keep);
  }
}

/** The scripts' `named` (queue-scripts.ts CARRY_MARK): the mark's start, if it names `holder`. */
function named(mark: string | undefined, holder: string | undefined): number | undefined {
  const bar = mark?.indexOf('|') ?? -1;
  return bar >= 0 && mark!.slice(bar + 1) === holder ? Number(mark!.slice(0, bar)) : undefined;
}

/** The scripts' `carry`: a mark naming `from` follows the key to `to`, its expiry kept. */
function carry(store: ScriptStore, key: string, from: string | undefined, to: string): void {
  const mark = store.get(key + PLAIN);
  if (named(mark, from) === undefined) return;
  const pttl = store.pttl(key + PLAIN);
  store.set(key + PLAIN, `${mark!.slice(0, mark!.indexOf('|'))}|${to}`, Math.max(pttl, 1));
}

/** ACQUIRE_QUEUED_SCRIPT. */
export function acquireQueued(
  store: ScriptStore,
  key: string,
  queueKey: string,
  value: string,
  ttl: number,
  ticket: QueueTicket,
): AcquireReply {
  const cur = store.get(key);
  if (cur === undefined || cur === RESERVED + ticket.group) {
    store.set(key, value, ttl);
    if (cur === undefined) {
      if (ticket.queued) store.queues.remove(queueKey, ticket.group);
    } else {
      carry(store, key, cur, value);
      if (ticket.announce !== undefined && ticket.announce !== '') {
        store.publish(key, `${ticket.announce}|c|${ticket.group}`);
      }
    }
    return { acquired: true };
  }
  const pttl = store.pttl(key);
  let serverTime: number | undefined;
  if (store.queues.score(queueKey, ticket.group) === undefined) {
    serverTime = store.serverNow();
    store.queues.add(
      queueKey,
      ticket.group,
      startOf(serverTime, ticket.ageMs, ticket.startedOnServer),
    );
  }
  const keep = Math.max(pttl, 0) + Math.ceil(ticket.keepMs);
  if (store.queues.pttl(queueKey) < keep) markQueued(store, key, queueKey, keep);
  // With the TIME it read to queue the group, as the script returns it (to the µs).
  if (serverTime === undefined) return { acquired: false, pttl };
  return { acquired: false, pttl, serverTime: Math.floor(serverTime * 1000) / 1000 };
}

/** HAND_OFF_SCRIPT. */
export function handOff(
  store: ScriptStore,
  key: string,
  queueKey: string,
  value: string,
  request: HandOffRequest,
): HandOffReply {
  const { queues } = store;
  // A key reserved for the holder's group counts as the holder's (see the script's comment), and
  // so does a free key when a next local waiter comes with the release.
  const current = store.get(key);
  const { next } = request;
  const hasNext = next !== undefined && next.value !== '';
  if (
    current !== value &&
    current !== RESERVED + request.group &&
    (current !== undefined || !hasNext)
  ) {
    queues.remove(queueKey, request.group);
    return 'notOurs';
  }
  // One MGET: the key, its queue mark, the plain waiters' mark. The queue only where marked.
  const queued = store.get(key + QUEUE_MARK) !== undefined;
  const mark = store.get(key + PLAIN);
  let head: [string, number] | undefined = queued ? queues.head(queueKey) : undefined;
  if (queued && head === undefined) {
    // Marked, but gone: the mark goes too, and the releases after this one skip the queue.
    store.del(key + QUEUE_MARK);
  } else if (head?.[0] === request.group) {
    queues.remove(queueKey, request.group);
    head = queues.head(queueKey);
  } else if (head !== undefined && !hasNext) {
    // No next waiter: the group leaves wherever it stands (a swap leaves it behind the head).
    queues.remove(queueKey, request.group);
  }
  const plain = hasNext || head !== undefined ? named(mark, current) : undefined;
  if (next !== undefined && hasNext) {
    if (head === undefined && plain === undefined) {
      store.set(key, next.value, next.ttl);
      return 'swapped';
    }
    const started = startOf(store.serverNow(), next.ageMs, next.startedOnServer);
    if ((head === undefined || started <= head[1]) && (plain === undefined || started <= plain)) {
      store.set(key, next.value, next.ttl);
      carry(store, key, current, next.value);
      return 'swapped';
    }
    queues.add(queueKey, request.group, started);
    if (head === undefined) markQueued(store, key, queueKey, next.ttl + Math.ceil(request.leaseMs));
  }
  const announce = request.announce ?? '';
  if (plain !== undefined && (head === undefined || plain <= head[1])) {
    store.del(key + PLAIN);
    head = [PLAIN, plain];
  }
  if (head !== undefined) {
    if (head[0] !== PLAIN) {
      queues.remove(queueKey, head[0]);
      carry(store, key, current, RESERVED + head[0]);
    }
    store.set(key, RESERVED + head[0], Math.ceil(request.leaseMs));
    if (announce !== '') store.publish(key, `${announce}|n|${head[0]}`);
    return 'reserved';
  }
  store.del(key);
  if (announce !== '') store.publish(key, announce);
  return 'released';
}

/** LEAVE_QUEUE_SCRIPT. */
export function leaveQueue(
  store: ScriptStore,
  queueKey: string,
  group: string,
  pass?: LeaveRequest,
): void {
  const { queues } = store;
  queues.remove(queueKey, group);
  if (pass === undefined || store.get(pass.key) !== RESERVED + group) return;
  const announce = pass.announce ?? '';
  const head = queues.head(queueKey);
  if (head !== undefined) {
    queues.remove(queueKey, head[0]);
    store.set(pass.key, RESERVED + head[0], Math.ceil(pass.leaseMs));
    carry(store, pass.key, RESERVED + group, RESERVED + head[0]);
    if (announce !== '') store.publish(pass.key, `${announce}|n|${head[0]}`);
    return;
  }
  store.del(pass.key);
  if (announce !== '') store.publish(pass.key, announce);
}
