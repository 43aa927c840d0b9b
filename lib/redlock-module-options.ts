import type { NodeRedisClient, RedisNode, RedisNodeSpec, RedlockOptions } from './core';
import type { LockedErrorMapper } from './exceptions/locked-error-mapper';

/**
 * Options of {@link RedlockModule}: the nodes, and the defaults every lock falls back to.
 * Logging goes through Nest's `Logger` (context `Redlock`).
 *
 * @example
 * RedlockModule.forRoot({
 *   nodes: ['redis://a:6379', 'redis://b:6379', 'redis://c:6379'],
 *   ttl: 10_000,
 * })
 */
export interface RedlockModuleOptions extends Omit<RedlockOptions, 'logger'> {
  /**
   * The independent Redis masters (an odd number, 3 or more, for fault tolerance):
   * `redis://` / `rediss://` URLs, ioredis options (TLS, ACL username/password pass through),
   * your own ioredis or node-redis (`redis` v5) clients (used as they are and never closed by
   * the module), or {@link RedisNode} adapters.
   */
  nodes: Array<RedisNodeSpec | RedisNode | NodeRedisClient>;
  /**
   * App-wide override of how `@Locked` errors are reported: return what to throw, or
   * `undefined` for the default mapping (409 + `Retry-After` / 503 / 400 / 500 over HTTP, the
   * typed errors elsewhere). A decorator's own `mapError` is asked first.
   * @default undefined
   * @example
   * mapLockedError: (error, ctx) => (ctx.type === 'rpc' ? new RpcException(String(error)) : undefined)
   */
  mapLockedError?: LockedErrorMapper;
  /**
   * Readiness at bootstrap, in ms: wait up to this long for a quorum of the nodes to answer
   * (a `PING`, as `health()` does) before the application finishes starting, and fail the
   * bootstrap with a `RedlockError` if none did — so that an instance whose lock nodes are all
   * unreachable is not reported ready (a Kubernetes readiness probe on the listening port) only
   * to fail its first locked call. `0` starts without waiting: the lock manager must be able to
   * start while a majority of its nodes is down, and calls then fail with 503 until they are
   * back — the start then logs a warning naming this option. `Infinity` waits as long as it
   * takes. Counted as `health()` counts: nodes that answer *and* may vote (a node restarted
   * without its data, or whose Redis user lacks a permission, answers but does not count).
   * @default 0
   * @example
   * RedlockModule.forRoot({ nodes, awaitQuorum: 30_000 })   // up to 30 s for a quorum, else fail
   */
  awaitQuorum?: number;
}
