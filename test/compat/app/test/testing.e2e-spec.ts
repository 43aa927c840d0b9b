// nestjs-redlock/testing in a real app's unit test, without Redis: the same controller and
// service as app.e2e-spec.ts, with RedlockTestingModule in place of RedlockModule. Runs under
// jest (CommonJS) and vitest (ESM), from the packed package.
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { RedlockService } from 'nestjs-redlock';
import { RedlockTesting, RedlockTestingModule } from 'nestjs-redlock/testing';
import { JobsController } from '../src/jobs.controller.js';
import { Ledger } from '../src/ledger.service.js';

describe('RedlockTestingModule (no Redis)', () => {
  let app: INestApplication;
  let testing: RedlockTesting;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockTestingModule.forRoot({ wait: 0 })],
      controllers: [JobsController],
      providers: [Ledger],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    testing = app.get(RedlockTesting);
  });

  afterAll(async () => {
    await app?.close();
  });

  it('runs @Locked and @CurrentLock in memory', async () => {
    const res = await request(app.getHttpServer()).post('/jobs/t1').expect(201);
    expect(res.body).toEqual({ resources: ['job:t1'], remaining: true });
  });

  it('a lock held by the service makes the route answer 409', async () => {
    const lock = await app.get(RedlockService).acquire('job:t2');
    await request(app.getHttpServer()).post('/jobs/t2').expect(409);
    await lock.release();
    await request(app.getHttpServer()).post('/jobs/t2').expect(201);
  });

  it('forced failures: held → 409, unavailable → 503', async () => {
    testing.failNextAcquire('job:t3', 'held');
    await request(app.getHttpServer()).post('/jobs/t3').expect(409);
    testing.failNextAcquire('job:t3', 'unavailable');
    await request(app.getHttpServer()).post('/jobs/t3').expect(503);
    await request(app.getHttpServer()).post('/jobs/t3').expect(201);
    expect(app.get(Ledger).count('t3')).toBe(1);
  });
});
