import { LockNotAcquiredError, type Lock } from '../../lib';
import { startFleet, type RedisFleet } from '../support/fleet';
import { delay } from './helpers';
import {
  attempt,
  linesNaming,
  managers,
  nodeName,
  occupy,
  repeatedLines,
  vacate,
} from './restart-findings';

/**
 * Issue 23, finding 6 (d, e): one node restarted empty while another is down.
 * (d) On 0cce7fe: "does not count toward a quorum for 39137 ms", then "waits until it has been up
 *     for the longest lease… (20000 ms)" every second; the quarantine never ended while requests
 *     kept coming (each one recorded a new lease horizon), so no lock within 60 s. A restarted
 *     minority node is out for at most the fleet's shared bound plus drift, and each decision is
 *     logged once.
 * (e) Meanwhile every request answered 503 after its full 10 s `wait`. While quarantine leaves
 *     no quorum, an acquisition fails at once as `unavailable`, with the time left.
 */
describe('finding 6d-e: a node restarted empty while another is down (3 real nodes, no persistence)', () => {
  const fleets: RedisFleet[] = [];
  const created = managers();
  afterAll(async () => {
    await Promise.all(fleets.map((fleet) => fleet.stop()));
  });
  /** The fleet's shared bound: every client uses it as its lease. */
  const MAX_TTL = 3_000;
  const OPTIONS = { ttl: MAX_TTL, maxTtl: MAX_TTL };

  /**
   * A lease on r held on exactly {b, c}; then b goes down and c restarts empty, so the lease is
   * only on b, which does not answer. Returns the lease and when c answered again.
   */
  const scene = async () => {
    const fleet = await startFleet(3);
    fleets.push(fleet);
    const [a, b, c] = fleet.nodes;
    const holder = created.create(fleet.urls(), OPTIONS).redlock;
    // The application's lock manager, started before the faults.
    const app = created.create(fleet.urls(), OPTIONS);
    await Promise.all([holder.ready(), app.redlock.ready()]);
    await occupy(a, 'r');
    const held = await holder.acquire('r', { wait: 3_000 });
    await vacate(a, 'r');
    // When the application's lock manager saw b go down: how long a node has been silent is
    // counted from there (membership.ts quorumAt), not from the kill.
    const bDown = new Promise<number>((resolve) =>
      app.redlock.on('nodeDown', (event) => {
        if (event.node === nodeName(b)) resolve(performance.now());
      }),
    );
    await b.kill();
    // When the application's lock manager has c answering again (reconnected).
    const cUp = new Promise<void>((resolve) =>
      app.redlock.on('nodeUp', (event) => {
        if (event.node === nodeName(c)) resolve();
      }),
    );
    await c.restart();
    const restartedAt = performance.now();
    return {
      fleet,
      c,
      held,
      app,
      restartedAt,
      cUp: Promise.race([cUp, delay(5_000)]),
      bDown: Promise.race([bDown, delay(5_000).then(() => performance.now())]),
    };
  };

  it('(d) a lock on the two live nodes no later than maxTtl × 1.01 + 2 s after the restart, and one quarantine line for the node', async () => {
    const { c, held, app, restartedAt } = await scene();
    const bound = MAX_TTL * 1.01 + 2_000;
    // Requests keep coming, as they would to an app: one attempt on r every 250 ms.
    const overlaps: string[] = [];
    let granted: Lock | undefined;
    const answers = new Map<string, number>();
    while (granted === undefined && performance.now() - restartedAt < bound + 5_000) {
      const outcome = await attempt(() => app.redlock.acquire('r', { wait: 0 }));
      if (typeof outcome === 'string') {
        answers.set(outcome, (answers.get(outcome) ?? 0) + 1);
        await delay(250);
      } else {
        granted = outcome;
        if (held.remainingMs() > 0) {
          overlaps.push(
            `r taken while the lease on it had ${Math.round(held.remainingMs())} ms left`,
          );
        }
      }
    }
    const grantedAfter = performance.now() - restartedAt;
    await granted?.release();
    const lines = linesNaming(app.logger, c);
    console.log(
      `finding 6d: ${granted ? `a lock ${Math.round(grantedAfter)} ms after c's restart` : `no lock within ${Math.round(grantedAfter)} ms of c's restart`} (bound ${bound} ms); refused meanwhile: ${JSON.stringify(Object.fromEntries(answers))}; ${lines.length} lines naming c:\n${lines.join('\n')}`,
    );
    expect(overlaps).toEqual([]);
    expect(granted).toBeDefined();
    expect(grantedAfter).toBeLessThanOrEqual(bound);
    // One line per decision: none repeated (numbers aside), one warning that c is left out.
    expect(repeatedLines(lines)).toEqual([]);
    const quarantineWarnings = lines.filter(
      (line) => line.startsWith('warn ') && !/unreachable|did not answer/.test(line),
    );
    expect(quarantineWarnings.length).toBeLessThanOrEqual(1);
  }, 40_000);

  // When the quarantine ends within the wait, the acquisition waits and gets the lock ((d) shows
  // it, a lock ~maxTtl after the restart); when it ends only after the wait, it fails at once.
  it('(e) while quarantine leaves no quorum until after the wait, acquire({ wait: 1 s }) fails at once as unavailable with the time left', async () => {
    const { app, cUp, bDown } = await scene();
    await cUp;
    // a answers, b is down, c answers but restarted less than a lease ago: no quorum can count.
    // b has been down a second as the lock manager saw it: a node merely reconnecting (or
    // stalled) is not taken for gone, since its answer could end c's wait at once
    // (membership.ts quorumAt). A fixed second after c came back was not always that second
    // with both cores busy (1 run in 3 waited out the whole 1 s wait).
    await delay(Math.max(0, (await bDown) + 1_200 - performance.now()));
    const start = performance.now();
    const error = await app.redlock.acquire('job', { wait: 1_000 }).then(
      (lock) => lock,
      (e: unknown) => e,
    );
    const ms = performance.now() - start;
    const shown =
      error instanceof LockNotAcquiredError
        ? `${error.reason}, retryAfterMs ${error.retryAfterMs}: ${error.message}`
        : String(error);
    console.log(`finding 6e: acquire({ wait: 1 s }) answered after ${Math.round(ms)} ms: ${shown}`);
    expect(error).toBeInstanceOf(LockNotAcquiredError);
    // At once: well before the 1 s wait (on 0cce7fe it answered only after the whole wait).
    expect(ms).toBeLessThanOrEqual(500);
    const refused = error as LockNotAcquiredError;
    expect(refused.reason).toBe('unavailable');
    expect(refused.retryAfterMs).toBeGreaterThan(0);
    // No more than the quarantine can last (maxTtl × 1.01 + 1 s after the restart).
    expect(refused.retryAfterMs).toBeLessThanOrEqual(MAX_TTL * 1.01 + 1_000);
  }, 40_000);
});
