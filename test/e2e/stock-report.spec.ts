import { setTimeout as delay } from 'node:timers/promises';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import Redis from 'ioredis';
import { AppModule } from '../../sample/src/app.module';
import { LocalRedis } from '../../sample/src/local-redis';
import { STOCK_REPORT_KEY, STOCK_REPORT_TICKS_KEY } from '../../sample/src/stock/stock-report.job';
import { RecordingLogger } from '../integration/helpers';

/**
 * The sample's `@Cron` stock report (issue 10 item 6) on two instances of the app sharing the
 * lock nodes and the stock Redis: every tick produces exactly one report, and the instance that
 * skipped says so at debug level, never as an error.
 */

/** Every log line of the apps, by level. */
const Lines = RecordingLogger;

let local: LocalRedis;
let stock: Redis;
const apps: INestApplication[] = [];
const logger = new Lines();

beforeAll(async () => {
  local = await LocalRedis.start({ lockNodes: true, stock: true });
  stock = new Redis(local.stockRedisUrl!, { maxRetriesPerRequest: 1 });
  for (let i = 0; i < 2; i++) {
    const moduleRef = await Test.createTestingModule({
      imports: [
        AppModule.register({
          lockNodes: local.lockNodes!,
          stockRedisUrl: local.stockRedisUrl!,
          stockReport: true,
        }),
      ],
    }).compile();
    const app = moduleRef.createNestApplication({ logger });
    await app.init();
    apps.push(app);
  }
});

afterAll(async () => {
  await Promise.all(apps.map((app) => app.close()));
  stock?.disconnect();
  await local?.stop();
});

it('runs the report once per tick across two instances; the other skips with a debug line', async () => {
  const until = Date.now() + 15_000;
  while ((await stock.llen(STOCK_REPORT_TICKS_KEY)) < 4 && Date.now() < until) await delay(100);
  await Promise.all(apps.splice(0).map((app) => app.close()));

  const ticks = await stock.lrange(STOCK_REPORT_TICKS_KEY, 0, -1);
  expect(ticks.length).toBeGreaterThanOrEqual(4);
  expect(new Set(ticks).size).toBe(ticks.length); // no tick reported twice
  expect(JSON.parse((await stock.get(STOCK_REPORT_KEY))!)).toMatchObject({
    tick: Number(ticks.at(-1)),
  });
  const skipped = logger.lines.filter((l) =>
    l.startsWith(
      'debug @Locked on StockReportJob.report skipped: the lock on ["jobs:stock-report"]',
    ),
  );
  expect(skipped.length).toBeGreaterThanOrEqual(ticks.length - 1);
  expect(logger.lines.filter((l) => l.startsWith('error '))).toEqual([]);
});
