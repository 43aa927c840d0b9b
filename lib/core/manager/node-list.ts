import type { Clock } from '../clock';
import { RedlockConfigError } from '../errors';
import { assertUsableNodeSpec } from '../nodes/ioredis-client';
import { IoredisNode, type RedisNodeSpec } from '../nodes/ioredis-node';
import type { RedlockLogger } from '../observability/logger';
import { isRedisNode, type RedisNode } from '../nodes/node';
import { NodeRedisNode, isNodeRedisClient, type NodeRedisClient } from '../nodes/node-redis-node';
import { describeNodeSpec, nodeSpecName } from '../nodes/node-spec';

/** One entry of a lock manager's node list: a URL or ioredis options, a client, or an adapter. */
export type NodeListEntry = RedisNodeSpec | RedisNode | NodeRedisClient;

/** Rejects an empty node list, an unusable entry and the same node listed twice. */
export function validateNodes(nodes: unknown): asserts nodes is readonly NodeListEntry[] {
  if (!Array.isArray(nodes) || nodes.length === 0) {
    throw new RedlockConfigError('nodes', nodes, 'must list at least one Redis node');
  }
  const seen = new Map<string, number>();
  nodes.forEach((spec: unknown, index) => {
    assertUsableNodeSpec(spec, `nodes[${index}]`);
    const name = nodeSpecName(spec);
    if (name === undefined) {
      throw new RedlockConfigError(
        `nodes[${index}]`,
        describeNodeSpec(spec),
        'must be a redis:// or rediss:// URL, ioredis options, an ioredis client or a RedisNode',
      );
    }
    const first = seen.get(name);
    if (first !== undefined) {
      throw new RedlockConfigError(
        `nodes[${index}]`,
        name,
        `must not repeat nodes[${first}]: one Redis server counted twice would vote twice`,
      );
    }
    seen.set(name, index);
  });
}

/**
 * The adapter of each entry: a {@link RedisNode} passed in is used as it is (it may be shared
 * with other lock managers); a node-redis client gets the node-redis adapter; anything else
 * (URL, ioredis options or client) the ioredis one.
 */
export function nodeAdapters(
  entries: readonly NodeListEntry[],
  nodeTimeout: number,
  logger: RedlockLogger,
  clock: Clock,
): readonly RedisNode[] {
  return entries.map((spec) =>
    isRedisNode(spec)
      ? spec
      : isNodeRedisClient(spec)
        ? new NodeRedisNode(spec, clock)
        : IoredisNode.from(spec, nodeTimeout, logger, clock),
  );
}
