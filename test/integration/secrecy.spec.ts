import Redis from 'ioredis';
import { LockLostError, Redlock, type Lock } from '../../lib';
import { startFleet, type RedisFleet } from '../support/fleet';
import { delay, RecordingLogger } from './helpers';

/** Owner values prove ownership: they must never reach a log line or an error message. */
describe('owner values stay secret (5 real nodes)', () => {
  let fleet: RedisFleet;

  beforeAll(async () => {
    fleet = await startFleet(5);
  });

  afterAll(async () => {
    await fleet?.stop();
  });

  it('appear in no log output and no error message, across successes, contention, loss and faults', async () => {
    const logger = new RecordingLogger();
    const userClient = new Redis(fleet.nodes[4].url); // risky defaults: triggers a warning
    const redlock = new Redlock([...fleet.urls().slice(0, 4), userClient], {
      ttl: 500,
      nodeTimeout: 100,
      logger,
    });
    const values: string[] = [];
    const messages: string[] = [];
    const keep = (lock: Lock) => values.push(lock.value);
    const record = (e: unknown) => messages.push(String(e), (e as Error).stack ?? '');

    const a = await redlock.acquire('r');
    keep(a);
    await redlock.acquire('r', { wait: 200 }).catch(record); // contention
    // On a loaded machine a 500 ms lease can fail to extend in time: its error is one more
    // message that must not carry the owner value, so it is recorded, not thrown.
    await a.extend().catch(record);
    await a.release();
    await redlock
      .using('lost', async (lock) => {
        keep(lock);
        await fleet.nodes[0].kill();
        await fleet.nodes[1].kill();
        await fleet.nodes[2].kill();
        await delay(800);
      })
      .catch(record);
    await redlock.acquire('down', { wait: 100 }).catch(record); // unavailable
    await redlock.close();
    userClient.disconnect();

    expect(messages.some((m) => m.includes(LockLostError.name))).toBe(true);
    expect(logger.lines.some((l) => l.includes('enableOfflineQueue'))).toBe(true);
    expect(logger.lines.some((l) => l.includes('was lost'))).toBe(true);
    expect(values).toHaveLength(2);
    for (const value of values) {
      for (const line of [...logger.lines, ...messages]) expect(line).not.toContain(value);
    }
  });
});
