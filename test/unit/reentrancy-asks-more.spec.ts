import { LockReentryError, Redlock, type RedlockOptions } from '../../lib';
import { simNodes, type SimNode } from '../sim/sim-node';
import { VirtualClock } from '../sim/virtual-clock';

/**
 * Issue 16 defect 10 (architecture.md §5.9, last paragraph): a nested call that asks for something the
 * outer lock does not have gets it or an error (LockReentryError), never silently less.
 */
describe('a nested reentrant call that asks for more than the outer lock has (virtual time)', () => {
  let clock: VirtualClock;
  let nodes: SimNode[];
  const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };
  const managers: Redlock[] = [];
  const manager = (options: RedlockOptions = {}) => {
    const redlock = new Redlock(nodes, { logger: quiet, clock, ...options });
    managers.push(redlock);
    return redlock;
  };

  beforeEach(() => {
    clock = new VirtualClock();
    nodes = simNodes(3, clock);
  });
  afterEach(async () => {
    for (const redlock of managers.splice(0)) await clock.run(redlock.close());
  });

  it('a fencing token inside a lock taken without fencing: LockReentryError, not a lock without a token', async () => {
    const redlock = manager({ reentrant: true });
    const outcome = await clock.run(
      redlock
        .using('r', () => redlock.acquire('r', { fencing: true }))
        .then(
          (lock) => ({ token: lock.fencingToken }),
          (error: unknown) => error,
        ),
    );
    expect(outcome).toBeInstanceOf(LockReentryError);
    expect((outcome as Error).message).toMatch(/fencing token/);
  });

  it('the module asks for fencing but the outer call turned it off: the nested call is refused too', async () => {
    const redlock = manager({ reentrant: true, fencing: true });
    const outcome = await clock.run(
      redlock
        .using('r', { fencing: false }, () => redlock.using('r', (lock) => lock.fencingToken))
        .catch((error: unknown) => error),
    );
    expect(outcome).toBeInstanceOf(LockReentryError);
  });

  it('a fencing token inside a fenced lock: the outer token; a nested call without fencing gets it too', async () => {
    const redlock = manager({ reentrant: true });
    const tokens = await clock.run(
      redlock.using('r', { fencing: true }, async (outer) => {
        const fenced = await redlock.acquire('r', { fencing: true });
        const plain = await redlock.acquire('r');
        return [outer.fencingToken, fenced.fencingToken, plain.fencingToken];
      }),
    );
    expect(tokens[0]).toBeGreaterThan(0);
    expect(tokens).toEqual([tokens[0], tokens[0], tokens[0]]);
  });
});
