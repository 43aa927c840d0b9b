import { monotonicClock, type Clock } from '../clock';
import type { RedlockLogger } from '../observability/logger';
import {
  KeyTypeConflict,
  type AcquireReply,
  type HandOffReply,
  type HandOffRequest,
  type KeyState,
  type LeaveRequest,
  type NodeAccess,
  type NodeHealth,
  type NodeStanding,
  type PlainWait,
  type QueueTicket,
  type RedisNode,
  type ServerInfo,
  type StandingKeys,
} from '../nodes/node';
import { DescribedNodeError } from '../nodes/node-errors';
import { probeAccess } from '../nodes/permissions';
import {
  ACQUIRED,
  acquireReply,
  fencedAcquireReply,
  handOffArgs,
  handOffReply,
  isNoScript,
  isOne,
  isWrongType,
  leaseReply,
  leaveArgs,
  namesNext,
  passThrough,
  plainWaitArgs,
  queuedArgs,
  queuedReply,
  standingKeys,
  standingReply,
} from './script-replies';
import {
  ACQUIRE_FENCED_SCRIPT,
  ACQUIRE_QUEUED_SCRIPT,
  ACQUIRE_SCRIPT,
  EXTEND_SCRIPT,
  FENCE_SCRIPT,
  HAND_OFF_SCRIPT,
  HORIZON_SCRIPT,
  LEAVE_QUEUE_SCRIPT,
  PLAIN_WAIT_SCRIPT,
  PROBE_SCRIPT,
  RELEASE_SCRIPT,
  RESTORE_FLOOR_SCRIPT,
  STANDING_SCRIPT,
  UNCONTENDED_HAND_OFF_SCRIPT,
  type LuaScript,
} from './scripts';
import { HANDED_ON } from '../lease/owner-value';
import { PLAIN_RESERVATION, QUEUE_MARK_SUFFIX } from './queue-scripts';
import { ReleaseChannels } from './release-channels';
import { ServerIdentity } from './server-identity';
import type { CommandArg, RedisTransport } from '../nodes/transport';

/** Where a {@link ScriptedNode} says what happens to its connection, and which clock it reads. */
export interface ScriptedNodeOptions {
  /**
   * Where a connection the adapter owns says it went down or came back, a hung node is warned
   * about, and a refused `INFO` is said once. None: nothing is said (a caller's client).
   */
  readonly logger?: RedlockLogger;
  /**
   * The time line the readings of INFO are dated on: the clock of the `Redlock` served.
   * @default monotonicClock
   */
  readonly clock?: Clock;
}

/**
 * The {@link RedisNode} port over any {@link RedisTransport}: every scripted operation of the
 * lock protocol, written once (the scripts are in scripts.ts, the reading of their replies in
 * script-replies.ts). The port's contract (node.ts) says which orderings the algorithm relies
 * on. The scripts the server lacks are loaded every time the connection becomes ready — before
 * any command that could need them — so EVALSHA succeeds on the hot path: a restarted node's
 * empty cache (or Redis ≥ 7.4 evicting EVAL-loaded scripts) never sends a command through a
 * fallback. The EVAL fallback on NOSCRIPT that remains covers a `SCRIPT FLUSH` at runtime; it
 * re-sends after later commands, which is safe because every attempt has its own owner value.
 *
 * @example
 * const node = new ScriptedNode(new MyClientTransport(client), { logger });
 * new Redlock([node, …], options);
 */
export class ScriptedNode implements RedisNode {
  readonly name: string;
  /** See {@link RedisNode.subscribe}; present when the transport has a subscriber connection. */
  readonly subscribe?: RedisNode['subscribe'];
  /** See {@link RedisNode.listening}; present with {@link subscribe}. */
  readonly listening?: RedisNode['listening'];
  private readonly identity: ServerIdentity;
  private readonly channels?: ReleaseChannels;
  private readonly logger?: RedlockLogger;
  private readonly healthListeners: ((state: NodeHealth) => void)[] = [];
  /** The health last reported: `down` between a `lost` and the next `ready`. */
  private down = false;
  /** This node is closing its own connection: the close is not a node going down. */
  private closing = false;
  /** Whether the server takes `SET … NX GET` (Redis ≥ 7.0); learnt on the first refusal. */
  private setNxGet = true;

