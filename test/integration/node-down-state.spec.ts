import { createClient } from 'redis';
import { NodeRedisNode } from '../../lib';
import { IoredisNode } from '../../lib/core/nodes/ioredis-node';
import { startFleet, type RedisFleet } from '../support/fleet';
import { delay, eventually, RecordingLogger } from './helpers';

/**
 * A node whose server is gone is down until it answers again (node.ts `isDown`: "not yet
 * re-established"). ioredis passes through `connecting` on every reconnect attempt; a reading
 * taken then once said "not down", which restarted the lock manager's "silent for a second"
 * clock (membership.ts quorumAt), so an acquisition that should have failed at once as
 * `unavailable` waited out its whole `wait` (restart-findings-6d (e), 1 quiet CI run).
 */
/** An event source: the ioredis and node-redis clients alike. */
interface Emitter {
  on(event: string, listener: () => void): unknown;
  off(event: string, listener: () => void): unknown;
}

/**
 * Reads `isDown` for `ms` on every turn of the event loop and at each reconnect attempt (the
 * client's `event`, emitted as it tries): how many attempts there were and how many readings
 * said "not down".
 */
async function readWhileReconnecting(
  isDown: () => boolean,
  client: Emitter,
  event: string,
  ms: number,
): Promise<{ attempts: number; notDown: number }> {
  let attempts = 0;
  let notDown = 0;
  const read = () => {
    if (!isDown()) notDown++;
  };
  const onAttempt = () => {
    attempts++;
    read();
  };
  client.on(event, onAttempt);
  const sampler = setInterval(read, 0);
  await delay(ms);
  clearInterval(sampler);
  client.off(event, onAttempt);
  return { attempts, notDown };
}

describe('a killed node reads as down through its reconnect attempts (1 real node, each adapter)', () => {
  let fleet: RedisFleet | undefined;
  let node: IoredisNode | undefined;
  let redisClient: ReturnType<typeof createClient> | undefined;
  let redisNode: NodeRedisNode | undefined;
  afterAll(async () => {
    await node?.close();
    await redisNode?.close();
    redisClient?.destroy();
    await fleet?.stop();
  });

  it('isDown is true at every reconnect attempt, and false once the server answers again', async () => {
    fleet = await startFleet(1);
    const server = fleet.nodes[0];
    node = IoredisNode.from(fleet.urls()[0], 200, new RecordingLogger());
    await node.whenReady(2_000);
    expect(node.isDown).toBe(false);
    await server.kill();
    expect(await eventually(() => node!.isDown === true, 2_000)).toBe(true);
    // ioredis emits each status it enters, on the next tick (`connecting`: an attempt); its
    // default backoff (50 ms × attempt) makes several attempts in 1.5 s.
    const seen = await readWhileReconnecting(() => node!.isDown, node.client, 'connecting', 1_500);
    expect(seen.attempts).toBeGreaterThanOrEqual(3);
    expect(seen.notDown).toBe(0);
    // Not simply "always down": back up once the server answers.
    await server.restart();
    expect(
      await eventually(() => node!.isDown === false && node!.client.status === 'ready', 5_000),
    ).toBe(true);
  }, 20_000);

  it('node-redis: isDown is true on every turn while it reconnects, false once it answers again', async () => {
    fleet ??= await startFleet(1);
    const server = fleet.nodes[0];
    if (!server.running()) await server.restart();
    redisClient = createClient({
      url: fleet.urls()[0],
      disableOfflineQueue: true,
      socket: { reconnectStrategy: 50 },
    });
    redisClient.on('error', () => undefined);
    await redisClient.connect();
    redisNode = new NodeRedisNode(redisClient);
    await redisNode.whenReady(2_000);
    expect(redisNode.isDown).toBe(false);
    await server.kill();
    expect(await eventually(() => redisNode!.isDown === true, 2_000)).toBe(true);
    const seen = await readWhileReconnecting(
      () => redisNode!.isDown,
      redisClient,
      'reconnecting',
      1_000,
    );
    expect(seen.attempts).toBeGreaterThanOrEqual(3);
    expect(seen.notDown).toBe(0);
    await server.restart();
    expect(await eventually(() => redisNode!.isDown === false, 5_000)).toBe(true);
  }, 20_000);
});
