import { createClient } from 'redis';
import { Redlock, RedlockConfigError, type RedlockOptions } from '../../lib';
import { commandCounts, RecordingLogger, sharedFleet } from './helpers';

/**
 * Issue 24 item 3 (architecture.md §5.11: "the uncontended path pays nothing for the queue"): an
 * uncontended acquire + release cycle with `fairness: 'queue'` sends the nodes no more commands
 * than one with `fairness: 'off'`, counted by the servers themselves (`INFO commandstats`, which
 * also counts every command a script runs). Before: the fair release read the queue (`ZRANGE`) on
 * every node, 30 commands per cycle on 5 nodes against 25.
 */
describe('an uncontended fair cycle costs what a plain one does (5 nodes)', () => {
  const shared = sharedFleet(5);
  const CYCLES = 20;

  /** Commands per cycle of `CYCLES` acquire + release cycles on one key, after a warm-up. */
  async function perCycle(redlock: Redlock, key: string) {
    await redlock.ready();
    // The first cycle records lease horizons and subscribes: not the steady path measured here.
    await (await redlock.acquire(key)).release();
    await (await redlock.acquire(key)).release();
    for (const node of shared.fleet.nodes) await node.command('CONFIG', 'RESETSTAT');
    for (let i = 0; i < CYCLES; i++) await (await redlock.acquire(key)).release();
    const counts = await commandCounts(shared.fleet.nodes);
    let total = 0;
    for (const calls of counts.values()) total += calls;
    const byName = [...counts].map(([name, calls]) => `${name} ${calls / CYCLES}`).join(', ');
    return { total: total / CYCLES, byName };
  }

  async function nodeRedisClients() {
    const made = shared.fleet
      .urls()
      .map((url) =>
        createClient({ url, disableOfflineQueue: true, socket: { reconnectStrategy: 50 } }),
      );
    for (const client of made) client.on('error', () => undefined);
    await Promise.all(made.map((c) => c.connect()));
    shared.afterTest(async () => {
      for (const client of made) client.destroy();
    });
    return made;
  }

  it.each([['ioredis'], ['node-redis']])('through %s', async (adapter) => {
    const manager = async (options: RedlockOptions): Promise<Redlock> => {
      if (adapter === 'ioredis') return shared.manager(options);
      const redlock = new Redlock(await nodeRedisClients(), {
        logger: new RecordingLogger(),
        ...options,
      });
      shared.afterTest(() => redlock.close());
      return redlock;
    };
    // A long lease: restart detection records its lease horizons again only after most of a
    // lease (architecture.md §5.7), so no record falls inside the cycles counted, however slow the machine.
    const plain = await perCycle(await manager({ fairness: 'off', ttl: 60_000 }), 'cost:plain');
    if (adapter === 'node-redis') {
      // No release notifications through node-redis: no fair queue (node-redis.spec.ts).
      await expect(manager({ fairness: 'queue' })).rejects.toThrow(RedlockConfigError);
      expect(plain.total).toBeLessThanOrEqual(35);
      return;
    }
    const fair = await perCycle(await manager({ fairness: 'queue', ttl: 60_000 }), 'cost:fair');
    if (process.env.FAIR_REPORT) {
      process.stdout.write(
        `${adapter} commands per uncontended cycle: off ${plain.total} (${plain.byName}); ` +
          `queue ${fair.total} (${fair.byName})\n`,
      );
    }
    // Through ioredis, 5 per node with either: the acquire (SET NX), the release script, its GET
    // (MGET for the fair one: the key, its queue mark and the plain waiters' mark), DEL and
    // PUBLISH. (The node-redis adapter acquires through the acquire script, EVALSHA, GET, SET:
    // 7 per node.)
    expect(plain.total).toBeLessThanOrEqual(25);
    expect(fair.total).toBeLessThanOrEqual(plain.total);
  });
  it('a hand-off to a waiter of the same manager, with nobody queued on the nodes, reads no clock', async () => {
    // The swap needs the waiter's start only to compare it with a queued group or a plain
    // waiter; with neither, HAND_OFF_SCRIPT swaps without TIME (S2: 4.1 -> 2.3 TIME per success).
    const redlock = shared.manager({ fairness: 'queue', ttl: 60_000 });
    await redlock.ready();
    await (await redlock.acquire('cost:swap')).release();
    const first = await redlock.acquire('cost:swap');
    const next = redlock.acquire('cost:swap', { wait: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    for (const node of shared.fleet.nodes) await node.command('CONFIG', 'RESETSTAT');
    await first.release();
    const handed = await next;
    const counts = await commandCounts(shared.fleet.nodes);
    await handed.release();
    // Handed over by the swap (a SET on every node), not taken by an attempt of its own.
    expect(counts.get('set')).toBe(shared.fleet.nodes.length);
    expect(counts.get('time') ?? 0).toBe(0);
  });
});
