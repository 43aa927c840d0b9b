import * as lib from '../../lib/index';
import type { RedisNode, RedisNodeSpec } from '../../lib/index';
import { respNode } from './resp-transport';

export * from '../../lib/index';

/**
 * The library as the core's integration specs import it, with one change: every node given as a
 * URL becomes a node over the test-only raw RESP transport (resp-transport.ts). The
 * `integration-resp` jest project maps `../../lib` here, so the same specs that run against the
 * ioredis and node-redis adapters run against a third one (issue 26: a new client adapter is one
 * file plus its export).
 */
export class Redlock extends lib.Redlock {
  private readonly respNodes: RedisNode[];

  constructor(nodes: readonly (RedisNodeSpec | RedisNode)[], options?: lib.RedlockOptions) {
    const timeout = options?.nodeTimeout ?? lib.REDLOCK_DEFAULTS.nodeTimeout;
    const made: RedisNode[] = [];
    const mapped = nodes.map((node) => {
      if (typeof node !== 'string') return node;
      const adapted = respNode(node, timeout);
      made.push(adapted);
      return adapted;
    });
    super(mapped, options);
    this.respNodes = made;
  }

  override async close(): Promise<void> {
    await super.close();
    await Promise.all(this.respNodes.map((node) => node.close()));
  }
}
