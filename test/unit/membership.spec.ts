import type { RedlockLogger } from '../../lib';
import { Membership, type MembershipOptions } from '../../lib/core/membership/membership';
import { simNodes, type SimNode } from '../sim/sim-node';
import { VirtualClock } from '../sim/virtual-clock';

/**
 * The membership part of the core on its own (architecture.md §3: what the lock manager knows about its
 * nodes), over simulated nodes in virtual time: which nodes vote, how a restart is decided on,
 * what is recorded where. The lock manager's use of it is tested in restart-safety.spec.ts.
 */
describe('Membership (lib/core/membership/membership.ts)', () => {
  const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };
  const options: MembershipOptions = {
    quarantine: true,
    trustUnidentifiedNodes: false,
    driftFactor: 0.01,
    nodeTimeout: 100,
    keyPrefix: 'redlock:',
    ttl: 1_000,
    maxTtl: 60_000,
    fencing: false,
    fleet: 'test',
  };
  let clock: VirtualClock;
  let nodes: SimNode[];
  let events: string[];
  const membership = (overrides: Partial<MembershipOptions> = {}, logger: RedlockLogger = quiet) =>
    new Membership(nodes, clock, { ...options, ...overrides }, logger, {
      quarantined: (node, ms) => events.push(`quarantined ${node} ${ms}`),
      rejoined: (node) => events.push(`rejoined ${node}`),
    });

  beforeEach(() => {
    clock = new VirtualClock();
    nodes = simNodes(3, clock);
    events = [];
  });

  it('a fresh fleet: every node votes at once, and the first horizon writes its marker', async () => {
    const m = membership();
    await clock.run(m.settle(2_000));
    expect(m.voters()).toEqual([true, true, true]);
    // No lease is covered before a horizon was recorded for it.
    expect(m.voters(1_000)).toEqual([false, false, false]);
    await clock.run(m.cover(1_000)!);
    expect(m.voters(1_000)).toEqual([true, true, true]);
    // The first record writes each node's marker: its own run_id, read by the script.
    expect(nodes.map((n) => n.stamps.get(m.keys.born))).toEqual(['s0#0', 's1#0', 's2#0']);
    expect(
      nodes.every((n) => (n.meta.get(m.keys.horizon)?.get('s0#0') ?? 0) >= clock.now() + 1_900),
    ).toBe(true);
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

  it('a restarted node waits out its peers’ horizons, said once when it starts and once when it votes', async () => {
    const lines: string[] = [];
    const m = membership(
      {},
      {
        log: (l: string) => void lines.push(l),
        warn: (l: string) => void lines.push(l),
        error: () => undefined,
      },
    );
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
    expect(lines).toEqual([
      expect.stringMatching(
        /^Redis node s1 restarted without proof .* for up to 1517 ms, until the leases its peers recorded have ended$/,
      ),
      'Redis node s1 counts toward a quorum again',
    ]);
    m.close();
  });

  it('a restarted node whose peer is silent waits until it has been up for maxTtl; a later answer shortens it', async () => {
    const m = membership({ maxTtl: 10_000 });
    await clock.run(m.settle(2_000));
    await clock.run(m.cover(1_000)!);
    nodes[1].crash(true);
    nodes[1].serverInfo = { runId: 's1#1', uptimeSeconds: 0, durable: false };
    nodes[2].fault = () => ({ lose: true });
    nodes[2].membershipFaults = true;
    await clock.run(m.settle(3_000));
    expect(m.voters()[1]).toBe(false);
    // Too few answers to bound its leases: until it has been up for maxTtl with drift, plus 2 ms
    // — said once two rechecks could not tell either.
    expect(events).toEqual([]);
    await clock.advance(2_500);
    expect(events).toEqual([expect.stringMatching(/^quarantined s1 [0-9]+$/)]);
    expect(Number(events[0].split(' ')[2])).toBeLessThanOrEqual(10_102 - 2_000);
    // Still reconnecting rather than known down for long: an acquisition does not give up on it.
    expect(m.quorumAt()).toBe(clock.now());
    // The silent peer answers again: its horizon (2 s from t=0) has passed by now.
    nodes[2].fault = undefined;
    await clock.advance(1_100);
    expect(m.voters()).toEqual([true, true, true]);
    expect(events).toEqual([expect.stringMatching(/^quarantined s1 /), 'rejoined s1']);
    m.close();
  });

  it('without an answer it stays out until settled, and never longer: maxTtl plus drift', async () => {
    const m = membership({ maxTtl: 10_000 });
    await clock.run(m.settle(2_000));
    nodes[1].crash(true);
    nodes[1].serverInfo = { runId: 's1#1', uptimeSeconds: 0, durable: false };
    for (const node of [nodes[0], nodes[2]]) {
      node.membershipFaults = true;
      node.fault = () => ({ lose: true });
    }
    await clock.run(m.settle(3_000));
    expect(m.voters()).toEqual([true, false, true]);
    await clock.advance(10_101);
    expect(m.voters()[1]).toBe(false);
    await clock.advance(2);
    expect(m.voters()[1]).toBe(true);
    m.close();
  });

  it('another lock manager cannot make a node vote sooner: nothing it concluded is read', async () => {
    const first = membership({ ttl: 100, maxTtl: 10_000 });
    await clock.run(first.settle(2_000));
    await clock.run(first.cover(5_000)!);
    nodes[1].crash(true);
    nodes[1].serverInfo = { runId: 's1#1', uptimeSeconds: 0, durable: false };
    await clock.run(first.settle(2_000));
    const second = membership({ ttl: 100, maxTtl: 10_000 });
    await clock.run(second.settle(2_000));
    // Both wait out the 10 s horizon the first recorded for its 5 s lease.
    expect(first.voters()[1]).toBe(false);
    expect(second.voters()[1]).toBe(false);
    await clock.advance(9_000);
    expect(second.voters()[1]).toBe(false);
    await clock.advance(1_200);
    expect(second.voters()[1]).toBe(true);
    first.close();
    second.close();
  });

  it('a durable node votes at once only when its marker survived; a restart without its files waits', async () => {
    for (const node of nodes) {
      node.serverInfo = { runId: `${node.name}#0`, uptimeSeconds: 86_400, durable: true };
    }
    const m = membership();
    await clock.run(m.settle(2_000));
    await clock.run(m.cover(1_000)!);
    // s0 restarts with its data (the marker of run #0 is still there).
    nodes[0].crash(false);
    nodes[0].serverInfo = { runId: 's0#1', uptimeSeconds: 0, durable: true };
    // s2 restarts with the same configuration but without its files.
    nodes[2].crash(true);
    nodes[2].serverInfo = { runId: 's2#1', uptimeSeconds: 0, durable: true };
    await clock.run(m.settle(2_000));
    expect(m.voters()).toEqual([true, true, false]);
    expect(events).toEqual([expect.stringMatching(/^quarantined s2 /)]);
    m.close();
  });

  it('an unidentified node votes only when trusted', async () => {
    const m = membership();
    await clock.run(m.settle(2_000));
    nodes[2].serverInfo = undefined;
    nodes[2].identityError = 'refused';
    await clock.run(m.settle(2_000));
    expect(m.voters()).toEqual([true, true, false]);
    const trusting = membership({ trustUnidentifiedNodes: true });
    await clock.run(trusting.settle(2_000));
    expect(trusting.voters()[2]).toBe(true);
    m.close();
    trusting.close();
  });

  it('fence floors: a restarted node is raised to the highest floor, and takes no part while a peer is silent', async () => {
    const m = membership({ fencing: true });
    await clock.run(m.settle(2_000));
    expect(m.voters(undefined, true)).toEqual([true, true, true]);
    nodes[0].counters.set(m.keys.floor, 900);
    nodes[1].crash(true);
    nodes[1].serverInfo = { runId: 's1#1', uptimeSeconds: 0, durable: false };
    nodes[2].membershipFaults = true;
    nodes[2].fault = () => ({ lose: true });
    await clock.run(m.settle(3_000));
    // s2 is silent: too few answers to bound s1's leases or to know the highest token.
    expect(m.voters()).toEqual([true, false, true]);
    expect(m.voters(undefined, true)).toEqual([true, false, true]);
    nodes[2].fault = undefined;
    await clock.advance(1_100);
    expect(m.voters()).toEqual([true, true, true]);
    expect(m.voters(undefined, true)).toEqual([true, true, true]);
    expect(nodes[1].counters.get(m.keys.floor)).toBe(900);
    expect(nodes[1].stamps.get(m.keys.fenced)).toBe('s1#1');
    m.close();
  });

  it('a floor restore planned for one incarnation writes nothing on the next', async () => {
    const m = membership({ fencing: true });
    await clock.run(m.settle(2_000));
    await expect(clock.run(nodes[0].restoreFloor(m.keys, 's0#9', 5))).resolves.toBe(false);
    expect(nodes[0].counters.get(m.keys.floor)).toBeUndefined();
    m.close();
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
