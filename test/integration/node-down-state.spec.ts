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
    // ioredis emits each status it enters, on the next tick: read the node's state at each
    // reconnect attempt, and also on every turn in between.
    const readings: boolean[] = [];
    let attempts = 0;
    const onConnecting = () => {
      attempts++;
      readings.push(node!.isDown);
    };
    node.client.on('connecting', onConnecting);
    const sampler = setInterval(() => readings.push(node!.isDown), 0);
    // ioredis' default backoff (50 ms × attempt): several attempts in 1.5 s.
    await delay(1_500);
    clearInterval(sampler);
    node.client.off('connecting', onConnecting);
    expect(attempts).toBeGreaterThanOrEqual(3);
    expect(readings.filter((down) => !down)).toEqual([]);
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
    const readings: boolean[] = [];
    let attempts = 0;
    const onReconnecting = () => attempts++;
    redisClient.on('reconnecting', onReconnecting);
    const sampler = setInterval(() => readings.push(redisNode!.isDown), 0);
    await delay(1_000);
    clearInterval(sampler);
    redisClient.off('reconnecting', onReconnecting);
    expect(attempts).toBeGreaterThanOrEqual(3);
    expect(readings.filter((down) => !down)).toEqual([]);
    await server.restart();
    expect(await eventually(() => redisNode!.isDown === false, 5_000)).toBe(true);
  }, 20_000);
});
