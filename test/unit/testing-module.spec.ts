import { Controller, Injectable, Param, Post, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import {
  CurrentLock,
  Locked,
  LockLostError,
  LockNotAcquiredError,
  RedlockService,
  type Lock,
} from '../../lib';
import { RedlockTesting, RedlockTestingModule } from '../../lib/testing';

/**
 * RedlockTestingModule (issue 10 item 5): the app's locking in a unit test, without Redis. The
 * same semantics as the real module (exclusive per resource, tryAcquire, @Locked, typed errors
 * and their HTTP mapping), and controls to force the failure paths.
 */

@Injectable()
class Collaborator {
  /** What the handler calls mid-work; a test replaces it to act from inside the lock. */
  onWork: () => void = () => {};
}

@Controller('orders')
class OrdersController {
  runs = 0;
  lastLock?: Lock;

  constructor(private readonly collaborator: Collaborator) {}

  @Post(':id')
  @Locked('order:{id}')
  async place(@Param('id') id: string, @CurrentLock() lock: Lock) {
    this.runs++;
    this.lastLock = lock;
    this.collaborator.onWork();
    return { id, resources: lock.resources };
  }
}

let app: INestApplication;
let testing: RedlockTesting;
let redlock: RedlockService;

beforeEach(async () => {
  const moduleRef = await Test.createTestingModule({
    imports: [RedlockTestingModule.forRoot({ wait: 0 })],
    controllers: [OrdersController],
    providers: [Collaborator],
  }).compile();
  app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  testing = app.get(RedlockTesting);
  redlock = app.get(RedlockService);
});

afterEach(async () => {
  await app.close();
});

it('@Locked and @CurrentLock work as with Redis', async () => {
  const res = await request(app.getHttpServer()).post('/orders/1').expect(201);
  expect(res.body).toEqual({ id: '1', resources: ['order:1'] });
  expect(app.get(OrdersController).lastLock?.remainingMs()).toBe(0); // released after
});

it('a lock is exclusive per resource: held → 409 from @Locked, null from tryAcquire', async () => {
  const held = await redlock.acquire('order:2');
  expect(testing.isLocked('order:2')).toBe(true);
  expect(await redlock.tryAcquire('order:2')).toBeNull();
  await request(app.getHttpServer()).post('/orders/2').expect(409);
  await request(app.getHttpServer()).post('/orders/3').expect(201); // another resource is free
  await held.release();
  expect(testing.isLocked('order:2')).toBe(false);
  await request(app.getHttpServer()).post('/orders/2').expect(201);
});

it('waiting works: using() serialises concurrent read-modify-writes', async () => {
  let value = 0;
  const increment = () =>
    redlock.using('counter', { wait: 5_000, retryDelay: 1, retryJitter: 1 }, async () => {
      const read = value;
      await new Promise((resolve) => setTimeout(resolve, 2));
      value = read + 1;
    });
  await Promise.all(Array.from({ length: 10 }, increment));
  expect(value).toBe(10);
});

it('failNextAcquire(held) → 409 with Retry-After, once; the handler does not run', async () => {
  testing.failNextAcquire('order:4', 'held', { retryAfterMs: 2_500 });
  const res = await request(app.getHttpServer()).post('/orders/4').expect(409);
  expect(res.headers['retry-after']).toBe('3');
  expect(app.get(OrdersController).runs).toBe(0);
  await request(app.getHttpServer()).post('/orders/4').expect(201);
});

it('failNextAcquire(unavailable) → 503; acquire() rejects with the typed error', async () => {
  testing.failNextAcquire('order:5', 'unavailable');
  await request(app.getHttpServer()).post('/orders/5').expect(503);
  testing.failNextAcquire('order:5', 'unavailable');
  const error = await redlock.acquire(['order:5', 'x']).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(LockNotAcquiredError);
  expect(error).toMatchObject({ reason: 'unavailable', resources: ['order:5', 'x'] });
  testing.failNextAcquire('order:5', 'held');
  expect(await redlock.tryAcquire('order:5')).toBeNull();
});

it('loseLock() inside the locked work: the signal aborts and @Locked answers 500', async () => {
  app.get(Collaborator).onWork = () => testing.loseLock();
  await request(app.getHttpServer()).post('/orders/6').expect(500);
  const lock = app.get(OrdersController).lastLock!;
  expect(lock.signal.aborted).toBe(true);
  expect(lock.signal.reason).toBeInstanceOf(LockLostError);
});

it('loseLock(lock) on a lock from acquire(); loseLock() outside a lock is refused', async () => {
  const lock = await redlock.acquire('order:7');
  testing.loseLock(lock);
  expect(lock.signal.reason).toBeInstanceOf(LockLostError);
  expect(() => testing.loseLock()).toThrow(/needs a lock that is held/);
});

describe("RedlockTestingModule with fairness: 'queue' (issue 18)", () => {
  it('serves waiters on one resource in order, each handed the lock by the one before', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockTestingModule.forRoot({ fairness: 'queue', wait: 5_000, ttl: 2_000 })],
    }).compile();
    const fairApp = moduleRef.createNestApplication({ logger: false });
    await fairApp.init();
    try {
      const service = fairApp.get(RedlockService);
      const order: number[] = [];
      let inside = 0;
      const work = (i: number) =>
        service.using('hot', async () => {
          inside++;
          expect(inside).toBe(1);
          order.push(i);
          await new Promise((resolve) => setTimeout(resolve, 2));
          inside--;
        });
      const first = work(0);
      // Each later waiter starts after the one before, so the order is theirs.
      const rest: Promise<void>[] = [];
      for (let i = 1; i < 6; i++) {
        await new Promise((resolve) => setImmediate(resolve));
        rest.push(work(i));
      }
      await Promise.all([first, ...rest]);
      expect(order).toEqual([0, 1, 2, 3, 4, 5]);
      expect(fairApp.get(RedlockTesting).isLocked('hot')).toBe(false);
    } finally {
      await fairApp.close();
    }
  });
});
