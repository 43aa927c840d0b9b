// The embedded Redis nodes reuse the test fleet's process management (free loopback ports,
// temporary directories, a watchdog that kills the nodes if this process dies without cleaning
// up): dev tooling, not part of the library.
import { startFleet, type RedisFleet } from '../../test/support/fleet';

/** How many lock nodes a local set-up gets: 5 tolerate 2 failures. */
export const LOCAL_LOCK_NODES = 5;

/** What to start locally. */
export interface LocalRedisRequest {
  /** Start {@link LOCAL_LOCK_NODES} independent lock nodes. */
  lockNodes: boolean;
  /** Start one more node for the stock data, apart from the lock nodes. */
  stock: boolean;
}

/**
 * Local `redis-server` processes on free loopback ports, for a sample or demo run without any
 * Redis set up. Call {@link LocalRedis.stop} when done; it is also done on process exit, and a
 * watchdog kills the nodes if the process is killed outright.
 */
export class LocalRedis {
  private constructor(
    /** The lock nodes, if started (tests fault them through it). */
    readonly lockFleet: RedisFleet | undefined,
    /** The stock node, if started. */
    readonly stockFleet: RedisFleet | undefined,
  ) {}

  /**
   * Starts what `request` asks for, in parallel; on a failure, stops what did start and rejects
   * (e.g. when neither `redis-server` nor Docker is available, with an error that says so).
   */
  static async start(request: LocalRedisRequest): Promise<LocalRedis> {
    const [locks, stock] = await Promise.allSettled([
      request.lockNodes ? startFleet(LOCAL_LOCK_NODES) : undefined,
      request.stock ? startFleet(1) : undefined,
    ]);
    const started = new LocalRedis(
      locks.status === 'fulfilled' ? locks.value : undefined,
      stock.status === 'fulfilled' ? stock.value : undefined,
    );
    const failure = [locks, stock].find((result) => result.status === 'rejected');
    if (failure) {
      await started.stop();
      throw failure.reason;
    }
    return started;
  }

  /** The lock nodes' URLs, if started. */
  get lockNodes(): string[] | undefined {
    return this.lockFleet?.urls();
  }

  /** The stock node's URL, if started. */
  get stockRedisUrl(): string | undefined {
    return this.stockFleet?.urls()[0];
  }

  /** Kills the nodes and removes their directories. Idempotent. */
  async stop(): Promise<void> {
    await Promise.all([this.lockFleet?.stop(), this.stockFleet?.stop()]);
  }
}
