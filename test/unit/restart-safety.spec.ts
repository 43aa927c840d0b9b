import { Redlock, type RedlockOptions, type ServerInfo } from '../../lib';
import { simNodes, type SimNode } from '../sim/sim-node';
import { VirtualClock } from '../sim/virtual-clock';

/**
 * Issue 16 defects 1-5: the holes a second review found in delayed restarts and fencing, each
 * reproduced here in virtual time over simulated nodes (the same scenarios run on real
 * redis-server processes in test/integration/restart-safety.spec.ts). The invariant (architecture.md
 * §5.7): a node that may have lost keys counts toward no quorum until every lease that any
 * client could have held on it has ended — also for a client started after the restart.
 */
const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };
const DAY_S = 86_400;

describe('restarts and fencing hold for every client (issue 16 defects 1-5)', () => {
  let clock: VirtualClock;
  let nodes: SimNode[];
  const managers: Redlock[] = [];
  const manager = (options: RedlockOptions = {}) => {
    const redlock = new Redlock(nodes, { logger: quiet, clock, ttl: 10_000, ...options });
    managers.push(redlock);
    return redlock;
  };
  const info = (node: SimNode, generation: number, uptimeSeconds: number, durable = false) =>
    ({
      runId: `${node.name}#${generation}`,
      uptimeSeconds,
      durable,
      readAt: clock.now(),
    }) satisfies ServerInfo;
  /** The node crashes and comes back; its adapter reads the new identity on reconnect. */
  const restart = (node: SimNode, generation: number, loseData: boolean, durable = false) => {
    node.crash(loseData);
    node.serverInfo = info(node, generation, 0, durable);
  };
  const unreachable = (node: SimNode, ops = ['acquire']) => {
    node.fault = (op) => (ops.includes(op) ? { error: new Error('unreachable') } : undefined);
  };
  const fleet = (count: number, durable: boolean[] = []) => {
    nodes = simNodes(count, clock);
    nodes.forEach((node, i) => (node.serverInfo = info(node, 0, DAY_S, durable[i] ?? false)));
  };

  beforeEach(() => {
    clock = new VirtualClock();
  });
  afterEach(async () => {
    for (const redlock of managers.splice(0)) await clock.run(redlock.close());
  });

  it('defect 1: durable peers do not make a restarted node young for a client started after the restart', async () => {
    // Nodes 0 and 1 fsync every write; node 2 keeps nothing. The fleet is a day old.
    fleet(3, [true, true, false]);
    const a = manager();
    await clock.run(a.ready());
    // A foreign key on node 0: A's lock lands on nodes 1 and 2.
    unreachable(nodes[0]);
    const held = await clock.run(a.acquire('r', { wait: 0 }));
    nodes[0].fault = undefined;
    await clock.advance(1_000);
    restart(nodes[2], 1, true);
    // B never saw node 2's old run_id.
    const b = manager();
    await clock.run(b.ready());
    expect(held.isValid()).toBe(true);
    await expect(clock.run(b.tryAcquire('r'))).resolves.toBeNull();
  });

  it('defect 2: a lease lengthened by extend() keeps a restarted node out for as long', async () => {
    fleet(3);
    const a = manager({ ttl: 1_000 });
    await clock.run(a.ready());
    unreachable(nodes[0]);
    const held = await clock.run(a.acquire('r', { wait: 0 }));
    nodes[0].fault = undefined;
    await clock.run(held.extend(30_000));
    restart(nodes[2], 1, true);
    // Well past the acquisition's ttl (and the horizon its acquisition recorded), well inside
    // the extension; nothing else happened meanwhile that would record a later horizon.
    await clock.advance(5_000);
    expect(held.isValid()).toBe(true);
    const late = manager({ ttl: 1_000 });
    await clock.run(late.ready());
    await expect(clock.run(late.tryAcquire('r'))).resolves.toBeNull();
    await expect(clock.run(a.tryAcquire('r'))).resolves.toBeNull();
  });

  it('defect 3: a node whose INFO read failed after a reconnect does not vote until a read succeeds', async () => {
    fleet(3);
    const a = manager();
    await clock.run(a.ready());
    unreachable(nodes[0]);
    const held = await clock.run(a.acquire('r', { wait: 0 }));
    nodes[0].fault = undefined;
    // Node 2 restarts empty; on reconnect its INFO read times out (a busy server).
    nodes[2].crash(true);
    nodes[2].serverInfo = undefined;
    nodes[2].identityError = 'failed';
    nodes[2].identifyAs = info(nodes[2], 1, 0);
    nodes[2].identifyFailures = 2;
    await clock.advance(100);
    expect(held.isValid()).toBe(true);
    // Twice while the read keeps failing (the first attempt also records a horizon on it).
    await expect(clock.run(a.tryAcquire('r'))).resolves.toBeNull();
    await clock.advance(100);
    await expect(clock.run(a.tryAcquire('r'))).resolves.toBeNull();
    // The read is retried: once it succeeds the node is known to be a restarted one.
    await clock.advance(5_000);
    expect((nodes[2].serverInfo as ServerInfo | undefined)?.runId).toBe('s2#1');
    expect(held.isValid()).toBe(true);
    await expect(clock.run(a.tryAcquire('r'))).resolves.toBeNull();
    // Once A's lease could have ended (the horizon recorded for it), the node votes again.
    await clock.run(held.release());
    await clock.advance(40_000);
    unreachable(nodes[0]);
    await expect(clock.run(a.tryAcquire('r'))).resolves.not.toBeNull();
  });

  it('defect 4: a single restart in a young fleet keeps the node out for a new lock manager', async () => {
    // Every node started a second ago: the first seconds of a deployment.
    fleet(3);
    nodes.forEach((node) => (node.serverInfo = info(node, 0, 1)));
    const a = manager();
    await clock.run(a.ready());
    unreachable(nodes[0]);
    const held = await clock.run(a.acquire('r', { wait: 0 }));
    nodes[0].fault = undefined;
    await clock.advance(500);
    restart(nodes[2], 1, true);
    // A new app instance: it never saw node 2 before.
    const b = manager();
    await clock.run(b.ready());
    expect(held.isValid()).toBe(true);
    await expect(clock.run(b.tryAcquire('r'))).resolves.toBeNull();
  });

  it('a freshly started fleet is usable at once, and so is a restarted node of an idle fleet', async () => {
    fleet(3);
    nodes.forEach((node) => (node.serverInfo = info(node, 0, 0)));
    const a = manager();
    await clock.run(a.ready());
    const first = await clock.run(a.tryAcquire('r'));
    expect(first).not.toBeNull();
    await clock.run(first!.release());
    // Nothing held for longer than the horizon: a node restarting now lost nothing that counts.
    await clock.advance(60_000);
    restart(nodes[2], 1, true);
    const b = manager();
    await clock.run(b.ready());
    unreachable(nodes[0]);
    await expect(clock.run(b.tryAcquire('r'))).resolves.not.toBeNull();
  });

  it('defect 5: tokens keep increasing when a node with a slow clock lost its counters', async () => {
    fleet(3);
    // Node 0's clock runs an hour ahead: it seeds the tokens.
    nodes[0].clockOffsetMs = 3_600_000;
    const a = manager({ fencing: true, ttl: 1_000 });
    await clock.run(a.ready());
    // The first token is issued by nodes 0 and 1 (node 2 does not answer that attempt).
    unreachable(nodes[2], ['acquire', 'fence']);
    const first = await clock.run(a.acquire('r'));
    nodes[2].fault = undefined;
    await clock.run(first.release());
    // Node 1 (a clock in time) restarts empty; the lease horizon passes.
    restart(nodes[1], 1, true);
    await clock.advance(10_000);
    // Node 0 is now unreachable: the token comes from nodes 1 and 2.
    unreachable(nodes[0], ['acquire', 'fence']);
    const b = manager({ fencing: true, ttl: 1_000 });
    await clock.run(b.ready());
    const second = await clock.run(b.acquire('r', { wait: 5_000 }));
    expect(second.fencingToken).toBeGreaterThan(first.fencingToken!);
  });

  it('an extension that reaches only some nodes never shortens their leases (found by the simulation)', async () => {
    fleet(3);
    const a = manager({ ttl: 1_000 });
    await clock.run(a.ready());
    const held = await clock.run(a.acquire('r'));
    await clock.run(held.extend(5_000));
    // A shorter extension lands on nodes 0 and 1 but no reply comes back: not extended.
    nodes[0].fault = (op) => (op === 'extend' ? { dropReply: true } : undefined);
    nodes[1].fault = (op) => (op === 'extend' ? { dropReply: true } : undefined);
    nodes[2].fault = (op) => (op === 'extend' ? { error: new Error('unreachable') } : undefined);
    await expect(clock.run(held.extend(1_000))).rejects.toThrow();
    for (const node of nodes) node.fault = undefined;
    await clock.advance(2_000);
    // Still valid on the 5 s extension: nodes 0 and 1 must still hold its keys.
    expect(held.isValid()).toBe(true);
    const b = manager({ ttl: 1_000 });
    await clock.run(b.ready());
    await expect(clock.run(b.tryAcquire('r'))).resolves.toBeNull();
  });
});
