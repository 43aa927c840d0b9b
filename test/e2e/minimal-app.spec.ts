import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { setTimeout as sleep } from 'node:timers/promises';
import { RedlockService } from 'nestjs-redlock';
import request from 'supertest';
import type { AppModule as AppModuleClass } from '../../sample/minimal/app.module';
import { StockService } from '../../sample/minimal/stock.service';
import { startFleet, type RedisFleet } from '../support/fleet';

/**
 * The README's minimal app (sample/minimal/, included in the README verbatim: see
 * test/unit/doc-examples.spec.ts) boots as a user would copy it — its own AppModule, nodes from
 * LOCK_NODES — against three real Redis nodes, and its locked route takes the lock.
 */

let fleet: RedisFleet;
let app: INestApplication;

beforeAll(async () => {
  fleet = await startFleet(3);
  process.env.LOCK_NODES = fleet.urls().join(',');
  // Imported after LOCK_NODES is set: the module reads it when it is defined, as in an app.
  const { AppModule } = (await import('../../sample/minimal/app.module')) as {
    AppModule: typeof AppModuleClass;
  };
  app = await NestFactory.create(AppModule, { logger: false });
  await app.init();
});

afterAll(async () => {
  await app?.close();
  await fleet?.stop();
  delete process.env.LOCK_NODES;
});

const post = (path: string) => request(app.getHttpServer()).post(path);

describe('the README minimal app', () => {
  it('is exact under 20 concurrent decrements, which race without the lock', async () => {
    // Control: the service's read-modify-write loses updates when nothing serialises it.
    const service = app.get(StockService);
    const unlocked = await Promise.all(Array.from({ length: 20 }, () => service.decrement(1)));
    expect(new Set(unlocked.map((r) => r.quantity)).size).toBeLessThan(20);

    const responses = await Promise.all(
      Array.from({ length: 20 }, () => post('/stock/2/decrement')),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(20).fill(201));
    const quantities = responses.map((r) => (r.body as { quantity: number }).quantity);
    expect(quantities.sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => 80 + i));
  });

  it('decrement waits for the lock stock:<id> and runs once it is released', async () => {
    const redlock = app.get(RedlockService);
    const lock = await redlock.acquire('stock:3');
    let settled = false;
    const pending = post('/stock/3/decrement').then((response) => {
      settled = true;
      return response;
    });
    await sleep(500);
    expect(settled).toBe(false); // waiting for stock:3, held above
    await lock.release();
    const response = await pending;
    expect(response.status).toBe(201);
    expect(response.body).toEqual({ id: 3, quantity: 99 });
  });

  it('locks the id the handler receives: /stock/005 waits for stock:5', async () => {
    const lock = await app.get(RedlockService).acquire('stock:5');
    let settled = false;
    const pending = post('/stock/005/decrement').then((response) => {
      settled = true;
      return response;
    });
    await sleep(500);
    expect(settled).toBe(false); // ParseIntPipe made 005 the number 5: the lock is stock:5
    await lock.release();
    expect((await pending).body).toEqual({ id: 5, quantity: 99 });
  });

  it('restock takes the same lock through RedlockService', async () => {
    const lock = await app.get(RedlockService).acquire('stock:4');
    let settled = false;
    const pending = post('/stock/4/restock')
      .send({ units: 5 })
      .then((response) => {
        settled = true;
        return response;
      });
    await sleep(500);
    expect(settled).toBe(false);
    await lock.release();
    expect((await pending).body).toEqual({ id: 4, quantity: 105 });
  });

  it('runs on Fastify too (docs/recipes.md: another main.ts), taking the same lock', async () => {
    const { AppModule } = (await import('../../sample/minimal/app.module')) as {
      AppModule: typeof AppModuleClass;
    };
    const fastify = await NestFactory.create<NestFastifyApplication>(
      AppModule,
      new FastifyAdapter(),
      { logger: false },
    );
    await fastify.init();
    await fastify.getHttpAdapter().getInstance().ready();
    try {
      const lock = await app.get(RedlockService).acquire('stock:8'); // held by the Express app
      let settled = false;
      const pending = request(fastify.getHttpServer())
        .post('/stock/008/decrement')
        .then((response) => {
          settled = true;
          return response;
        });
      await sleep(500);
      expect(settled).toBe(false);
      await lock.release();
      const response = await pending;
      expect(response.status).toBe(201);
      expect(response.body).toEqual({ id: 8, quantity: 99 });
    } finally {
      await fastify.close();
    }
  });

  it('answers 409 with Retry-After once its 10 s wait is spent on a held lock', async () => {
    const lock = await app.get(RedlockService).acquire('stock:6', { ttl: 30_000 });
    try {
      const started = performance.now();
      const response = await post('/stock/6/decrement');
      expect(response.status).toBe(409);
      expect(Number(response.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(performance.now() - started).toBeGreaterThanOrEqual(9_000);
    } finally {
      await lock.release();
    }
  });

  it('answers 503 when a quorum of its nodes is down (last: kills two of three)', async () => {
    await fleet.nodes[1].kill();
    await fleet.nodes[2].kill();
    const response = await post('/stock/7/decrement');
    expect(response.status).toBe(503);
  });
});
