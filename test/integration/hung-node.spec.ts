import { Redlock, type Lock } from '../../lib';
import { startFleet, type RedisFleet } from '../support/fleet';
import { startLatencyProxy, type LatencyProxy } from '../support/latency-proxy';
import { delay, eventually, RecordingLogger, timed } from './helpers';

/**
 * A hung node costs nothing (issue 18 item 2): a node that stops answering within `nodeTimeout`
 * gets no lock traffic until a probe finds it answering again. Real faults: a SIGSTOPped
 * redis-server, and a proxy that stops delivering (a black-holed path). Both keep the TCP
 * connection open, so no connection event says anything is wrong.
 */
const NODE_TIMEOUT = 250;
const TTL = 1_000;
const CYCLES = 50;
const HUNG = 2;

describe('a hung node (5 real nodes)', () => {
  let fleet: RedisFleet;
  let redlock: Redlock | undefined;
  let proxy: LatencyProxy | undefined;
  let other: Redlock | undefined;
  /** The URLs the lock managers of a test use (a proxy's in place of the hung node's). */
  let urls: string[] = [];

  beforeEach(async () => {
    fleet = await startFleet(5);
  });

  afterEach(async () => {
    await redlock?.close();
    redlock = undefined;
    await other?.close();
    other = undefined;
    await proxy?.close();
    proxy = undefined;
    await fleet?.stop();
  });

  const manager = (urls: string[]) =>
    new Redlock(urls, {
      nodeTimeout: NODE_TIMEOUT,
      ttl: TTL,
      retryDelay: 20,
      retryJitter: 20,
      logger: new RecordingLogger(),
    });

  /** Lock scripts the node has run (EVALSHA/EVAL calls), read once it answers. */
  const lockCommands = async (index: number) => {
    const info = String(await fleet.nodes[index].command('INFO', 'commandstats'));
    let calls = 0;
    for (const [, n] of info.matchAll(/^cmdstat_eval(?:sha)?:calls=(\d+)/gm)) calls += Number(n);
    return calls;
  };

  /** 50 sequential acquire → release cycles on one resource; the time they took. */
  const cycles = async (lockManager: Redlock, resource: string) => {
    const { ms } = await timed(async () => {
      for (let i = 0; i < CYCLES; i++) {
        const lock: Lock = await lockManager.acquire(resource, { wait: 5_000 });
        expect(lock.remainingMs()).toBeGreaterThan(0);
        await lock.release();
      }
    });
    return ms;
  };

  /**
   * The hang lasts longer than the leases (2 ttls) before the cycles start: a node frozen for
   * seconds, not one that froze a moment ago. Bound: half a node timeout per cycle on average,
   * far above a healthy cycle (a few ms) and far below a cycle that waits for the node once.
   */
  async function hungForAWhile(
    hang: () => Promise<void>,
    heal: () => Promise<void>,
    label: string,
  ): Promise<void> {
    const lockManager = redlock!;
    await (await lockManager.acquire('warm-up')).release();
    // Taken before the hang (so its key is on the hung node too) and released while the node
    // hangs: that release must still reach the node. A lease far longer than the test, by a
    // second lock manager (its longer horizon must not cover the first one's rounds).
    const holder = (other = manager(urls));
    const held = await holder.acquire('held', { ttl: 60_000 });
    const healthyMs = await cycles(lockManager, 'healthy');
    const before = await lockCommands(HUNG);
    await hang();
    await delay(2 * TTL);
    // One cycle while the node owes its answer for nodeTimeout: found hung. From then on it
    // gets no lock traffic (the landed code sent it every acquire and every release).
    await (await lockManager.acquire('found')).release();
    await delay(NODE_TIMEOUT + 100);
    const hungMs = await cycles(lockManager, 'r');
    await held.release();
    await heal();
    await delay(300); // what was held on the path (or queued on the node) lands
    const sentWhileHung = (await lockCommands(HUNG)) - before;
    console.log(
      `${label}: ${CYCLES} cycles healthy ${healthyMs.toFixed(0)} ms, hung ${hungMs.toFixed(0)} ms ` +
        `(bound ${(CYCLES * NODE_TIMEOUT) / 2} ms); lock scripts the hung node ran once healed: ${sentWhileHung}`,
    );
    expect(hungMs).toBeLessThan((CYCLES * NODE_TIMEOUT) / 2);
    // Lock traffic to the hung node stopped (the landed code sent it every acquire and every
    // release: about 2 × 50). Allowed: the 'found' cycle, the held lock's release, a probe's
    // share of anything else.
    expect(sentWhileHung).toBeLessThan(CYCLES / 5);
    // It rejoins: probed, found answering, sent lock traffic again.
    expect(
      await eventually(async () => {
        const lock = await lockManager.acquire('rejoined');
        const there = (await fleet.nodes[HUNG].command('GET', 'redlock:rejoined')) === lock.value;
        await lock.release();
        return there;
      }, 5_000),
    ).toBe(true);
    // Safety: no lock key of ours is left on it (the held lock's key was there before the hang).
    expect(
      await eventually(async () => {
        const keys = (await fleet.nodes[HUNG].command('KEYS', 'redlock:*')) as string[];
        // The membership's own keys (a NUL in the name: no lock's) stay.
        return keys.filter((key) => !key.includes('\u0000')).length === 0;
      }, 5_000),
    ).toBe(true);
  }

  it('SIGSTOPped: 50 acquire + release cycles take less than 50 × nodeTimeout / 2, and it rejoins after SIGCONT', async () => {
    urls = fleet.urls();
    redlock = manager(urls);
    await hungForAWhile(
      () => fleet.nodes[HUNG].pause(),
      () => fleet.nodes[HUNG].resume(),
      'SIGSTOP',
    );
  });

  it('black-holed by a proxy: the same, and it rejoins once the path delivers again', async () => {
    urls = fleet.urls();
    proxy = await startLatencyProxy(fleet.nodes[HUNG].port, 0);
    urls[HUNG] = proxy.url;
    redlock = manager(urls);
    const path = proxy;
    await hungForAWhile(
      async () => path.setBlackHole(true),
      async () => path.setBlackHole(false),
      'black hole',
    );
  });
});