  constructor(
    /** The client adapter: commands, connection, optionally a subscriber connection. */
    protected readonly transport: RedisTransport,
    options: ScriptedNodeOptions = {},
  ) {
    this.name = transport.name;
    this.logger = options.logger;
    this.identity = new ServerIdentity(transport, options.clock ?? monotonicClock, options.logger);
    const pubsub = transport.pubsub;
    if (pubsub !== undefined) {
      const channels = (this.channels = new ReleaseChannels(pubsub));
      this.subscribe = (channel, onMessage, onGap, onConfirmed) =>
        channels.subscribe(channel, onMessage, onGap, onConfirmed);
      this.listening = (channel) => channels.listening(channel);
    }
    // Registered before anything else listens: on `ready`, INFO is sent before whenReady's own
    // listener runs, so that one waits for it.
    transport.watch((event) => (event === 'ready' ? this.onReady() : this.onLost()));
  }

  get isDown(): boolean {
    return this.transport.isDown ?? this.down;
  }

  get serverInfo(): ServerInfo | undefined {
    return this.identity.serverInfo;
  }

  get identityError(): 'failed' | 'refused' | undefined {
    return this.identity.identityError;
  }

  get aclUser(): string {
    return this.transport.aclUser;
  }

  /** Reads INFO again (after a failed read); the membership retries it while the node is out. */
  identify(): Promise<void> {
    return this.identity.identify(this.transport.isReady);
  }

  acquire(
    keys: readonly string[],
    value: string,
    ttl: number,
    fenceKeys?: readonly string[],
    wait?: PlainWait,
  ): Promise<AcquireReply> {
    if (fenceKeys === undefined && keys.length === 1 && this.setNxGet) {
      return this.setIfAbsent(keys, value, ttl, wait);
    }
    return this.acquireScripted(keys, value, ttl, fenceKeys, wait);
  }

  private acquireScripted(
    keys: readonly string[],
    value: string,
    ttl: number,
    fenceKeys: readonly string[] | undefined,
    wait: PlainWait | undefined,
  ): Promise<AcquireReply> {
    const waiting = plainWaitArgs(wait);
    if (fenceKeys === undefined) {
      return this.runAs(ACQUIRE_SCRIPT, keys, [value, ttl, ...waiting], acquireReply);
    }
    return this.runAs(
      ACQUIRE_FENCED_SCRIPT,
      [...keys, ...fenceKeys],
      [value, ttl, keys.length, ...waiting],
      fencedAcquireReply,
    );
  }

  /**
   * One resource needs no script now that every attempt has its own owner value: `SET NX PX
   * GET` (Redis ≥ 7.0) sets it if absent and returns the old value otherwise (a non-string
   * value still fails with WRONGTYPE); the lease is read only when the key was taken. On a
   * server without `NX` + `GET` (Redis < 7) the script is used, from then on.
   *
   * Written with `then`, not `async`/`await`, as are the other operations of a lock cycle: each
   * `async` layer is promises of its own (dearer with an `AsyncLocalStorage` in use).
   */
  private setIfAbsent(
    keys: readonly string[],
    value: string,
    ttl: number,
    wait: PlainWait | undefined,
  ): Promise<AcquireReply> {
    const key = keys[0];
    return this.transport.call('SET', [key, value, 'PX', ttl, 'NX', 'GET']).then(
      (previous) => (previous === null ? ACQUIRED : this.metHeld(key, previous, value, ttl, wait)),
      (error: unknown) => {
        if (error instanceof Error && /syntax error/i.test(error.message)) {
          this.setNxGet = false;
          return this.acquireScripted(keys, value, ttl, undefined, wait);
        }
        throw this.failed(error);
      },
    );
  }

