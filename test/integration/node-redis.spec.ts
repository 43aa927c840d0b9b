import { createClient, createCluster } from 'redis';
import {
  LockKeyConflictError,
  LockNotAcquiredError,
  NodeRedisNode,
  Redlock,
  RedlockConfigError,
} from '../../lib';
import { startFleet, type RedisFleet } from '../support/fleet';
import { onEveryNode } from '../support/eventually';

/**
 * node-redis (`redis` v5) clients as lock nodes (issue 10 item 3), against real redis-server
 * processes: the same locks as through ioredis (the two adapters exclude each other on the same
 * nodes), fencing, extension, key conflicts, an outage as `unavailable`, and clusters refused.
 */

type Client = ReturnType<typeof createClient>;

let fleet: RedisFleet;
const clients: Client[] = [];
const quiet = { log() {}, warn() {}, error() {} };

async function nodeRedisClients(): Promise<Client[]> {
  const made = fleet
    .urls()
    .map((url) =>
      createClient({ url, disableOfflineQueue: true, socket: { reconnectStrategy: 50 } }),
    );
  for (const client of made) client.on('error', () => undefined);
  await Promise.all(made.map((c) => c.connect()));
  clients.push(...made);
  return made;
}

beforeAll(async () => {
  fleet = await startFleet(3);
});

afterEach(async () => {
  for (const client of clients.splice(0)) client.destroy();
  await fleet.flushAll();
});

afterAll(async () => {
  await fleet?.stop();
});

it('locks through node-redis clients, excluding an ioredis lock manager on the same nodes', async () => {
  const viaNodeRedis = new Redlock(await nodeRedisClients(), { logger: quiet, nodeTimeout: 200 });
  const viaIoredis = new Redlock(fleet.urls(), { logger: quiet, nodeTimeout: 200 });
  try {
    const lock = await viaNodeRedis.acquire('nr:a');
    expect(await onEveryNode(fleet, 'redlock:nr:a', true)).toBe(true);
    expect(await viaIoredis.tryAcquire('nr:a')).toBeNull();
    await lock.extend(5_000);
    expect(Number(await fleet.nodes[0].command('PTTL', 'redlock:nr:a'))).toBeGreaterThan(4_000);
    await lock.release();
    expect(await onEveryNode(fleet, 'redlock:nr:a', false)).toBe(true);

    const other = await viaIoredis.acquire('nr:a');
    expect(await viaNodeRedis.tryAcquire('nr:a')).toBeNull();
    await other.release();
  } finally {
    await Promise.all([viaNodeRedis.close(), viaIoredis.close()]);
  }
});

it('mutual exclusion across the two adapters: 30 read-modify-writes, none lost', async () => {
  const managers = [
    new Redlock(await nodeRedisClients(), { logger: quiet, retryDelay: 5, retryJitter: 5 }),
    new Redlock(fleet.urls(), { logger: quiet, retryDelay: 5, retryJitter: 5 }),
  ];
  let counter = 0;
  try {
    await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        managers[i % 2].using('nr:counter', async () => {
          const read = counter;
          await new Promise((resolve) => setTimeout(resolve, 2));
          counter = read + 1;
        }),
      ),
    );
  } finally {
    await Promise.all(managers.map((m) => m.close()));
  }
  expect(counter).toBe(30);
});

it("no fair queue without release notifications: the default is 'off', 'queue' is refused", async () => {
  // The node-redis adapter has no subscriber connection. A fair queue over it handed the lock
  // to another manager's group that never heard so: 30 using() calls over two node-redis
  // managers with fairness 'queue' stalled until their wait ran out in 3 of 12 runs.
  const clients = await nodeRedisClients();
  const byDefault = new Redlock(clients, { logger: quiet });
  const overIoredis = new Redlock(fleet.urls(), { logger: quiet });
  try {
    expect(byDefault.options.fairness).toBe('off');
    expect(overIoredis.options.fairness).toBe('queue');
    expect(() => new Redlock(clients, { logger: quiet, fairness: 'queue' })).toThrow(
      /fairness.*announce releases \(pub\/sub\)/,
    );
  } finally {
    await Promise.all([byDefault.close(), overIoredis.close()]);
  }
});

it('fencing tokens increase; WRONGTYPE is a key conflict; the clients stay open after close()', async () => {
  const nodeClients = await nodeRedisClients();
  const redlock = new Redlock(
    nodeClients.map((c) => new NodeRedisNode(c)),
    { logger: quiet, fencing: true },
  );
  try {
    const first = await redlock.acquire('nr:fenced');
    await first.release();
    const second = await redlock.acquire('nr:fenced');
    expect(second.fencingToken!).toBeGreaterThan(first.fencingToken!);
    await second.release();

    for (const node of fleet.nodes) await node.command('LPUSH', 'redlock:nr:list', 'x');
    await expect(redlock.acquire('nr:list', { wait: 0 })).rejects.toBeInstanceOf(
      LockKeyConflictError,
    );
  } finally {
    await redlock.close();
  }
  expect(nodeClients.every((c) => c.isReady)).toBe(true);
});

