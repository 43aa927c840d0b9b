import type { AcquireReply, RedisNode, ServerInfo } from '../../lib';
import type { VirtualClock } from './virtual-clock';

/** The operations of the node port. */
export type SimOp = 'acquire' | 'extend' | 'release' | 'fence';

/** What happens to one command on its way to the node and back. */
export interface SimFault {
  /** Virtual ms until the node applies the command (0: at once, in issue order). */
  readonly applyDelay?: number;
  /** Virtual ms from applying to the reply reaching the client. */
  readonly replyDelay?: number;
  /** Apply, but never reply (a lost reply; the command did land). */
  readonly dropReply?: boolean;
  /** Never apply and never reply (lost on the way in). */
  readonly lose?: boolean;
  /** Apply twice (a re-sent command), the second time after `duplicateAfter` ms. */
  readonly duplicateAfter?: number;
  /**
   * Apply only after the next command to this node was applied: the reorder an EVALSHA →
   * NOSCRIPT → EVAL fallback causes, re-sending a command after later ones.
   */
  readonly afterNext?: boolean;
  /** Reply with this error (after applying nothing). */
  readonly error?: Error;
  /**
   * Runs just before the reply reaches the client, in the same instant: a client paused as it
   * reads the reply (a test calls `clock.jump` here).
   */
  readonly beforeReply?: () => void;
}

/** How a {@link SimNode} behaves beyond the node port's promises. */
export interface SimNodeOptions {
  /**
   * Models the acquire script of the landed code before issue 6 item 1: a key that already holds
   * the caller's own value counts as free (its lease refreshed, a vote granted). Off by default:
   * the current script (lib/core/scripts.ts) refuses every existing key. Only for the revert
   * experiment of issue 9, where a shared owner value across attempts makes this matter.
   */
  readonly ownValueIsFree?: boolean;
}

interface Entry {
  value: string;
  expiresAt: number;
}

/**
 * A Redis node in memory with real leases on a {@link VirtualClock}, and faults injected per
 * command: delayed, reordered, dropped, duplicated or failed replies. What it models is only what
 * the node port promises: each command is applied atomically (a Lua script), keys expire at
 * their lease.
 */
export class SimNode implements RedisNode {
  private readonly store = new Map<string, Entry>();
  private deferred: (() => void)[] = [];
  /** Decides the fate of each command; none = applied and answered at once. */
  fault?: (op: SimOp, keys: readonly string[], value: string) => SimFault | undefined;
  isDown = false;
  serverInfo?: ServerInfo;
  /** Commands applied, by operation. */
  readonly applied = { acquire: 0, extend: 0, release: 0, fence: 0 };
  /** Fence counters (they do not expire here). */
  readonly counters = new Map<string, number>();

  /**
   * The server process's generation: a restart ends it, and a command sent to the old process
   * that had not been applied by then is never applied (its connection died with the process).
   */
  private epoch = 0;

  constructor(
    readonly name: string,
    protected readonly clock: VirtualClock,
    private readonly options: SimNodeOptions = {},
  ) {}

  /**
   * The server process dies: commands not yet applied are lost (their callers see a connection
   * error) and, with `loseData`, every key and counter is gone (no persistence). What the
   * restarted server says about itself is set by the caller (`serverInfo`) when it is back.
   */
  crash(loseData: boolean): void {
    this.epoch++;
    this.deferred = [];
    if (loseData) this.wipe();
  }

  /** The value held at `key` now, if any. */
  valueAt(key: string): string | undefined {
    return this.live(key)?.value;
  }

  /** A key's lease left, as PTTL says it: -2 when the key is absent. */
  pttlOf(key: string): number {
    const entry = this.live(key);
    return entry === undefined ? -2 : entry.expiresAt - this.clock.now();
  }

  /** Writes a key as another client would. */
  put(key: string, value: string, ttl: number): void {
    this.store.set(key, { value, expiresAt: this.clock.now() + ttl });
  }

  /** Loses every key (a restart without persistence). */
  wipe(): void {
    this.store.clear();
    this.counters.clear();
  }

