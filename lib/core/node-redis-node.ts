import {
  ACQUIRE_FENCED_SCRIPT,
  ACQUIRE_SCRIPT,
  RESTORE_FLOOR_SCRIPT,
  HORIZON_SCRIPT,
  STANDING_SCRIPT,
  EXTEND_SCRIPT,
  FENCE_SCRIPT,
  RELEASE_SCRIPT,
  ACQUIRE_QUEUED_SCRIPT,
  HAND_OFF_SCRIPT,
  LEAVE_QUEUE_SCRIPT,
  type LuaScript,
} from './scripts';
import { loadMissingScripts } from './script-loading';
import { monotonicClock, type Clock } from './clock';
import {
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
import { DescribedNodeError } from './node-errors';
import { probeAccess, type NodeAccess } from './permissions';

/**
 * What this adapter needs of a node-redis (`redis` v5) client: its raw command interface and
 * connection state. Structural, so this package does not depend on `redis`.
 */
export interface NodeRedisClient {
  sendCommand(args: string[]): Promise<unknown>;
  readonly isOpen: boolean;
  readonly isReady: boolean;
  connect(): Promise<unknown>;
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  off?(event: string, listener: (...args: unknown[]) => void): unknown;
  readonly options?: { url?: string; socket?: { host?: string; port?: number; path?: string } };
}

/**
 * Whether `value` is a node-redis client (a `createClient()` result), by shape. A node-redis
 * cluster (`createCluster()`, which has `masters`) is not one; the node checks refuse it.
 */
export function isNodeRedisClient(value: unknown): value is NodeRedisClient {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Record<string, unknown>;
  return (
    typeof candidate.sendCommand === 'function' &&
    typeof candidate.connect === 'function' &&
    typeof candidate.on === 'function' &&
    typeof candidate.isOpen === 'boolean' &&
    typeof candidate.isReady === 'boolean' &&
    typeof candidate.duplicate === 'function' &&
    !('masters' in candidate) // a node-redis cluster
  );
}

/** `host:port` (or the socket path) of a node-redis client, from its options. */
export function nodeRedisName(client: NodeRedisClient): string {
  const options = client.options ?? {};
  if (options.socket?.path !== undefined) return options.socket.path;
  if (options.url !== undefined) {
    try {
      const url = new URL(options.url);
      return `${url.hostname || '127.0.0.1'}:${url.port || '6379'}`;
    } catch {
      // fall through to the socket options
    }
  }
  return `${options.socket?.host ?? 'localhost'}:${options.socket?.port ?? 6379}`;
}

/**
 * The {@link RedisNode} port over a node-redis (`redis` v5) client you created — the client
 * Redis itself maintains. The same scripts as the ioredis adapter; each command is bounded by the
 * lock manager's `nodeTimeout`. The client is yours: connect it (or let `whenReady` do it), and
 * close it after the lock manager. Create it fail-fast: `createClient({ url,
 * disableOfflineQueue: true })`, or commands queue while the node is down (the lock manager still
 * bounds every attempt by `nodeTimeout`).
 *
 * Like the ioredis adapter it reads `INFO server` (and whether the server fsyncs every write) on
 * every (re)connection, so the quarantine of restarted nodes and the detection of one server
 * listed twice work the same; and it reports `down`/`up` transitions. Not implemented for this
 * client (an optional part of the port): release notifications, so waiters poll every
 * `retryDelay`.
 *
 * @example
 * const clients = urls.map((url) => createClient({ url, disableOfflineQueue: true }));
 * await Promise.all(clients.map((c) => c.connect()));
 * RedlockModule.forRoot({ nodes: clients })   // or nodes: clients.map((c) => new NodeRedisNode(c))
 */
export class NodeRedisNode implements RedisNode {
  readonly name: string;
  private info: ServerInfo | undefined;
  private infoError?: 'failed' | 'refused';
  /** The INFO read of the latest ready, settled (never rejects). */
  private identifying: Promise<void> | undefined;
  private readonly healthListeners: ((state: NodeHealth) => void)[] = [];
  private down = false;

  constructor(
    private readonly client: NodeRedisClient,
    /** The time line the readings of INFO are dated on: the clock of the `Redlock` served. */
    private readonly clock: Clock = monotonicClock,
  ) {
    this.name = nodeRedisName(client);
    // Scripts are loaded and the server identified whenever the connection becomes ready, so
    // EVALSHA normally succeeds (DESIGN §5.1) and a restarted server is seen as one; an error
    // listener keeps a refused connection from crashing the process.
    client.on('ready', () => this.onReady());
    client.on('error', () => undefined);
    // What the server said about itself is stale once the connection drops: it may come back
    // as a restarted server, so it reads as just started until the next INFO answers.
    client.on('reconnecting', () => this.onLost());
    client.on('end', () => this.onLost());
    if (client.isReady) this.onReady();
  }

  /**
   * Known down: the connection was lost (or refused) and is not back. A client that was never
   * connected yet is not down: the first command's whenReady connects it.
   */
  get isDown(): boolean {
    return this.down;
  }

  get serverInfo(): ServerInfo | undefined {
    return this.info;
  }

  onHealth(listener: (state: NodeHealth) => void): void {
    this.healthListeners.push(listener);
  }

  async acquire(
    keys: readonly string[],
    value: string,
    ttl: number,
    fenceKeys?: readonly string[],
    wait?: PlainWait,
  ): Promise<AcquireReply> {
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
      token,
      keepMs,
      keys.length,
    );
    return Number(reply) === 1;
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

  /** Reads INFO again (after a failed read). */
  identify(): Promise<void> {
    if (!this.client.isReady) return Promise.resolve();
    this.readInfo();
    return this.identifying ?? Promise.resolve();
  }

  async extend(keys: readonly string[], value: string, ttl: number): Promise<boolean> {
    return Number(await this.run(EXTEND_SCRIPT, keys, value, ttl)) === 1;
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
    return Number(await this.run(RELEASE_SCRIPT, keys, value, announce));
  }

  whenReady(timeoutMs: number): Promise<void> {
    const client = this.client;
    // Ready and identified (our 'ready' listener, registered first, has sent INFO), or the
    // timeout: a node that hangs on INFO must not hold up the others.
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        client.off?.('ready', ready);
        client.off?.('error', done);
        resolve();
      };
      const ready = () => void (this.identifying ?? Promise.resolve()).then(done);
      const timer = setTimeout(done, timeoutMs);
      timer.unref();
      if (client.isReady) return ready();
      client.on('ready', ready);
      client.on('error', done);
      if (!client.isOpen) client.connect().catch(() => undefined);
    });
  }

  async ping(): Promise<void> {
    await this.client.sendCommand(['PING']).catch((error: unknown) => {
      throw translate(error);
    });
  }

  /** Runs the permission probe (permissions.ts) on this connection. */
  checkAccess(probeKey: string): Promise<NodeAccess> {
    return probeAccess(
      (source, keys) => this.client.sendCommand(['EVAL', source, String(keys.length), ...keys]),
      probeKey,
    );
  }

  get aclUser(): string {
    const options = this.client.options as { url?: string; username?: string } | undefined;
    if (options?.username !== undefined) return options.username;
    try {
      const user = options?.url === undefined ? '' : new URL(options.url).username;
      return user === '' ? 'default' : decodeURIComponent(user);
    } catch {
      return 'default';
    }
  }

  async inspect(key: string): Promise<KeyState> {
    const [value, pttl] = await Promise.all([
      this.client.sendCommand(['GET', key]) as Promise<string | null>,
      this.client.sendCommand(['PTTL', key]) as Promise<number>,
    ]);
    return { value, pttl: Number(pttl) };
  }

  /** The client is the caller's: never closed here. */
  async close(): Promise<void> {}

  /**
   * On every (re)connection: load the scripts the server lacks (see loadMissingScripts; every
   * EVALSHA sent once `identifying` settled finds them), and learn who the server is. Failures are not fatal:
   * a script that could not be loaded falls back to EVAL, and a server that does not allow INFO
   * simply has no identity (as with the ioredis adapter).
   */
  private onReady(): void {
    this.forgetServer();
    const client = this.client;
    const scripts = loadMissingScripts(
      (shas) => client.sendCommand(['SCRIPT', 'EXISTS', ...shas]),
      (source) => client.sendCommand(['SCRIPT', 'LOAD', source]),
    );
    this.readInfo();
    // Ready for the lock manager once both answered (whenReady waits for `identifying`).
    this.identifying = Promise.all([this.identifying, scripts]).then(() => undefined);
    if (this.down) {
      this.down = false;
      this.report('up');
    }
  }

  private onLost(): void {
    this.forgetServer();
    if (!this.down) {
      this.down = true;
      this.report('down');
    }
  }

  /** No identity until the next INFO answers: it may be a restarted server. */
  private forgetServer(): void {
    this.info = undefined;
    this.infoError = undefined;
  }

  /** Learns who the server is; a failure other than an ACL refusal is retryable (`failed`). */
  private readInfo(): void {
    this.infoError = undefined;
    this.identifying = Promise.all([
      this.client.sendCommand(['INFO', 'server']),
      this.readConfig(),
    ]).then(
      ([text, config]) => {
        // Dated when the reply arrived (a lower bound; the send would add the round trip).
        this.info = parseServerInfo(String(text), config, this.clock.now());
        if (this.info === undefined) this.infoError = 'refused';
      },
      (error: unknown) => {
        this.info = undefined;
        this.infoError = isNoPermission(error) ? 'refused' : 'failed';
      },
    );
  }

  /** Persistence and eviction settings; unknown parts where CONFIG is not allowed. */
  private readConfig(): Promise<ServerConfig> {
    return readServerConfig((pattern) =>
      Promise.resolve(this.client.sendCommand(['CONFIG', 'GET', pattern])),
    );
  }

  private report(state: NodeHealth): void {
    for (const listener of this.healthListeners) listener(state);
  }

  private async run(script: LuaScript, keys: readonly string[], ...args: (string | number)[]) {
    const tail = [String(keys.length), ...keys, ...args.map(String)];
    try {
      return await this.client.sendCommand(['EVALSHA', script.sha, ...tail]);
    } catch (error) {
      // Safe to re-send (DESIGN §5.1): every attempt has its own owner value.
      if (isNoScript(error)) {
        return this.client
          .sendCommand(['EVAL', script.source, ...tail])
          .catch((e: unknown) => Promise.reject(translate(e)));
      }
      throw translate(error);
    }
  }
}

/** What a failed command means: WRONGTYPE is a key conflict; anything else, in our words. */
function translate(error: unknown): unknown {
  return isWrongType(error)
    ? new KeyTypeConflict((error as Error).message)
    : DescribedNodeError.of(error);
}
