import {
  ACQUIRE_FENCED_SCRIPT,
  ACQUIRE_SCRIPT,
  EXTEND_SCRIPT,
  FENCE_SCRIPT,
  LOCK_SCRIPTS,
  RELEASE_SCRIPT,
  type LuaScript,
} from './scripts';
import { KeyTypeConflict, type AcquireReply, type KeyState, type RedisNode } from './node';

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
 * Not implemented for this client (optional parts of the port): release notifications (waiters
 * poll), `INFO`-based quarantine and duplicate-server detection.
 *
 * @example
 * const clients = urls.map((url) => createClient({ url, disableOfflineQueue: true }));
 * await Promise.all(clients.map((c) => c.connect()));
 * RedlockModule.forRoot({ nodes: clients })   // or nodes: clients.map((c) => new NodeRedisNode(c))
 */
export class NodeRedisNode implements RedisNode {
  readonly name: string;

  constructor(private readonly client: NodeRedisClient) {
    this.name = nodeRedisName(client);
    // Scripts are loaded whenever the connection becomes ready, so EVALSHA normally succeeds
    // (DESIGN §5.1); an error listener keeps a refused connection from crashing the process.
    client.on('ready', () => void this.loadScripts());
    client.on('error', () => undefined);
    if (client.isReady) void this.loadScripts();
  }

  get isDown(): boolean {
    return !this.client.isOpen || !this.client.isReady;
  }

  async acquire(
    keys: readonly string[],
    value: string,
    ttl: number,
    fenceKeys?: readonly string[],
  ): Promise<AcquireReply> {
    if (fenceKeys === undefined) {
      const reply = (await this.run(ACQUIRE_SCRIPT, keys, value, ttl)) as [number, number?];
      return reply[0] === 1 ? { acquired: true } : { acquired: false, pttl: reply[1] ?? -1 };
    }
    const reply = (await this.run(ACQUIRE_FENCED_SCRIPT, [...keys, ...fenceKeys], value, ttl)) as [
      number,
      number | string,
    ];
    return reply[0] === 1
      ? { acquired: true, fence: Number(reply[1]) }
      : { acquired: false, pttl: Number(reply[1]) };
  }

  async fence(
    keys: readonly string[],
    fenceKeys: readonly string[],
    value: string,
    token: number,
    keepMs: number,
  ): Promise<boolean> {
    const reply = await this.run(FENCE_SCRIPT, [...keys, ...fenceKeys], value, token, keepMs);
    return Number(reply) === 1;
  }

  async extend(keys: readonly string[], value: string, ttl: number): Promise<boolean> {
    return Number(await this.run(EXTEND_SCRIPT, keys, value, ttl)) === 1;
  }

  async release(keys: readonly string[], value: string, announce = ''): Promise<number> {
    return Number(await this.run(RELEASE_SCRIPT, keys, value, announce));
  }

  whenReady(timeoutMs: number): Promise<void> {
    const client = this.client;
    if (client.isReady) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        client.off?.('ready', done);
        client.off?.('error', done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      timer.unref();
      client.on('ready', done);
      client.on('error', done);
      if (!client.isOpen) client.connect().catch(() => undefined);
    });
  }

  async ping(): Promise<void> {
    await this.client.sendCommand(['PING']);
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

  private async loadScripts(): Promise<void> {
    for (const script of LOCK_SCRIPTS) {
      await this.client.sendCommand(['SCRIPT', 'LOAD', script.source]).catch(() => undefined);
    }
  }

  private async run(script: LuaScript, keys: readonly string[], ...args: (string | number)[]) {
    const tail = [String(keys.length), ...keys, ...args.map(String)];
    try {
      return await this.client.sendCommand(['EVALSHA', script.sha, ...tail]);
    } catch (error) {
      // Safe to re-send (DESIGN §5.1): every attempt has its own owner value.
      if (message(error).startsWith('NOSCRIPT')) {
        return this.client
          .sendCommand(['EVAL', script.source, ...tail])
          .catch((e: unknown) => Promise.reject(translate(e)));
      }
      throw translate(error);
    }
  }
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function translate(error: unknown): unknown {
  return message(error).includes('WRONGTYPE') ? new KeyTypeConflict(message(error)) : error;
}
