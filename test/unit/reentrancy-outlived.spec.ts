import { LockLostError, Redlock, type Lock, type RedlockOptions } from '../../lib';
import { simNodes, type SimNode } from '../sim/sim-node';
import { VirtualClock } from '../sim/virtual-clock';

/**
 * Issue 16 defect 6 (architecture.md §5.9, last paragraph): a nested reentrant handle never outlives the
 * lock it borrows. Work started inside a locked call without being awaited (fire-and-forget)
 * takes a nested handle; when the outer holder ends, that handle is told, and a nested using()
 * still running reports the loss instead of a success.
 */
describe('a nested reentrant holder that outlives its outer holder (virtual time)', () => {
  let clock: VirtualClock;
  let nodes: SimNode[];
  const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };
  const managers: Redlock[] = [];
  const manager = (options: RedlockOptions = {}) => {
    const redlock = new Redlock(nodes, { logger: quiet, clock, ...options });
    managers.push(redlock);
    return redlock;
  };
  const sleep = (ms: number) => new Promise<void>((resolve) => clock.setTimer(resolve, ms));

  beforeEach(() => {
    clock = new VirtualClock();
    nodes = simNodes(3, clock);
  });
  afterEach(async () => {
    for (const redlock of managers.splice(0)) await clock.run(redlock.close());
  });

  it('the outer holder releases while nested work runs: the nested signal aborts, its using() rejects with LockLostError, before anyone else holds it', async () => {
    const a = manager({ reentrant: true, ttl: 1_000 });
    const b = manager({ ttl: 1_000 });
    const reported: Lock[] = [];
    a.on('lockLost', (_error, lock) => reported.push(lock));
    let nested: Lock | undefined;
    let nestedRun: Promise<string> | undefined;
    await clock.run(
      a.using('r', async () => {
        // Started, not awaited: it outlives the routine that started it.
        nestedRun = a.using('r', async (lock) => {
          nested = lock;
          await sleep(3_000);
          return 'nested done';
        });
        await sleep(10);
      }),
    );
    // The outer holder has ended and released on the nodes: the nested handle must know.
    expect(nested).toBeDefined();
    expect(nested!.signal.aborted).toBe(true);
    expect(nested!.signal.reason).toBeInstanceOf(LockLostError);
    expect(nested!.isValid()).toBe(false);
    expect(() => nested!.throwIfExpired()).toThrow(LockLostError);
    // Not silent: reported as a loss of the nested holder (the outer one released, lost nothing).
    expect(reported).toEqual([nested]);
    // Someone else takes the lock while the nested routine still runs.
    const other = await clock.run(b.acquire('r', { wait: 0 }));
    expect(other.isValid()).toBe(true);
    const outcome = await clock.run(nestedRun!.catch((e: unknown) => e));
    expect(outcome).toBeInstanceOf(LockLostError);
    await clock.run(other.release());
  });

  it('the outer lock is lost while nested work runs: the nested signal aborts with the same LockLostError', async () => {
    const a = manager({ reentrant: true, ttl: 1_000 });
    let nested: Lock | undefined;
    let outerSignal: AbortSignal | undefined;
    let nestedRun: Promise<unknown> | undefined;
    const outer = a.using('r', { autoExtend: false }, async (lock) => {
      outerSignal = lock.signal;
      nestedRun = a.using('r', async (inner) => {
        nested = inner;
        await sleep(3_000);
      });
      await sleep(2_000); // past the 1 s lease, without extension: lost
    });
    expect(await clock.run(outer.catch((e: unknown) => e))).toBeInstanceOf(LockLostError);
    expect(nested!.signal.aborted).toBe(true);
    expect(nested!.signal.reason).toBe(outerSignal!.reason);
    expect(await clock.run(nestedRun!.catch((e: unknown) => e))).toBeInstanceOf(LockLostError);
  });

  it('a nested using() that ends before its outer holder still resolves as a success', async () => {
    const a = manager({ reentrant: true, ttl: 1_000 });
    let nested: Lock | undefined;
    const result = await clock.run(
      a.using('r', async () => {
        const inner = await a.using('r', async (lock) => {
          nested = lock;
          await sleep(100);
          return 'inner';
        });
        await sleep(100);
        return inner;
      }),
    );
    expect(result).toBe('inner');
    // Released by its own end, before the outer one: nothing was lost.
    expect(nested!.signal.aborted).toBe(false);
  });
});
