import { Redlock, type ServerInfo } from '../../lib';
import { simNodes, type SimNode } from '../sim/sim-node';
import { VirtualClock } from '../sim/virtual-clock';

const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };

/**
 * Issue 19: a lease horizon record answered after nodeTimeout (this process busy with thousands
 * of calls at once) must not turn the acquisitions waiting for it into rounds in which no node's
 * vote counts ('unavailable' while every node is healthy).
 */
describe('an acquisition whose horizon record was late', () => {
  let clock: VirtualClock;
  let nodes: SimNode[];
  let redlock: Redlock | undefined;

  beforeEach(() => {
    clock = new VirtualClock();
    nodes = simNodes(3, clock);
    for (const node of nodes) {
      node.serverInfo = {
        runId: `${node.name}#0`,
        uptimeSeconds: 86_400,
        durable: false,
        readAt: clock.now(),
      } satisfies ServerInfo;
    }
  });
  afterEach(async () => {
    if (redlock !== undefined) await clock.run(redlock.close());
    redlock = undefined;
  });

  it('records again and acquires, instead of failing as unavailable', async () => {
    redlock = new Redlock(nodes, { logger: quiet, clock, ttl: 10_000, nodeTimeout: 100 });
    await clock.run(redlock.ready());
    // Every node's first horizon record answers after nodeTimeout; later ones in time.
    const late = new Set<SimNode>();
    for (const node of nodes) {
      node.membershipFaults = true;
      node.fault = (op) => {
        if (op !== 'horizon' || late.has(node)) return undefined;
        late.add(node);
        return { replyDelay: 500 };
      };
    }
    const lock = await clock.run(redlock.acquire('k', { wait: 0 }));
    expect(lock.isValid()).toBe(true);
    await clock.run(lock.release());
  });
});
