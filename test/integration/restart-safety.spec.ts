import { IoredisNode, LockNotAcquiredError, Redlock, type RedlockOptions } from '../../lib';
import { startFleet, type RedisFleet } from '../support/fleet';
import { RecordingLogger } from './helpers';

/**
 * Issue 16 defects 1 and 2 on real redis-server processes (test/unit/restart-safety.spec.ts has
 * all five in virtual time): a lock manager started after a node restarted without its data —
 * in a fleet that mixes durable nodes, or after a lease was lengthened by extend() — must not
 * count that node's vote while the lease it lost may still be held.
 */
describe('restarts hold for every client (real nodes)', () => {
  const fleets: RedisFleet[] = [];
  const managers: Redlock[] = [];
  const manager = (urls: string[], options: RedlockOptions = {}) => {
    const redlock = new Redlock(urls, {
      logger: new RecordingLogger(),
      nodeTimeout: 200,
      ...options,
    });
    managers.push(redlock);
    return redlock;
  };
  /**
   * B does not get the lock: held (the voting nodes see A's key) or unavailable (in a fleet
   * younger than maxTtl, B cannot tell which young node restarted, so none votes for it yet).
   */
  const notTaken = (attempt: Promise<unknown>) =>
    expect(
      attempt.catch((error: unknown) => {
        if (error instanceof LockNotAcquiredError && error.reason === 'unavailable') return null;
        throw error;
      }),
    ).resolves.toBeNull();
  afterEach(async () => {
    await Promise.all(managers.splice(0).map((m) => m.close()));
    await Promise.all(fleets.splice(0).map((f) => f.stop()));
  });

  it('defect 1: durable peers do not let a restarted node vote for a lock manager started after it', async () => {
    const durable = await startFleet(2, { aof: true });
    const plain = await startFleet(1);
    fleets.push(durable, plain);
    const urls = [...durable.urls(), ...plain.urls()];
    const a = manager(urls, { ttl: 8_000 });
    await a.ready();
    // A foreign key on durable node 0: A's lock lands on durable node 1 and the plain node.
    await durable.nodes[0].command('SET', 'redlock:r', 'other', 'PX', 60_000);
    const held = await a.acquire('r', { wait: 0 });
    await durable.nodes[0].command('DEL', 'redlock:r');
    await plain.nodes[0].restart();
    const b = manager(urls, { ttl: 8_000 });
    await b.ready();
    await notTaken(b.tryAcquire('r'));
    expect(held.isValid()).toBe(true);
  });

  it('defect 2: a lease lengthened by extend() keeps a restarted node out for a new lock manager', async () => {
    const fleet = await startFleet(3);
    fleets.push(fleet);
    const a = manager(fleet.urls(), { ttl: 1_000 });
    await a.ready();
    await fleet.nodes[0].command('SET', 'redlock:r', 'other', 'PX', 60_000);
    const held = await a.acquire('r', { wait: 0 });
    await fleet.nodes[0].command('DEL', 'redlock:r');
    await held.extend(30_000);
    await fleet.nodes[2].restart();
    // Past two ttls of the acquisition (the horizon it recorded), well inside the extension.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const b = manager(fleet.urls(), { ttl: 1_000 });
    await b.ready();
    await notTaken(b.tryAcquire('r'));
    expect(held.isValid()).toBe(true);
  });

  it('a dropped connection leaves the node without an identity until its INFO is read again', async () => {
    const fleet = await startFleet(1);
    fleets.push(fleet);
    const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };
    const node = IoredisNode.from(fleet.nodes[0].url, 1_000, quiet);
    try {
      await node.whenReady(5_000);
      const before = node.serverInfo?.runId;
      expect(before).toBeDefined();
      const seen: string[] = [];
      // Registered after the adapter's own listeners: what the lock manager would read then.
      node.client.on('close', () => seen.push(`close:${node.serverInfo?.runId}`));
      node.client.on('ready', () => seen.push(`ready:${node.serverInfo?.runId}`));
      await fleet.nodes[0].restart();
      await node.whenReady(5_000);
      for (let i = 0; i < 50 && node.serverInfo === undefined; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      // The old identity never outlives the connection: not at the drop, not at the reconnect
      // before the new INFO answered (a restarted server restoring an old stamp would vote).
      expect(seen.filter((s) => s.endsWith(`:${before}`))).toEqual([]);
      expect(node.serverInfo?.runId).toBeDefined();
      expect(node.serverInfo?.runId).not.toBe(before);
    } finally {
      await node.close();
    }
  });
});
