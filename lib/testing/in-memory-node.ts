import type {
  AcquireReply,
  HandOffReply,
  HandOffRequest,
  LeaveRequest,
  PlainWait,
  KeyState,
  NodeStanding,
  QueueTicket,
  RedisNode,
  ServerInfo,
} from 'nestjs-redlock';
import {
  acquireQueued,
  CLEANUP_MARK,
  handOff,
  leaveQueue,
  markPlain,
  PLAIN_RESERVATION,
  SortedSets,
  type ScriptStore,
} from './queue-scripts';

interface Entry {
  value: string;
  /** performance.now() at which the key expires. */
  expiresAt: number;
}

/**
 * A Redis node in process memory, with the semantics the lock needs of a real one: keys with a
 * lease (they expire), all-or-nothing acquisition of several keys, compare-and-extend,
 * compare-and-delete, and fence counters. What `RedlockTestingModule` locks on, so unit tests of
 * an app run the real lock manager (waiting, `tryAcquire`, `@Locked`, typed errors) without Redis.
 * Not for production: one process is no distributed lock.
 */
export class InMemoryRedisNode implements RedisNode {
  readonly name: string;
  private readonly keys = new Map<string, Entry>();
  private readonly fences = new Map<string, number>();
  /** Fair hand-off's queues (`fairness: 'queue'`), with the scripts' semantics. */
  private readonly queues = new SortedSets(() => performance.now());
  /**
   * Release announcements, by channel (the key): delivered to the lock managers that share this
   * node, as a server delivers them to subscribers — the fair queue (the default fairness) tells
   * the next waiter its turn this way, and a waiter of another manager wakes on a release.
   */
  private readonly subscribers = new Map<string, Set<(message: string) => void>>();
  /** The scripts' view of this node. */
  private readonly scripts: ScriptStore = {
    get: (key) => this.live(key, performance.now())?.value,
    pttl: (key) => {
      const now = performance.now();
      const entry = this.live(key, now);
      return entry === undefined ? -2 : Math.ceil(entry.expiresAt - now);
    },
    set: (key, value, ttl) => this.keys.set(key, { value, expiresAt: performance.now() + ttl }),
    del: (key) => this.keys.delete(key),
    // Queue scores only need a clock that never goes back.
    serverNow: () => performance.now(),
    queues: this.queues,
    publish: (channel, message) => this.publish(channel, message),
  };

  /**
   * One process's memory, never restarted under a lock: it reads as a durable server, so the
   * lock manager's restart detection (architecture.md §5.7) admits it at once.
   */
  readonly serverInfo: ServerInfo;

  constructor(name = 'in-memory') {
    this.name = name;
    this.serverInfo = { runId: `${name}#${Date.now()}`, uptimeSeconds: 0, durable: true };
  }

  // Restart detection's operations: nothing to remember in one process.
  async recordHorizon(): Promise<void> {}
  async readStanding(): Promise<NodeStanding> {
    // Up "forever": never restarted under a lock, so it is settled and votes at once.
    return {
      runId: this.serverInfo.runId,
      uptimeSeconds: Number.MAX_SAFE_INTEGER / 1_000,
      born: undefined,
      horizons: {},
      floor: 0,
      fenced: this.serverInfo.runId,
    };
  }
  async restoreFloor(): Promise<boolean> {
    return true;
  }

  async acquire(
    keys: readonly string[],
    value: string,
    ttl: number,
    fenceKeys?: readonly string[],
    wait?: PlainWait,
  ): Promise<AcquireReply> {
    const now = performance.now();
    let blocking: number | undefined;
    let first: string | undefined;
    let blockers = 0;
    for (const key of keys) {
      const entry = this.live(key, now);
      // A waiter outside the queues takes a key reserved for it (issue 24 item 1).
      if (wait !== undefined && entry?.value === PLAIN_RESERVATION) continue;
      if (entry !== undefined && entry.value !== value) {
        first ??= key;
        blockers++;
        blocking = Math.max(blocking ?? 0, Math.ceil(entry.expiresAt - now));
      }
    }
    if (blocking !== undefined) {
      // As the scripts (blockingKeys): only a key that alone blocks is marked.
      if (wait !== undefined && blockers === 1) markPlain(this.scripts, first!, wait);
      return { acquired: false, pttl: blocking };
    }
    for (const key of keys) this.keys.set(key, { value, expiresAt: now + ttl });
    if (fenceKeys === undefined) return { acquired: true };
    // As the script does: max(the counters, the server's time in µs), so tokens keep increasing.
    let fence = Math.floor(Date.now() * 1000);
    for (const key of fenceKeys) fence = Math.max(fence, this.fences.get(key) ?? 0);
    return { acquired: true, fence };
  }

