import type {
  AcquireReply,
  HandOffReply,
  HandOffRequest,
  LeaveRequest,
  PlainWait,
  QueueTicket,
  RedisNode,
  ServerInfo,
} from '../../lib';
import {
  acquireQueued,
  CLEANUP_MARK,
  handOff,
  leaveQueue,
  markPlain,
  SortedSets,
  type ScriptStore,
  PLAIN_RESERVATION as PLAIN_TURN,
} from '../../lib/testing/queue-scripts';
import { fleetId, standingKeys } from '../../lib/core/membership/standing';
import type { NodeStanding, StandingKeys } from '../../lib/core/nodes/node';

import type { VirtualClock } from './virtual-clock';

/** The operations of the node port. */
export type SimOp =
  | 'acquire'
  | 'extend'
  | 'release'
  | 'fence'
  | 'horizon'
  | 'standing'
  | 'restoreFloor'
  | 'ping'
  | 'acquireQueued'
  | 'handOff'
  | 'leaveQueue';

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
   * the current script (lib/core/protocol/scripts.ts) refuses every existing key. Only for the revert
   * experiment of issue 9, where a shared owner value across attempts makes this matter.
   */
  readonly ownValueIsFree?: boolean;
  /**
   * A hand-made safety mutant of the fair hand-off scripts, for issue 18's revert experiment (the
   * fair simulation must find each): `handOffWithoutCompare` — HAND_OFF swaps or reserves without
   * checking that the key still holds the holder's value; `takeHeldAtHead` — ACQUIRE_QUEUED takes
   * a key held by another owner value when its group is first in the queue; `swapKeepsLease` —
   * HAND_OFF's swap keeps the old holder's lease instead of a fresh one of the new ttl.
   */
  readonly queueMutant?: 'handOffWithoutCompare' | 'takeHeldAtHead' | 'swapKeepsLease';
}

