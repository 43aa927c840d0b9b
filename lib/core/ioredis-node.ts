import type { Writable } from 'node:stream';
import Redis, { type RedisOptions } from 'ioredis';
import { isIoredisClient } from './ioredis-client';
import {
  NodeTimeoutError,
  KeyTypeConflict,
  type AcquireReply,
  type KeyState,
  type NodeHealth,
  type NodeStanding,
  type RedisNode,
  type ServerInfo,
  type StandingKeys,
  type QueueTicket,
  type HandOffRequest,
  type LeaveRequest,
  type PlainWait,
  type HandOffReply,
} from './node';
import {
  ACQUIRE_FENCED_SCRIPT,
  RESTORE_FLOOR_SCRIPT,
  HORIZON_SCRIPT,
  STANDING_SCRIPT,
  ACQUIRE_SCRIPT,
  PLAIN_WAIT_SCRIPT,
  EXTEND_SCRIPT,
  FENCE_SCRIPT,
  RELEASE_SCRIPT,
  ACQUIRE_QUEUED_SCRIPT,
  HAND_OFF_SCRIPT,
  LEAVE_QUEUE_SCRIPT,
  type LuaScript,
} from './scripts';
import { loadMissingScripts } from './script-loading';
import {
  ACQUIRED,
  acquireReply,
  fencedAcquireReply,
  isNoPermission,
  isNoScript,
  isWrongType,
  standingKeys,
  standingReply,
  queuedArgs,
  handOffArgs,
  leaveArgs,
  plainWaitArgs,
  handOffReply,
} from './script-replies';
import { parseServerInfo, readServerConfig, type ServerConfig } from './server-info';
import { monotonicClock, type Clock } from './clock';
import type { RedlockLogger } from './logger';
import { DescribedNodeError } from './node-errors';
import { probeAccess, type NodeAccess } from './permissions';

/** How a node may be given: a `redis://` / `rediss://` URL, ioredis options, or your own client. */
export type RedisNodeSpec = string | RedisOptions | Redis;

const CORK = process.env.REDLOCK_NO_CORK === undefined;

/** At most one "did not answer" warning per node in this interval. */
const HUNG_WARNING_INTERVAL_MS = 10_000;

/**
 * Options forced on clients this library creates. A lock node must fail fast: a command that
 * waits in an offline queue, is retried across reconnects or is re-sent after one lands at a
 * time nobody is waiting for it any more — a late SET of an abandoned attempt only blocks
 * others until its lease expires, but a queue that grows without bound while a node is down
 * is memory and latency we never get back.
 */
function failFastOptions(nodeTimeout: number): RedisOptions {
  return {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    // The algorithm bounds each attempt by nodeTimeout already; this lets the client drop the
    // command too, so commands to a hung node do not pile up.
    commandTimeout: nodeTimeout,
    // How long disconnect() waits for a socket to end before destroying it. ioredis arms this
    // timer even for a node that is already gone (its socket closed long ago), so at the
    // default of 2 s every shutdown with a dead node would take 2 s.
    disconnectTimeout: nodeTimeout,
  };
}

/**
 * The ioredis adapter of the {@link RedisNode} port (whose contract, in node.ts, says which
 * orderings the algorithm relies on). The scripts the server lacks are loaded every time the
 * connection becomes ready (loadMissingScripts) — before any command that could need them —
 * so EVALSHA succeeds on the hot path: a restarted node's empty cache (or Redis ≥ 7.4 evicting
 * EVAL-loaded scripts) never sends a command through a fallback. The EVAL fallback on NOSCRIPT
 * that remains covers a `SCRIPT FLUSH` at runtime; it re-sends after later commands, which is
 * safe because every attempt has its own owner value.
 */
