import { setTimeout as delay } from 'node:timers/promises';
import { Test } from '@nestjs/testing';
import type { INestApplication } from '@nestjs/common';
import { RedlockService } from '../../lib';
import { AppModule } from '../../sample/src/app.module';
import { StaleWriteException } from '../../sample/src/stock/stale-write.exception';
import { StockService } from '../../sample/src/stock/stock.service';
import { startFleet, type RedisFleet } from '../support/fleet';

/**
 * Issue 7 item 2: the sample's stock refuses a stale fencing token. A holder paused between its
 * read and its write (a GC pause, a stalled VM: here, an await past its lease) comes back after
 * another holder has written; the lock cannot stop its write, the stock's fenced write does.
 */
describe("the sample stock refuses a paused holder's late write (fencing tokens)", () => {
  let fleet: RedisFleet;
  let app: INestApplication;
  let stock: StockService;
  let redlock: RedlockService;

  beforeAll(async () => {
    fleet = await startFleet(4); // 3 lock nodes + the stock's own Redis
    const urls = fleet.urls();
    const moduleRef = await Test.createTestingModule({
      imports: [
        AppModule.register({
          lockNodes: urls.slice(0, 3),
          stockRedisUrl: urls[3],
          raceWindowMs: 0,
        }),
      ],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    stock = app.get(StockService);
    redlock = app.get(RedlockService);
  });
  afterAll(async () => {
    await app?.close();
    await fleet?.stop();
  });

  it("the late write of an expired holder is refused, the new holder's write lands", async () => {
    await stock.set('1', 10);
    // A takes the lock (no auto-extension: a paused process could not extend it anyway) and reads.
    const a = await redlock.acquire('stock:1', { ttl: 800, fencing: true });
    const seenByA = await stock.get('1');
    // A pauses past its lease...
    await delay(1_000);
    // ...B takes the lock, with a higher token, and sells one.
    const b = await redlock.acquire('stock:1', { ttl: 5_000, fencing: true, wait: 0 });
    expect(b.fencingToken).toBeGreaterThan(a.fencingToken!);
    await expect(stock.decrement('1', { fencingToken: b.fencingToken })).resolves.toEqual({
      id: '1',
      quantity: 9,
    });
    // A resumes and writes what it computed from its stale read (it sold 5): refused.
    await expect(stock.set('1', seenByA.quantity - 5, a.fencingToken)).rejects.toBeInstanceOf(
      StaleWriteException,
    );
    expect(await stock.get('1')).toEqual({ id: '1', quantity: 9 });
    // B's later writes still land.
    await expect(stock.decrement('1', { fencingToken: b.fencingToken })).resolves.toEqual({
      id: '1',
      quantity: 8,
    });
    await b.release();
    await a.release();
  });
});
