import Redis, { Cluster } from 'ioredis';
import { Redlock, RedlockConfigError } from '../../lib';
import { startFleet, type RedisFleet } from '../support/fleet';
import { onEveryNode } from '../support/eventually';

/**
 * ioredis clients from another copy of ioredis (a monorepo, a duplicate install), for which
 * `instanceof Redis` is false, are recognised by shape and used as they are (issue 10 item 4):
 * before, two such clients were rejected as duplicates of 127.0.0.1:6379, and a single one was
 * read as options and replaced by a new connection to localhost. Cluster clients and client-like
 * objects that are not ioredis clients are refused loudly.
 */

let fleet: RedisFleet;
let ForeignRedis: typeof Redis;

beforeAll(async () => {
  fleet = await startFleet(3);
  jest.isolateModules(() => {
    ForeignRedis = jest.requireActual<typeof import('ioredis')>('ioredis').default;
  });
});

afterAll(async () => {
  await fleet?.stop();
});

const quiet = { log() {}, warn() {}, error() {} };

it('a second copy of ioredis is a distinct class (the situation under test)', () => {
  const client = new ForeignRedis(fleet.nodes[0].url, { lazyConnect: true });
  expect(client instanceof Redis).toBe(false);
  client.disconnect();
});

it('clients of another ioredis copy are used as they are, and left open on close()', async () => {
  const options = { enableOfflineQueue: false, maxRetriesPerRequest: 0 };
  const foreign = [
    new ForeignRedis(fleet.nodes[0].url, options),
    new ForeignRedis(fleet.nodes[1].url, options),
  ];
  const redlock = new Redlock([...foreign, fleet.nodes[2].url], { logger: quiet });
  try {
    const lock = await redlock.acquire('foreign');
    // The lock is on the fleet's nodes, through the given clients (not on localhost:6379).
    expect(await onEveryNode(fleet, 'redlock:foreign', true)).toBe(true);
    await lock.release();
  } finally {
    await redlock.close();
  }
  for (const client of foreign) {
    expect(client.status).toBe('ready');
    expect(await client.ping()).toBe('PONG');
    client.disconnect();
  }
});

it('a Redis Cluster client is refused: Redlock needs independent masters', () => {
  const cluster = new Cluster([{ host: '127.0.0.1', port: fleet.nodes[0].port }], {
    lazyConnect: true,
  });
  try {
    expect(
      () => new Redlock([cluster as never, ...fleet.urls().slice(1)], { logger: quiet }),
    ).toThrow(RedlockConfigError);
    expect(
      () => new Redlock([cluster as never, ...fleet.urls().slice(1)], { logger: quiet }),
    ).toThrow(/nodes\[0\]: must be an independent Redis master.*Redis Cluster client/);
  } finally {
    cluster.disconnect();
  }
});

it('a client-like object that is neither an ioredis nor a node-redis client is refused, not read as options', () => {
  // Half a client: no isReady, no duplicate (a wrapper, a mock, another library's client).
  const nodeRedisLike = { isOpen: false, connect: async () => {}, sendCommand: async () => null };
  expect(
    () => new Redlock([nodeRedisLike as never, ...fleet.urls().slice(1)], { logger: quiet }),
  ).toThrow(
    /nodes\[0\].*looks like a Redis client but is neither an ioredis nor a node-redis client/,
  );
});