export class IoredisNode implements RedisNode {
  readonly name: string;
  private closing = false;
  private lastHungWarning = -Infinity;
  private info?: ServerInfo;
  /** Why `info` is unknown after the latest read (none while it is known or being read). */
  private infoError?: 'failed' | 'refused';
  private infoRefusalSaid = false;
  private subscriber?: Redis;
  /** Counts the subscriber connection's drops: a SUBSCRIBE reply counts only for its own. */
  private subscriberGeneration = 0;
  /** Release channels subscribed to (by their name on the server), with their listeners. */
  private readonly channels = new Map<string, Subscription>();
  /** Channels to subscribe to / unsubscribe from at the next flush (batched). */
  private readonly toSubscribe = new Set<string>();
  private readonly toUnsubscribe = new Set<string>();
  private flushing = false;
  /** Whether the server takes `SET … NX GET` (Redis ≥ 7.0); learnt on the first refusal. */
  private setNxGet = true;
  private corked = false;
  private readonly healthListeners: ((state: NodeHealth) => void)[] = [];
  /** The INFO read of the latest ready, settled (never rejects). */
  private identifying?: Promise<void>;
  /** The latest connection error of a client we own, until it is ready again: why it is down. */
  private connectError?: unknown;

  constructor(
    /** The ioredis client. */
    readonly client: Redis,
    /** Whether this node created the client (and so closes it). */
    private readonly owned: boolean,
    /** Bound on the graceful part of `close()`. */
    private readonly nodeTimeout: number,
    private readonly logger: RedlockLogger,
    /** The time line the readings of INFO are dated on: the clock of the `Redlock` served. */
    private readonly clock: Clock = monotonicClock,
  ) {
    this.name = nodeName(client);
    client.on('ready', () => this.onReady());
    // Whatever the server said about itself is stale once the connection drops: it may come
    // back as a restarted server (an RDB restore even brings back its old stamp). Until the next
    // INFO answers, it has no identity, so it votes on nothing it said before the drop.
    client.on('close', () => this.forgetServer());
    this.watchHealth();
    if (client.status === 'ready') this.onReady();
  }

  get isDown(): boolean {
    const status = this.client.status;
    return status === 'reconnecting' || status === 'close' || status === 'end';
  }

  get serverInfo(): ServerInfo | undefined {
    return this.info;
  }

  /**
   * Creates a node from a URL, options or a client. Clients created here get fail-fast
   * settings and a quiet error listener; a caller's client is used as it is, and any setting
   * on it that can make commands wait is named in a warning.
   */
  static from(
    spec: RedisNodeSpec,
    nodeTimeout: number,
    logger: RedlockLogger,
    clock: Clock = monotonicClock,
  ): IoredisNode {
    if (isIoredisClient(spec)) {
      const changes = riskySettings(spec.options, nodeTimeout);
      if (changes.length > 0) {
        // One line per node, saying what to change: the details are in the README.
        logger.warn(
          `Redis node ${nodeName(spec)}: your client can make commands wait while the node is down or hung; ` +
            `create it with { ${changes.join(', ')} } (lock attempts stay bounded by nodeTimeout)`,
        );
      }
      return new IoredisNode(spec, false, nodeTimeout, logger, clock);
    }
    const forced = failFastOptions(nodeTimeout);
    const client =
      typeof spec === 'string'
        ? new Redis(spec, forced)
        : new Redis({ ...spec, ...forced, commandTimeout: spec.commandTimeout ?? nodeTimeout });
    return new IoredisNode(client, true, nodeTimeout, logger, clock);
  }

  async acquire(
    keys: readonly string[],
    value: string,
    ttl: number,
    fenceKeys?: readonly string[],
    wait?: PlainWait,
  ): Promise<AcquireReply> {
    if (fenceKeys === undefined && keys.length === 1 && this.setNxGet) {
      const reply = await this.setIfAbsent(keys[0], value, ttl, wait);
      if (reply !== undefined) return reply;
    }
    const waiting = plainWaitArgs(wait);
    if (fenceKeys === undefined)
      return acquireReply(await this.run(ACQUIRE_SCRIPT, keys, value, ttl, ...waiting));
    return fencedAcquireReply(
      await this.run(
        ACQUIRE_FENCED_SCRIPT,
        [...keys, ...fenceKeys],
        value,
        ttl,
        keys.length,
        ...waiting,
      ),
    );
  }

