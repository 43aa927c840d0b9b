import Redis from 'ioredis';

/**
 * How long an admin command may take. A paused (SIGSTOPped) node accepts the TCP connection and
 * then never answers: without this bound a test's cleanup would hang until jest's own timeout.
 */
export const ADMIN_TIMEOUT_MS = 2_000;

/**
 * One cached connection per node for the fleet's own commands (`FleetNode.command`, `flushAll`).
 *
 * Cached rather than per command because tests issue many of these in loops, and because a stable
 * admin connection keeps `CLIENT LIST` comparisons in tests meaningful. It never reconnects on its
 * own: when the node goes away the connection ends and the next command opens a fresh one, so a
 * killed node leaves no reconnect loop (or its error events) running in the background.
 */
export class AdminConnection {
  private client: Redis | undefined;

  /**
   * @param host address of the node
   * @param port port of the node
   * @param label names the node in error messages, e.g. `node 2 (127.0.0.1:21234)`
   */
  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly label: string,
  ) {}

  /**
   * Runs one command, e.g. `['PTTL', 'k']`; rejects after {@link ADMIN_TIMEOUT_MS} if the node
   * does not answer.
   */
  async command(args: readonly (string | number)[]): Promise<unknown> {
    const [name, ...rest] = args;
    if (name === undefined) throw new Error(`${this.label}: command() needs a command name`);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(new Error(`${this.label} did not answer ${name} within ${ADMIN_TIMEOUT_MS} ms`)),
        ADMIN_TIMEOUT_MS,
      );
    });
    const reply = this.connection()
      .call(String(name), ...rest)
      .catch((error: Error) => {
        // Redis' own error replies (WRONGTYPE, NOSCRIPT...) pass through for tests to match on;
        // connection failures ("Connection is closed.") get told which node and command.
        if (error.name === 'ReplyError') throw error;
        throw new Error(`${this.label}: ${name} failed: ${error.message}`, { cause: error });
      });
    // Promise.race handles the loser's late rejection too, so a command answered (or failed)
    // after the timeout never surfaces as an unhandled rejection.
    return Promise.race([reply, timeout]).finally(() => clearTimeout(timer));
  }

  /** Drops the connection (pending commands reject); the next command opens a new one. */
  close(): void {
    // An ended client has nothing to close, and disconnect() would still arm ioredis' 2 s
    // "destroy if not closed" timer, which keeps the test process alive for nothing.
    if (this.client && this.client.status !== 'end') this.client.disconnect();
    this.client = undefined;
  }

  private connection(): Redis {
    if (this.client && this.client.status !== 'end') return this.client;
    const client = new Redis({
      host: this.host,
      port: this.port,
      // Queue the first command while connecting; no ready check, because on a paused node the
      // INFO it sends would never return and nothing would bound it.
      enableOfflineQueue: true,
      enableReadyCheck: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      connectTimeout: ADMIN_TIMEOUT_MS,
      commandTimeout: ADMIN_TIMEOUT_MS,
    });
    // Failures reach the caller as the command's rejection; without a listener ioredis would
    // also print "Unhandled error event" for every kill a test performs.
    client.on('error', () => undefined);
    this.client = client;
    return client;
  }
}
