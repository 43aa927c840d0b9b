import Redis from 'ioredis';
import { IoredisNode } from '../../lib';
import { startFleet, type RedisFleet } from '../support/fleet';
import { markOf, queueContract, type QueueHarness } from '../support/queue-contract';

/**
 * The fair hand-off scripts (ACQUIRE_QUEUED, HAND_OFF, LEAVE_QUEUE) on a real server, through the
 * ioredis adapter: the contract (test/support/queue-contract.ts) the fakes are held to in
 * test/unit/queue-fakes.spec.ts.
 */
describe('fair hand-off scripts on a real node (the port contract)', () => {
  let fleet: RedisFleet;
  let node: IoredisNode;
  let subscriber: Redis;
  const heard = new Map<string, string[]>();
  const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };
  let harness: QueueHarness;

  beforeAll(async () => {
    fleet = await startFleet(1);
    node = IoredisNode.from(fleet.nodes[0].url, 1_000, quiet);
    await node.whenReady(5_000);
    subscriber = new Redis(fleet.nodes[0].url, { lazyConnect: true });
    await subscriber.connect();
    subscriber.on('pmessage', (_pattern: string, channel: string, message: string) => {
      const list = heard.get(channel) ?? [];
      list.push(message);
      heard.set(channel, list);
    });
    await subscriber.psubscribe('qc:*');
    const admin = fleet.nodes[0];
    const time = async () => {
      const [s, us] = (await admin.command('TIME')) as [string, string];
      return Number(s) * 1_000 + Math.floor(Number(us) / 1_000);
    };
    harness = {
      node: node as QueueHarness['node'],
      leases: true,
      put: async (key, value, ttl) => {
        await admin.command('SET', key, value, 'PX', ttl);
      },
      get: async (key) => (await admin.command('GET', key)) as string | null,
      del: async (key) => void (await admin.command('DEL', key)),
      pttl: async (key) => Number(await admin.command('PTTL', key)),
      queue: async (queueKey) => {
        const flat = (await admin.command('ZRANGE', queueKey, 0, -1, 'WITHSCORES')) as string[];
        const pairs: [string, number][] = [];
        for (let i = 0; i < flat.length; i += 2) pairs.push([flat[i], Number(flat[i + 1])]);
        return pairs;
      },
      queuePttl: async (queueKey) => Number(await admin.command('PTTL', queueKey)),
      zadd: async (queueKey, score, member) => {
        await admin.command('ZADD', queueKey, score, member);
        await admin.command('SET', markOf(queueKey), '1', 'PX', 60_000);
      },
      serverNow: time,
      messages: async (channel) => {
        // A round trip on the subscriber connection: every message published before is in.
        await subscriber.ping();
        return heard.get(channel) ?? [];
      },
    };
  });
  afterAll(async () => {
    subscriber?.disconnect();
    await node?.close();
    await fleet?.stop();
  });

  queueContract(() => harness);

  // The same contract with every hand-off sent as an uncontended holder's release: with no next
  // waiter it goes first through UNCONTENDED_HAND_OFF_SCRIPT, then, where that does not apply,
  // the full script. Every reply and write must be the same (a hint only, HandOffRequest).
  describe('with the uncontended hint on every hand-off', () => {
    queueContract(() => {
      const hinted = Object.create(node) as IoredisNode;
      hinted.handOff = (key, queueKey, value, request) =>
        node.handOff(key, queueKey, value, { ...request, uncontended: true });
      return { ...harness, node: hinted as QueueHarness['node'] };
    });
  });

  it("a probe's read (lease) reads a key it must attempt as absent: reserved for the waiters outside the queues, or held by a fair holder (issue 24 item 1)", async () => {
    const put = (key: string, value: string) => harness.put(key, value, 5_000);
    await put('probe:plain', 'holder');
    await put('probe:chained', '.holder');
    await put('probe:reserved', '\0r\0p');
    await put('probe:group', '\0r' + 'g');
    // A plain holder's lease, and a queued group's reservation (a plain waiter cannot take it).
    expect(await node.lease('probe:plain')).toBeGreaterThan(4_000);
    expect(await node.lease('probe:group')).toBeGreaterThan(4_000);
    // Before: their leases, and a listening waiter slept until the lease ended while the lock went
    // from holder to holder, or missed the turn reserved for it.
    expect(await node.lease('probe:chained')).toBe(-2);
    expect(await node.lease('probe:reserved')).toBe(-2);
    expect(await node.lease('probe:absent')).toBe(-2);
  });
});
