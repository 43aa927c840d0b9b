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
