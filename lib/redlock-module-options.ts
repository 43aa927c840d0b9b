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
}
