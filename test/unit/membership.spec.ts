import { Membership, type MembershipOptions } from '../../lib/core/membership';
import { simNodes, type SimNode } from '../sim/sim-node';
import { VirtualClock } from '../sim/virtual-clock';

/**
 * The membership part of the core on its own (DESIGN §3: what the lock manager knows about its
 * nodes), over simulated nodes in virtual time: which nodes vote, how a restart is decided on,
 * what is recorded where. The lock manager's use of it is tested in restart-safety.spec.ts.
 */
describe('Membership (lib/core/membership.ts)', () => {
  const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };
  const options: MembershipOptions = {
    quarantine: true,
    trustUnidentifiedNodes: false,
    driftFactor: 0.01,
    nodeTimeout: 100,
    keyPrefix: 'redlock:',
    ttl: 1_000,
  };
  let clock: VirtualClock;
  let nodes: SimNode[];
  let events: string[];
  const membership = (overrides: Partial<MembershipOptions> = {}) =>
    new Membership(nodes, clock, { ...options, ...overrides }, quiet, {
      quarantined: (node, ms) => events.push(`quarantined ${node} ${ms}`),
      rejoined: (node) => events.push(`rejoined ${node}`),
    });

  beforeEach(() => {
    clock = new VirtualClock();
    nodes = simNodes(3, clock);
    events = [];
  });

  it('a fresh fleet: every node admitted at once and stamped with its run_id', async () => {
    const m = membership();
    await clock.run(m.settle(2_000));
    expect(m.voters()).toEqual([true, true, true]);
    expect(nodes.map((n) => n.stamps.get(m.keys.stamp))).toEqual(['s0#0', 's1#0', 's2#0']);
    // No lease is covered before a horizon was recorded for it.
    expect(m.voters(1_000)).toEqual([false, false, false]);
    await clock.run(m.cover(1_000)!);
    expect(m.voters(1_000)).toEqual([true, true, true]);
    expect(nodes.every((n) => (n.meta.get(m.keys.horizon) ?? 0) >= clock.now() + 1_900)).toBe(true);
    // Covered: nothing to record, and no promise (the round starts in the same turn).
    expect(m.cover(1_000)).toBeUndefined();
    m.close();
  });

  it('a horizon record that failed once is sent again by the next cover(), not backed off (issue 19)', async () => {
    const m = membership();
    await clock.run(m.settle(2_000));
    // Every node's first record answers after nodeTimeout (this process was busy); later ones in time.
    const late = new Set<SimNode>();
    for (const node of nodes) {
      node.membershipFaults = true;
      node.fault = (op) => {
        if (op !== 'horizon' || late.has(node)) return undefined;
        late.add(node);
        return { replyDelay: 500 };
      };
    }
    await clock.run(m.cover(1_000)!);
    expect(m.voters(1_000)).toEqual([false, false, false]);
    // Backed off, the next acquisitions' rounds would count no vote until the back-off ended.
    const again = m.cover(1_000);
    expect(again).toBeDefined();
    await clock.run(again!);
    expect(m.voters(1_000)).toEqual([true, true, true]);
    m.close();
  });

  it('a restarted node waits out its peers’ horizons, then is stamped, and reported both times', async () => {
    const m = membership();
    await clock.run(m.settle(2_000));
    await clock.run(m.cover(1_000)!);
    await clock.advance(500);
    nodes[1].crash(true);
    nodes[1].serverInfo = { runId: 's1#1', uptimeSeconds: 0, durable: false };
    expect(m.voters()).toEqual([true, false, true]);
    await clock.run(m.settle(2_000));
    // 2 s recorded at t=0, 1.5 s left, plus 1 % drift and 2 ms.
    expect(events).toEqual(['quarantined s1 1517']);
    await clock.advance(1_516);
    expect(m.voters()[1]).toBe(false);
    await clock.advance(10);
    expect(m.voters()[1]).toBe(true);
    expect(events).toEqual(['quarantined s1 1517', 'rejoined s1']);
    expect(nodes[1].stamps.get(m.keys.stamp)).toBe('s1#1');
    m.close();
  });

  it('a quarantined node that another lock manager stamps meanwhile votes at the next check, not after the horizons', async () => {
    // Two lock managers starting together on a fresh fleet: the first admitted nodes 0 and 2 and
    // recorded horizons there (a 15 s lease) before stamping node 1; the second read node 1
    // unstamped beside its peers' horizons and would wait them out — its acquisitions failing as
    // unavailable meanwhile (notifications.spec) — though node 1 is stamped a moment later,
    // which admits it for every lock manager (DESIGN §5.7).
    const first = membership();
    await clock.run(first.settle(2_000));
    await clock.run(first.cover(15_000)!);
    nodes[1].stamps.delete(first.keys.stamp);
    const second = membership();
    await clock.run(second.settle(2_000));
    expect(second.voters()).toEqual([true, false, true]);
    // The first lock manager's stamp lands.
    nodes[1].stamps.set(first.keys.stamp, 's1#0');
    await clock.advance(1_100);
    expect(second.voters()).toEqual([true, true, true]);
    first.close();
    second.close();
  });

  it('a node whose stamp is its current run_id votes at once for a lock manager that never saw it', async () => {
    await clock.run(membership().settle(2_000));
    const later = membership();
    await clock.run(later.settle(2_000));
    expect(later.voters()).toEqual([true, true, true]);
    expect(events).toEqual([]);
  });

  it('a durable node that restarted votes at once; an unidentified one votes only when trusted', async () => {
    const m = membership();
    await clock.run(m.settle(2_000));
    nodes[0].serverInfo = { runId: 's0#1', uptimeSeconds: 0, durable: true };
    nodes[2].serverInfo = undefined;
    nodes[2].identityError = 'refused';
    expect(m.voters()).toEqual([false, true, false]);
    await clock.run(m.settle(2_000));
    expect(m.voters()).toEqual([true, true, false]);
    const trusting = membership({ trustUnidentifiedNodes: true });
    await clock.run(trusting.settle(2_000));
    expect(trusting.voters()[2]).toBe(true);
    m.close();
    trusting.close();
  });

  it('quarantine: false: every node votes, nothing is recorded', async () => {
    const m = membership({ quarantine: false });
    expect(m.voters(1_000)).toEqual([true, true, true]);
    expect(m.cover(1_000)).toBeUndefined();
    expect(nodes.every((n) => n.applied.horizon === 0 && n.applied.standing === 0)).toBe(true);
  });

  it('one server listed twice votes once', async () => {
    nodes[2].serverInfo = nodes[1].serverInfo;
    const m = membership();
    await clock.run(m.settle(2_000));
    expect(m.voters()).toEqual([true, true, false]);
    m.close();
  });
});
