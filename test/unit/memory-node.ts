import type {
  AcquireReply,
  HandOffReply,
  HandOffRequest,
  LeaveRequest,
  NodeStanding,
  QueueTicket,
  RedisNode,
  ServerInfo,
} from '../../lib/core/nodes/node';
import {
  acquireQueued,
  handOff,
  leaveQueue,
  SortedSets,
  type ScriptStore,
} from '../../lib/testing/queue-scripts';

/**
 * An in-memory RedisNode for unit tests of pure control flow (validation, decisions) where a
 * real Redis adds nothing. Leases do not expire on their own; tests that need time or faults
 * use the real fleet (test/support).
 */
export class MemoryNode implements RedisNode {
  readonly store = new Map<string, string>();
  /** Calls made, by operation. */
  readonly calls = {
    acquire: 0,
    extend: 0,
    release: 0,
    acquireQueued: 0,
    handOff: 0,
    leaveQueue: 0,
  };
  /** Fair hand-off's queues; they expire on `queueClock` (ms), which a test may move. */
  queueClock = 0;
  readonly queues = new SortedSets(() => this.queueClock);
  /** Messages the fair hand-off's scripts published, in order: [channel, message]. */
  readonly published: [string, string][] = [];
  /** The scripts' view: keys without leases (PTTL 1000, as `acquire` reports), TIME = queueClock. */
  private readonly scripts: ScriptStore = {
    get: (key) => this.store.get(key),
    pttl: (key) => (this.store.has(key) ? 1000 : -2),
    set: (key, value) => this.store.set(key, value),
    del: (key) => this.store.delete(key),
    serverNow: () => this.queueClock,
    queues: this.queues,
    publish: (channel, message) => this.published.push([channel, message]),
  };
  /** When set, every operation waits for this before answering. */
  gate?: Promise<void>;
  /** When set, every operation fails with this. */
  failure?: Error;

  /** A server that keeps its data (durable): restarts are not what these tests are about. */
  readonly serverInfo: ServerInfo;

  constructor(readonly name: string) {
    this.serverInfo = { runId: `${name}#0`, uptimeSeconds: 86_400, durable: true };
  }

  // The membership's operations (restart detection), answered at once.
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

  async acquire(keys: readonly string[], value: string): Promise<AcquireReply> {
    this.calls.acquire++;
    await this.answer();
    if (keys.some((k) => this.store.has(k) && this.store.get(k) !== value))
      return { acquired: false, pttl: 1000 };
    for (const k of keys) this.store.set(k, value);
    return { acquired: true };
  }

  async extend(keys: readonly string[], value: string): Promise<boolean> {
    this.calls.extend++;
    await this.answer();
    return keys.every((k) => this.store.get(k) === value);
  }

  async release(keys: readonly string[], value: string): Promise<number> {
    this.calls.release++;
    await this.answer();
    let n = 0;
    for (const k of keys) if (this.store.get(k) === value && this.store.delete(k)) n++;
    return n;
  }

  async acquireQueued(
    key: string,
    queueKey: string,
    value: string,
    ttl: number,
    ticket: QueueTicket,
  ): Promise<AcquireReply> {
    this.calls.acquireQueued++;
    await this.answer();
    return acquireQueued(this.scripts, key, queueKey, value, ttl, ticket);
  }

  async handOff(
    key: string,
    queueKey: string,
    value: string,
    request: HandOffRequest,
  ): Promise<HandOffReply> {
    this.calls.handOff++;
    await this.answer();
    return handOff(this.scripts, key, queueKey, value, request);
  }

  async leaveQueue(queueKey: string, group: string, pass?: LeaveRequest): Promise<void> {
    this.calls.leaveQueue++;
    await this.answer();
    leaveQueue(this.scripts, queueKey, group, pass);
  }

  async whenReady(): Promise<void> {}

  async close(): Promise<void> {}

  private async answer(): Promise<void> {
    if (this.gate) await this.gate;
    if (this.failure) throw this.failure;
  }
}

/** `count` memory nodes named m0…m(count-1). */
export function memoryNodes(count: number): MemoryNode[] {
  return Array.from({ length: count }, (_, i) => new MemoryNode(`m${i}`));
}