  async fence(
    keys: readonly string[],
    fenceKeys: readonly string[],
    value: string,
    token: number,
  ): Promise<boolean> {
    const now = performance.now();
    if (!keys.every((key) => this.live(key, now)?.value === value)) return false;
    for (const key of fenceKeys) this.fences.set(key, Math.max(this.fences.get(key) ?? 0, token));
    return true;
  }

  async extend(keys: readonly string[], value: string, ttl: number): Promise<boolean> {
    const now = performance.now();
    if (!keys.every((key) => this.live(key, now)?.value === value)) return false;
    // As the script: an extension never shortens a lease.
    for (const key of keys) {
      const entry = this.keys.get(key)!;
      entry.expiresAt = Math.max(entry.expiresAt, now + ttl);
    }
    return true;
  }

  async release(keys: readonly string[], value: string, announce = ''): Promise<number> {
    const now = performance.now();
    let deleted = 0;
    for (const key of keys) {
      const cur = this.live(key, now)?.value;
      // As RELEASE_SCRIPT: a holder's release (not a cleanup) frees a key reserved for the
      // waiters outside the queues too (their turn is over: it is one of theirs), not counted.
      const theirs = cur === PLAIN_RESERVATION && !announce.endsWith(CLEANUP_MARK);
      if ((cur === value || theirs) && this.keys.delete(key)) {
        if (cur === value) deleted++;
        if (announce !== '') this.publish(key, announce);
      }
    }
    return deleted;
  }

  /** {@link RedisNode.subscribe}: in process, confirmed at once, never a gap. */
  subscribe(
    channel: string,
    onMessage: (id: string) => void,
    _onGap?: () => void,
    onConfirmed?: () => void,
  ): () => void {
    // A function of its own per subscription: one listener may subscribe twice.
    const listener = (message: string) => onMessage(message);
    let listeners = this.subscribers.get(channel);
    if (listeners === undefined) this.subscribers.set(channel, (listeners = new Set()));
    listeners.add(listener);
    if (onConfirmed !== undefined) queueMicrotask(onConfirmed);
    return () => {
      listeners.delete(listener);
      if (listeners.size === 0 && this.subscribers.get(channel) === listeners) {
        this.subscribers.delete(channel);
      }
    };
  }

  /** {@link RedisNode.listening}: whether a lock manager sharing this node listens on `channel`. */
  listening(channel: string): boolean {
    return this.subscribers.has(channel);
  }

  /** As a server: to every subscriber of the channel, after the command that published. */
  private publish(channel: string, message: string): void {
    const listeners = this.subscribers.get(channel);
    if (listeners === undefined) return;
    for (const listener of [...listeners]) queueMicrotask(() => listener(message));
  }

  async acquireQueued(
    key: string,
    queueKey: string,
    value: string,
    ttl: number,
    ticket: QueueTicket,
  ): Promise<AcquireReply> {
    return acquireQueued(this.scripts, key, queueKey, value, ttl, ticket);
  }

  async handOff(
    key: string,
    queueKey: string,
    value: string,
    request: HandOffRequest,
  ): Promise<HandOffReply> {
    return handOff(this.scripts, key, queueKey, value, request);
  }

  async leaveQueue(queueKey: string, group: string, pass?: LeaveRequest): Promise<void> {
    leaveQueue(this.scripts, queueKey, group, pass);
  }

  async whenReady(): Promise<void> {}

  /** Always answers: the node is this process's memory (`health()` reports it up). */
  async ping(): Promise<void> {}

  /** What `inspect()` reads, as PTTL says it: `pttl` -2 when the key is absent. */
  async inspect(key: string): Promise<KeyState> {
    const now = performance.now();
    const entry = this.live(key, now);
    if (entry === undefined) return { value: null, pttl: -2 };
    return { value: entry.value, pttl: Math.ceil(entry.expiresAt - now) };
  }

  async close(): Promise<void> {}

  /** Whether `key` (a full lock key, prefix included) holds a live lease. */
  has(key: string): boolean {
    return this.live(key, performance.now()) !== undefined;
  }

  /** Deletes `key` whoever holds it: the holder's next extension fails. */
  drop(key: string): void {
    this.keys.delete(key);
  }

  /** Forgets every key and counter. */
  clear(): void {
    this.keys.clear();
    this.fences.clear();
    this.queues.clear();
  }

  private live(key: string, now: number): Entry | undefined {
    const entry = this.keys.get(key);
    if (entry !== undefined && entry.expiresAt <= now) {
      this.keys.delete(key);
      return undefined;
    }
    return entry;
  }
}
