import Redis from 'ioredis';
import { RedlockConfigError } from '../errors';
import { isRedisNode } from './node';
import { isNodeRedisClient } from './node-redis-node';

/** The members of an ioredis client this package uses, checked when recognising one. */
const CLIENT_METHODS = ['sendCommand', 'duplicate', 'disconnect', 'quit', 'on', 'once'] as const;

/**
 * Whether `value` is an ioredis (standalone) client — also one created by another copy of
 * ioredis (a monorepo, a duplicate install, the other format of a dual package), for which
 * `instanceof Redis` is false. Recognised by shape: the client's `options` and `status`, and the
 * methods the adapter calls. A cluster client is not one (see {@link assertUsableNodeSpec}).
 */
export function isIoredisClient(value: unknown): value is Redis {
  if (value instanceof Redis) return true;
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Record<string, unknown>;
  return (
    candidate.isCluster !== true &&
    typeof candidate.options === 'object' &&
    candidate.options !== null &&
    typeof candidate.status === 'string' &&
    CLIENT_METHODS.every((method) => typeof candidate[method] === 'function')
  );
}

/**
 * Rejects node specs that would otherwise be misread: a cluster client (Redlock needs
 * independent masters, each a node of its own; a cluster shards keys over its masters and fails
 * over between them), and an object that looks like a client (it has `sendCommand`, or
 * `connect`/`isOpen` as node-redis clients do) but is not a usable ioredis client — read as
 * connection options, it would be silently replaced by a new connection to localhost.
 * @throws RedlockConfigError naming the entry
 */
export function assertUsableNodeSpec(spec: unknown, option: string): void {
  if (
    typeof spec !== 'object' ||
    spec === null ||
    isIoredisClient(spec) ||
    isNodeRedisClient(spec) ||
    isRedisNode(spec)
  ) {
    return;
  }
  const candidate = spec as Record<string, unknown>;
  if (
    candidate.isCluster === true ||
    candidate.constructor?.name === 'Cluster' ||
    'masters' in candidate // node-redis createCluster()
  ) {
    throw new RedlockConfigError(
      option,
      'a Redis Cluster client',
      'must be an independent Redis master: Redlock counts votes of independent nodes, and a cluster (sharded, failing over between its masters) is not one; list each master as a node of its own',
    );
  }
  const clientLike = ['sendCommand', 'connect', 'isOpen', 'sendCommandAsync'].some(
    (member) => member in candidate,
  );
  if (clientLike) {
    throw new RedlockConfigError(
      option,
      spec,
      'looks like a Redis client but is neither an ioredis nor a node-redis client: pass a redis:// URL, ioredis options, an ioredis or node-redis client, or a RedisNode adapter',
    );
  }
}
