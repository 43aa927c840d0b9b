import Redis from 'ioredis';
import { createClient } from 'redis';
import { NodeRedisNode } from '../../lib';
import { IoredisNode } from '../../lib/core/nodes/ioredis-node';
import { DescribedNodeError } from '../../lib/core/nodes/node-errors';
import { startFleet, type RedisFleet } from '../support/fleet';
import { delay, eventually, RecordingLogger } from './helpers';

/**
 * A command for a node whose connection is gone is refused by the adapter itself, in the
 * library's words, without reaching ioredis: ioredis refuses it too (no offline queue), but
 * built an Error with its stack for every command, and the adapter described each anew — with
 * one node of five down, 40 µs of client CPU per lock cycle (bench S3: 0.62x the healthy rate).
 * A caller's client that queues while offline keeps doing so. The same for node-redis, whose
 * clients are always the caller's: refused where node-redis would refuse (closed, or not ready
 * without an offline queue), not given to it. 1 real node, killed and restarted.
 */
const GONE = new Set(['reconnecting', 'close', 'end']);

/** Records the client's status at each command ioredis is given. */
function watchSends(client: Redis): string[] {
  const statuses: string[] = [];
  const send = client.sendCommand.bind(client);
  jest.spyOn(client, 'sendCommand').mockImplementation((command, stream) => {
    statuses.push(client.status);
    return send(command, stream);
  });
  return statuses;
}

/** Records, for each command node-redis is given, whether the client was ready. */
function watchNodeRedis(client: ReturnType<typeof createClient>): boolean[] {
  const given: boolean[] = [];
  const send = client.sendCommand.bind(client);
  jest.spyOn(client, 'sendCommand').mockImplementation((...args: Parameters<typeof send>) => {
    given.push(client.isReady);
    return send(...args);
  });
  return given;
}

describe('commands for a node that is gone (1 real node)', () => {
  let fleet: RedisFleet;
  const closing: Array<() => Promise<unknown>> = [];
  beforeAll(async () => {
    fleet = await startFleet(1);
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    for (const close of closing.splice(0)) await close();
    if (!fleet.nodes[0].running()) await fleet.nodes[0].restart();
  });
  afterAll(() => fleet.stop());

  /**
   * A node-redis client (with or without its offline queue) and its node, ready, then the node
   * killed and the client reconnecting; `given` records each command node-redis is given.
   */
  async function nodeRedisOffline(disableOfflineQueue: boolean) {
    const url = fleet.urls()[0];
    const client = createClient({ url, disableOfflineQueue, socket: { reconnectStrategy: 50 } });
    client.on('error', () => undefined);
    await client.connect();
    closing.push(async () => client.isOpen && client.destroy());
    const node = new NodeRedisNode(client);
    await node.whenReady(2_000);
    await fleet.nodes[0].kill();
    expect(await eventually(() => client.isOpen && !client.isReady, 2_000)).toBe(true);
    return { client, node, given: watchNodeRedis(client) };
  }

  it('are refused without ioredis, in the same words, and sent again once it is back', async () => {
    const node = IoredisNode.from(fleet.urls()[0], 200, new RecordingLogger());
    closing.push(() => node.close());
    await node.whenReady(2_000);
    await fleet.nodes[0].kill();
    expect(await eventually(() => GONE.has(node.client.status), 2_000)).toBe(true);
    const sentWhile = watchSends(node.client);
    let whileGone = 0;
    const errors: unknown[] = [];
    const until = Date.now() + 600;
    while (Date.now() < until) {
      if (GONE.has(node.client.status)) whileGone++;
      errors.push(await node.acquire(['refused'], 'v', 1_000).catch((e: unknown) => e));
      await delay(1);
    }
    // Enough of them while the connection was gone for the rule to matter, and ioredis given
    // none of those (only those sent while it was connecting again, if any).
    expect(whileGone).toBeGreaterThanOrEqual(20);
    expect(sentWhile.filter((status) => GONE.has(status))).toEqual([]);
    // Every one refused in the library's words (ioredis' after them, until a reconnection was
    // refused), and once one was, with why: the refusal is described again when its cause
    // changes, not kept from before.
    for (const error of errors) {
      expect(error).toBeInstanceOf(DescribedNodeError);
      expect((error as Error).message).toMatch(
        /^not connected(: connection refused| \(Stream isn't writeable)/,
      );
    }
    expect((errors.at(-1) as Error).message).toMatch(/^not connected: connection refused/);
    await fleet.nodes[0].restart();
    expect(await eventually(() => node.client.status === 'ready', 5_000)).toBe(true);
    await expect(node.acquire(['refused'], 'v', 1_000)).resolves.toEqual({ acquired: true });
    expect(sentWhile.at(-1)).toBe('ready');
  }, 20_000);

  it("a caller's client with an offline queue still queues: the command waits for the node", async () => {
    const client = new Redis(fleet.urls()[0]);
    client.on('error', () => undefined);
    const node = IoredisNode.from(client, 200, new RecordingLogger());
    closing.push(async () => client.disconnect());
    await node.whenReady(2_000);
    await fleet.nodes[0].kill();
    expect(await eventually(() => client.status === 'reconnecting', 2_000)).toBe(true);
    const sentWhile = watchSends(client);
    const queued = node.acquire(['queued'], 'v', 1_000);
    expect(sentWhile).toEqual(['reconnecting']);
    await fleet.nodes[0].restart();
    await expect(queued).resolves.toEqual({ acquired: true });
  }, 20_000);

  it('node-redis without an offline queue: refused without node-redis while it would refuse them, in the same words', async () => {
    // node-redis refuses a command on a client that is not ready and has no offline queue
    // (`disableOfflineQueue`, the setting the README asks for) with "The client is offline"
    // (ClientOfflineError), and one on a closed client with "The client is closed": a node that
    // is down, not one that answered with an error. It builds an Error for each, as ioredis did.
    const { client, node, given } = await nodeRedisOffline(true);
    let whileOffline = 0;
    const errors: unknown[] = [];
    const until = Date.now() + 600;
    while (Date.now() < until) {
      if (client.isOpen && !client.isReady) whileOffline++;
      errors.push(await node.acquire(['offline'], 'v', 1_000).catch((e: unknown) => e));
      await delay(1);
    }
    expect(whileOffline).toBeGreaterThanOrEqual(20);
    expect(given.filter((ready) => !ready)).toEqual([]);
    for (const error of errors) {
      expect(error).toBeInstanceOf(DescribedNodeError);
      expect((error as DescribedNodeError).problem).toBe('not connected');
      expect((error as Error).message).toBe('not connected (The client is offline)');
    }
    await fleet.nodes[0].restart();
    expect(await eventually(() => client.isReady, 5_000)).toBe(true);
    await expect(node.acquire(['offline'], 'v', 1_000)).resolves.toEqual({ acquired: true });
    expect(given.at(-1)).toBe(true);
    const sent = given.length;
    client.destroy();
    const closed = await node.acquire(['closed'], 'v', 1_000).catch((e: unknown) => e);
    expect((closed as Error).message).toBe('not connected (The client is closed)');
    expect(given.length).toBe(sent);
  }, 20_000);

  it('node-redis with its offline queue: the command still waits for the node', async () => {
    const { node, given } = await nodeRedisOffline(false);
    const queued = node.acquire(['queued'], 'v', 1_000);
    expect(given).toEqual([false]);
    await fleet.nodes[0].restart();
    await expect(queued).resolves.toEqual({ acquired: true });
  }, 20_000);
});
