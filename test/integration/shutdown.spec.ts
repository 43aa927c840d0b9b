import { LockLostError, LockNotAcquiredError, Redlock } from '../../lib';
import { startFleet, type RedisFleet } from '../support/fleet';
import { delay, RecordingLogger, timed } from './helpers';

/** drain() and close(): the two steps of a graceful shutdown (3 real nodes). */
describe('shutdown', () => {
  let fleet: RedisFleet;
  let holder: Redlock;
  let logger: RecordingLogger;
  let subject: Redlock;

  beforeAll(async () => {
    fleet = await startFleet(3);
    holder = new Redlock(fleet.urls(), { logger: new RecordingLogger() });
  });

  beforeEach(() => {
    logger = new RecordingLogger();
    subject = new Redlock(fleet.urls(), { logger, retryDelay: 1_000, retryJitter: 0 });
  });

  afterEach(async () => {
    await subject.close();
    await fleet.flushAll();
  });

  afterAll(async () => {
    await holder?.close();
    await fleet?.stop();
  });

  it('drain(): a waiting acquisition gives up at once, a new one fails, a held lock stays held', async () => {
    const busy = await holder.acquire('busy');
    const held = await subject.acquire('mine');
    const waiting = timed(() => subject.acquire('busy', { wait: 30_000 }).catch((e: unknown) => e));
    await delay(100);
    subject.drain();
    const { ms, result } = await waiting;
    expect(ms).toBeLessThan(600); // not the 30 s budget, not even the 1 s retry delay
    expect(result).toBeInstanceOf(LockNotAcquiredError);
    expect((result as LockNotAcquiredError).reason).toBe('unavailable');
    expect(String(result)).toMatch(/shutting down/);
    await expect(subject.acquire('other')).rejects.toMatchObject({ reason: 'unavailable' });
    await expect(subject.tryAcquire('other')).rejects.toMatchObject({ reason: 'unavailable' });
    // the lock it holds is still its own, and still works
    expect(await holder.tryAcquire('mine')).toBeNull();
    await held.extend();
    await held.release();
    const after = await holder.tryAcquire('mine');
    expect(after).not.toBeNull();
    await after!.release();
    await busy.release();
  });

  it('close(): a lock still held is reported lost (signal, using(), event, warning) and released', async () => {
    const lost: string[] = [];
    subject.on('lockLost', (error) => lost.push(error.resources.join()));
    let signalReason: unknown;
    let routineFinished = false;
    let started!: () => void;
    const holding = new Promise<void>((resolve) => (started = resolve));
    const running = subject
      .using('job', async (lock) => {
        lock.signal.addEventListener('abort', () => (signalReason = lock.signal.reason));
        started();
        await delay(300);
        routineFinished = true;
      })
      .catch((e: unknown) => e);
    // Closed while the routine holds the lock (a fixed 50 ms could close before the acquire
    // had landed on a loaded machine: then there is no held lock to report lost).
    await holding;
    await subject.close();
    expect(signalReason).toBeInstanceOf(LockLostError);
    expect(lost).toEqual(['job']);
    expect(
      logger.lines.some((l) =>
        /^warn Lock on \["job"\] was lost: its lock manager was closed/.test(l),
      ),
    ).toBe(true);
    // released on the nodes at once: another owner can take it while the routine still runs
    const taken = await holder.tryAcquire('job');
    expect(taken).not.toBeNull();
    await taken!.release();
    expect(routineFinished).toBe(false);
    expect(await running).toBeInstanceOf(LockLostError);
    expect(routineFinished).toBe(true);
  });
});