it('a quorum of hung nodes is unavailable, not held', async () => {
  const redlock = new Redlock(await nodeRedisClients(), { logger: quiet, nodeTimeout: 100 });
  await fleet.nodes[0].pause();
  await fleet.nodes[1].pause();
  try {
    const error = await redlock.acquire('nr:down', { wait: 0 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockNotAcquiredError);
    expect((error as LockNotAcquiredError).reason).toBe('unavailable');
  } finally {
    await fleet.nodes[0].resume();
    await fleet.nodes[1].resume();
    await redlock.close();
  }
});

it('a node-redis cluster is refused: Redlock needs independent masters', () => {
  const cluster = createCluster({ rootNodes: [{ url: fleet.nodes[0].url }] });
  expect(
    () => new Redlock([cluster as never, ...fleet.urls().slice(1)], { logger: quiet }),
  ).toThrow(RedlockConfigError);
});

it('one server listed twice through node-redis clients is refused, as with ioredis', async () => {
  const port = fleet.nodes[0].port;
  const spellings = [`redis://127.0.0.1:${port}`, `redis://localhost:${port}`, fleet.urls()[1]];
  const made = spellings.map((url) => createClient({ url, disableOfflineQueue: true }));
  for (const client of made) client.on('error', () => undefined);
  await Promise.all(made.map((c) => c.connect()));
  clients.push(...made);
  const redlock = new Redlock(made, { logger: quiet });
  try {
    await expect(redlock.ready()).rejects.toThrow(/same Redis server as nodes\[0\].*run_id/);
  } finally {
    await redlock.close();
  }
});

it('a node restarted empty is quarantined: no second holder through node-redis clients', async () => {
  const TTL = 1_500;
  // The quarantine is waived for a fleet that is all new (nothing can be held on it yet).
  const uptime = async (i: number) =>
    Number(
      /uptime_in_seconds:(\d+)/.exec(String(await fleet.nodes[i].command('INFO', 'server')))![1],
    );
  for (;;) {
    const ages = await Promise.all([0, 1, 2].map(uptime));
    if (ages.every((s) => s * 1_000 > TTL + 1_000)) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  const guarded = new Redlock(await nodeRedisClients(), { logger: quiet, ttl: TTL });
  const unguarded = new Redlock(await nodeRedisClients(), {
    logger: quiet,
    ttl: TTL,
    quarantine: false,
  });
  const holder = new Redlock(fleet.urls(), { logger: quiet, ttl: TTL });
  try {
    await guarded.ready();
    await unguarded.ready();
    // The holder's lock sits on nodes 0 and 1 only; node 1 then restarts without its data.
    await fleet.nodes[2].command('SET', 'redlock:q', 'other', 'PX', 60_000);
    const lock = await holder.acquire('q');
    await fleet.nodes[2].command('DEL', 'redlock:q');
    await fleet.nodes[1].restart();
    // Both node-redis lock managers reconnect and read the restarted server's identity.
    await new Promise((r) => setTimeout(r, 400));
    expect(lock.isValid()).toBe(true);

    expect(await guarded.tryAcquire('q')).toBeNull();
    // The control: without the quarantine the same clients take a lock that is still held.
    const second = await unguarded.tryAcquire('q');
    expect(second).not.toBeNull();
    expect(lock.isValid()).toBe(true);
    await second!.release();
    await lock.release();
  } finally {
    await Promise.all([guarded.close(), unguarded.close(), holder.close()]);
  }
});

it('both adapters read a server with appendfsync always as durable (exempt from the quarantine), and one without as not', async () => {
  const aofFleet = await startFleet(1, { aof: true });
  const made = [aofFleet.nodes[0].url, fleet.urls()[0]].map((url) =>
    createClient({ url, disableOfflineQueue: true }),
  );
  for (const client of made) client.on('error', () => undefined);
  await Promise.all(made.map((c) => c.connect()));
  clients.push(...made);
  const viaNodeRedis = made.map((client) => new NodeRedisNode(client));
  const viaIoredis = new Redlock([aofFleet.nodes[0].url, fleet.urls()[0]], { logger: quiet });
  try {
    await Promise.all(viaNodeRedis.map((node) => node.whenReady(2_000)));
    await viaIoredis.ready();
    expect(viaNodeRedis.map((node) => node.serverInfo?.durable)).toEqual([true, false]);
    const ioredisNodes = (viaIoredis as unknown as { parts: { nodes: NodeRedisNode[] } }).parts
      .nodes;
    expect(ioredisNodes.map((node) => node.serverInfo?.durable)).toEqual([true, false]);
  } finally {
    await viaIoredis.close();
    await aofFleet.stop();
  }
});
