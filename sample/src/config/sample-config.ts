/**
 * The sample's configuration, from environment variables:
 *
 * | variable          | meaning                                                      | default                  |
 * | ----------------- | ------------------------------------------------------------ | ------------------------ |
 * | `LOCK_NODES`      | the lock's Redis masters, comma-separated `redis://` URLs    | 5 local nodes, embedded  |
 * | `STOCK_REDIS_URL` | the Redis of the stock data, apart from the lock nodes       | 1 local node, embedded   |
 * | `PORT`            | HTTP port (`0`: any free port)                               | `3000`                   |
 * | `HOST`            | address to listen on                                         | `127.0.0.1`              |
 * | `STOCK_REPORT`    | `1`: run the scheduled stock report (one instance per tick)  | off                      |
 * | `ADMIN_TOKEN`     | the `x-admin-token` that `GET /locks/:resource` requires     | unset: route closed      |
 *
 * Embedded nodes are `redis-server` processes on free loopback ports, started by the sample
 * and stopped when it exits: a try-out needs no Redis set up.
 */
export interface SampleConfig {
  /** From `LOCK_NODES`; `undefined` when unset or empty: start local nodes. */
  lockNodes: string[] | undefined;
  /** From `STOCK_REDIS_URL`; `undefined` when unset or empty: start a local node. */
  stockRedisUrl: string | undefined;
  port: number;
  host: string;
  /** From `STOCK_REPORT` (`1` or `true`): run the every-second stock report job. */
  stockReport: boolean;
  /** From `ADMIN_TOKEN`; `undefined` when unset or empty: the admin route refuses everyone. */
  adminToken: string | undefined;
}

/** Default `PORT`. */
export const DEFAULT_PORT = 3000;
/** Default `HOST`: loopback only, so a try-out is not reachable from the network. */
export const DEFAULT_HOST = '127.0.0.1';

/**
 * Reads and checks the configuration.
 * @throws Error naming the variable, for a malformed value
 */
export function readSampleConfig(env: NodeJS.ProcessEnv = process.env): SampleConfig {
  const lockNodes = env.LOCK_NODES?.trim()
    ? env.LOCK_NODES.split(',').map((url, i) => redisUrl(`LOCK_NODES entry ${i + 1}`, url.trim()))
    : undefined;
  const stockRedisUrl = env.STOCK_REDIS_URL?.trim()
    ? redisUrl('STOCK_REDIS_URL', env.STOCK_REDIS_URL.trim())
    : undefined;
  return {
    lockNodes,
    stockRedisUrl,
    port: port(env.PORT),
    host: env.HOST?.trim() || DEFAULT_HOST,
    stockReport: ['1', 'true'].includes(env.STOCK_REPORT?.trim().toLowerCase() ?? ''),
    adminToken: env.ADMIN_TOKEN?.trim() || undefined,
  };
}

/** The value is not quoted in the error: a URL may carry a password. */
function redisUrl(variable: string, value: string): string {
  let protocol: string | undefined;
  try {
    protocol = new URL(value).protocol;
  } catch {
    // reported below
  }
  if (protocol !== 'redis:' && protocol !== 'rediss:') {
    throw new Error(`${variable} is not a redis:// or rediss:// URL`);
  }
  return value;
}

function port(value: string | undefined): number {
  if (value === undefined || value.trim() === '') return DEFAULT_PORT;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new Error(`PORT: "${value}" is not a port number (0 to 65535)`);
  }
  return port;
}

/** A Redis URL without credentials, for logs: `redis://host:port/db`. */
export function redactUrl(url: string): string {
  const parsed = new URL(url);
  parsed.username = '';
  parsed.password = '';
  return parsed.toString();
}
