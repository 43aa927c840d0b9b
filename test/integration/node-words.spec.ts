import { LockNotAcquiredError } from '../../lib';
import { eventually, RecordingLogger, sharedFleet } from './helpers';

/**
 * Words from the Redis client reach nobody without the library's sentence first (issue 25,
 * friction 5): ioredis' "Stream isn't writeable and enableOfflineQueue options is false" in
 * errors and health(), `connect ETIMEDOUT` for TLS to a plain Redis port. Real nodes, killed or
 * reached with the wrong protocol.
 */
const shared = sharedFleet(3);

describe("a node's trouble, in the library's words", () => {
  it('a node that is down: the outcome and health() say "not connected" and why, ioredis after', async () => {
    const redlock = shared.manager({ nodeTimeout: 200, quarantine: false });
    await redlock.ready();
    const node = shared.fleet.nodes[2];
    await node.kill();
    try {
      await eventually(async () => !(await redlock.health()).nodes[2].up, 3_000);
      const health = await redlock.health();
      // Why, once a reconnection was refused ("connection refused: no Redis server listens…");
      // the client's text, if any, only after our words.
      expect(health.nodes[2].error).toMatch(/^not connected[: ]/);
      // Two nodes answer: the attempt is made, and the third node's outcome is explained.
      const lock = await redlock.acquire('words', { wait: 0 });
      await lock.release();
      await shared.fleet.nodes[1].kill();
      const error = await redlock
        .acquire('words', { wait: 0 })
        .catch((e: unknown) => e as LockNotAcquiredError);
      expect(error).toBeInstanceOf(LockNotAcquiredError);
      for (const outcome of (error as LockNotAcquiredError).nodes.slice(1)) {
        expect(outcome.error ?? '').not.toMatch(/^Stream isn't writeable/);
      }
      // The message a caller may read names no node.
      expect((error as Error).message).not.toContain('127.0.0.1');
    } finally {
      await shared.fleet.nodes[1].restart();
      await node.restart();
    }
  });

  it('TLS to a plain Redis port: the log line says TLS mismatch before connect ETIMEDOUT', async () => {
    const logger = new RecordingLogger();
    const nodes = shared.fleet.nodes.map((n) => ({
      host: '127.0.0.1',
      port: n.port,
      tls: {},
      connectTimeout: 300,
    }));
    shared.manager({ logger, nodeTimeout: 100 }, nodes);
    expect(await eventually(() => logger.lines.some((l) => /is unreachable/.test(l)), 5_000)).toBe(
      true,
    );
    const line = logger.lines.find((l) => /is unreachable/.test(l))!;
    expect(line).toMatch(
      /^warn Redis node 127\.0\.0\.1:\d+ is unreachable: no TLS handshake within the connect timeout: is this a plain \(non-TLS\) Redis port reached with rediss:\/\/ or tls options\? \(.*ETIMEDOUT/,
    );
  });
});