  /**
   * One resource needs no script now that every attempt has its own owner value: `SET NX PX
   * GET` (Redis ≥ 7.0) sets it if absent and returns the old value otherwise — one command
   * instead of a script running GET and SET, and a non-string value still fails with
   * WRONGTYPE. The blocking lease is read only when the key was taken (the failure path).
   * `undefined` on a server without `NX` + `GET` (Redis < 7): the script is used from then on.
   */
  private async setIfAbsent(
    key: string,
    value: string,
    ttl: number,
    wait?: PlainWait,
  ): Promise<AcquireReply | undefined> {
    let previous: unknown;
    this.batch();
    try {
      previous = await this.client.call('SET', key, value, 'PX', ttl, 'NX', 'GET');
    } catch (error) {
      if (error instanceof Error && /syntax error/i.test(error.message)) {
        this.setNxGet = false;
        return undefined;
      }
      throw this.translate(error);
    }
    if (previous === null) return ACQUIRED;
    // A waiter outside the queues: takes a key reserved for it, or marks the key as waited for
    // (issue 24 item 1), in place of the PTTL.
    if (wait !== undefined) {
      return acquireReply(
        await this.run(PLAIN_WAIT_SCRIPT, [key], value, ttl, ...plainWaitArgs(wait)),
      );
    }
    const pttl = await this.client.pttl(key).catch((error: unknown) => {
      throw this.translate(error);
    });
    // -2: it expired in between; free now, the next attempt will tell.
    return { acquired: false, pttl: pttl === -2 ? 0 : pttl };
  }

  async lease(key: string): Promise<number> {
    this.batch();
    try {
      return await this.client.pttl(key);
    } catch (error) {
      throw this.translate(error);
    }
  }

  async ping(): Promise<void> {
    await this.client.ping().catch((error: unknown) => {
      throw this.described(error);
    });
  }

  /** Runs the permission probe (permissions.ts) on this connection. */
  checkAccess(probeKey: string): Promise<NodeAccess> {
    return probeAccess((source, keys) => this.client.eval(source, keys.length, ...keys), probeKey);
  }

  get aclUser(): string {
    return this.client.options.username ?? 'default';
  }

  async inspect(key: string): Promise<KeyState> {
    const [value, pttl] = await Promise.all([this.client.get(key), this.client.pttl(key)]);
    return { value, pttl };
  }

  async fence(
    keys: readonly string[],
    fenceKeys: readonly string[],
    value: string,
    token: number,
    keepMs: number,
  ): Promise<boolean> {
    const reply = await this.run(
      FENCE_SCRIPT,
      [...keys, ...fenceKeys],
      value,
      String(token),
      keepMs,
      keys.length,
    );
    return reply === 1;
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
    const reply = await this.run(
      RESTORE_FLOOR_SCRIPT,
      [keys.floor, keys.fenced],
      runId,
      String(floor),
      keepMs,
    );
    return Number(reply) === 1;
  }

  get identityError(): 'failed' | 'refused' | undefined {
    return this.infoError;
  }

  /** Reads INFO again (after a failed read); the membership retries it while the node is out. */
  identify(): Promise<void> {
    if (this.client.status !== 'ready') return Promise.resolve();
    this.readInfo();
    return this.identifying ?? Promise.resolve();
  }

  async extend(keys: readonly string[], value: string, ttl: number): Promise<boolean> {
    return (await this.run(EXTEND_SCRIPT, keys, value, ttl)) === 1;
  }

  async acquireQueued(
    key: string,
    queueKey: string,
    value: string,
    ttl: number,
    ticket: QueueTicket,
  ): Promise<AcquireReply> {
    return acquireReply(
      await this.run(ACQUIRE_QUEUED_SCRIPT, [key, queueKey], value, ttl, ...queuedArgs(ticket)),
    );
  }