  acquire(
    keys: readonly string[],
    value: string,
    ttl: number,
    fenceKeys?: readonly string[],
  ): Promise<AcquireReply> {
    return this.command('acquire', keys, value, () => {
      for (const key of keys) {
        const entry = this.live(key);
        if (entry && !(this.options.ownValueIsFree && entry.value === value)) {
          return { acquired: false, pttl: entry.expiresAt - this.clock.now() };
        }
      }
      for (const key of keys) this.store.set(key, { value, expiresAt: this.clock.now() + ttl });
      if (fenceKeys === undefined) return { acquired: true };
      // The server's TIME in µs: the virtual clock, as a node's own clock.
      let fence = Math.floor(this.clock.now() * 1_000);
      for (const key of fenceKeys) fence = Math.max(fence, this.counters.get(key) ?? 0);
      return { acquired: true, fence };
    });
  }

  fence(
    keys: readonly string[],
    fenceKeys: readonly string[],
    value: string,
    token: number,
  ): Promise<boolean> {
    return this.command('fence', keys, value, () => {
      if (!keys.every((key) => this.live(key)?.value === value)) return false;
      for (const key of fenceKeys) {
        this.counters.set(key, Math.max(this.counters.get(key) ?? 0, token));
      }
      return true;
    });
  }

  extend(keys: readonly string[], value: string, ttl: number): Promise<boolean> {
    return this.command('extend', keys, value, () => {
      if (!keys.every((key) => this.live(key)?.value === value)) return false;
      for (const key of keys) this.store.set(key, { value, expiresAt: this.clock.now() + ttl });
      return true;
    });
  }

  release(keys: readonly string[], value: string): Promise<number> {
    return this.command('release', keys, value, () => {
      let released = 0;
      for (const key of keys) {
        if (this.live(key)?.value === value) {
          this.store.delete(key);
          released++;
        }
      }
      return released;
    });
  }

  async whenReady(): Promise<void> {}

  async close(): Promise<void> {}

  private live(key: string): Entry | undefined {
    const entry = this.store.get(key);
    if (entry && entry.expiresAt <= this.clock.now()) {
      this.store.delete(key);
      return undefined;
    }
    return entry;
  }

  private command<T>(
    op: SimOp,
    keys: readonly string[],
    value: string,
    apply: () => T,
  ): Promise<T> {
    const fault = this.fault?.(op, keys, value) ?? {};
    const epoch = this.epoch;
    return new Promise<T>((resolve, reject) => {
      if (fault.lose) return;
      const run = () => {
        if (this.epoch !== epoch) {
          reject(new Error(`${this.name}: connection reset (server restarted)`));
          return;
        }
        if (fault.error) {
          this.later(fault.replyDelay, () => reject(fault.error));
          return;
        }
        this.applied[op]++;
        const result = apply();
        this.flushDeferred();
        if (fault.duplicateAfter !== undefined) {
          this.clock.setTimer(() => {
            if (this.epoch !== epoch) return;
            this.applied[op]++;
            apply();
          }, fault.duplicateAfter);
        }
        if (!fault.dropReply) {
          this.later(fault.replyDelay, () => {
            fault.beforeReply?.();
            resolve(result);
          });
        }
      };
      const arrive = () => {
        if (fault.afterNext) this.deferred.push(run);
        else run();
      };
      this.later(fault.applyDelay, arrive);
    });
  }

  private flushDeferred(): void {
    if (this.deferred.length === 0) return;
    const pending = this.deferred;
    this.deferred = [];
    for (const run of pending) run();
  }

  private later(ms: number | undefined, action: () => void): void {
    if (!ms) action();
    else this.clock.setTimer(action, ms);
  }
}

/** `count` simulated nodes s0…s(count-1) on one virtual clock. */
export function simNodes(
  count: number,
  clock: VirtualClock,
  options: SimNodeOptions = {},
): SimNode[] {
  return Array.from({ length: count }, (_, i) => new SimNode(`s${i}`, clock, options));
}
