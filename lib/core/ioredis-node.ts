import Redis, { type RedisOptions } from 'ioredis';
import type { RedisNode, AcquireReply } from './node';
import { ACQUIRE_SCRIPT, EXTEND_SCRIPT, RELEASE_SCRIPT, type LuaScript } from './scripts';
import type { RedlockLogger } from './logger';

/** How a node may be given: a `redis://` / `rediss://` URL, ioredis options, or your own client. */
export type RedisNodeSpec = string | RedisOptions | Redis;

const ACQUIRED: AcquireReply = Object.freeze({ acquired: true });

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
 * The ioredis adapter of the {@link RedisNode} port. Scripts run by EVALSHA, falling back to
 * EVAL on NOSCRIPT (a restarted node has an empty script cache): one round trip normally.
 */
export class IoredisNode implements RedisNode {
  readonly name: string;
  private closing = false;
  private lastHungWarning = -Infinity;

  constructor(
    /** The ioredis client. */
    readonly client: Redis,
    /** Whether this node created the client (and so closes it). */
    private readonly owned: boolean,
    /** Bound on the graceful part of `close()`. */
    private readonly nodeTimeout: number,
    private readonly logger: RedlockLogger,
  ) {
    this.name = nodeName(client);
  }

  /**
   * Creates a node from a URL, options or a client. Clients created here get fail-fast
   * settings and a quiet error listener; a caller's client is used as it is, and any setting
   * on it that can make commands wait is named in a warning.
   */
  static from(spec: RedisNodeSpec, nodeTimeout: number, logger: RedlockLogger): IoredisNode {
    if (spec instanceof Redis) {
      const risky = riskySettings(spec.options);
      if (risky.length > 0) {
        logger.warn(
          `Redis node ${nodeName(spec)} was passed as a client whose commands can wait while the node is down or hung: ` +
            `${risky.join(', ')}. Each lock attempt is still bounded by nodeTimeout, but commands may queue or be retried; ` +
            `create it with { enableOfflineQueue: false, maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false, commandTimeout } ` +
            `or pass a URL/options and let the module create it.`,
        );
      }
      return new IoredisNode(spec, false, nodeTimeout, logger);
    }
    const forced = failFastOptions(nodeTimeout);
    const client =
      typeof spec === 'string'
        ? new Redis(spec, forced)
        : new Redis({ ...spec, ...forced, commandTimeout: spec.commandTimeout ?? nodeTimeout });
    const node = new IoredisNode(client, true, nodeTimeout, logger);
    node.watchHealth();
    return node;
  }

  async acquire(keys: readonly string[], value: string, ttl: number): Promise<AcquireReply> {
    const reply = (await this.run(ACQUIRE_SCRIPT, keys, value, ttl)) as [number, number?];
    return reply[0] === 1 ? ACQUIRED : { acquired: false, pttl: reply[1] ?? -1 };
  }

  async extend(keys: readonly string[], value: string, ttl: number): Promise<boolean> {
    return (await this.run(EXTEND_SCRIPT, keys, value, ttl)) === 1;
  }

  async release(keys: readonly string[], value: string): Promise<number> {
    return (await this.run(RELEASE_SCRIPT, keys, value)) as number;
  }

  whenReady(timeoutMs: number): Promise<void> {
    const client = this.client;
    if (client.status === 'ready' || client.status === 'end') return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        client.off('ready', done);
        client.off('error', done);
        client.off('end', done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      timer.unref();
      client.once('ready', done);
      client.once('error', done);
      client.once('end', done);
      // A lazyConnect client waits for its first command; with an offline queue disabled that
      // command would fail instead, so connect it now.
      if (client.status === 'wait') client.connect().catch(() => undefined);
    });
  }

  async close(): Promise<void> {
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

  private run(script: LuaScript, keys: readonly string[], ...args: (string | number)[]) {
    return this.client
      .evalsha(script.sha, keys.length, ...keys, ...args)
      .catch((error: unknown) => {
        if (isNoScript(error))
          return this.client.eval(script.source, keys.length, ...keys, ...args);
        if (isTimeout(error)) this.warnHung();
        throw error;
      });
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
    let lastError: string | undefined;
    this.client.on('error', (error: Error) => {
      lastError = error.message;
    });
    this.client.on('close', () => {
      if (down || this.closing) return;
      down = true;
      logger.warn(`Redis node ${this.name} is unreachable${lastError ? `: ${lastError}` : ''}`);
    });
    this.client.on('ready', () => {
      lastError = undefined;
      if (!down) return;
      down = false;
      logger.log(`Redis node ${this.name} is reachable again`);
    });
  }
}

function isTimeout(error: unknown): boolean {
  return error instanceof Error && error.message === 'Command timed out';
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/** `host:port` (or the socket path) of a client, for messages: never the URL, which may hold a password. */
export function nodeName(client: Redis): string {
  const { host, port, path } = client.options;
  return path ? path : `${host ?? '127.0.0.1'}:${port ?? 6379}`;
}

/** The settings of a caller's client that can make a command wait instead of failing fast. */
function riskySettings(options: RedisOptions): string[] {
  const risky: string[] = [];
  if (options.enableOfflineQueue !== false)
    risky.push('enableOfflineQueue is on (commands queue while disconnected)');
  if (options.maxRetriesPerRequest !== 0) {
    risky.push(`maxRetriesPerRequest is ${options.maxRetriesPerRequest ?? 'null (retry forever)'}`);
  }
  if (options.autoResendUnfulfilledCommands !== false) {
    risky.push('autoResendUnfulfilledCommands is on (commands re-sent after a reconnect)');
  }
  if (!options.commandTimeout)
    risky.push('commandTimeout is unset (a hung node holds commands forever)');
  return risky;
}