  /**
   * `SET NX` found the key set (`previous`): its lease. A waiter outside the queues (issue 24
   * item 1) takes a key reserved for it, and marks one held by a fair holder or with a fair queue
   * (PLAIN_WAIT_SCRIPT): only such a key is handed off. Elsewhere it reads the queue mark beside
   * the lease, no script (S2, fairness off: 93 commands per success; 156 with the script on
   * every held key).
   */
  private metHeld(
    key: string,
    previous: unknown,
    value: string,
    ttl: number,
    wait: PlainWait | undefined,
  ): Promise<AcquireReply> {
    const plainWait = () =>
      this.runAs(PLAIN_WAIT_SCRIPT, [key], [value, ttl, ...plainWaitArgs(wait!)], acquireReply);
    // Reserved for it, or held by a fair holder that may hand it on (owner-value.ts HANDED_ON).
    const handedOn = previous === PLAIN_RESERVATION || (previous as string)[0] === HANDED_ON;
    if (wait !== undefined && handedOn) return plainWait();
    return Promise.all([
      wait === undefined ? 0 : this.transport.call('EXISTS', [key + QUEUE_MARK_SUFFIX]),
      this.transport.call('PTTL', [key]),
    ]).then(
      ([queued, pttl]) => (Number(queued) === 1 ? plainWait() : leaseReply(Number(pttl))),
      (error: unknown) => {
        throw this.failed(error);
      },
    );
  }

  lease(key: string): Promise<number> {
    return this.runAs(PROBE_SCRIPT, [key], [], Number);
  }

  extend(keys: readonly string[], value: string, ttl: number): Promise<boolean> {
    return this.runAs(EXTEND_SCRIPT, keys, [value, ttl], isOne);
  }

  release(keys: readonly string[], value: string, announce = ''): Promise<number> {
    return this.runAs(RELEASE_SCRIPT, keys, [value, announce], Number);
  }

  fence(
    keys: readonly string[],
    fenceKeys: readonly string[],
    value: string,
    token: number,
    keepMs: number,
  ): Promise<boolean> {
    // The token as text: above 2^53 a number's own text could read differently in Lua.
    const args = [value, String(token), keepMs, keys.length];
    return this.runAs(FENCE_SCRIPT, [...keys, ...fenceKeys], args, isOne);
  }

  acquireQueued(
    key: string,
    queueKey: string,
    value: string,
    ttl: number,
    ticket: QueueTicket,
  ): Promise<AcquireReply> {
    return this.runAs(
      ACQUIRE_QUEUED_SCRIPT,
      [key, queueKey],
      [value, ttl, ...queuedArgs(ticket)],
      queuedReply,
    );
  }

  handOff(
    key: string,
    queueKey: string,
    value: string,
    request: HandOffRequest,
  ): Promise<HandOffReply> {
    const full = () =>
      this.runAs(HAND_OFF_SCRIPT, [key, queueKey], handOffArgs(value, request), handOffReply);
    // The hinted release of an uncontended lock tries the full script's first branch alone; 4:
    // it did not apply, the full script follows (UNCONTENDED_HAND_OFF_SCRIPT).
    if (request.uncontended !== true || namesNext(request)) return full();
    const args = [value, request.announce ?? ''];
    // Read in runAs's own `then`, not one chained after it: a promise less per node and release.
    const read = (reply: unknown): HandOffReply | Promise<HandOffReply> =>
      Number(reply) === 4 ? full() : handOffReply(reply);
    return this.runAs(UNCONTENDED_HAND_OFF_SCRIPT, [key], args, read) as Promise<HandOffReply>;
  }

  async leaveQueue(queueKey: string, group: string, pass?: LeaveRequest): Promise<void> {
    if (pass === undefined) await this.run(LEAVE_QUEUE_SCRIPT, [queueKey], group);
    else await this.run(LEAVE_QUEUE_SCRIPT, [queueKey, pass.key], group, ...leaveArgs(pass));
  }

  async recordHorizon(
    keys: StandingKeys,
    windowMs: number,
    runIds: readonly string[],
  ): Promise<void> {
    await this.run(HORIZON_SCRIPT, [keys.horizon, keys.born], Math.ceil(windowMs), ...runIds);
  }

  async readStanding(keys: StandingKeys): Promise<NodeStanding> {
    return standingReply(await this.run(STANDING_SCRIPT, standingKeys(keys)));
  }

  async restoreFloor(
    keys: StandingKeys,
    runId: string,
    floor: number,
    keepMs: number,
  ): Promise<boolean> {
    const args = [runId, String(floor), keepMs];
    return Number(await this.run(RESTORE_FLOOR_SCRIPT, [keys.floor, keys.fenced], ...args)) === 1;
  }

