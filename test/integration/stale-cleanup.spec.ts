import { Redlock } from '../../lib';
import { ACQUIRE_SCRIPT } from '../../lib/core/protocol/scripts';
import { startLatencyProxy, type LatencyProxy } from '../support/latency-proxy';
import { delay, RecordingLogger, sharedFleet } from './helpers';

/**
 * Issue 6 item 1, on real Redis: the cleanup of a failed attempt re-sent (EVALSHA → NOSCRIPT →
 * EVAL) after the next attempt's acquire on the same connection. On the landed code, where
 * every attempt of one acquire() shared one owner value, the late cleanup deleted the keys the
 * next attempt had counted: the lock was left on 2 of 5 nodes while its holder believed it held
 * a quorum, and a rival got in.
 */
describe('a late cleanup of a failed attempt (real nodes, NOSCRIPT reordering)', () => {
  const shared = sharedFleet(5);
  let proxies: LatencyProxy[] = [];
  afterEach(async () => {
    await Promise.all(proxies.map((p) => p.close()));
    proxies = [];
  });

  it('cannot revoke the votes of the next attempt: the lock stays on a quorum, no rival gets in', async () => {
    const fleet = shared.fleet;
    // Nodes 3 and 4 are 80 ms away each way, so a command's reply takes 160 ms.
    proxies = await Promise.all([3, 4].map((i) => startLatencyProxy(fleet.nodes[i].port, 80)));
    const nodes = [...fleet.urls().slice(0, 3), ...proxies.map((p) => p.url)];
    const redlock = shared.manager(
      { nodeTimeout: 250, ttl: 10_000, retryDelay: 60, retryJitter: 0 },
      nodes,
    );
    await (await redlock.acquire('warm-up')).release();
    // Their script cache loses the release script (a SCRIPT FLUSH, or Redis ≥ 7.4 evicting it),
    // so the cleanup release takes the NOSCRIPT → EVAL path, which re-sends it after later commands.
    for (const i of [3, 4]) {
      await fleet.nodes[i].command('SCRIPT', 'FLUSH');
      await fleet.nodes[i].command('SCRIPT', 'LOAD', ACQUIRE_SCRIPT.source);
    }
    // A rival holds nodes 0-2: attempt 1 fails at once, decided without nodes 3 and 4 (their
    // acquire lands there, unanswered, and gets a cleanup release). Nodes 1 and 2 free up after
    // 30 ms; node 0 after 700 ms.
    await fleet.nodes[0].command('SET', 'redlock:r', 'rival', 'PX', 700);
    await fleet.nodes[1].command('SET', 'redlock:r', 'rival', 'PX', 30);
    await fleet.nodes[2].command('SET', 'redlock:r', 'rival', 'PX', 30);
    const lock = await redlock.acquire('r', { wait: 3_000 });
    const holders = async () => {
      let count = 0;
      for (const node of fleet.nodes)
        if ((await node.command('GET', 'redlock:r')) === lock.value) count++;
      return count;
    };
    // Let every late command land (the re-sent cleanup arrives ~240 ms after it was first sent).
    await delay(500);
    expect(lock.remainingMs()).toBeGreaterThan(5_000);
    expect(await holders()).toBeGreaterThanOrEqual(3);
    // Once the rival's last key (node 0) is gone, nobody else may take what we hold.
    await delay(400);
    const other = new Redlock(fleet.urls(), { logger: new RecordingLogger() });
    try {
      await expect(other.tryAcquire('r')).resolves.toBeNull();
    } finally {
      await other.close();
    }
    await lock.release();
  });
});