  async handOff(
    key: string,
    queueKey: string,
    value: string,
    request: HandOffRequest,
  ): Promise<HandOffReply> {
    return handOffReply(
      await this.run(HAND_OFF_SCRIPT, [key, queueKey], value, ...handOffArgs(request)),
    );
  }

  async leaveQueue(queueKey: string, group: string, pass?: LeaveRequest): Promise<void> {
    if (pass === undefined) await this.run(LEAVE_QUEUE_SCRIPT, [queueKey], group);
    else await this.run(LEAVE_QUEUE_SCRIPT, [queueKey, pass.key], group, ...leaveArgs(pass));
  }

  async release(keys: readonly string[], value: string, announce = ''): Promise<number> {
    return (await this.run(RELEASE_SCRIPT, keys, value, announce)) as number;
  }

  subscribe(
    channel: string,
    onMessage: (id: string) => void,
    onGap?: () => void,
    onConfirmed?: () => void,
  ): () => void {
    const subscriber = (this.subscriber ??= this.openSubscriber());
    // The release script publishes on its KEYS, which ioredis prefixes with the client's
    // `keyPrefix`; channel names it leaves as they are. Listening on the bare name would be a
    // confirmed subscription to a channel nobody publishes on (DESIGN §5.8).
    const wire = this.keyPrefix + channel;
    let subscription = this.channels.get(wire);
    if (subscription === undefined) {
      subscription = {
        listeners: new Set(),
        gaps: new Set(),
        confirms: new Set(),
        confirmed: false,
      };
      this.channels.set(wire, subscription);
      this.toUnsubscribe.delete(wire);
      this.toSubscribe.add(wire);
      this.scheduleFlush();
    }
    const current = subscription;
    current.listeners.add(onMessage);
    if (onGap) current.gaps.add(onGap);
    if (onConfirmed) current.confirms.add(onConfirmed);
    return () => {
      current.listeners.delete(onMessage);
      if (onGap) current.gaps.delete(onGap);
      if (onConfirmed) current.confirms.delete(onConfirmed);
      if (current.listeners.size > 0 || this.channels.get(wire) !== current) return;
      this.channels.delete(wire);
      if (this.subscriber !== subscriber) return;
      this.toSubscribe.delete(wire);
      this.toUnsubscribe.add(wire);
      this.scheduleFlush();
    };
  }

  listening(channel: string): boolean {
    return this.channels.get(this.keyPrefix + channel)?.confirmed === true;
  }

  /** The prefix ioredis adds to every key of this client's commands (`keyPrefix`), if any. */
  private get keyPrefix(): string {
    const prefix = this.client.options.keyPrefix;
    return typeof prefix === 'string' ? prefix : '';
  }

  /**
   * Sends the SUBSCRIBEs and UNSUBSCRIBEs asked for since the last flush, many channels per
   * command (issue 19: thousands of waiters starting at once cost a few commands, not one each),
   * on the next turn of the event loop.
   */
  private scheduleFlush(): void {
    if (this.flushing) return;
    this.flushing = true;
    setImmediate(() => {
      this.flushing = false;
      const subscriber = this.subscriber;
      if (subscriber === undefined) return;
      const subscribe = [...this.toSubscribe];
      const unsubscribe = [...this.toUnsubscribe];
      this.toSubscribe.clear();
      this.toUnsubscribe.clear();
      for (let i = 0; i < subscribe.length; i += CHANNELS_PER_COMMAND) {
        this.confirm(subscriber, subscribe.slice(i, i + CHANNELS_PER_COMMAND));
      }
      for (let i = 0; i < unsubscribe.length; i += CHANNELS_PER_COMMAND) {
        subscriber
          .unsubscribe(...unsubscribe.slice(i, i + CHANNELS_PER_COMMAND))
          .catch(() => undefined);
      }
    });
  }

