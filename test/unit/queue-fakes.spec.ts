import { InMemoryRedisNode } from '../../lib/testing/in-memory-node';
import { PubSubSimNode } from '../sim/sim-node';
import { VirtualClock } from '../sim/virtual-clock';
import { markOf, queueContract, type QueueHarness } from '../support/queue-contract';
import { MemoryNode } from './memory-node';

/**
 * The fakes' fair hand-off scripts (lib/testing/queue-scripts.ts, shared by all three) held to
 * the contract a real server keeps (test/integration/queue-scripts.spec.ts runs the same cases on
 * Redis): the simulation and the testing module rest on them.
 */
describe('fair hand-off scripts in the fakes (the port contract)', () => {
  describe('SimNode (virtual time, a clock offset)', () => {
    let harness: QueueHarness;
    beforeEach(() => {
      const clock = new VirtualClock();
      const node = new PubSubSimNode('s0', clock);
      node.clockOffsetMs = 12_345.6;
      const heard = new Map<string, string[]>();
      const listen = (channel: string) => {
        if (heard.has(channel)) return;
        heard.set(channel, []);
        node.subscribe(channel, (message) => heard.get(channel)!.push(message));
      };
      harness = {
        node,
        leases: true,
        put: async (key, value, ttl) => {
          listen(key);
          node.put(key, value, ttl);
        },
        get: async (key) => node.valueAt(key) ?? null,
        del: async (key) => node.scripts.del(key),
        pttl: async (key) => node.pttlOf(key),
        queue: async (queueKey) => node.queues.range(queueKey),
        queuePttl: async (queueKey) => node.queues.pttl(queueKey),
        zadd: async (queueKey, score, member) => {
          node.queues.add(queueKey, member, score);
          node.put(markOf(queueKey), '1', 60_000);
        },
        serverNow: async () => Math.floor(node.serverNow()),
        messages: async (channel) => {
          await clock.advance(1);
          return heard.get(channel) ?? [];
        },
      };
    });
    queueContract(() => harness);
  });

  describe('MemoryNode (no leases)', () => {
    let harness: QueueHarness;
    beforeEach(() => {
      const node = new MemoryNode('m0');
      node.queueClock = 50_000;
      harness = {
        node,
        leases: false,
        plainMarks: false,
        put: async (key, value) => void node.store.set(key, value),
        get: async (key) => node.store.get(key) ?? null,
        del: async (key) => void node.store.delete(key),
        pttl: async (key) => (node.store.has(key) ? -1 : -2),
        queue: async (queueKey) => node.queues.range(queueKey),
        queuePttl: async (queueKey) => node.queues.pttl(queueKey),
        zadd: async (queueKey, score, member) => {
          node.queues.add(queueKey, member, score);
          node.store.set(markOf(queueKey), '1');
        },
        serverNow: async () => node.queueClock,
        messages: async (channel) =>
          node.published.filter(([c]) => c === channel).map(([, message]) => message),
      };
    });
    queueContract(() => harness);
  });

  describe("InMemoryRedisNode (the testing module's; nobody to publish to)", () => {
    let harness: QueueHarness;
    beforeEach(() => {
      const node = new InMemoryRedisNode();
      const internals = node as unknown as {
        keys: Map<string, { value: string; expiresAt: number }>;
        queues: import('../../lib/testing/queue-scripts').SortedSets;
      };
      harness = {
        node,
        leases: true,
        put: async (key, value, ttl) =>
          void internals.keys.set(key, { value, expiresAt: performance.now() + ttl }),
        get: async (key) => (await node.inspect(key)).value,
        del: async (key) => void internals.keys.delete(key),
        pttl: async (key) => (await node.inspect(key)).pttl,
        queue: async (queueKey) => internals.queues.range(queueKey),
        queuePttl: async (queueKey) => internals.queues.pttl(queueKey),
        zadd: async (queueKey, score, member) => {
          internals.queues.add(queueKey, member, score);
          internals.keys.set(markOf(queueKey), {
            value: '1',
            expiresAt: performance.now() + 60_000,
          });
        },
        serverNow: async () => Math.floor(performance.now()),
      };
    });
    queueContract(() => harness);
  });
});