  async ping(): Promise<void> {
    await this.transport.call('PING', []).catch((error: unknown) => {
      // In the library's words, also for a timeout (a health check reads the sentence).
      throw DescribedNodeError.of(this.transport.describe(error));
    });
  }

  /** Runs the permission probe (permissions.ts) on this connection. */
  checkAccess(probeKey: string): Promise<NodeAccess> {
    return probeAccess(
      (source, keys) => this.transport.call('EVAL', [source, keys.length, ...keys]),
      probeKey,
    );
  }

  async inspect(key: string): Promise<KeyState> {
    const [value, pttl] = await Promise.all([
      this.transport.call('GET', [key]),
      this.transport.call('PTTL', [key]),
    ]);
    return { value: value === null ? null : String(value), pttl: Number(pttl) };
  }

  whenReady(timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve) => {
      // Reassigned below: `connect` may settle before it returns.
      let stop = (): void => undefined;
      let finished = false;
      const done = () => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        stop();
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      timer.unref();
      // Ready and identified (our `ready` listener, registered first, has sent INFO), or a failed
      // connection, or the timeout: a node that hangs on INFO must not hold up the others.
      const settled = (ready: boolean) => {
        if (ready) void this.identity.settled().then(done);
        else done();
      };
      if (this.transport.isReady) return settled(true);
      stop = this.transport.connect(settled);
      if (finished) stop();
    });
  }

  onHealth(listener: (state: NodeHealth) => void): void {
    this.healthListeners.push(listener);
  }

  async close(): Promise<void> {
    // The subscriber is ours even on a caller's client: we opened it.
    this.channels?.close();
    if (!this.transport.owned) return;
    this.closing = true;
    await this.transport.close();
  }

  /** Runs a script by its SHA, falling back to its source when the server lacks it. */
  private run(script: LuaScript, keys: readonly string[], ...args: CommandArg[]): Promise<unknown> {
    return this.runAs(script, keys, args, passThrough);
  }

  /** {@link run}, reading the reply with `read`: one promise of ours per call, not three. */
  private runAs<T>(
    script: LuaScript,
    keys: readonly string[],
    args: readonly CommandArg[],
    read: (reply: unknown) => T,
  ): Promise<T> {
    const command: CommandArg[] = [script.sha, keys.length, ...keys, ...args];
    return this.transport.call('EVALSHA', command).then(read, (error: unknown) => {
      if (!isNoScript(error)) throw this.failed(error);
      // Safe to re-send (architecture.md §5.1): every attempt has its own owner value.
      const again = command.slice();
      again[0] = script.source;
      return this.transport.call('EVAL', again).then(read, (retryError: unknown) => {
        throw this.failed(retryError);
      });
    });
  }

  /**
   * What a failed lock command means: WRONGTYPE is a key conflict. A timeout is reported by the
   * lock manager's suspicion (suspicion.ts), for every adapter alike.
   */
  private failed(error: unknown): Error {
    if (isWrongType(error)) return new KeyTypeConflict((error as Error).message);
    return this.transport.describe(error);
  }

  private onReady(): void {
    this.identity.onReady();
    if (!this.down) return;
    this.down = false;
    if (this.transport.owned) this.logger?.log(`Redis node ${this.name} is reachable again`);
    this.report('up');
  }

  /**
   * Logs a node going down once per transition rather than once per reconnection attempt. Keyed
   * to the connection closing, not to errors: a command timeout on a live connection is a slow
   * node, not a lost one (the lock algorithm already counts it as a failed vote).
   */
  private onLost(): void {
    this.identity.forget();
    if (this.down || this.closing) return;
    this.down = true;
    if (this.transport.owned && this.logger !== undefined) {
      // In the library's words first (a TLS mismatch shows as a connect timeout otherwise).
      const cause = this.transport.lastConnectError;
      const why = cause === undefined ? '' : `: ${this.transport.describe(cause).message}`;
      this.logger.warn(`Redis node ${this.name} is unreachable${why}`);
    }
    this.report('down');
  }

  private report(state: NodeHealth): void {
    for (const listener of this.healthListeners) listener(state);
  }
}