  /**
   * Sends one SUBSCRIBE for `channels` and marks each confirmed when the server's reply arrives —
   * unless the connection dropped meanwhile (its generation changed) or the channel was dropped
   * and subscribed again since (another subscription): a reply from a connection that is gone, or
   * for an earlier subscription, vouches for nothing.
   */
  private confirm(subscriber: Redis, channels: readonly string[]): void {
    const generation = this.subscriberGeneration;
    const sent = channels.map((channel) => this.channels.get(channel));
    subscriber.subscribe(...channels).then(
      () => {
        if (generation !== this.subscriberGeneration) return;
        channels.forEach((channel, i) => {
          const subscription = sent[i];
          if (subscription !== undefined && this.channels.get(channel) === subscription) {
            subscription.confirmed = true;
            for (const confirmed of [...subscription.confirms]) confirmed();
          }
        });
      },
      () => undefined,
    );
  }

  /**
   * One subscriber connection per node, shared by every waiter of this lock manager, opened on
   * the first wait. Unlike the lock connection it may queue while reconnecting (a SUBSCRIBE that
   * waits does no harm). When it drops, every channel is unconfirmed and its waiters are told
   * (they poll until the subscription is confirmed again, on the next ready).
   */
  private openSubscriber(): Redis {
    const subscriber = this.client.duplicate({
      enableOfflineQueue: true,
      maxRetriesPerRequest: null,
      // Re-subscribed by us on 'ready', so that each channel is confirmed by its own reply.
      autoResubscribe: false,
      // No command timeout (the lock connection's is nodeTimeout): a SUBSCRIBE of hundreds of
      // channels answered late, under this process's own load, still subscribed them, but its
      // promise rejected and they were never confirmed — thousands of waiters then polled at
      // the shared rate for as long as they waited (issue 19). A hung node's SUBSCRIBE waits.
      commandTimeout: undefined,
      lazyConnect: false,
      // ioredis' ready check is an INFO (a loading server is waited for): pointless for a
      // subscriber, and a user refused INFO got "Skipping the ready check…" printed by ioredis
      // for every connection (issue 25).
      enableReadyCheck: false,
    });
    subscriber.on('error', () => undefined);
    subscriber.on('message', (channel: string, id: string) => {
      const subscription = this.channels.get(channel);
      if (subscription) for (const listener of [...subscription.listeners]) listener(id);
    });
    subscriber.on('close', () => {
      this.subscriberGeneration++;
      for (const subscription of this.channels.values()) {
        if (!subscription.confirmed) continue;
        subscription.confirmed = false;
        for (const gap of [...subscription.gaps]) gap();
      }
    });
    // Also on the first ready: a SUBSCRIBE queued before a failed first connection got its
    // reply on a later one, which does not confirm it.
    subscriber.on('ready', () => {
      for (const channel of this.channels.keys()) this.toSubscribe.add(channel);
      this.scheduleFlush();
    });
    return subscriber;
  }

