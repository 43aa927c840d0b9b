import { LockLostError, Redlock, type Lock } from '../../lib';
import { startFleet, type RedisFleet } from '../support/fleet';
import { delay, RecordingLogger } from './helpers';

describe('extension and auto-extension (5 real nodes)', () => {
  let fleet: RedisFleet;
  let redlock: Redlock;
  let rival: Redlock;
  let logger: RecordingLogger;

  beforeEach(async () => {
    fleet = await startFleet(5);
    logger = new RecordingLogger();
    redlock = new Redlock(fleet.urls(), { ttl: 600, nodeTimeout: 100, retryDelay: 50, logger });
    rival = new Redlock(fleet.urls(), {
      ttl: 600,
      nodeTimeout: 100,
      logger: new RecordingLogger(),
    });
  });

  afterEach(async () => {
    await redlock?.close();
    await rival?.close();
    await fleet?.stop();
  });

  const pttls = (key: string) =>
    Promise.all(fleet.nodes.map((n) => n.command('PTTL', key) as Promise<number>));

  it('extend() renews the lease on the nodes and the validity', async () => {
    const lock = await redlock.acquire('r');
    await delay(400);
    await lock.extend(2_000);
    expect(lock.remainingMs()).toBeGreaterThan(1_500);
    // Every node keeps the key at least as long as the client believes it holds the lock: true
    // at every instant, so the belief is read after the PTTLs (no race on a slow machine).
    const onNodes = await pttls('redlock:r');
    const believed = lock.remainingMs();
    for (const pttl of onNodes) expect(pttl).toBeGreaterThanOrEqual(believed);
    // and no longer than the lease asked for: a longer one would keep others out past what the
    // holder asked (a mutant of the extend script, PEXPIRE 2 × ttl, passed everything else).
    for (const pttl of onNodes) expect(pttl).toBeLessThanOrEqual(2_000);
    await delay(500); // past the original lease
    expect(await rival.tryAcquire('r')).toBeNull();
    await lock.release();
  });

  it('a shorter extension never shortens the lease on the nodes (what a partial one would leave behind)', async () => {
    const lock = await redlock.acquire('r');
    await lock.extend(5_000);
    // The extension succeeds (the lock is still held) but a node keeps the longer lease: had the
    // script shortened it, an extension reaching only some nodes would leave them expiring
    // before the validity the holder still relies on (the simulation found two holders so).
    await lock.extend(600);
    for (const pttl of await pttls('redlock:r')) expect(pttl).toBeGreaterThan(4_000);
    await lock.release();
  });

  it('extend() throws LockLostError and aborts the signal once the keys were taken over', async () => {
    const lock = await redlock.acquire('r');
    const signal = lock.signal;
    await Promise.all(
      fleet.nodes.slice(0, 3).map((n) => n.command('SET', 'redlock:r', 'thief', 'PX', 10_000)),
    );
    await expect(lock.extend()).rejects.toBeInstanceOf(LockLostError);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBeInstanceOf(LockLostError);
    expect(lock.remainingMs()).toBe(0);
    await lock.release();
    // the thief's keys survive our release
    for (const i of [0, 1, 2])
      expect(await fleet.nodes[i].command('GET', 'redlock:r')).toBe('thief');
  });

  it('the signal of an un-extended lock aborts when its validity runs out', async () => {
    const lock = await redlock.acquire('r');
    const aborted = new Promise<unknown>((resolve) =>
      lock.signal.addEventListener('abort', () => resolve(lock.signal.reason)),
    );
    const started = performance.now();
    await expect(aborted).resolves.toBeInstanceOf(LockLostError);
    const after = performance.now() - started;
    expect(after).toBeGreaterThan(400);
    expect(after).toBeLessThan(900);
    await expect(lock.extend()).rejects.toBeInstanceOf(LockLostError);
  });

  it('using() keeps the lock through a routine lasting 3× the ttl', async () => {
    const stolen: (Lock | null)[] = [];
    const result = await redlock.using('r', async (lock) => {
      const until = performance.now() + 3 * 600 + 200;
      while (performance.now() < until) {
        stolen.push(await rival.tryAcquire('r'));
        await delay(50);
      }
      expect(lock.signal.aborted).toBe(false);
      return 'done';
    });
    expect(result).toBe('done');
    expect(stolen.length).toBeGreaterThan(20);
    expect(stolen.every((s) => s === null)).toBe(true);
    // released at the end
    const after = await rival.tryAcquire('r');
    expect(after).not.toBeNull();
    await after!.release();
  });

  it('killing a majority mid-routine aborts lock.signal, and using() rejects with LockLostError after the routine settles', async () => {
    const events: string[] = [];
    redlock.on('lockLost', (error) => events.push(`event ${error.resources.join()}`));
    let routineFinished = false;
    let abortedAt = 0;
    let finishedAt = 0;
    const started = performance.now();
    const outcome = redlock
      .using('r', async (lock) => {
        lock.signal.addEventListener('abort', () => (abortedAt = performance.now() - started));
        await delay(100);
        await Promise.all([fleet.nodes[0].kill(), fleet.nodes[1].kill(), fleet.nodes[2].kill()]);
        await delay(1_500);
        finishedAt = performance.now() - started;
        routineFinished = true;
        return 'result that must not be trusted';
      })
      .catch((e: unknown) => e);
    const error = await outcome;
    expect(error).toBeInstanceOf(LockLostError);
    expect(routineFinished).toBe(true);
    // Lost when the validity ran out (≈ ttl after the last extension, before the kills), while
    // the routine still ran: its last 1.5 s start after the kills. Not a fixed bound, which a
    // loaded machine (slow kills) overran.
    expect(abortedAt).toBeGreaterThan(100);
    expect(abortedAt).toBeLessThan(finishedAt - 300);
    expect(events).toEqual(['event r']);
    expect(logger.lines.some((l) => l.startsWith('warn Lock on ["r"] was lost'))).toBe(true);
  });

  it("a routine's own error wins over a lost lock", async () => {
    const error = await redlock
      .using('r', async () => {
        await Promise.all([fleet.nodes[0].kill(), fleet.nodes[1].kill(), fleet.nodes[2].kill()]);
        await delay(900);
        throw new Error('routine failed');
      })
      .catch((e: unknown) => e);
    expect(error).toEqual(new Error('routine failed'));
  });

  it('autoExtend: false lets the lock expire under a long routine, and says so', async () => {
    const error = await redlock
      .using('r', { autoExtend: false }, async () => {
        await delay(900);
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockLostError);
  });

  it('maxHold stops extending after the cap', async () => {
    let aborted = false;
    const error = await redlock
      .using('r', { maxHold: 700 }, async (lock) => {
        await delay(2_000);
        aborted = lock.signal.aborted;
      })
      .catch((e: unknown) => e);
    expect(aborted).toBe(true);
    expect(error).toBeInstanceOf(LockLostError);
  });

  it('currentLock() is the lock of the enclosing using(), also across awaits', async () => {
    expect(redlock.currentLock()).toBeUndefined();
    await redlock.using('outer', async (outer) => {
      await delay(5);
      expect(redlock.currentLock()).toBe(outer);
      await redlock.using('inner', async (inner) => {
        expect(redlock.currentLock()).toBe(inner);
      });
      expect(redlock.currentLock()).toBe(outer);
    });
    expect(redlock.currentLock()).toBeUndefined();
  });
});
