import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { RedlockService } from 'nestjs-redlock';
import request from 'supertest';
import { AppModule } from '../../sample/src/app.module';
import { LocalRedis } from '../../sample/src/local-redis';

/**
 * The sample names its stock locks from the piped item id (issue 6 item 9): `/stock/42` and
 * `/stock/042` are one item after `ParseStockIdPipe`, so they must take one lock. Keyed on the
 * raw URL they took two, and concurrent decrements of the one stock level lost updates.
 */

let local: LocalRedis;
const apps: INestApplication[] = [];
/** The sample app as deployed, twice: two instances sharing only the Redis nodes. */
const cluster = {
  apps,
  on: (i: number) => request(apps[i % 2].getHttpServer()),
  stockOf: async (id: string) =>
    (await request(apps[1].getHttpServer()).get(`/stock/${id}`).expect(200)).body
      .quantity as number,
};

beforeAll(async () => {
  local = await LocalRedis.start({ lockNodes: true, stock: true });
  for (let i = 0; i < 2; i++) {
    const moduleRef = await Test.createTestingModule({
      imports: [
        AppModule.register({ lockNodes: local.lockNodes!, stockRedisUrl: local.stockRedisUrl! }),
      ],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    apps.push(app);
  }
});

afterAll(async () => {
  await Promise.all(apps.map((app) => app.close()));
  await local?.stop();
});

describe('sample stock API: spellings of one item share its lock', () => {
  it('40 concurrent decrements through /stock/42 and /stock/042, on both instances: exact', async () => {
    await cluster.on(0).put('/stock/42').send({ quantity: 40 }).expect(200);
    const responses = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        cluster.on(i).post(i % 4 < 2 ? '/stock/42/decrement' : '/stock/042/decrement'),
      ),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(40).fill(200));
    expect(await cluster.stockOf('42')).toBe(0);
    expect(await cluster.stockOf('0042')).toBe(0);
  });

  it('the lock is named from the canonical id: held as stock:42, /stock/042 is busy (409)', async () => {
    await cluster.on(0).put('/stock/0042').send({ quantity: 5 }).expect(200);
    const holder = await cluster.apps[1].get(RedlockService).acquire('stock:42', { ttl: 5_000 });
    try {
      const busy = await cluster.on(0).post('/stock/042/decrement-nowait');
      expect(busy.status).toBe(409);
      expect(busy.headers['retry-after']).toBeDefined();
    } finally {
      await holder.release();
    }
    await cluster.on(0).post('/stock/042/decrement-nowait').expect(200, { id: '42', quantity: 4 });
  });

  it('an id the pipe rejects is a 400, before any lock', async () => {
    await cluster.on(1).post('/stock/a%20b/decrement').expect(400);
  });
});
