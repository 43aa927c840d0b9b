import { Redlock } from '../../lib';
import { simNodes } from '../sim/sim-node';
import { VirtualClock } from '../sim/virtual-clock';

/**
 * Issue 7 (delayed restarts): a node's age must count from when its INFO was read, not from
 * when a client first looked at the reading. A client that made no call for a while would
 * otherwise see every node that reconnected meanwhile as just started, take the fleet for
 * "all young" (the waiver for a freshly started fleet) and let a node that really did just
 * lose a held lock's key vote.
 */
/**
 * A fault campaign (seed 1433) let a second holder in through a node killed without persistence
 * 1.7 s after its whole fleet started: every node was younger than the young-fleet waiver, so the
 * restarted node voted at once. A restart this client witnessed (the node answered under another
 * run_id before) is never waived in.
 */
describe('quarantine: a witnessed restart in a young fleet', () => {
  it('the restarted node stays out though the whole fleet is younger than the waiver', async () => {
    const clock = new VirtualClock();
    const nodes = simNodes(5, clock);
    const started = clock.now();
    nodes.forEach((node) => {
      node.serverInfo = {
        runId: `${node.name}#0`,
        uptimeSeconds: 1,
        durable: false,
        readAt: started,
      };
    });
    const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };
    const redlock = new Redlock(nodes, { logger: quiet, clock, ttl: 10_000 });
    await clock.run(redlock.ready());
    // A holds r on s0, s1, s2 (s3 and s4 are unreachable for its attempt).
    for (const node of [nodes[3], nodes[4]])
      node.fault = () => ({ error: new Error('unreachable') });
    const held = await clock.run(redlock.acquire('r', { wait: 0 }));
    for (const node of [nodes[3], nodes[4]]) node.fault = undefined;
    // s2 restarts without its data; its adapter reads a new run_id on reconnect.
    await clock.advance(500);
    nodes[2].crash(true);
    nodes[2].serverInfo = { runId: 's2#1', uptimeSeconds: 0, durable: false, readAt: clock.now() };
    // B, through the same lock manager: s2, s3 and s4 would grant, but s2 must not vote.
    await expect(clock.run(redlock.tryAcquire('r'))).resolves.toBeNull();
    expect(held.isValid()).toBe(true);
    await clock.run(held.release());
    await clock.run(redlock.close());
  });
});