  whenReady(timeoutMs: number): Promise<void> {
    const client = this.client;
    if (client.status === 'end') return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        client.off('ready', identified);
        client.off('error', done);
        client.off('end', done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      timer.unref();
      // 'ready' handlers run in order: ours (registered in the constructor) has sent INFO.
      const identified = () => void (this.identifying ?? Promise.resolve()).then(done);
      if (client.status === 'ready') return identified();
      client.once('ready', identified);
      client.once('error', done);
      client.once('end', done);
      // A lazyConnect client waits for its first command; with an offline queue disabled that
      // command would fail instead, so connect it now.
      if (client.status === 'wait') client.connect().catch(() => undefined);
    });
  }

  async close(): Promise<void> {
    // The subscriber is ours even on a caller's client: we opened it.
    this.subscriber?.disconnect();
    this.subscriber = undefined;
    this.channels.clear();
    this.toSubscribe.clear();
    this.toUnsubscribe.clear();
    if (!this.owned || this.client.status === 'end') return;
    this.closing = true;
    if (this.client.status === 'ready') {
      // QUIT lets in-flight releases finish; a node that does not answer is cut off.
      const quit = this.client.quit().catch(() => undefined);
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<void>(
        (resolve) => (timer = setTimeout(resolve, this.nodeTimeout)),
      );
      await Promise.race([quit, timeout]);
      clearTimeout(timer);
    }
    this.client.disconnect();
  }

  /**
   * Adaptive pipelining: the first command of a tick corks the socket and the end of the tick
   * uncorks it, so that every command issued in the same tick (many acquisitions resumed by one
   * batch of replies) leaves in one write, while a lone command leaves at the end of the same
   * tick — no added event-loop turn, unlike a pipeline flushed on a timer. Off when
   * `REDLOCK_NO_CORK` is set (for the benchmark's comparison).
   */
  private batch(): void {
    if (this.corked || !CORK) return;
    const stream = (this.client as unknown as { stream?: Writable }).stream;
    if (stream === undefined || this.client.status !== 'ready') return;
    this.corked = true;
    stream.cork();
    process.nextTick(() => {
      this.corked = false;
      stream.uncork();
    });
  }

  private run(script: LuaScript, keys: readonly string[], ...args: (string | number)[]) {
    this.batch();
    return this.client
      .evalsha(script.sha, keys.length, ...keys, ...args)
      .catch((error: unknown) => {
        if (isNoScript(error))
          return this.client.eval(script.source, keys.length, ...keys, ...args);
        throw error;
      })
      .catch((error: unknown) => {
        throw this.translate(error);
      });
  }

  /** What a failed command means to the algorithm: a hung node is warned about; WRONGTYPE is a key conflict. */
  private translate(error: unknown): unknown {
    if (isTimeout(error)) {
      this.warnHung();
      return new NodeTimeoutError((error as Error).message);
    }
    if (isWrongType(error)) return new KeyTypeConflict((error as Error).message);
    return this.described(error);
  }

  /** `error` in the library's words, with why the connection is down when it is (node-errors.ts). */
  private described(error: unknown): DescribedNodeError {
    return DescribedNodeError.of(
      error,
      { tls: Boolean(this.client.options.tls) },
      this.connectError,
    );
  }

  /** Reads as just started, as of now, until the next INFO answers. */
  private forgetServer(): void {
    this.info = undefined;
    this.infoError = undefined;
  }

  /**
   * On every (re)connection: load the scripts the server lacks (see loadMissingScripts; every
   * EVALSHA sent once `identifying` settled finds them), and learn who the server is. Failures are
   * not fatal: a script that could not be loaded falls back to EVAL, and a server that does not
   * allow INFO (managed Redis, ACLs) simply has no identity.
   */
  private onReady(): void {
    // Unknown until this connection's INFO answers (see the constructor).
    this.forgetServer();
    const client = this.client;
    const scripts = loadMissingScripts(
      (shas) => client.script('EXISTS', ...shas) as Promise<unknown>,
      (source) => client.script('LOAD', source) as Promise<unknown>,
    );
    this.readInfo();
    // Ready for the lock manager once both answered (whenReady waits for `identifying`).
    this.identifying = Promise.all([this.identifying, scripts]).then(() => undefined);
  }

  /**
   * Learns who the server is. A refusal (ACLs: NOPERM) is said once; any other failure (a
   * timeout on a busy server) leaves the identity unknown and retryable: the lock manager does
   * not count the node until a read succeeds, since a node whose INFO could not be read may be
   * one that restarted without its data.
   */
  private readInfo(): void {
    this.infoError = undefined;
    this.identifying = Promise.all([this.client.info('server'), this.readConfig()]).then(
      ([text, config]) => {
        // Dated when the reply arrived: the server was at least this old when it answered, so
        // counting from here keeps the age a lower bound (counting from the send would add the
        // round trip to it).
        this.info = parseServerInfo(text, config, this.clock.now());
        if (this.info === undefined) this.infoError = 'refused';
      },
      (error: unknown) => {
        this.info = undefined;
        const refused = isNoPermission(error);
        this.infoError = refused ? 'refused' : 'failed';
        // Its ready check is that INFO too: ioredis would print its warning on every reconnect.
        if (refused && this.owned) this.client.options.enableReadyCheck = false;
        if (!refused || this.infoRefusalSaid) return;
        this.infoRefusalSaid = true;
        this.logger.warn(
          `Redis node ${this.name} does not allow INFO (${error instanceof Error ? error.message : String(error)}): ` +
            'it counts toward no quorum unless the lock manager is told to trust unidentified nodes',
        );
      },
    );
  }

  /** Persistence and eviction settings; unknown parts where CONFIG is not allowed. */
  private readConfig(): Promise<ServerConfig> {
    return readServerConfig((pattern) =>
      Promise.resolve(this.client.config('GET', pattern) as Promise<unknown>),
    );
  }

  /**
   * A hung node keeps its connection open, so no connection event reports it; its commands
   * time out instead (clients created here have `commandTimeout`). Said at most once per
   * interval, not once per command.
   */
  private warnHung(): void {
    const now = performance.now();
    if (now - this.lastHungWarning < HUNG_WARNING_INTERVAL_MS) return;
    this.lastHungWarning = now;
    this.report('slow');
    this.logger.warn(
      `Redis node ${this.name} did not answer a command in time (hung or overloaded)`,
    );
  }

  /**
   * Logs a node going down and coming back, once per transition rather than once per
   * reconnection attempt. Keyed to the connection closing, not to `error` events: ioredis
   * also emits those for a command timeout on a live connection, which is a slow node, not
   * a lost one (the lock algorithm already counts it as a failed vote).
   */
  private watchHealth(): void {
    const logger = this.logger;
    let down = false;
    // Only on a client we own: an error listener on a caller's client would change how their
    // app sees its errors.
    if (this.owned) {
      this.client.on('error', (error: Error) => {
        this.connectError = error;
      });
    }
    this.client.on('close', () => {
      if (down || this.closing) return;
      down = true;
      if (this.owned) {
        // In the library's words first (a TLS mismatch shows as a connect timeout otherwise).
        const why = this.connectError === undefined ? undefined : this.described(this.connectError);
        logger.warn(`Redis node ${this.name} is unreachable${why ? `: ${why.message}` : ''}`);
      }
      this.report('down');
    });
    this.client.on('ready', () => {
      this.connectError = undefined;
      if (!down) return;
      down = false;
      if (this.owned) logger.log(`Redis node ${this.name} is reachable again`);
      this.report('up');
    });
  }

  onHealth(listener: (state: NodeHealth) => void): void {
    this.healthListeners.push(listener);
  }

  private report(state: NodeHealth): void {
    for (const listener of this.healthListeners) listener(state);
  }
}

