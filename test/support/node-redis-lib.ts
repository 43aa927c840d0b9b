import { createClient } from 'redis';
import * as lib from '../../lib/index';
import type { NodeRedisClient, RedisNode, RedisNodeSpec } from '../../lib/index';

export * from '../../lib/index';

type Client = ReturnType<typeof createClient>;

/**
 * The library as the core's integration specs import it, with one change: every node given as a
 * URL becomes a node-redis (`redis` v5) client, created fail-fast like the README says and closed
 * with the lock manager. The `integration-node-redis` jest project maps `../../lib` here, so the
 * same specs run against the second adapter (issue 10 item 3).
 */
export class Redlock extends lib.Redlock {
  private readonly nodeRedisClients: Client[];

  constructor(
    nodes: readonly (RedisNodeSpec | RedisNode | NodeRedisClient)[],
    options?: lib.RedlockOptions,
  ) {
    const made: Client[] = [];
    const mapped = nodes.map((node) => {
      if (typeof node !== 'string') return node;
      const client = createClient({
        url: node,
        disableOfflineQueue: true,
        socket: { reconnectStrategy: 50 },
      });
      client.on('error', () => undefined);
      made.push(client);
      return client as unknown as NodeRedisClient;
    });
    super(mapped, options);
    this.nodeRedisClients = made;
  }

  override async close(): Promise<void> {
    await super.close();
    for (const client of this.nodeRedisClients) client.destroy();
  }
}