/** The lease horizons key membership.ts uses for the fleet of these nodes (per fleet: fleetId()). */
export function horizonKey(
  fleet: readonly { readonly name: string }[],
  keyPrefix = 'redlock:',
): string {
  return standingKeys(
    keyPrefix,
    fleetId(
      keyPrefix,
      fleet.map((node) => node.name),
    ),
  ).horizon;
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
  /**
   * Whether `fault` also decides the membership's commands (horizon, standing, restoreFloor). Off by
   * default: tests of the lock path fault its commands only; the simulation turns it on.
   */
  membershipFaults = false;
  isDown = false;
  /** Why `serverInfo` is unknown (an INFO read that failed, or one the server refuses). */
  identityError?: 'failed' | 'refused';
  /**
   * What the next `identify()` learns: the server info to set, or an error kind. Unset: the
   * identity becomes `identifyAs` (by default the info the node had before the failure).
   */
  identifyAs?: ServerInfo;
  /** How many more `identify()` calls fail (a busy server timing INFO out). */
  identifyFailures = 0;
  /** This server's clock minus the virtual clock (ms): node clocks differ (architecture.md §5.6). */
  clockOffsetMs = 0;
  /** Commands applied, by operation. */
  readonly applied = {
    acquire: 0,
    extend: 0,
    release: 0,
    fence: 0,
    horizon: 0,
    standing: 0,
    restoreFloor: 0,
    ping: 0,
    acquireQueued: 0,
    handOff: 0,
    leaveQueue: 0,
  };
  /** Fair hand-off's queues (sorted sets with expiry on the virtual clock). */
  readonly queues: SortedSets;
  /**
   * The fair hand-off scripts' view of this node (lib/testing/queue-scripts.ts); a queue nemesis
   * writes through it what a dead group's own script would have left (its queue mark).
   */
  readonly scripts: ScriptStore;
  /** Fence counters and floors (they do not expire here). */
  readonly counters = new Map<string, number>();
  /** Lease horizons (server ms), by key, then by the run_id they are filed under. */
  readonly meta = new Map<string, Map<string, number>>();
  /** Markers and fence records (run_ids), by key: data, lost with it. */
  readonly stamps = new Map<string, string>();
  /**
   * What the server process really is (what a script's `INFO` reads): its `run_id`, when it
   * started (virtual ms) and whether its configuration fsyncs every write. `crash()` starts a new
   * one; setting `serverInfo` (what the client's INFO read says) to another `run_id` declares it.
   */
  private server: { runId: string; startedAt: number; durableConfig: boolean };
  private incarnation = 0;
  private info?: ServerInfo;

  /**
   * The server process's generation: a restart ends it, and a command sent to the old process
   * that had not been applied by then is never applied (its connection died with the process).
   */
  private epoch = 0;

  constructor(
    readonly name: string,
    protected readonly clock: VirtualClock,
    private readonly options: SimNodeOptions = {},
  ) {
    // A server that has been up a day, without persistence, until a test says otherwise.
    this.server = { runId: `${name}#0`, startedAt: clock.now() - 86_400_000, durableConfig: false };
    this.serverInfo = { runId: `${name}#0`, uptimeSeconds: 86_400, durable: false };
    this.queues = new SortedSets(() => this.clock.now());
    this.scripts = {
      get: (key) => this.live(key)?.value,
      pttl: (key) => this.pttlOf(key),
      set: (key, value, ttl) => this.put(key, value, ttl),
      del: (key) => this.store.delete(key),
      serverNow: () => this.serverNow(),
      queues: this.queues,
      publish: (channel, message) => this.publish(channel, message),
    };
  }

  /**
   * PUBLISH from a script, in the instant it is applied. A SimNode has no subscribers; a node
   * with pub/sub (PubSubSimNode, HealthNode) delivers it.
   */
  protected publish(channel: string, message: string): void {
    void channel;
    void message;
  }

  /**
   * The server process dies: commands not yet applied are lost (their callers see a connection
   * error) and, with `loseData`, every key and counter is gone (no persistence). What the
   * restarted server says about itself is set by the caller (`serverInfo`) when it is back.
   */
  crash(loseData: boolean): void {
    this.epoch++;
    this.deferred = [];
    this.server = {
      runId: `${this.name}#${++this.incarnation}`,
      startedAt: this.clock.now(),
      durableConfig: this.server.durableConfig,
    };
    if (loseData) this.wipe();
  }

  /** What the client's INFO read said (undefined: unread or refused); setting it declares the server. */
  get serverInfo(): ServerInfo | undefined {
    return this.info;
  }

  set serverInfo(info: ServerInfo | undefined) {
    this.info = info;
    if (info !== undefined) this.declare(info);
  }

  /** The server is the one `info` describes (a test sets who answers INFO). */
  private declare(info: ServerInfo): void {
    if (info.runId !== this.server.runId) {
      this.server = {
        runId: info.runId,
        startedAt: this.clock.now() - info.uptimeSeconds * 1_000,
        durableConfig: info.durable,
      };
    } else this.server.durableConfig = info.durable;
  }

  /** The server's `run_id`, as a script's INFO reads it. */
  get runId(): string {
    return this.server.runId;
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
    this.queues.clear();
    this.counters.clear();
    this.meta.clear();
    this.stamps.clear();
  }

  /** This server's own clock (ms): the virtual clock plus its offset. */
  serverNow(): number {
    return this.clock.now() + this.clockOffsetMs;
  }

  acquire(
    keys: readonly string[],
    value: string,
    ttl: number,
    fenceKeys?: readonly string[],
    wait?: PlainWait,
  ): Promise<AcquireReply> {
    return this.command('acquire', keys, value, () => {
      // A waiter outside the queues takes a key reserved for it and marks a key that alone
      // blocks it (as ACQUIRE_SCRIPT / PLAIN_WAIT_SCRIPT, issue 24 item 1).
      const blocking = keys.filter((key) => {
        const entry = this.live(key);
        if (wait !== undefined && entry?.value === PLAIN_TURN) return false;
        return entry !== undefined && !(this.options.ownValueIsFree && entry.value === value);
      });
      if (blocking.length > 0) {
        if (wait !== undefined && blocking.length === 1) markPlain(this.scripts, blocking[0], wait);
        return { acquired: false, pttl: this.live(blocking[0])!.expiresAt - this.clock.now() };
      }
      for (const key of keys) this.store.set(key, { value, expiresAt: this.clock.now() + ttl });
      if (fenceKeys === undefined) return { acquired: true };
      // The server's TIME in µs: its own clock.
      let fence = Math.floor(this.serverNow() * 1_000);
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
      // As EXTEND_SCRIPT: never shortens a lease.
      for (const key of keys) {
        const entry = this.live(key)!;
        entry.expiresAt = Math.max(entry.expiresAt, this.clock.now() + ttl);
      }
      return true;
    });
  }

  release(keys: readonly string[], value: string, announce?: string): Promise<number> {
    return this.command('release', keys, value, () => {
      let released = 0;
      for (const key of keys) {
        const cur = this.live(key)?.value;
        // As RELEASE_SCRIPT: a holder's release (not a cleanup) frees a key reserved for the
        // plain waiters too, not counted.
        if (cur === value || (cur === PLAIN_TURN && !(announce ?? '').endsWith(CLEANUP_MARK))) {
          this.store.delete(key);
          if (cur === value) released++;
          // As RELEASE_SCRIPT: each deleted key announced on its own channel.
          if (announce !== undefined && announce !== '') this.publish(key, announce);
        }
      }
      return released;
    });
  }

  /** ACQUIRE_QUEUED_SCRIPT (fair hand-off). */
  acquireQueued(
    key: string,
    queueKey: string,
    value: string,
    ttl: number,
    ticket: QueueTicket,
  ): Promise<AcquireReply> {
    return this.command('acquireQueued', [key], value, () => {
      if (
        this.options.queueMutant === 'takeHeldAtHead' &&
        this.live(key) !== undefined &&
        this.queues.head(queueKey)?.[0] === ticket.group
      ) {
        this.put(key, value, ttl);
        return { acquired: true };
      }
      return acquireQueued(this.scripts, key, queueKey, value, ttl, ticket);
    });
  }

  /** HAND_OFF_SCRIPT (fair hand-off). */
  handOff(
    key: string,
    queueKey: string,
    value: string,
    request: HandOffRequest,
  ): Promise<HandOffReply> {
    return this.command('handOff', [key], value, () => {
      const mutant = this.options.queueMutant;
      const entry = this.live(key);
      let scripts = this.scripts;
      if (mutant === 'handOffWithoutCompare') {
        scripts = { ...scripts, get: (k) => (k === key ? value : this.scripts.get(k)) };
      } else if (mutant === 'swapKeepsLease' && entry !== undefined) {
        const expiresAt = entry.expiresAt;
        scripts = {
          ...scripts,
          set: (k, v, ttl) =>
            k === key && v === request.next?.value
              ? this.store.set(k, { value: v, expiresAt })
              : this.scripts.set(k, v, ttl),
        };
      }
      return handOff(scripts, key, queueKey, value, request);
    });
  }

  /** LEAVE_QUEUE_SCRIPT (fair hand-off). */
  leaveQueue(queueKey: string, group: string, pass?: LeaveRequest): Promise<void> {
    return this.command('leaveQueue', [queueKey], group, () =>
      this.applyLeave(queueKey, group, pass),
    );
  }

  /** LEAVE_QUEUE_SCRIPT as the node applies it (a search's node records what it left). */
  protected applyLeave(queueKey: string, group: string, pass?: LeaveRequest): void {
    leaveQueue(this.scripts, queueKey, group, pass);
  }

  /** HORIZON_SCRIPT: raises the horizons filed under `runIds`; writes the marker once. */
  recordHorizon(keys: StandingKeys, windowMs: number, runIds: readonly string[]): Promise<void> {
    return this.command('horizon', [keys.horizon], '', () => {
      for (const runId of runIds) this.fileHorizon(runId, Math.ceil(windowMs), keys.horizon);
      if (!this.stamps.has(keys.born)) this.stamps.set(keys.born, this.server.runId);
    });
  }

  /**
   * Files a lease horizon `msAhead` of this server's clock under `runId` (as HORIZON_SCRIPT does
   * for a lock manager that knows that run_id) in `key` ({@link horizonKey}): for tests that set
   * a scene directly.
   */
  fileHorizon(runId: string, msAhead: number, key: string): void {
    const now = Math.floor(this.serverNow());
    let filed = this.meta.get(key);
    if (filed === undefined) this.meta.set(key, (filed = new Map()));
    for (const [run, until] of filed) if (until <= now) filed.delete(run);
    filed.set(runId, Math.max(filed.get(runId) ?? 0, now + msAhead));
  }

  /** STANDING_SCRIPT: identity, uptime, marker, floor, fence record, horizons still ahead. */
  readStanding(keys: StandingKeys): Promise<NodeStanding> {
    return this.command('standing', [keys.horizon], '', () => {
      const now = Math.floor(this.serverNow());
      const horizons: Record<string, number> = {};
      for (const [run, until] of this.meta.get(keys.horizon) ?? []) {
        if (until > now) horizons[run] = until - now;
      }
      return {
        runId: this.server.runId,
        uptimeSeconds: Math.floor((this.clock.now() - this.server.startedAt) / 1_000),
        born: this.stamps.get(keys.born),
        horizons,
        floor: this.counters.get(keys.floor) ?? 0,
        fenced: this.stamps.get(keys.fenced),
      };
    });
  }

  /** RESTORE_FLOOR_SCRIPT: only on the incarnation surveyed; raises the floor, records it. */
  restoreFloor(keys: StandingKeys, runId: string, floor: number): Promise<boolean> {
    return this.command('restoreFloor', [keys.floor], '', () => {
      if (this.server.runId !== runId) return false;
      if (floor > (this.counters.get(keys.floor) ?? 0)) this.counters.set(keys.floor, floor);
      this.stamps.set(keys.fenced, runId);
      return true;
    });
  }

  /**
   * PING, under the same faults as any command: the suspicion's probe (a node that stopped
   * answering is sent no lock traffic until one is answered), so the simulation runs with it.
   */
  ping(): Promise<void> {
    return this.command('ping', [], '', () => undefined);
  }

  /** Reads INFO again: fails while `identifyFailures` lasts, else learns `identifyAs`. */
  async identify(): Promise<void> {
    if (this.identifyFailures > 0) {
      this.identifyFailures--;
      this.identityError = 'failed';
      return;
    }
    if (this.identifyAs !== undefined) {
      this.serverInfo = this.identifyAs;
      this.identifyAs = undefined;
      this.identityError = undefined;
    }
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
    const membership = op === 'horizon' || op === 'standing' || op === 'restoreFloor';
    const fault =
      (membership && !this.membershipFaults ? undefined : this.fault?.(op, keys, value)) ?? {};
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

/**
 * When and how often one published message reaches one subscriber: delays in virtual ms (none:
 * dropped silently, as on a half-open connection), or `gapAfter`: dropped with the subscriber's
 * connection, whose drop the subscriber hears that many ms later (its `onGap`): Redis never loses
 * a message on a connection that stays up (a full output buffer closes it too).
 */
export type SimDelivery = (
  channel: string,
  message: string,
) => readonly number[] | { readonly gapAfter: number };

/**
 * A {@link SimNode} with pub/sub: a message a script publishes reaches each subscriber of its
 * channel after the delays `delivery` gives (default: once, in the next step) — none (dropped),
 * several (duplicated), or different per message (reordered). A restart drops every subscriber
 * connection: each is told of the gap (its waiters poll again) and stays subscribed (the adapter
 * re-subscribes on reconnect).
 */
export class PubSubSimNode extends SimNode {
  private readonly subscribers = new Map<string, Set<Subscriber>>();
  delivery?: SimDelivery;

  subscribe(
    channel: string,
    onMessage: (id: string) => void,
    onGap?: () => void,
    onConfirmed?: () => void,
  ): () => void {
    let set = this.subscribers.get(channel);
    if (set === undefined) this.subscribers.set(channel, (set = new Set()));
    const subscriber: Subscriber = { onMessage, onGap };
    set.add(subscriber);
    if (onConfirmed !== undefined) this.clock.setTimer(onConfirmed, 0);
    return () => {
      set.delete(subscriber);
      if (set.size === 0) this.subscribers.delete(channel);
    };
  }

  listening(channel: string): boolean {
    return this.subscribers.has(channel) && !this.isDown;
  }

  override crash(loseData: boolean): void {
    super.crash(loseData);
    for (const set of this.subscribers.values()) for (const s of set) s.onGap?.();
  }

  protected override publish(channel: string, message: string): void {
    for (const subscriber of this.subscribers.get(channel) ?? []) {
      const delivery = this.delivery?.(channel, message) ?? [0];
      if ('gapAfter' in delivery) {
        const { onGap } = subscriber;
        if (onGap !== undefined) this.clock.setTimer(onGap, delivery.gapAfter);
        continue;
      }
      for (const delay of delivery) {
        this.clock.setTimer(() => subscriber.onMessage(message), delay);
      }
    }
  }
}

interface Subscriber {
  readonly onMessage: (message: string) => void;
  readonly onGap?: () => void;
}

/** `count` simulated nodes s0…s(count-1) on one virtual clock. */
export function simNodes(
  count: number,
  clock: VirtualClock,
  options: SimNodeOptions = {},
): SimNode[] {
  return Array.from({ length: count }, (_, i) => new SimNode(`s${i}`, clock, options));
}
