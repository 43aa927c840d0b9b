import { setTimeout as delay } from 'node:timers/promises';
import { Controller, HttpCode, Post, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { Locked, RedlockModule } from '../../lib';
import { startFleet, type RedisFleet } from '../support/fleet';

@Controller('jobs')
class JobsController {
  @Post('slow')
  @HttpCode(200)
  @Locked('job', { wait: 30_000 })
  async slow() {
    await delay(600);
    return { done: true };
  }
}

/**
 * Graceful shutdown of an app using @Locked: a request still waiting for a lock answers 503 at
 * once instead of holding the shutdown for its whole wait, while the request holding the lock
 * finishes under it.
 */
describe('@Locked during app.close() (3 real nodes)', () => {
  let fleet: RedisFleet;
  let app: INestApplication;

  beforeAll(async () => {
    fleet = await startFleet(3);
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: fleet.urls(), retryDelay: 1_000, retryJitter: 0 })],
      controllers: [JobsController],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
  });

  afterAll(async () => {
    await fleet?.stop();
  });

  it('the waiting request gets 503 at once; the holding one finishes with 200; close() does not wait 30 s', async () => {
    const server = request(app.getHttpServer());
    const holding = server.post('/jobs/slow').then((res) => res);
    await delay(150);
    const waiting = server.post('/jobs/slow').then((res) => ({ res, at: performance.now() }));
    await delay(150);
    const closingAt = performance.now();
    const closed = app.close().then(() => performance.now());

    const { res: waited, at } = await waiting;
    expect(waited.status).toBe(503);
    expect(at - closingAt).toBeLessThan(500);
    const held = await holding;
    expect(held.status).toBe(200);
    expect(held.body).toEqual({ done: true });
    expect((await closed) - closingAt).toBeLessThan(3_000);
  });
});