function isTimeout(error: unknown): boolean {
  return error instanceof Error && error.message === 'Command timed out';
}

/** `host:port` (or the socket path) of a client, for messages: never the URL, which may hold a password. */
export function nodeName(client: Redis): string {
  const { host, port, path } = client.options;
  return path ? path : `${host ?? '127.0.0.1'}:${port ?? 6379}`;
}

/** The settings of a caller's client to change, as `name: value` to set, for the warning. */
function riskySettings(options: RedisOptions, nodeTimeout: number): string[] {
  const changes: string[] = [];
  if (options.enableOfflineQueue !== false) changes.push('enableOfflineQueue: false');
  if (options.maxRetriesPerRequest !== 0) changes.push('maxRetriesPerRequest: 0');
  if (options.autoResendUnfulfilledCommands !== false) {
    changes.push('autoResendUnfulfilledCommands: false');
  }
  if (!options.commandTimeout) changes.push(`commandTimeout: ${nodeTimeout}`);
  return changes;
}

/** Channels per SUBSCRIBE / UNSUBSCRIBE command: a batch whose reply arrives in one piece. */
const CHANNELS_PER_COMMAND = 500;

/** One release channel of a node's subscriber connection. */
interface Subscription {
  /** Called on each announcement. */
  readonly listeners: Set<(id: string) => void>;
  /** Called when announcements may have been missed (the connection dropped). */
  readonly gaps: Set<() => void>;
  /** Called when the server confirms the subscription. */
  readonly confirms: Set<() => void>;
  /** The server confirmed the subscription on the current connection. */
  confirmed: boolean;
}
