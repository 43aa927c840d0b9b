import type { Lock, Redlock } from '../../lib';
import { startFleet, type FleetNode, type RedisFleet } from '../support/fleet';
import { delay } from './helpers';
import { attempt, managers, nodeName, occupy, vacate } from './restart-findings';

/**
 * Issue 23, finding 5: fencing tokens went backwards inside the documented assumption. One node
 * restarts without persistence while another is unreachable (paused: nothing is lost on it). The
 * restarted node was admitted with the fence floor of the one peer that answered, and the next
 * token was lower than the last one issued. A node whose fence floor could not be restored from
 * enough peers takes no part in fenced acquisitions until it can (architecture.md §5.6).
 *
 * Every node here runs on one machine, so tokens seeded from the nodes' clocks (TIME in µs) rise
 * with it. A node whose clock runs ahead is what makes the last token high: b's counter for r is
 * set an hour ahead by hand, as b's TIME would have seeded it.
 */
describe('finding 5: fencing tokens across a restart while a peer is unreachable (3 real nodes, no persistence)', () => {
  let fleet: RedisFleet;
  const created = managers();
  beforeAll(async () => {
    fleet = await startFleet(3);
  });
  afterAll(async () => {
    await fleet?.stop();
  });
  const OPTIONS = { ttl: 2_000, maxTtl: 2_000, fencing: true };

  /** b's clock as a fence counter would read it, an hour ahead (µs). */
  const anHourAhead = async (node: FleetNode) => {
    const [seconds, micros] = (await node.command('TIME')) as [string, string];
    return Number(seconds) * 1_000_000 + Number(micros) + 3_600_000_000;
  };

  it('tokens never decrease: with b paused the next fenced lock is refused or higher, and once b is back they rise again', async () => {
    const [a, b, c] = fleet.nodes;
    const urls = fleet.urls();
    const tokens: { token: number; by: string }[] = [];
    const issued = (lock: Lock, by: string) => tokens.push({ token: lock.fencingToken!, by });
    const m = created.create(urls, OPTIONS).redlock;
    await m.ready();
    const warmUp = await m.acquire('r');
    issued(warmUp, 'a lock on every node');
    await warmUp.release();
    // b's counter as a node with a fast clock leaves it; the next lock lands on exactly {b, c}.
    const ahead = await anHourAhead(b);
    await b.command('SET', 'redlock:r\u0000fence', String(ahead));
    await occupy(a, 'r');
    const high = await m.acquire('r', { wait: 3_000 });
    issued(high, 'a lock on {b, c}');
    await high.release();
    await vacate(a, 'r');
    const last = high.fencingToken!;

    // b becomes unreachable (nothing lost on it); c restarts empty.
    await b.pause();
    const answers: string[] = [];
    try {
      await c.restart();
      const restartedAt = performance.now();
      const rejoined = new Promise<void>((resolve) =>
        m.on('nodeRejoined', (event) => {
          if (event.node === nodeName(c)) resolve();
        }),
      );
      // Long enough for any quarantine of c (maxTtl × 1.01 + 1 s) to be over, or for c to rejoin.
      await Promise.race([rejoined, delay(5_000)]);
      await delay(200);
      const fresh = created.create(urls, OPTIONS).redlock;
      await fresh.ready();
      // A fenced acquisition on a and c: refused, or a token above every one issued.
      for (const [name, manager] of [
        ['the lock manager that saw the restart', m],
        ['a lock manager started after it', fresh],
      ] as [string, Redlock][]) {
        const outcome = await attempt(() => manager.acquire('r', { wait: 1_000 }));
        if (typeof outcome === 'string') {
          answers.push(`${name}: ${outcome}`);
        } else {
          issued(outcome, `${name}, b paused`);
          answers.push(`${name}: token ${outcome.fencingToken}`);
          await outcome.release();
        }
      }
      console.log(
        `finding 5: ${Math.round(performance.now() - restartedAt)} ms after c's restart, with b paused: ${answers.join('; ')}`,
      );
    } finally {
      await b.resume();
    }
    // b is back: fenced locks work again, above every token issued.
    for (let i = 0; i < 3; i++) {
      const lock = await m.acquire('r', { wait: 10_000 });
      issued(lock, 'b back');
      await lock.release();
    }
    const fresh = created.create(urls, OPTIONS).redlock;
    const lock = await fresh.acquire('r', { wait: 10_000 });
    issued(lock, 'b back, a new lock manager');
    await lock.release();

    // Each token above every token issued before it (not only the one just before).
    const decreases: string[] = [];
    tokens.forEach((entry, i) => {
      if (i === 0) return;
      const before = tokens.slice(0, i).reduce((x, y) => (y.token > x.token ? y : x));
      if (entry.token <= before.token) {
        decreases.push(
          `${entry.by}: token ${entry.token}, ${before.token - entry.token} below ${before.token} (${before.by})`,
        );
      }
    });
    // The scene holds: the lock on {b, c} read b's counter (if the counter's key changes, so
    // must the key written above).
    expect(last).toBeGreaterThan(ahead);
    expect(decreases).toEqual([]);
  });
});
