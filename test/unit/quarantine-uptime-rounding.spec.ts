import { Redlock } from '../../lib';
import { votingNodes } from '../../lib/core/quarantine';
import { simNodes, type SimNode } from '../sim/sim-node';
import { VirtualClock } from '../sim/virtual-clock';

/**
 * Issue 7 (delayed restarts): Redis reports `uptime_in_seconds` as the difference of two whole
 * seconds (its cached clock minus its start time), so a server started at x.999 s already says
 * "1" at x+1.000 s. Taken at face value that admits a restarted node up to a second before its
 * quarantine is over: seen as a second holder, 700 ms early, in quarantine.spec through
 * node-redis clients. The age must count the reported uptime minus one second.
 */
describe('quarantine: uptime_in_seconds overstates a young server by up to a second', () => {
  const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };
  let clock: VirtualClock;
  let nodes: SimNode[];

  beforeEach(() => {
    clock = new VirtualClock();
    nodes = simNodes(3, clock);
    nodes.forEach((node, i) => {
      node.serverInfo = { runId: `n${i}#0`, uptimeSeconds: 86_400, durable: false, readAt: 0 };
    });
  });

  it('a node restarted 1 ms before its INFO said "1 s" stays out until its real age passes the quarantine', async () => {
    const holderManager = new Redlock(nodes, { logger: quiet, clock, quarantine: 10_000 });
    const rival = new Redlock(nodes, { logger: quiet, clock, quarantine: 10_000 });
    await clock.run(rival.ready());
    // The holder's key sits on nodes 0 and 1 (node 2 unreachable for that acquire).
    nodes[2].fault = (op) => (op === 'acquire' ? { error: new Error('unreachable') } : undefined);
    const holder = await clock.run(holderManager.acquire('r', { ttl: 60_000 }));
    nodes[2].fault = undefined;

    // Node 1 crashes, loses the key and comes back; its first INFO already says 1 s.
    nodes[1].crash(true);
    nodes[1].serverInfo = { runId: 'n1#1', uptimeSeconds: 1, durable: false, readAt: clock.now() };
    await clock.advance(9_100); // truly 9.1 s old: inside the 10 s quarantine

    expect(holder.isValid()).toBe(true);
    await expect(clock.run(rival.tryAcquire('r'))).resolves.toBeNull();

    await clock.advance(1_000); // truly 10.1 s old: admitted
    nodes[0].fault = () => ({ error: new Error('unreachable') });
    const lock = await clock.run(rival.tryAcquire('other'));
    expect(lock).not.toBeNull(); // nodes 1 and 2 vote: node 1 is out of quarantine
    nodes[0].fault = undefined;
    for (const m of [holderManager, rival]) await clock.run(m.close());
  });

  it('the all-young waiver and the admission both read the lower bound', () => {
    const quarantine = 10_000;
    // Started together: all vote while all are young (a fresh fleet) …
    const together = [9_500, 9_000, 9_500].map((ageMs) => ({ ageMs, durable: false }));
    expect(votingNodes(together, quarantine)).toEqual([true, true, true]);
    // … and once one is surely past the quarantine, the others wait for their own lower bound.
    const crossing = [10_000, 9_000, 10_000].map((ageMs) => ({ ageMs, durable: false }));
    expect(votingNodes(crossing, quarantine)).toEqual([true, false, true]);
  });

  it('with a quarantine shorter than the age resolution, a fleet under 2 s old is not split at random', () => {
    // ttl 600 ms; a fleet started a moment apart reads uptime 2 on one node and 1 on the others.
    const fresh = [1_000, 0, 0].map((ageMs) => ({ ageMs, durable: false }));
    expect(votingNodes(fresh, 600)).toEqual([true, true, true]);
    // Past 2 s the ages decide: a node that just restarted stays out for its quarantine.
    const restarted = [2_500, 0, 2_400].map((ageMs) => ({ ageMs, durable: false }));
    expect(votingNodes(restarted, 600)).toEqual([true, false, true]);
  });
});
