import { monotonicClock, type Clock } from '../clock';
import { DescribedNodeError } from './node-errors';
import { ScriptedNode } from '../protocol/scripted-node';
import { settleOn } from './settle-on';
import type { CommandArg, ConnectionEvent, RedisTransport } from './transport';

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
 * The node-redis transport ({@link RedisTransport}) over a client you created: raw commands, the
 * connection's life (`ready`, `reconnecting`, `end`). The client is the caller's, never closed
 * here. No subscriber connection (an optional part of the port): waiters poll.
 */
export class NodeRedisTransport implements RedisTransport {
  readonly name: string;
  readonly owned = false;
  /** What a command gets while node-redis would refuse it ({@link refused}), built once each. */
  private closedRefusal?: Error;
  private offlineRefusal?: Error;

  constructor(private readonly client: NodeRedisClient) {
    this.name = nodeRedisName(client);
    // Keeps a refused connection from crashing the process.
    client.on('error', () => undefined);
  }

  get isReady(): boolean {
    return this.client.isReady;
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

  call(command: string, args: readonly CommandArg[]): Promise<unknown> {
    if (!this.client.isReady) {
      const refused = this.refused();
      if (refused !== undefined) return Promise.reject(refused);
    }
    return this.client.sendCommand([command, ...args.map(String)]);
  }

  /**
   * The error of a command node-redis would refuse (5.x `sendCommand`'s own rule): every command
   * on a closed client ("The client is closed"), and one on a client that is not ready and has
   * no offline queue (`disableOfflineQueue`, the README's setting: "The client is offline").
   * node-redis builds an Error and its stack for each, and describe() another: with a node down,
   * two of each per lock cycle, the cost the ioredis adapter's refusal removed (40 µs a cycle,
   * bench S3). Here each is described once, by describe() as node-redis' refusal would be, and
   * reused. A client with an offline queue is left to queue.
   */
  private refused(): Error | undefined {
    if (!this.client.isOpen) {
      return (this.closedRefusal ??= this.describe(new Error('The client is closed')));
    }
    const options = this.client.options as { disableOfflineQueue?: boolean } | undefined;
    if (options?.disableOfflineQueue !== true) return undefined;
    return (this.offlineRefusal ??= this.describe(new Error('The client is offline')));
  }

  /** node-redis has no command timeout of its own: every failure is described. */
  describe(error: unknown): Error {
    return DescribedNodeError.of(error);
  }

  watch(listener: (event: ConnectionEvent) => void): void {
    this.client.on('ready', () => listener('ready'));
    this.client.on('reconnecting', () => listener('lost'));
    this.client.on('end', () => listener('lost'));
    if (this.client.isReady) listener('ready');
  }

  connect(settled: (ready: boolean) => void): () => void {
    const stop = settleOn(this.client, ['ready'], ['error'], settled);
    if (!this.client.isOpen) this.client.connect().catch(() => undefined);
    return stop;
  }

  /** The client is the caller's: never closed here. */
  async close(): Promise<void> {}
}

/**
 * The {@link RedisNode} port over a node-redis (`redis` v5) client you created — the client
 * Redis itself maintains: the shared protocol ({@link ScriptedNode}) over a
 * {@link NodeRedisTransport}. Each command is bounded by the lock manager's `nodeTimeout`. The
 * client is yours: connect it (or let `whenReady` do it), and close it after the lock manager.
 * Create it fail-fast: `createClient({ url, disableOfflineQueue: true })`, or commands queue
 * while the node is down (the lock manager still bounds every attempt by `nodeTimeout`).
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
export class NodeRedisNode extends ScriptedNode {
  constructor(
    client: NodeRedisClient,
    /** The time line the readings of INFO are dated on: the clock of the `Redlock` served. */
    clock: Clock = monotonicClock,
  ) {
    super(new NodeRedisTransport(client), { clock });
  }
}
