import { Redlock, type RedlockOptions } from '../../lib';
import { simNodes, type SimNode } from '../sim/sim-node';
import { VirtualClock } from '../sim/virtual-clock';

/**
 * Issue 7 (delayed restarts): a node's age must count from when its INFO was read, not from
 * when a client first looked at the reading. A client that made no call for a while would
 * otherwise see every node that reconnected meanwhile as just started, take the fleet for
 * "all young" (the waiver for a freshly started fleet) and let a node that really did just
 * lose a held lock's key vote.
 */
describe('quarantine: an idle client dates node ages from the reading', () => {
  const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };
  let clock: VirtualClock;
  let nodes: SimNode[];
  const managers: Redlock[] = [];
  const manager = (options: RedlockOptions = {}) => {
    const redlock = new Redlock(nodes, { logger: quiet, clock, quarantine: 10_000, ...options });
    managers.push(redlock);
    return redlock;
  };
  /** A restart as the node's adapter sees it on reconnect: a new run_id, read now. */
  const restart = (node: SimNode, generation: number, loseData: boolean) => {
    node.crash(loseData);
    node.serverInfo = {
      runId: `${node.name}#${generation}`,
      uptimeSeconds: 0,
      durable: false,
      readAt: clock.now(),
    };
  };

  beforeEach(() => {
    clock = new VirtualClock();
    nodes = simNodes(3, clock);
    for (const node of nodes) {
      node.serverInfo = {
        runId: `${node.name}#0`,
        uptimeSeconds: 86_400,
        durable: false,
        readAt: 0,
      };
    }
  });
  afterEach(async () => {
    for (const redlock of managers.splice(0)) await clock.run(redlock.close());
  });

  it('a node that just lost a held key stays out though the others reconnected while the client was idle', async () => {
    const idle = manager();
    await clock.run(idle.ready());

    // A takes the lock while node 2 is unreachable: its key is on nodes 0 and 1 only.
    nodes[2].fault = (op) => (op === 'acquire' ? { error: new Error('unreachable') } : undefined);
    const holder = await clock.run(manager({ ttl: 60_000 }).acquire('r'));
    nodes[2].fault = undefined;

    // A rolling restart that keeps the data (a graceful SHUTDOWN saves it) of nodes 0 and 2 …
    await clock.advance(1_000);
    restart(nodes[0], 1, false);
    restart(nodes[2], 1, false);
    // … long enough ago that both are past the quarantine; then node 1 crashes and loses A's key.
    await clock.advance(19_000);
    restart(nodes[1], 1, true);

    // Truth: nodes 0 and 2 are 19 s old and vote, node 1 is 0 s old and must not. Node 0 still
    // holds A's key, so the idle client cannot reach a quorum.
    expect(holder.isValid()).toBe(true);
    await expect(clock.run(idle.tryAcquire('r'))).resolves.toBeNull();
    expect(nodes.filter((n) => n.valueAt('redlock:r') === holder.value)).toHaveLength(1);
  });

  it('the same client admits the restarted node once its quarantine, counted from the reading, is over', async () => {
    const idle = manager();
    await clock.run(idle.ready());
    restart(nodes[1], 1, true);
    await clock.advance(10_000);
    // Never looked at node 1's reading before: it is still 10 s old, so it votes now.
    nodes[0].fault = () => ({ error: new Error('unreachable') });
    const lock = await clock.run(idle.tryAcquire('r', { ttl: 5_000 }));
    expect(lock).not.toBeNull();
    expect(nodes[1].valueAt('redlock:r')).toBe(lock?.value);
  });
});

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
